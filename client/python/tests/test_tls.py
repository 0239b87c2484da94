"""TLS: a gmmscored with a test certificate (made here with the openssl CLI,
as tests/ops_make_certs.sh does; skipped without it), reached with the CA as
a path or as bytes, with a token too; a plaintext client is refused."""
import asyncio
import shutil
import subprocess

import grpc
import pytest

import gmmscore
from daemon_util import Daemon


def make_certificates(directory):
    """ca.pem and a server certificate for 127.0.0.1 signed by it."""
    def openssl(*args):
        subprocess.run(["openssl", *map(str, args)], cwd=directory, check=True,
                       capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=gmmscore python test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
            "server.csr", "-subj", "/CN=localhost")
    (directory / "ext.cnf").write_text(
        "[server]\nsubjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf",
            "-extensions", "server")


@pytest.fixture(scope="module")
def tls_daemon(binaries, workdir, models):
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl CLI")
    directory = workdir / "tls"
    directory.mkdir()
    make_certificates(directory)
    ca = directory / "ca.pem"
    daemon = Daemon.start(binaries, workdir / "repo", ["--tls_cert", directory / "server.pem",
                                                       "--tls_key", directory / "server.key"],
                          tls=ca)
    yield daemon, ca
    daemon.stop()


def test_tls_with_a_ca_file_or_bytes(tls_daemon, models, rng):
    daemon, ca = tls_daemon
    frames = models["spk1"].sample(rng, 4)
    for tls in (ca, str(ca), ca.read_bytes()):
        with gmmscore.Client(daemon.address, tls=tls, token="unused-by-this-server") as client:
            assert client.score(frames, ["spk1"]).loglikes.shape == (4, 24)
            with client.stream(["spk1", "spk2"]) as s:
                s.push(frames)
                s.close()
                assert [a.dominant_model in ("spk1", "spk2") for a in s] == [True]


def test_async_tls(tls_daemon):
    daemon, ca = tls_daemon

    async def models():
        async with gmmscore.aio.Client(daemon.address, tls=ca) as client:
            return [m.name for m in await client.models()]

    assert "spk1" in asyncio.run(models())


def test_plaintext_or_an_unknown_ca_is_refused(tls_daemon):
    daemon, _ = tls_daemon
    for tls in (None, True):  # the system's roots do not know the test CA
        with gmmscore.Client(daemon.address, tls=tls, timeout=5) as client:
            with pytest.raises(gmmscore.Error) as caught:
                client.models()
            assert caught.value.code == grpc.StatusCode.UNAVAILABLE
