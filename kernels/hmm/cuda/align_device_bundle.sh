#!/usr/bin/env bash
# Builds the alignment and HMM GPU binaries here (Debian 12 + nvcc) and
# bundles them with the shared libraries ldd lists (not libc/libm/
# libstdc++/libgcc_s, and not cuBLAS, which the GPU machine provides) and
# the pocketsphinx data they read (the en-us model, its dictionary, the
# librivox recordings) into .device-align/, packed as
# .devpack-align/bundle.tar.xz for the device tool's carry (both
# git-ignored). Then on the GPU machine, with carry [".devpack-align"]:
#   kernels/hmm/cuda/align_gpu_run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${BUILD_DIR:-build}
targets=(align_bench device_align_engine_test sphinx_bw_cuda_test dense_graph_cuda_test graph_hmm_cuda_test forward_backward_cuda_test hmm_bench gmmscore
         gmmscored)
ninja -C "$build" "${targets[@]}"
rm -rf .device-align && mkdir -p .device-align/bin .device-align/lib .device-align/pocketsphinx/test/data
for t in "${targets[@]}"; do find "$build" -type f -name "$t" -perm -u+x -exec cp {} .device-align/bin/ \;; done
for b in .device-align/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libcublas|libcublasLt|ld-linux[^/]*|libdl|librt|libpthread)\.so' |
  while read -r lib; do cp -L "$lib" .device-align/lib/; done
strip --strip-unneeded .device-align/bin/* .device-align/lib/* 2>/dev/null || true
cp -r /usr/share/pocketsphinx/model .device-align/pocketsphinx/
rm -f .device-align/pocketsphinx/model/en-us/*.lm.bin
cp -r /usr/share/pocketsphinx/test/data/librivox /usr/share/pocketsphinx/test/data/cards /usr/share/pocketsphinx/test/data/an4_ci_cont .device-align/pocketsphinx/test/data/
cp tools/bench_hmm_pytorch.py .device-align/
mkdir -p .devpack-align
tar cf - .device-align | xz -T2 -6 > .devpack-align/bundle.tar.xz
du -sh .device-align .devpack-align
