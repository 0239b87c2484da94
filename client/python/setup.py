"""Builds the gmmscore Python client and generates its gRPC stubs.

    python3 -m venv --system-site-packages V && V/bin/pip install ./client/python

While the package is built (pip install, setup.py build/install/develop),
protoc and gRPC's Python plugin compile the repository's
proto/gmmscore/v1/*.proto (../../proto from here) into gmmscore/v1/ of the
build, so that `gmmscore.v1.scorer_pb2` and `scorer_pb2_grpc` import as the
.proto files import each other (gmmscore/v1/...). grpc/health is not
generated: it would shadow the grpc package's own.

There is deliberately no pyproject.toml: with one, pip 23 builds in an
isolated environment and tries to download setuptools; without one it uses
the setuptools every venv already has, so the install works offline.
Environment overrides: PROTOC (default: protoc on PATH) and
GRPC_PYTHON_PLUGIN (default: /usr/bin/grpc_python_plugin, Debian's
protobuf-compiler-grpc).
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
DEFAULT_PLUGIN = "/usr/bin/grpc_python_plugin"


def _fail(message):
    raise SystemExit("gmmscore setup.py: " + message)


def generate_stubs(out_root):
    """Compiles proto/gmmscore/v1/*.proto into out_root/gmmscore/v1/.

    Exits with a message naming what is missing: the proto directory (the
    package is built from a gmmscore checkout, client/python beside proto/),
    protoc (apt-get install protobuf-compiler) or the gRPC Python plugin
    (apt-get install protobuf-compiler-grpc), or with protoc's own error.
    """
    protos = sorted(glob.glob(os.path.join(PROTO_ROOT, "gmmscore", "v1", "*.proto")))
    if not protos:
        _fail(f"no .proto files in {PROTO_ROOT}/gmmscore/v1: build client/python from a "
              "gmmscore checkout (it reads ../../proto)")
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    if not protoc or not os.access(protoc, os.X_OK):
        _fail(f"protoc not found{' at ' + protoc if protoc else ''} (apt-get install "
              "protobuf-compiler, or set PROTOC)")
    plugin = os.environ.get("GRPC_PYTHON_PLUGIN", DEFAULT_PLUGIN)
    if not os.access(plugin, os.X_OK):
        _fail(f"gRPC Python plugin {plugin} not found (apt-get install protobuf-compiler-grpc, "
              "or set GRPC_PYTHON_PLUGIN)")
    os.makedirs(out_root, exist_ok=True)
    command = [protoc, f"-I{PROTO_ROOT}", f"--python_out={out_root}",
               f"--grpc_python_out={out_root}",
               f"--plugin=protoc-gen-grpc_python={plugin}"] + protos
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        _fail(f"protoc failed ({' '.join(command)}):\n{result.stderr}")


class BuildPyWithStubs(build_py):
    """build_py, then the stubs into the build tree (so they are installed).

    pip builds in the source tree and build_py only adds and updates files,
    so the package is built afresh: a module deleted from the source must
    not live on in build/lib and be installed again."""

    def run(self):
        if not self.dry_run:
            shutil.rmtree(os.path.join(self.build_lib, "gmmscore"), ignore_errors=True)
        super().run()
        if not self.dry_run:
            generate_stubs(self.build_lib)


class DevelopWithStubs(develop):
    """Editable installs import from the source tree: generate the stubs there
    (they are ignored by git)."""

    def run(self):
        generate_stubs(HERE)
        super().run()


setup(cmdclass={"build_py": BuildPyWithStubs, "develop": DevelopWithStubs})
