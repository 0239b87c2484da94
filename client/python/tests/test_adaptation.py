"""Live adaptation through the client: a stream's answers carry their
AdaptationReport, GetAdaptation returns what the stream published, and the
published fMLLR transform given back as a stream's transform scores as the
offline engine does with it (`gmmscore score --fmllr`)."""
import time

import grpc
import numpy as np
import pytest

import gmmscore
from checks import assert_close, random_chunks
from conftest import DIM
from gmmscore.v1 import scorer_pb2 as pb


def published(client, name, timeout=20.0):
    """GetAdaptation(name) once the stream's update is published."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return client.get_adaptation(name)
        except gmmscore.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_an_adapting_stream_publishes_a_transform(client, models, offline, rng):
    model = models["spk1"]
    name = f"speaker-{rng.integers(1 << 30)}"
    frames = model.sample(rng, 240)
    adaptation = dict(method="FMLLR", save_as=name, start_after_frames=60, single_update=True)
    with client.stream(["spk1"], adaptation=adaptation) as s:
        for chunk in random_chunks(rng, frames, 20):
            s.push(chunk)
        s.close()
        versions = [a.adaptation.version for a in s]
    assert versions[0] == 0 and versions == sorted(versions)
    response = published(client, name)
    assert response.method == pb.AdaptationConfig.FMLLR
    assert response.report.version >= 1 and response.report.frames > 0
    assert (response.transform.rows, response.transform.cols) == (DIM, DIM + 1)

    transform = np.array(response.transform.values, dtype=np.float32).reshape(DIM, DIM + 1)
    later = model.sample(rng, 25)
    with client.stream(["spk1"], transform=response.transform) as s:
        s.push(later)
        s.close()
        got = np.vstack([a.loglikes for a in s])
    assert_close(got, offline.score(model, {"u": later}, transform=transform)["u"])


def test_adaptation_options_the_server_refuses(client, models, rng):
    with pytest.raises(gmmscore.Error) as caught:
        with client.stream(["spk1"], adaptation=dict(method="FMLLR"),
                           transform=np.eye(DIM, DIM + 1)) as s:
            s.push(models["spk1"].sample(rng, 3))
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_decoder_posteriors_drive_the_adaptation(client, models, rng):
    model = models["spk2"]
    name = f"decoder-{rng.integers(1 << 30)}"
    adaptation = dict(method="FMLLR", save_as=name, start_after_frames=40, single_update=True)
    with client.stream(["spk2"], adaptation=adaptation) as s:
        for chunk in random_chunks(rng, model.sample(rng, 150), 15):
            frames = np.arange(len(chunk))
            states = rng.integers(model.states, size=len(chunk))
            s.push(chunk, posteriors=(frames, states, np.ones(len(chunk))))
        s.close()
        assert all(a.adaptation is not None for a in s)
    assert published(client, name).report.frames > 0
