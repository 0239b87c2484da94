"""Stream: one live StreamScore stream of the sync client (Client.stream).

    with client.stream(models=["spk1", "spk2"], top_k=50) as s:
        for window in windows:
            s.push(window)            # float32 frames x dim
        s.close()                     # half-close: no more chunks
        for answer in s:              # StreamAnswer, in order, until the end
            use(answer.first_frame, answer.fused, answer.dominant_model)

Answers can be read while pushing goes on: from another thread (`for answer
in s` blocks for the next one), or in the pushing loop with s.poll(), which
returns what has arrived without waiting.

Flow: a background thread reads the answers as the server sends them into
an unbounded buffer, so a slow (or absent) reader never stalls pushes nor
makes the server stop reading (or cancel the stream as a client that takes
no answers); unread answers cost memory until taken, or until the stream
is cancelled. Pushes are queued for gRPC's sending thread, at most
max_pending_chunks ahead of it: push() waits only when gRPC cannot send
(the server or network is slower than the pushes), which is the server's
flow control reaching the caller.

Errors: the server ends a stream with an error status after answering the
chunks it accepted before the bad one. That status is raised as
gmmscore.Error by the iteration once those answers are taken, by poll(), by
a push() that comes after it, and by leaving the `with` block if nothing
raised it yet. cancel() ends the stream at once (CANCELLED on the server;
iterating afterwards raises Error(CANCELLED)); an exception leaving the
`with` block cancels too. Leaving it normally half-closes, waits for the
server to finish (answers not read are dropped) and raises its error if any.

A stream left neither closed nor cancelled (outside a `with` block) keeps
its reader thread and the server's resources until the server times it
out: end every stream.

Thread safety: push/push_audio/close from one thread, iteration/poll from
one (possibly other) thread, cancel from any.
"""
import collections
import threading

import grpc

from gmmscore._feed import RequestFeed
from gmmscore._stubs import pb
from gmmscore.decoding import stream_answer_from_response
from gmmscore.errors import Error, from_rpc_error
from gmmscore.messages import AUDIO_PCM16, audio_request, chunk_request


def cancelled_error():
    """The Error a stream the client cancelled ends with."""
    return Error(grpc.StatusCode.CANCELLED, "the stream was cancelled by the client")


