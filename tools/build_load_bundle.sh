#!/usr/bin/env bash
# Builds gmmscored, gmmscore-load and gmmscore (for `synth`) here, with the
# CUDA backend, and packs them with the shared libraries ldd lists into
# build-loadpack/bundle.tar.xz, so that the device tool can carry them to a
# GPU machine without our Debian packages (gRPC, protobuf, Abseil, OpenBLAS
# travel along; libc, libm, libstdc++, libgcc_s and cuBLAS are the machine's,
# as in build_device_bundle.sh). tools/gpu_capacity.sh runs them there.
#   tools/build_load_bundle.sh && <device run, carry build-loadpack> tools/gpu_capacity.sh a
# EXTRA_TARGETS="multi_device_test ..." packs those binaries (e.g. the
# integration tests, to run on the GPU beside a capacity run) into bin/ too;
# EXTRA_FILES="/tmp/base/base_daemon ..." packs those files (e.g. an older
# gmmscored for a before/after in one device call, DAEMON_BIN in
# gpu_capacity.sh; its libraries must be the bundle's). EXTRA_FILES=/usr/bin/perf
# with NO_STRIP=1 (any value: keep our symbols) lets a device run profile a
# point (PERF_S in gpu_capacity.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-load-cuda}
cuda=${GMMSCORE_CUDA:-ON}
targets=(gmmscored gmmscore-load gmmscore)
read -r -a extra <<< "${EXTRA_TARGETS:-}"
cmake -S . -B "$build" -G Ninja -DGMMSCORE_CUDA="$cuda" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" "${targets[@]}" "${extra[@]}"
stage=build-loadpack/stage
rm -rf build-loadpack && mkdir -p "$stage/bin" "$stage/lib"
cp "$build/server/gmmscored" "$build/client/load/gmmscore-load" "$build/client/cli/gmmscore" \
   "$stage/bin/"
for t in "${extra[@]}"; do
  find "$build" -type f -name "$t" -perm -u+x -exec cp {} "$stage/bin/" \;
done
read -r -a files <<< "${EXTRA_FILES:-}"
for f in "${files[@]}"; do cp "$f" "$stage/bin/"; done
for b in "$stage"/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libcublas|libcublasLt|ld-linux[^/]*|libdl|librt|libpthread)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
[ -n "${NO_STRIP:-}" ] || strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
tar cf - -C "$stage" bin lib | xz -T2 -6 > build-loadpack/bundle.tar.xz
rm -rf "$stage"
du -sh build-loadpack/bundle.tar.xz
