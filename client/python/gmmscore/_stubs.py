"""The generated gmmscore.v1 modules, imported in one place so that a source
tree without them fails with a message that says how to get them."""
try:
    from gmmscore.v1 import scorer_pb2 as pb
    from gmmscore.v1 import scorer_pb2_grpc as pb_grpc
except ImportError as error:  # pragma: no cover - only in a bare source tree
    raise ImportError(
        "gmmscore's gRPC stubs are missing: they are generated from proto/ when the "
        "package is built; install it with `pip install ./client/python` (or "
        "`pip install -e`) instead of importing the source tree") from error

__all__ = ["pb", "pb_grpc"]
