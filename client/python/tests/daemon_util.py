"""A real gmmscored for the tests, and the gmmscore CLI beside it.

    bins = Binaries.find()                  # GMMSCORE_BIN_DIR or the build tree
    daemon = Daemon.start(bins, repo_dir, ["--scoring_token_file", path])
    gmmscore.Client(daemon.address) ...
    daemon.stop()

GMMSCORE_BIN_DIR may be a directory holding both binaries, or a CMake build
directory (server/gmmscored, client/cli/gmmscore); unset, the repository's
build/ (three levels above this file's directory).
"""
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time

import gmmscore

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


class Binaries:
    def __init__(self, gmmscored, gmmscore_cli):
        self.gmmscored = gmmscored
        self.gmmscore = gmmscore_cli

    @staticmethod
    def find():
        root = pathlib.Path(os.environ.get("GMMSCORE_BIN_DIR") or REPO_ROOT / "build")
        for daemon, cli in ((root / "gmmscored", root / "gmmscore"),
                            (root / "server" / "gmmscored", root / "client" / "cli" / "gmmscore")):
            if daemon.is_file() and cli.is_file():
                return Binaries(str(daemon), str(cli))
        raise RuntimeError(f"no gmmscored and gmmscore under {root} (set GMMSCORE_BIN_DIR to a "
                           "directory holding both, or to a build directory)")

    def cli(self, *args):
        """Runs `gmmscore ARGS`; its stdout; fails the test with its stderr."""
        result = subprocess.run([self.gmmscore, *map(str, args)], capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"gmmscore {' '.join(map(str, args))} failed "
                                 f"({result.returncode}):\n{result.stderr}")
        return result.stdout


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Daemon:
    """One gmmscored process on 127.0.0.1:<free port>, CPU backend."""

    def __init__(self, process, address, log_path):
        self.process = process
        self.address = address
        self.log_path = log_path

    @staticmethod
    def start(binaries, repository, flags=(), ready_timeout=30.0, token=None, tls=None):
        """Starts gmmscored serving `repository` with `flags` and waits until
        ListModels answers (with `token`/`tls` when the daemon needs them).
        A daemon that exits at once (a port taken between the probe and its
        bind) is retried on another port."""
        for _ in range(3):
            port = _free_port()
            log = tempfile.NamedTemporaryFile(prefix="gmmscored_", suffix=".log", delete=False)
            process = subprocess.Popen(
                [binaries.gmmscored, "--model_repository", str(repository),
                 "--listen", f"127.0.0.1:{port}", "--backend", "cpu", "--drain_timeout_s", "2",
                 *map(str, flags)],
                stdout=log, stderr=subprocess.STDOUT)
            daemon = Daemon(process, f"127.0.0.1:{port}", log.name)
            if daemon._wait_ready(ready_timeout, token, tls):
                return daemon
            running = process.poll() is None
            log_text = daemon.log()
            daemon.stop()
            if running:  # up but not answering: another port will not help
                break
        raise RuntimeError(f"gmmscored did not answer ListModels; its log:\n{log_text}")

    def _wait_ready(self, timeout, token, tls):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            # A new channel each try: a channel that failed to connect waits
            # out gRPC's reconnect backoff (seconds) before trying again.
            with gmmscore.Client(self.address, tls=tls, token=token, timeout=2.0) as client:
                try:
                    client.models()
                    return True
                except gmmscore.Error:
                    time.sleep(0.05)
        return False

    def log(self):
        with open(self.log_path, errors="replace") as file:
            return file.read()

    def stop(self):
        """SIGTERM (the daemon drains), then SIGKILL if it does not exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        os.unlink(self.log_path)
        return self.process.returncode