class Stream:
    def __init__(self, start_call, config, max_pending_chunks=16):
        """Used by Client.stream: `start_call(requests)` opens the RPC on an
        iterator of requests; `config` is the StreamConfig sent first."""
        self._models = list(config.models)
        self._encoding = config.audio.encoding if config.HasField("audio") else None
        self._feed = RequestFeed(pb.StreamScoreRequest(config=config), max_pending_chunks)
        self._cond = threading.Condition()
        self._answers = collections.deque()
        self._ended = False
        self._end_error = None  # the final status when not OK
        self._error_reported = False
        self._cancelled = False
        self._closed = False
        self._frames_pushed = 0
        self._samples_pushed = 0
        self._call = start_call(iter(self._feed))
        self._reader = threading.Thread(target=self._read_answers, daemon=True,
                                        name="gmmscore-stream-reader")
        self._reader.start()

    @property
    def models(self):
        """The models named in the config, in order."""
        return list(self._models)

    @property
    def frames_pushed(self):
        """Feature frames pushed so far (feature streams)."""
        return self._frames_pushed

    @property
    def samples_pushed(self):
        """Audio samples pushed so far (audio streams)."""
        return self._samples_pushed

    def push(self, frames, posteriors=None):
        """Sends `frames` (frames x dim, at least one frame; converted to
        float32) as one chunk, answered by one StreamAnswer. posteriors: for
        an adapting stream, a decoder's posteriors of these frames (see
        messages.chunk_request). A chunk over the server's --max_chunk_frames
        (1000) ends the stream with INVALID_ARGUMENT. Raises the stream's
        Error if it has already failed; TypeError on an audio stream;
        ValueError after close()."""
        if self._encoding is not None:
            raise TypeError("this is an audio stream: send samples with push_audio()")
        request = chunk_request(frames, posteriors)
        self._send(request)
        self._frames_pushed += request.chunk.num_frames

    def push_audio(self, samples):
        """Sends audio (mono, continuing the samples sent before): a 1-D
        int16 array on a PCM16 stream (audio=True), float32 or float64 on a
        float32 one (audio="float32"), or raw little-endian bytes in the
        stream's encoding. The server answers with the feature frames the
        audio completed (none, one or several answers). TypeError on a
        feature stream or for the wrong dtype; otherwise as push()."""
        if self._encoding is None:
            raise TypeError("this is a feature stream: send frames with push() (open the stream "
                            "with audio=True or audio='float32' to send audio)")
        request = audio_request(samples, self._encoding)
        self._send(request)
        self._samples_pushed += len(request.audio.samples) // (
            2 if self._encoding == AUDIO_PCM16 else 4)

    def close(self):
        """Half-closes: no more pushes. The server answers what it has and
        ends the stream; iterate to take the answers. Idempotent."""
        self._closed = True
        self._feed.close()

    def cancel(self):
        """Ends the stream now (the server frees what it holds for it); unread
        answers are dropped. Idempotent; any thread."""
        self._cancelled = True
        self._call.cancel()
        with self._cond:
            self._answers.clear()

    def poll(self):
        """The answers received so far and not yet taken (a list, possibly
        empty), without waiting. Raises the stream's Error once it has
        failed and every answer before the failure was taken."""
        with self._cond:
            if self._answers:
                answers = list(self._answers)
                self._answers.clear()
                return answers
            self._raise_end_error_locked()
            return []

    @property
    def done(self):
        """True once the stream has ended and every answer was taken."""
        with self._cond:
            return self._ended and not self._answers

    def __iter__(self):
        return self

    def __next__(self):
        """The next answer, waiting for it; StopIteration once the stream
        ended OK and all answers were taken; its Error if it failed."""
        with self._cond:
            self._cond.wait_for(lambda: self._answers or self._ended)
            if self._answers:
                return self._answers.popleft()
            self._raise_end_error_locked()
            raise StopIteration

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is not None:
            self.cancel()
            return False
        self.close()
        self._reader.join()
        with self._cond:
            self._answers.clear()
            if not self._error_reported and not self._cancelled:
                self._raise_end_error_locked()
        return False

    def _send(self, request):
        if self._closed:
            raise ValueError("push after close()")
        with self._cond:
            self._raise_end_error_locked()
        if not self._feed.put(request):
            # The call is over: its reader recorded how before aborting the feed.
            with self._cond:
                self._raise_end_error_locked()
            raise Error(grpc.StatusCode.FAILED_PRECONDITION, "the stream has ended")

    def _raise_end_error_locked(self):
        if self._ended and self._end_error is not None:
            self._error_reported = True
            raise self._end_error

    def _read_answers(self):
        """The reader thread: every answer into the buffer, then the end."""
        error = None
        try:
            for response in self._call:
                answer = stream_answer_from_response(response)
                with self._cond:
                    if not self._cancelled:
                        self._answers.append(answer)
                        self._cond.notify_all()
        except grpc.RpcError as rpc_error:
            error = cancelled_error() if self._cancelled else from_rpc_error(rpc_error)
        except Error as malformed:
            error = malformed
            self._call.cancel()
        except Exception as unexpected:  # a bug here must not hang the caller
            error = Error(grpc.StatusCode.UNKNOWN, f"gmmscore stream reader: {unexpected!r}")
            self._call.cancel()
        with self._cond:
            if self._cancelled and error is None:
                error = cancelled_error()
            self._end_error = error
            self._ended = True
            self._cond.notify_all()
        self._feed.abort()
