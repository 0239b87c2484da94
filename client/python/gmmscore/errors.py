"""gmmscore.Error: a failed RPC, as the server reported it.

    try:
        client.score(frames, models=["spk9"])
    except gmmscore.Error as error:
        if error.code == grpc.StatusCode.NOT_FOUND: ...
        print(error)        # NOT_FOUND: unknown model 'spk9' ...

Every failure the server (or gRPC) reports comes out of the library as an
Error: the canonical status code and the server's message, which names the
offending field, frame or model (proto/gmmscore/v1/scorer.proto lists the
codes). Mistakes the library can see without asking the server (a wrong
dtype or shape, a call that does not fit the stream) are TypeError or
ValueError instead.
"""
import grpc


class Error(Exception):
    """A gRPC status other than OK.

    Attributes:
      code: a grpc.StatusCode (NOT_FOUND, INVALID_ARGUMENT, CANCELLED, ...).
      message: the server's message (gRPC's status details), possibly empty.
    str(error) is "CODE_NAME: message".
    """

    def __init__(self, code, message=""):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self):
        return f"{self.code.name}: {self.message}" if self.message else self.code.name

    def __repr__(self):
        return f"gmmscore.Error({self.code.name}, {self.message!r})"


def from_rpc_error(error):
    """The Error of a grpc.RpcError (sync) or grpc.aio.AioRpcError.

    Both carry code() and details(); an RpcError without them (gRPC raises
    those only for its own internal failures) becomes UNKNOWN with its text.
    """
    code = getattr(error, "code", None)
    details = getattr(error, "details", None)
    if callable(code) and callable(details):
        return Error(code() or grpc.StatusCode.UNKNOWN, details() or "")
    return Error(grpc.StatusCode.UNKNOWN, str(error))


def malformed_answer(message):
    """The Error for an answer whose fields do not fit together (a server bug,
    not the caller's): INTERNAL."""
    return Error(grpc.StatusCode.INTERNAL, "malformed answer from the server: " + message)
