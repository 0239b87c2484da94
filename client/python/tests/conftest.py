"""Fixtures: a real gmmscored (CPU backend) over small synthetic models, the
offline engine, and fresh random inputs.

The session's daemon serves spk1, spk2, spk3 (same dimension and states, so
they fuse), `other` (other states) and, when Debian's pocketsphinx-en-us is
installed, the CMU Sphinx model as `en-us` and `en-us-2` with cmudict
(Align, audio streams). Binaries come
from GMMSCORE_BIN_DIR (daemon_util.py). Every test draws new random inputs;
the seed is printed, so a failure can be replayed with GMMSCORE_TEST_SEED.
"""
import os
import pathlib
import secrets

import numpy as np
import pytest

import gmmscore
from daemon_util import Binaries, Daemon
from offline import Offline
from speech_data import have_librivox, utterances
from synth_models import SynthModel

EN_US_MODEL = pathlib.Path("/usr/share/pocketsphinx/model/en-us/en-us")
EN_US_DICT = pathlib.Path("/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict")
STATES, GAUSSIANS, DIM = 24, 4, 13


@pytest.fixture(scope="session")
def binaries():
    return Binaries.find()


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("gmmscore_py")


@pytest.fixture(scope="session")
def models(binaries, workdir):
    """name -> SynthModel of the session daemon's synthetic models."""
    repo = workdir / "repo"
    repo.mkdir()
    made = {name: SynthModel.make(binaries, repo, name, STATES, GAUSSIANS, DIM, seed)
            for name, seed in (("spk1", 11), ("spk2", 12), ("spk3", 13))}
    made["other"] = SynthModel.make(binaries, repo, "other", STATES + 6, GAUSSIANS, DIM, 14)
    return made


@pytest.fixture(scope="session")
def have_en_us():
    return EN_US_MODEL.is_dir() and EN_US_DICT.is_file()


@pytest.fixture(scope="session")
def speech(have_en_us):
    """The librivox utterances (speech_data.py); skips without them or en-us."""
    if not have_en_us or not have_librivox():
        pytest.skip("needs Debian's pocketsphinx-en-us and pocketsphinx-testdata")
    return utterances()


@pytest.fixture(scope="session")
def have_audio_streams(binaries):
    """Whether the binaries know audio streams (their CLI's `features --cmn
    live` came with them)."""
    return "--cmn" in binaries.cli("features", "--help")


@pytest.fixture(scope="session")
def daemon(binaries, workdir, models, have_en_us):
    repo = workdir / "repo"
    flags = []
    if have_en_us:
        # Twice: two models of one state set (and front end) to fuse.
        (repo / "en-us").symlink_to(EN_US_MODEL)
        (repo / "en-us-2").symlink_to(EN_US_MODEL)
        flags += ["--align_dictionary", EN_US_DICT]
    started = Daemon.start(binaries, repo, flags)
    yield started
    code = started.stop()
    assert code == 0, f"gmmscored exited with {code}"


@pytest.fixture
def client(daemon):
    with gmmscore.Client(daemon.address) as opened:
        yield opened


@pytest.fixture(scope="session")
def offline(binaries, workdir):
    directory = workdir / "offline"
    directory.mkdir()
    return Offline(binaries, directory)


@pytest.fixture
def rng():
    seed = int(os.environ.get("GMMSCORE_TEST_SEED") or secrets.randbits(32))
    print(f"random seed {seed} (replay: GMMSCORE_TEST_SEED={seed})")
    return np.random.default_rng(seed)
