"""Real speech for the alignment and audio tests: pocketsphinx's librivox
recordings (Debian's pocketsphinx-testdata) with their transcripts."""
import pathlib
import wave

import numpy as np

LIBRIVOX = pathlib.Path("/usr/share/pocketsphinx/test/data/librivox")


def have_librivox():
    return (LIBRIVOX / "transcription").is_file()


def utterances():
    """[(id, words, wav path)] of the librivox recordings, in transcript order."""
    found = []
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        text, _, rest = line.rpartition("(")
        words = [w for w in text.split() if w not in ("<s>", "</s>")]
        utt = rest.rstrip(")").strip()
        found.append((utt, words, LIBRIVOX / f"{utt}.wav"))
    return found


def read_pcm16(path):
    """(int16 samples, sample rate) of a 16-bit mono WAV."""
    with wave.open(str(path)) as wav:
        assert wav.getsampwidth() == 2 and wav.getnchannels() == 1, path
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2"), wav.getframerate()
