"""gmmscore: the Python client of gmmscored, the GMM acoustic scoring server.

    import gmmscore
    client = gmmscore.Client("localhost:50051")
    result = client.score(frames, models=["spk1"])      # frames: T x D float32
    result.loglikes                                     # T x S numpy matrix

Client (sync) and gmmscore.aio.Client (asyncio) speak gmmscore.v1
(proto/gmmscore/v1/scorer.proto); the generated messages are in
gmmscore.v1.scorer_pb2. Failures are gmmscore.Error (a grpc.StatusCode and
the server's message). README.md has the whole API.
"""
from gmmscore.answers import FusionReport, Scores, StreamAnswer
from gmmscore.client import Client
from gmmscore.errors import Error
from gmmscore.stream import Stream
from gmmscore import aio

__version__ = "0.1.0"
__all__ = ["Client", "Error", "FusionReport", "Scores", "Stream", "StreamAnswer", "aio"]
