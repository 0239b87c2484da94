"""An in-process AcousticScorer written in Python that records what the
client sends, for tests of the wire encoding the real server cannot check
yet (audio streams) or does not show (metadata).

    with FakeScorer() as fake:
        client = gmmscore.Client(fake.address, token="t")
        ...
        fake.requests      # every StreamScoreRequest received, in order
        fake.metadata      # per call: dict of its invocation metadata

Stream answers: one per chunk (feature or audio), a 1 x 2 matrix whose
values say the chunk's index; `malformed=True` sends a broken one instead.
"""
from concurrent import futures
import threading

import grpc

from gmmscore.v1 import scorer_pb2 as pb
from gmmscore.v1 import scorer_pb2_grpc as pb_grpc


class _Servicer(pb_grpc.AcousticScorerServicer):
    def __init__(self, fake):
        self.fake = fake

    def _record(self, context):
        with self.fake.lock:
            self.fake.metadata.append(dict(context.invocation_metadata()))

    def ListModels(self, request, context):
        self._record(context)
        return pb.ListModelsResponse(models=[pb.ModelInfo(name="fake", dim=2, num_states=2)])

    def StreamScore(self, request_iterator, context):
        self._record(context)
        for index, request in enumerate(request_iterator):
            with self.fake.lock:
                self.fake.requests.append(request)
            if index == 0:
                continue  # the config
            if self.fake.malformed:
                yield pb.StreamScoreResponse(scores=[pb.StateScores(
                    model="fake", num_frames=1, num_states=2, loglikes=[1.0])])
                continue
            yield pb.StreamScoreResponse(first_frame=index - 1, scores=[pb.StateScores(
                model="fake", num_frames=1, num_states=2, loglikes=[float(index), 0.0])])


class FakeScorer:
    def __init__(self, malformed=False):
        self.lock = threading.Lock()
        self.requests = []
        self.metadata = []
        self.malformed = malformed
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_AcousticScorerServicer_to_server(_Servicer(self), self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"

    def __enter__(self):
        self._server.start()
        return self

    def __exit__(self, *exc_info):
        self._server.stop(grace=None)
        return False
