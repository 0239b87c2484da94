#!/usr/bin/env bash
# Builds the CUDA statistics test and benchmark here (Debian 12 + nvcc) in
# build-cuda-train/ and bundles them, with the shared libraries ldd lists
# (not libc/libm/libstdc++/libgcc_s, and not cuBLAS, which the GPU machine's
# CUDA provides), into .device-train/, packed as .devpack-train/bundle.tar.xz
# for the device tool's carry (both git-ignored). Then on the GPU machine:
#   kernels/train/cuda/gpu_run.sh      (with carry [".devpack-train"])
# Also writes the ptxas register / spill / shared-memory report of the
# statistics kernels to .device-train/ptxas.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${BUILD_DIR:-build-cuda-train}
targets=(${TARGETS:-cuda_stats_backend_test train_stats_bench gmmscore})  # TARGETS="..." for fewer
cmake -S . -B "$build" -G Ninja -DGMMSCORE_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" "${targets[@]}"
rm -rf .device-train && mkdir -p .device-train/bin .device-train/lib
for t in "${targets[@]}"; do find "$build" -type f -name "$t" -perm -u+x -exec cp {} .device-train/bin/ \;; done
# Real speech for train-gmm on the GPU (pocketsphinx-testdata cepstra).
data=/usr/share/pocketsphinx/test/data
if [ -f "$data/goforward.mfc" ]; then
  mkdir -p .device-train/demo
  tools/sphinx_mfc_to_ark.sh .device-train/demo/feats.ark "$data/goforward.mfc" "$data"/tidigits/*.mfc >/dev/null
fi
for b in .device-train/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libcublas|libcublasLt|ld-linux[^/]*|libdl|librt|libpthread)\.so' |
  while read -r lib; do cp -L "$lib" .device-train/lib/; done
strip --strip-unneeded .device-train/bin/* .device-train/lib/* 2>/dev/null || true
for source in stats_kernels stats_tc_kernels stats_dmma_kernels; do
  /usr/local/cuda/bin/nvcc -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -Xptxas -v --expt-relaxed-constexpr -I. \
    -c kernels/train/cuda/$source.cu -o /dev/null 2>&1 |
    grep -E 'Compiling|registers|spill' | sed -E 's/ptxas info *: //' >> .device-train/ptxas.txt || true
done
# The kernels' machine code, for cuobjdump -sass on the GPU machine (none here).
/usr/local/cuda/bin/nvcc -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr -I. -cubin \
  -o .device-train/stats_kernels.cubin kernels/train/cuda/stats_kernels.cu
mkdir -p .devpack-train
tar cf - .device-train | xz -T2 -6 > .devpack-train/bundle.tar.xz
du -sh .device-train .devpack-train
