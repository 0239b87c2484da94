"""gmmscore.aio.Client: the asyncio client (grpc.aio), with the names and
contracts of the sync gmmscore.Client (gmmscore/client.py), its calls awaited.

    async with gmmscore.aio.Client("localhost:50051", token=token) as client:
        models = await client.models()
        result = await client.score(frames, models=["spk1"])
        async with client.stream(models=["spk1"]) as s: ...   # aio/stream.py

Create it inside the running event loop (grpc.aio channels belong to the
loop they were made in). Many streams and calls may be in flight at once on
one Client.
"""
import asyncio

import grpc

from gmmscore import channel, messages
from gmmscore._stubs import pb, pb_grpc
from gmmscore.aio.stream import Stream
from gmmscore.client import DEFAULT_TIMEOUT
from gmmscore.decoding import scores_from_response
from gmmscore.errors import Error, from_rpc_error

_UNSET = object()


class Client:
    def __init__(self, address, tls=None, token=None, *, timeout=DEFAULT_TIMEOUT,
                 channel_options=()):
        """As gmmscore.Client: tls, token, timeout (unary deadline, seconds)."""
        options = channel.CHANNEL_OPTIONS + tuple(channel_options)
        creds = channel.credentials(tls)
        self._channel = (grpc.aio.secure_channel(address, creds, options) if creds is not None
                         else grpc.aio.insecure_channel(address, options))
        self._stub = pb_grpc.AcousticScorerStub(self._channel)
        self._metadata = channel.auth_metadata(token)
        self._timeout = timeout
        self.address = address

    async def close(self):
        """Closes the channel; calls in flight are cancelled."""
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        await self.close()
        return False

    async def wait_ready(self, timeout=10.0):
        """Waits until the channel connects; Error(UNAVAILABLE) otherwise."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout)
        except asyncio.TimeoutError:
            raise Error(grpc.StatusCode.UNAVAILABLE,
                        f"cannot connect to gmmscored at {self.address} within {timeout} s "
                        "(is it running and listening there?)") from None

    async def _call(self, method, request, timeout):
        try:
            return await method(request, metadata=self._metadata,
                                timeout=self._timeout if timeout is _UNSET else timeout)
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None

    async def models(self, *, timeout=_UNSET):
        """As gmmscore.Client.models."""
        response = await self._call(self._stub.ListModels, pb.ListModelsRequest(), timeout)
        return list(response.models)

    async def score(self, features, models, *, timeout=_UNSET, **options):
        """As gmmscore.Client.score."""
        request = messages.score_request(features, models, **options)
        return scores_from_response(await self._call(self._stub.Score, request, timeout))

    async def server_stats(self, *, timeout=_UNSET):
        """As gmmscore.Client.server_stats."""
        return await self._call(self._stub.GetServerStats, pb.GetServerStatsRequest(), timeout)

    async def align(self, model, words, *, features=None, audio=None, sample_rate=16000,
                    utterance_id="", phones=False, timeout=_UNSET):
        """As gmmscore.Client.align."""
        request = messages.align_request(model, words, features=features, audio=audio,
                                         sample_rate=sample_rate, utterance_id=utterance_id,
                                         phones=phones)
        return await self._call(self._stub.Align, request, timeout)

    async def get_adaptation(self, name, *, timeout=_UNSET):
        """As gmmscore.Client.get_adaptation."""
        return await self._call(self._stub.GetAdaptation, pb.GetAdaptationRequest(name=name),
                                timeout)

    def stream(self, models, **config):
        """As gmmscore.Client.stream (without max_pending_chunks: push()
        awaits gRPC directly). The call starts at `async with` (or the first
        push)."""
        stream_config = messages.stream_config(models, **config)
        return Stream(lambda: self._stub.StreamScore(metadata=self._metadata), stream_config)
