"""Audio streams end to end (StreamConfig.audio): the answers to a
recording pushed in random pieces, as PCM16 or float32, equal the offline
engine's scores of `gmmscore features --cmn live` on the whole recording
(scorer.proto's AudioStreamConfig contract). Needs the en-us model and
librivox speech (skipped without them)."""
import grpc
import numpy as np
import pytest

import gmmscore
from checks import assert_close, assert_half, assert_sparse
from conftest import EN_US_MODEL
from kaldi_ark import read_matrices
from speech_data import read_pcm16


@pytest.fixture(scope="module")
def recording(speech, have_audio_streams, rng_module):
    assert have_audio_streams, "the binaries under test do not know audio streams"
    _, _, path = speech[int(rng_module.integers(len(speech)))]
    return path


@pytest.fixture(scope="module")
def rng_module():
    return np.random.default_rng()


@pytest.fixture(scope="module")
def offline_scores(recording, binaries, workdir, offline):
    """The offline engine's scores of the recording's live-CMN features."""
    features = workdir / "audio_live.ark"
    binaries.cli("features", "--input", recording, "--model", EN_US_MODEL, "--cmn", "live",
                 "--output", f"ark:{features}")
    frames = next(iter(read_matrices(features).values()))
    return offline.score(EN_US_MODEL, {"u": frames})["u"]


def pieces(rng, samples):
    """`samples` cut at random: single samples, a few ms, up to a second."""
    cuts, at = [], 0
    while at < len(samples):
        size = int(rng.choice([1, rng.integers(2, 200), rng.integers(200, 16000)]))
        cuts.append(samples[at:at + size])
        at += size
    return cuts


def stream_audio(client, chunks, audio, models=("en-us",), **options):
    with client.stream(list(models), audio=audio, **options) as s:
        for chunk in chunks:
            s.push_audio(chunk)
        s.close()
        answers = list(s)
    firsts = np.cumsum([0] + [a.num_frames for a in answers])[:-1]
    assert [a.first_frame for a in answers] == list(firsts)
    return answers


def test_pcm16_audio_scores_as_its_live_features(client, recording, offline_scores, rng):
    pcm, rate = read_pcm16(recording)
    answers = stream_audio(client, pieces(rng, pcm), True, sample_rate=rate)
    got = np.vstack([a.loglikes for a in answers])
    assert got.shape == offline_scores.shape
    assert_close(got, offline_scores)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_audio_scores_as_pcm16(client, recording, offline_scores, rng, dtype):
    pcm, rate = read_pcm16(recording)
    samples = (pcm.astype(np.float64) / 32768).astype(dtype)
    answers = stream_audio(client, pieces(rng, samples), "float32", sample_rate=rate)
    assert_close(np.vstack([a.loglikes for a in answers]), offline_scores)


def test_audio_with_sparse_half_answers_and_two_models(client, recording, offline_scores,
                                                       rng):
    pcm, rate = read_pcm16(recording)
    answers = stream_audio(client, pieces(rng, pcm), True, models=("en-us", "en-us-2"),
                           sample_rate=rate, top_k=20, float16=True)
    for name in ("en-us", "en-us-2"):
        got = np.vstack([a.scores[name] for a in answers])
        assert_sparse(got, offline_scores, top_k=20, where=name)
        assert_half(got, offline_scores, name)
    assert all(a.dominant_model in ("en-us", "en-us-2") for a in answers)


def test_audio_at_another_rate_is_refused(client, recording):
    pcm, _ = read_pcm16(recording)
    with pytest.raises(gmmscore.Error) as caught:
        stream_audio(client, [pcm[:8000]], True, sample_rate=8000)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_audio_on_a_model_without_a_front_end_is_refused(client, models):
    # A native synthetic model: not a Sphinx directory, no front_end section.
    with pytest.raises(gmmscore.Error) as caught:
        stream_audio(client, [np.zeros(1600, np.int16)], True, models=("spk1",))
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "has no front end" in caught.value.message
