"""gmmscore.aio.Stream: one StreamScore stream of the asyncio client.

    async with client.stream(models=["spk1", "spk2"], fusion="posterior") as s:
        for window in windows:
            await s.push(window)          # float32 frames x dim
        await s.close()                   # half-close
        async for answer in s:            # StreamAnswer, in order
            use(answer.first_frame, answer.fused, answer.dominant_model)

The same contract as the sync gmmscore.Stream (gmmscore/stream.py) in
asyncio form: a reader task takes the answers as the server sends them into
an unbounded buffer, so pushes never wait for the caller to read (a live
loop may push in one task and `async for` in another, or poll() between
pushes); push() waits only for gRPC to take the message (the server's flow
control). The stream's error status is raised as gmmscore.Error by the
iteration once the answers before it are taken, by poll(), by a later push,
and by leaving `async with` if nothing raised it yet; cancel() ends the
stream at once (iterating then raises Error(CANCELLED)); an exception
leaving `async with` cancels too, a normal exit half-closes and waits for
the end.

Not thread-safe: use a Stream from its event loop, with one task pushing
(push/push_audio/close) and one iterating at a time.
"""
import asyncio
import collections

import grpc

from gmmscore._stubs import pb
from gmmscore.decoding import stream_answer_from_response
from gmmscore.errors import Error, from_rpc_error
from gmmscore.messages import AUDIO_PCM16, audio_request, chunk_request
from gmmscore.stream import cancelled_error


class Stream:
    def __init__(self, open_call, config):
        """Used by gmmscore.aio.Client.stream: `open_call()` starts the RPC in
        the running loop; `config` is the StreamConfig sent first."""
        self._open_call = open_call
        self._config_request = pb.StreamScoreRequest(config=config)
        self._models = list(config.models)
        self._encoding = config.audio.encoding if config.HasField("audio") else None
        self._call = None
        self._reader = None
        self._answers = collections.deque()
        # asyncio.Events, made in the running loop by open().
        self._arrived = None      # an answer or the end came
        self._end = None          # the call is over
        self._config_sent = None  # the config was written (or could not be)
        self._ended = False
        self._end_error = None
        self._error_reported = False
        self._cancelled = False
        self._closed = False
        self._frames_pushed = 0
        self._samples_pushed = 0

    @property
    def models(self):
        return list(self._models)

    @property
    def frames_pushed(self):
        return self._frames_pushed

    @property
    def samples_pushed(self):
        return self._samples_pushed

    async def open(self):
        """Starts the call and sends the config (done by `async with` and by
        the first push). Never raises for the server's refusal: that is the
        stream's error. Idempotent."""
        if self._arrived is not None:
            # Started: wait until the config is written, so that a push from
            # another task never writes at the same time or before it.
            await self._config_sent.wait()
            return
        self._arrived = asyncio.Event()
        self._end = asyncio.Event()
        self._config_sent = asyncio.Event()
        if self._cancelled:  # cancelled before it started: never start it
            self._end_error, self._ended = cancelled_error(), True
            for event in (self._arrived, self._end, self._config_sent):
                event.set()
            return
        self._call = self._open_call()
        self._reader = asyncio.ensure_future(self._read_answers())
        try:
            await self._call.write(self._config_request)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            pass  # the reader records how the call ended
        finally:
            self._config_sent.set()

    async def push(self, frames, posteriors=None):
        """As gmmscore.Stream.push: one chunk of frames (frames x dim)."""
        if self._encoding is not None:
            raise TypeError("this is an audio stream: send samples with push_audio()")
        request = chunk_request(frames, posteriors)
        await self._send(request)
        self._frames_pushed += request.chunk.num_frames

    async def push_audio(self, samples):
        """As gmmscore.Stream.push_audio: int16 samples on a PCM16 stream,
        float32/float64 on a float32 one, or raw little-endian bytes."""
        if self._encoding is None:
            raise TypeError("this is a feature stream: send frames with push() (open the stream "
                            "with audio=True or audio='float32' to send audio)")
        request = audio_request(samples, self._encoding)
        await self._send(request)
        self._samples_pushed += len(request.audio.samples) // (
            2 if self._encoding == AUDIO_PCM16 else 4)

    async def close(self):
        """Half-closes: no more pushes; the server answers the rest and ends
        the stream. Idempotent."""
        self._closed = True
        await self.open()
        if self._call is None:
            return
        try:
            await self._call.done_writing()
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            pass  # the call is over; iteration reports how

    def cancel(self):
        """Ends the stream now; unread answers are dropped. Idempotent."""
        self._cancelled = True
        self._answers.clear()
        if self._call is not None:
            self._call.cancel()

    def poll(self):
        """The answers received and not yet taken, without waiting (a list);
        the stream's Error once it failed and those were all taken."""
        if self._answers:
            answers = list(self._answers)
            self._answers.clear()
            return answers
        self._raise_end_error()
        return []

    @property
    def done(self):
        return self._ended and not self._answers

    def __aiter__(self):
        return self

    async def __anext__(self):
        await self.open()
        while not self._answers and not self._ended:
            self._arrived.clear()
            await self._arrived.wait()
        if self._answers:
            return self._answers.popleft()
        self._raise_end_error()
        raise StopAsyncIteration

    async def __aenter__(self):
        await self.open()
        return self

    async def __aexit__(self, exc_type, exc, traceback):
        if exc_type is not None:
            self.cancel()
            return False
        await self.close()
        await self._end.wait()
        self._answers.clear()
        if not self._error_reported and not self._cancelled:
            self._raise_end_error()
        return False

    async def _send(self, request):
        if self._closed:
            raise ValueError("push after close()")
        await self.open()
        self._raise_end_error()  # also a stream cancelled before it started
        try:
            await self._call.write(request)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            # The call is over; its reader records the status.
            await self._end.wait()
            self._raise_end_error()
            raise Error(grpc.StatusCode.FAILED_PRECONDITION, "the stream has ended") from None
        except asyncio.CancelledError:
            # grpc.aio raises CancelledError in a write that cancel() cut
            # short; that is the stream's end, not this task's cancellation.
            if self._cancelled:
                self._error_reported = True
                raise cancelled_error() from None
            raise

    def _raise_end_error(self):
        if self._ended and self._end_error is not None:
            self._error_reported = True
            raise self._end_error

    async def _read_answers(self):
        """The reader task: every answer into the buffer, then the end."""
        error = None
        try:
            while True:
                response = await self._call.read()
                if response is grpc.aio.EOF:
                    break
                answer = stream_answer_from_response(response)
                if not self._cancelled:
                    self._answers.append(answer)
                    self._arrived.set()
        except grpc.aio.AioRpcError as rpc_error:
            error = cancelled_error() if self._cancelled else from_rpc_error(rpc_error)
        except asyncio.CancelledError:
            # read() raises it once the call was cancelled (by cancel(), or
            # with the loop's tasks at shutdown): either way the stream ends.
            self._call.cancel()
            error = cancelled_error()
        except Error as malformed:
            error = malformed
            self._call.cancel()
        except Exception as unexpected:  # a bug here must not hang the caller
            error = Error(grpc.StatusCode.UNKNOWN, f"gmmscore stream reader: {unexpected!r}")
            self._call.cancel()
        if self._cancelled and error is None:
            error = cancelled_error()
        self._end_error = error
        self._ended = True
        self._arrived.set()
        self._end.set()
