#!/usr/bin/env bash
# Installs a build into a fresh prefix and checks what a user gets there:
# the binaries (--version, a daemon serving a model made with the installed
# CLI) and the client library, by building tests/install/decoder.cc against
# it twice (find_package(gmmscore) and pkg-config gmmscore-client) and
# streaming through the installed daemon with each.
#   tests/install_test.sh BUILD_DIR      # CTest runs it (label no_asan)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:?usage: install_test.sh BUILD_DIR}")
work=$(mktemp -d)
daemon=""
cleanup() { [ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for program in gmmscored gmmscore gmmscore-load; do
  "$prefix/bin/$program" --version | grep -q "^$program [0-9]" || { echo "install_test: $program --version"; exit 1; }
done

mkdir "$work/repo"
"$prefix/bin/gmmscore" synth --states 12 --gaussians 2 --dim 5 --seed 3 --output "$work/repo/am.gmm" 2> /dev/null
"$prefix/bin/gmmscored" --model_repository "$work/repo" --listen 127.0.0.1:0 --backend cpu > "$work/daemon.log" 2>&1 &
daemon=$!
address=""
for _ in $(seq 100); do
  address=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$work/daemon.log" | head -1)
  [ -n "$address" ] && break
  sleep 0.1
done
[ -n "$address" ] || { echo "install_test: the installed gmmscored did not start"; cat "$work/daemon.log"; exit 1; }

# The decoder's own CMake build: find_package(gmmscore), target gmmscore::client.
cmake -S "$source_dir/tests/install" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake-build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
# And with pkg-config only.
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs gmmscore-client)
# shellcheck disable=SC2086
c++ -std=c++20 -O1 "$source_dir/tests/install/decoder.cc" $flags -o "$work/decoder-pc"

for decoder in "$work/cmake-build/decoder" "$work/decoder-pc"; do
  out=$("$decoder" "$address" am 5)
  [ "$out" = "frames 20 states 12" ] || { echo "install_test: $decoder printed '$out'"; exit 1; }
done
echo "install_test: installed binaries, find_package(gmmscore) and pkg-config gmmscore-client all work"
