"""gmmscore.Client: the sync Python client of a gmmscored (gRPC gmmscore.v1).

    client = gmmscore.Client("localhost:50051")           # plaintext
    client = gmmscore.Client("host:50051", tls="ca.pem", token="s3cret")
    for model in client.models(): print(model.name, model.num_states)
    result = client.score(frames, models=["spk1", "spk2"], fusion="logsumexp")
    best = result.loglikes.argmax(axis=1)                 # numpy
    with client.stream(models=["spk1"], top_k=20) as s: ...   # stream.py

Mirrors the C++ Client (client/client.h): every call sends the bearer token
as "authorization: Bearer <token>" metadata, unary calls have a deadline
(`timeout` seconds, 60 by default; None: none), streams have none. Failures
are raised as gmmscore.Error with the status code and the server's message.
The channel connects lazily: an unreachable server is UNAVAILABLE at the
first call (or use wait_ready).

Thread safety: a Client may be shared by threads; each Stream has its own
rules (stream.py).
"""
import grpc

from gmmscore import channel, messages
from gmmscore._stubs import pb, pb_grpc
from gmmscore.decoding import scores_from_response
from gmmscore.errors import Error, from_rpc_error
from gmmscore.stream import Stream

DEFAULT_TIMEOUT = 60.0
_UNSET = object()


class Client:
    def __init__(self, address, tls=None, token=None, *, timeout=DEFAULT_TIMEOUT,
                 channel_options=()):
        """Opens a channel to `address` ("host:port" or any gRPC target).

        tls: None (plaintext), True (system roots), a CA file path, CA PEM
        bytes, or grpc.ChannelCredentials (channel.credentials). token: the
        bearer token of a server with --scoring_token_file (None: none).
        timeout: the deadline of unary calls, seconds (None: none).
        channel_options: extra gRPC channel arguments, (name, value) pairs.
        """
        options = channel.CHANNEL_OPTIONS + tuple(channel_options)
        creds = channel.credentials(tls)
        self._channel = (grpc.secure_channel(address, creds, options) if creds is not None
                         else grpc.insecure_channel(address, options))
        self._stub = pb_grpc.AcousticScorerStub(self._channel)
        self._metadata = channel.auth_metadata(token)
        self._timeout = timeout
        self.address = address

    def close(self):
        """Closes the channel; calls in flight are cancelled."""
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False

    def wait_ready(self, timeout=10.0):
        """Waits until the channel connects; Error(UNAVAILABLE) if it does not
        within `timeout` seconds (the C++ Client::Connect's wait)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise Error(grpc.StatusCode.UNAVAILABLE,
                        f"cannot connect to gmmscored at {self.address} within {timeout} s "
                        "(is it running and listening there?)") from None

    def _call(self, method, request, timeout):
        try:
            return method(request, metadata=self._metadata,
                          timeout=self._timeout if timeout is _UNSET else timeout)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    def models(self, *, timeout=_UNSET):
        """The served models, sorted by name: a list of ModelInfo messages
        (name, dim, num_states, num_gaussians, device, bytes, ...)."""
        return list(self._call(self._stub.ListModels, pb.ListModelsRequest(), timeout).models)

    def score(self, features, models, *, timeout=_UNSET, **options):
        """Scores `features` (frames x dim array-like; float32 on the wire)
        with `models` (one name or several with the same states), fused when
        several are named. options: fusion, weights, window_frames,
        acoustic_scale, fused_only, frame_totals, beam, top_k, float16,
        transform (gmmscore.messages). Returns Scores (numpy matrices).
        Errors: NOT_FOUND (a model), INVALID_ARGUMENT (dimension, NaN/Inf,
        options), RESOURCE_EXHAUSTED (over --max_request_frames), ..."""
        request = messages.score_request(features, models, **options)
        return scores_from_response(self._call(self._stub.Score, request, timeout))

    def server_stats(self, *, timeout=_UNSET):
        """The server's counters since it started: a GetServerStatsResponse."""
        return self._call(self._stub.GetServerStats, pb.GetServerStatsRequest(), timeout)

    def align(self, model, words, *, features=None, audio=None, sample_rate=16000,
              utterance_id="", phones=False, timeout=_UNSET):
        """Forced alignment of one utterance (the Align RPC): `words` (a list,
        or one string) against `features` (frames x dim) or `audio` (mono
        PCM16: int16 array or raw bytes, at sample_rate Hz) with `model`, a
        served CMU Sphinx model with a dictionary. Returns the AlignResponse
        message: words (and phones when asked) as AlignSegments with frames
        and seconds. Errors: NOT_FOUND, FAILED_PRECONDITION (the model
        cannot align), INVALID_ARGUMENT (a word not in the dictionary, bad
        input), OUT_OF_RANGE (too short for its transcript), ..."""
        request = messages.align_request(model, words, features=features, audio=audio,
                                         sample_rate=sample_rate, utterance_id=utterance_id,
                                         phones=phones)
        return self._call(self._stub.Align, request, timeout)

    def get_adaptation(self, name, *, timeout=_UNSET):
        """The latest adaptation a stream published under `name`
        (AdaptationConfig.save_as): a GetAdaptationResponse (an fMLLR
        transform, pass it to stream(transform=...), or the name of a MAP
        model). NOT_FOUND when nothing was published under it."""
        return self._call(self._stub.GetAdaptation, pb.GetAdaptationRequest(name=name), timeout)

    def stream(self, models, *, max_pending_chunks=16, **config):
        """Opens a StreamScore stream (a Stream; use it in a `with` block).

        config: stream_id, adaptation, audio (False: feature chunks; True or
        "pcm16": int16 audio; "float32": float audio), sample_rate (16000)
        and the scoring options of score() (gmmscore.messages.stream_config).
        max_pending_chunks: pushes queued ahead of gRPC before push() waits.
        Does not wait for the server: a bad config or an unknown model
        arrives as the stream's Error (from iteration or a later push).
        """
        stream_config = messages.stream_config(models, **config)

        def start_call(requests):
            return self._stub.StreamScore(requests, metadata=self._metadata)

        return Stream(start_call, stream_config, max_pending_chunks)
