"""The examples run against the test daemon: align_captions.py prints the
transcript's words as timed caption lines; stream_wav.py prints quarter
seconds of best states and the dominant model (when the binaries know
audio streams)."""
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
CUE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) --> (\d\d):(\d\d):(\d\d)\.(\d{3})  (.+)$")


def run_example(name, *args):
    result = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def seconds(h, m, s, ms):
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000


def test_align_captions(daemon, speech, tmp_path):
    _, words, wav = speech[0]
    shown = [w.capitalize() if i % 4 == 0 else w + ("," if i % 5 == 1 else "")
             for i, w in enumerate(words)]
    transcript = tmp_path / "transcript.txt"
    transcript.write_text(" ".join(shown) + ".\n")
    lines = run_example("align_captions.py", "--server", daemon.address, "--model", "en-us",
                        "--max_words", 6, wav, transcript)
    cues = [CUE.match(line) for line in lines]
    assert all(cues), lines
    assert " ".join(c.group(9) for c in cues).split() == (" ".join(shown) + ".").split()
    times = [(seconds(*c.groups()[0:4]), seconds(*c.groups()[4:8])) for c in cues]
    assert all(start < end for start, end in times)
    assert all(a[1] <= b[0] for a, b in zip(times, times[1:]))
    assert all(len(c.group(9).split()) <= 6 for c in cues)


def test_stream_wav(daemon, speech, have_audio_streams):
    assert have_audio_streams, "the binaries under test do not know audio streams"
    _, _, wav = speech[1]
    lines = run_example("stream_wav.py", "--server", daemon.address, "--model",
                        "en-us,en-us-2", "--speed", 8, "--top", 2, wav)
    assert len(lines) >= 8, lines
    pattern = re.compile(r"^ *[\d.]+ s  frame +\d+  best \d+:-?[\d.]+  \d+:-?[\d.]+  "
                         r"dominant en-us(-2)?$")
    assert all(pattern.match(line) for line in lines), lines
