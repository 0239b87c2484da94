#!/usr/bin/env bash
# Builds the graph recursions' tests and benchmark here (Debian 12 + nvcc)
# and bundles them, with the shared libraries ldd lists (not libc/libm/
# libstdc++/libgcc_s, and not cuBLAS, which the GPU machine provides), into
# .device-graph/, packed as .devpack-graph/bundle.tar.xz for the device
# tool's carry (both git-ignored). Then on the GPU machine:
#   kernels/hmm/cuda/graph_gpu_run.sh      (with carry [".devpack-graph"])
# Also writes the kernels' ptxas register / spill report to .device-graph/ptxas.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${BUILD_DIR:-/work/build-graphcuda}
targets=(graph_batch_plan_test graph_hmm_cuda_test graph_hmm_bench)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" "${targets[@]}"
rm -rf .device-graph && mkdir -p .device-graph/bin .device-graph/lib
for t in "${targets[@]}"; do find "$build" -type f -name "$t" -perm -u+x -exec cp {} .device-graph/bin/ \;; done
for b in .device-graph/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libcublas|libcublasLt|ld-linux[^/]*|libdl|librt|libpthread)\.so' |
  while read -r lib; do cp -L "$lib" .device-graph/lib/; done
strip --strip-unneeded .device-graph/bin/* .device-graph/lib/* 2>/dev/null || true
/usr/local/cuda/bin/nvcc -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -Xptxas -v -I. \
  -c kernels/hmm/cuda/graph_hmm_kernels.cu -o /dev/null 2>&1 |
  grep -E 'Compiling|registers|spill' | sed -E 's/ptxas info *: //' > .device-graph/ptxas.txt || true
mkdir -p .devpack-graph
tar cf - .device-graph | xz -T2 -6 > .devpack-graph/bundle.tar.xz
du -sh .device-graph .devpack-graph
