"""Client.align on real speech: Debian's pocketsphinx en-us model with
cmudict and pocketsphinx's librivox recordings (skipped without them),
from audio and from features, against the offline aligner's CTM
(`gmmscore align`)."""
import grpc
import pytest

import gmmscore
from conftest import EN_US_DICT, EN_US_MODEL
from kaldi_ark import read_matrices
from speech_data import read_pcm16


@pytest.fixture(scope="module")
def offline_ctm(speech, binaries, workdir):
    """{utt: [(word, start, duration)]} from the offline aligner."""
    directory = workdir / "align"
    directory.mkdir()
    (directory / "wav.scp").write_text("".join(f"{u} {p}\n" for u, _, p in speech))
    (directory / "text").write_text("".join(f"{u} {' '.join(w)}\n" for u, w, _ in speech))
    binaries.cli("align", "--model", EN_US_MODEL, "--dict", EN_US_DICT, "--transcripts",
                 directory / "text", "--audio", directory / "wav.scp", "--output",
                 f"ctm:{directory / 'out.ctm'}", "--backend", "cpu")
    ctm = {}
    for line in (directory / "out.ctm").read_text().splitlines():
        utt, _, start, duration, word = line.split()[:5]
        ctm.setdefault(utt, []).append((word, float(start), float(duration)))
    return ctm


def words_of(response):
    return [(s.label, s.start_seconds, s.duration_seconds) for s in response.words if not s.filler]


def assert_same_words(got, want):
    assert [w for w, _, _ in got] == [w for w, _, _ in want]
    for (word, start, duration), (_, want_start, want_duration) in zip(got, want):
        assert abs(start - want_start) < 0.006 and abs(duration - want_duration) < 0.006, word


def test_align_audio_equals_the_offline_aligner(client, speech, offline_ctm):
    for utt, words, path in speech[:3]:
        pcm, rate = read_pcm16(path)
        response = client.align("en-us", words, audio=pcm, sample_rate=rate, utterance_id=utt,
                                phones=True)
        assert response.utterance_id == utt and response.frame_seconds == pytest.approx(0.01)
        assert_same_words(words_of(response), offline_ctm[utt])
        assert [s.word_index for s in response.words if not s.filler] == list(range(len(words)))
        assert response.phones and response.phones[-1].first_frame + \
            response.phones[-1].num_frames == response.num_frames


def test_align_features_equals_align_audio(client, speech, binaries, workdir):
    utt, words, path = speech[1]
    features_path = workdir / "align_features.ark"
    binaries.cli("features", "--input", path, "--model", EN_US_MODEL, "--output",
                 f"ark:{features_path}")
    features = next(iter(read_matrices(features_path).values()))
    pcm, rate = read_pcm16(path)
    from_features = client.align("en-us", " ".join(words), features=features)
    from_audio = client.align("en-us", words, audio=pcm.tobytes(), sample_rate=rate)
    assert from_features.num_frames == len(features)
    assert words_of(from_features) == words_of(from_audio)
    assert from_features.log_likelihood == pytest.approx(from_audio.log_likelihood, rel=1e-4)


def test_align_refusals(client, speech):
    _, words, path = speech[0]
    pcm, rate = read_pcm16(path)
    with pytest.raises(gmmscore.Error) as unknown_word:
        client.align("en-us", words + ["qzxvbnmw"], audio=pcm, sample_rate=rate)
    assert unknown_word.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "qzxvbnmw" in unknown_word.value.message
    with pytest.raises(gmmscore.Error) as too_short:
        client.align("en-us", words, audio=pcm[:1600], sample_rate=rate)
    assert too_short.value.code == grpc.StatusCode.OUT_OF_RANGE
    with pytest.raises(gmmscore.Error) as wrong_rate:
        client.align("en-us", words, audio=pcm, sample_rate=8000)
    assert wrong_rate.value.code == grpc.StatusCode.INVALID_ARGUMENT
