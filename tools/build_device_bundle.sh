#!/usr/bin/env bash
# Builds the GPU-side binaries here (Debian 12 + nvcc) and bundles them, with
# the shared libraries ldd lists (not libc/libm/libstdc++/libgcc_s, and not
# cuBLAS, which the GPU machine's CUDA install provides), into .device/ so the
# device tool can carry them to a machine without our Debian packages.
#   tools/build_device_bundle.sh && <device run, carry .devpack> tools/gpu_check.sh
# TARGETS="cuda_backend_test loglik_bench" bundles only those (a kernel's
# tests and benchmark without building the daemon).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TARGETS:-}" ]; then
  read -r -a targets <<< "$TARGETS"
else
  targets=(cuda_backend_test fused_layout_test loglik_bench)
  targets+=($(cat tools/device_extra_targets.txt 2>/dev/null || true))
fi
build=${BUILD_DIR:-build-device}
cmake -S . -B "$build" -G Ninja -DGMMSCORE_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" "${targets[@]}"
rm -rf .device && mkdir -p .device/bin .device/lib
for t in "${targets[@]}"; do
  find "$build" -type f -name "$t" -perm -u+x -exec cp {} .device/bin/ \;
done
for b in .device/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libcublas|libcublasLt|ld-linux[^/]*|libdl|librt|libpthread)\.so' |
  while read -r lib; do cp -L "$lib" .device/lib/; done
strip --strip-unneeded .device/bin/* .device/lib/* 2>/dev/null || true
# The demo's model, dictionary and speech (pocketsphinx-en-us and
# -testdata): the GPU machine has no Debian packages.
ps=/usr/share/pocketsphinx
if [ -d "$ps/model/en-us/en-us" ] && [ -d "$ps/test/data/librivox" ]; then
  mkdir -p .device/pocketsphinx/model/en-us .device/pocketsphinx/test/data
  cp -r "$ps/model/en-us/en-us" "$ps/model/en-us/cmudict-en-us.dict" .device/pocketsphinx/model/en-us/
  cp -r "$ps/test/data/librivox" .device/pocketsphinx/test/data/
fi
# OpenBLAS alone is 36 MB: pack the bundle so it fits the 64 MiB carry limit.
mkdir -p .devpack
tar cf - .device | xz -T2 -6 > .devpack/bundle.tar.xz
du -sh .device .devpack
# Register / spill report of every kernel, for docs/PERFORMANCE.md.
/usr/local/cuda/bin/nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90,code=sm_90 -Xptxas -v -I. \
  -c kernels/cuda/loglik_launch.cu -o /dev/null 2>&1 | grep -E 'Compiling|registers|spill' > .device/ptxas.txt || true
