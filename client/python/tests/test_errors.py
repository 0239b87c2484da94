"""Failures come out as gmmscore.Error with the server's status code and
message: bad requests, unknown names, streams that go wrong after answering
what came before, a server that wants a token, one that is not there."""
import secrets

import grpc
import numpy as np
import pytest

import gmmscore
from conftest import DIM
from daemon_util import Daemon

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def expect_error(code, call, *args, **kwargs):
    with pytest.raises(gmmscore.Error) as caught:
        call(*args, **kwargs)
    assert caught.value.code == code, str(caught.value)
    assert caught.value.message
    assert str(caught.value).startswith(code.name + ": ")
    return caught.value


def test_unknown_model_is_not_found(client, models, rng):
    error = expect_error(grpc.StatusCode.NOT_FOUND, client.score, models["spk1"].sample(rng, 3),
                         ["spk1", "nobody"])
    assert "nobody" in error.message


def with_nan(frames, rng, value=np.nan):
    frames = frames.copy()
    frames[rng.integers(len(frames)), rng.integers(frames.shape[1])] = value
    return frames


@pytest.mark.parametrize("case", ["dim", "nan", "inf", "weights", "states", "transform",
                                  "acoustic_scale"])
def test_bad_score_requests_are_invalid_argument(client, models, rng, case):
    frames = models["spk1"].sample(rng, 6)
    names, options = ["spk1", "spk2"], {}
    if case == "dim":
        frames = rng.normal(size=(6, DIM + 1)).astype(np.float32)
    elif case == "nan":
        frames = with_nan(frames, rng)
    elif case == "inf":
        frames = with_nan(frames, rng, np.inf)
    elif case == "weights":
        options = dict(fusion="logsumexp", weights=[1.0, -1.0])
    elif case == "states":
        names = ["spk1", "other"]
    elif case == "transform":
        options = dict(transform=np.eye(DIM + 1, DIM + 2))
    elif case == "acoustic_scale":
        options = dict(fusion="posterior", acoustic_scale=float("inf"))
    expect_error(INVALID, client.score, frames, names, **options)


def stream_and_read(client, chunks, models, answers):
    """Streams `chunks`, collecting answers into `answers` until the error."""
    with client.stream(models) as s:
        for chunk in chunks:
            s.push(chunk)
        s.close()
        for answer in s:
            answers.append(answer)


@pytest.mark.parametrize("case, code", [("unknown", grpc.StatusCode.NOT_FOUND),
                                        ("dim", INVALID), ("nan", INVALID),
                                        ("too_long", INVALID), ("states", INVALID)])
def test_a_bad_chunk_ends_the_stream_after_the_earlier_answers(client, models, rng, case, code):
    good = [models["spk1"].sample(rng, int(n)) for n in rng.integers(1, 20, size=3)]
    bad = models["spk1"].sample(rng, 4)
    names = ["spk1"]
    if case == "unknown":
        names, good = ["spk1", "nobody"], []
    elif case == "states":
        names, good = ["spk1", "other"], []
    elif case == "dim":
        bad = rng.normal(size=(4, DIM - 1))
    elif case == "nan":
        bad = with_nan(bad, rng)
    elif case == "too_long":
        bad = models["spk1"].sample(rng, 1001)  # --max_chunk_frames is 1000
    answers = []
    expect_error(code, stream_and_read, client, good + [bad, bad], names, answers)
    assert [a.num_frames for a in answers] == [len(c) for c in good]


def test_pushing_to_a_failed_stream_raises_its_error(client, models, rng):
    frames = models["spk1"].sample(rng, 2)
    with pytest.raises(gmmscore.Error) as caught:
        with client.stream(["nobody"]) as s:
            for _ in range(200):  # until the refusal has come back
                s.push(frames)
    assert caught.value.code == grpc.StatusCode.NOT_FOUND


def test_an_unread_error_is_raised_when_leaving_the_block(client, models, rng):
    with pytest.raises(gmmscore.Error) as caught:
        with client.stream(["spk1"]) as s:
            s.push(rng.normal(size=(3, DIM + 2)))
    assert caught.value.code == INVALID


def test_get_adaptation_of_an_unknown_name_is_not_found(client):
    expect_error(grpc.StatusCode.NOT_FOUND, client.get_adaptation, "never-published")


def test_align_with_a_model_that_cannot_align(client, models, rng):
    features = models["spk1"].sample(rng, 50)
    expect_error(grpc.StatusCode.FAILED_PRECONDITION, client.align, "spk1", ["hello"],
                 features=features)
    expect_error(grpc.StatusCode.NOT_FOUND, client.align, "nobody", ["hello"], features=features)


def test_an_absent_server_is_unavailable():
    with gmmscore.Client("127.0.0.1:1", timeout=5) as client:
        expect_error(grpc.StatusCode.UNAVAILABLE, client.models)
        with pytest.raises(gmmscore.Error) as caught:
            with client.stream(["spk1"]) as s:
                s.push(np.zeros((1, 3)))
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE
        expect_error(grpc.StatusCode.UNAVAILABLE, client.wait_ready, 0.2)


def test_a_deadline_too_short_is_deadline_exceeded(client, models, rng):
    frames = models["spk1"].sample(rng, 2000)
    expect_error(grpc.StatusCode.DEADLINE_EXCEEDED, client.score, frames, ["spk1", "spk2"],
                 timeout=1e-6)


TOKEN = secrets.token_hex(16)


@pytest.fixture(scope="module")
def token_daemon(binaries, workdir, models):
    token_file = workdir / "scoring.token"
    token_file.write_text(TOKEN + "\n")
    daemon = Daemon.start(binaries, workdir / "repo", ["--scoring_token_file", token_file],
                          token=TOKEN)
    yield daemon
    daemon.stop()


@pytest.mark.parametrize("token", [None, "wrong-token-of-32-characters-xx"])
def test_a_missing_or_wrong_token_is_unauthenticated(token_daemon, models, rng, token):
    unauthenticated = grpc.StatusCode.UNAUTHENTICATED
    frames = models["spk1"].sample(rng, 3)
    with gmmscore.Client(token_daemon.address, token=token) as client:
        expect_error(unauthenticated, client.models)
        expect_error(unauthenticated, client.score, frames, ["spk1"])
        expect_error(unauthenticated, client.server_stats)
        expect_error(unauthenticated, client.get_adaptation, "x")
        with pytest.raises(gmmscore.Error) as caught:
            with client.stream(["spk1"]) as s:
                s.push(frames)
        assert caught.value.code == unauthenticated


def test_the_right_token_is_let_in(token_daemon, models, rng):
    frames = models["spk1"].sample(rng, 3)
    with gmmscore.Client(token_daemon.address, token=TOKEN) as client:
        assert "spk1" in [m.name for m in client.models()]
        assert client.score(frames, ["spk1"]).loglikes.shape[0] == 3
        with client.stream(["spk1"]) as s:
            s.push(frames)
            s.close()
            assert [a.num_frames for a in s] == [3]


def test_errors_print_code_and_message():
    error = gmmscore.Error(grpc.StatusCode.NOT_FOUND, "no model named 'x'")
    assert str(error) == "NOT_FOUND: no model named 'x'"
    assert isinstance(error, Exception) and error.code == grpc.StatusCode.NOT_FOUND
    assert "NOT_FOUND" in repr(error)
    assert str(gmmscore.Error(grpc.StatusCode.CANCELLED)) == "CANCELLED"
