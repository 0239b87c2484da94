#!/usr/bin/env bash
# Installs the Debian 12 packages gmmscore builds and tests with. Idempotent:
# does nothing when they are all present. Needs root (or sudo) on a fresh
# machine. CUDA is optional and not installed here: with nvcc at
# /usr/local/cuda the CUDA backend is built too.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev zlib1g-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libmicrohttpd-dev openssl
  libsphinxbase-dev pocketsphinx-testdata pocketsphinx-en-us pocketsphinx
  python3-venv python3-grpcio python3-numpy python3-protobuf python3-pytest  # client/python
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "install_deps: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
