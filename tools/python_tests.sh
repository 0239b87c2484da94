#!/usr/bin/env bash
# Tests the Python client (client/python) against a build's gmmscored and
# gmmscore: installs the client into a fresh venv exactly as
# client/python/README.md says, then runs its pytest suite. Works offline;
# exits non-zero if the install or any test fails.
#   tools/python_tests.sh [BUILD_DIR]      # default: build
# Needs Debian's python3-venv python3-grpcio python3-numpy python3-protobuf
# python3-pytest protobuf-compiler protobuf-compiler-grpc; the alignment,
# audio-stream and TLS tests also use pocketsphinx-en-us,
# pocketsphinx-testdata and openssl (tools/install_deps.sh has them) and
# skip without them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
for binary in server/gmmscored client/cli/gmmscore; do
  if [ ! -x "$build/$binary" ]; then
    echo "python_tests: no $build/$binary (build it first)" >&2
    exit 2
  fi
done
# Debian's interpreter: the apt packages are in its dist-packages, which a
# python3 earlier on PATH (pyenv, /usr/local) would not see.
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Everything the client needs is installed already: never wait on an index
# (or on pip's own version check) that an offline machine cannot reach.
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
"$python" -m venv --system-site-packages "$work/V"
"$work/V/bin/pip" install ./client/python
GMMSCORE_BIN_DIR="$build" "$work/V/bin/python" -m pytest -q -p no:cacheprovider client/python/tests
