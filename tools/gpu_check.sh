#!/usr/bin/env bash
# Runs on the GPU machine over a carried .device/ bundle (see
# tools/build_device_bundle.sh): every GPU test for real, then the benchmark
# with its ceilings, then the PyTorch comparison; prints a short table last.
# Full logs and CSVs go to $OUT (or /tmp/gmmscore-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gmmscore-gpu}
mkdir -p "$OUT"
# The bundle travels xz-packed (.devpack/) when .device/ would exceed the
# device tool's 64 MiB limit.
if [ -f .devpack/bundle.tar.xz ]; then tar xJf .devpack/bundle.tar.xz; fi
# Integration tests run their in-process daemon on the GPU backend here.
export GMMSCORE_TEST_BACKEND=${GMMSCORE_TEST_BACKEND:-cuda}
cublas_dir=$(dirname "$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 \
  2>/dev/null | head -1)" 2>/dev/null)
if [ -z "$cublas_dir" ] || [ "$cublas_dir" = "." ]; then
  cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))')
fi
export LD_LIBRARY_PATH="$PWD/.device/lib:$cublas_dir:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"

status=0
for t in .device/bin/*_test; do
  echo "=== $t"
  if "$t" --gtest_color=no > "$OUT/$(basename "$t").log" 2>&1; then
    grep -E '^\[  (PASSED|SKIPPED)' "$OUT/$(basename "$t").log"
  else
    status=1
    grep -E 'FAILED|Failure|error' "$OUT/$(basename "$t").log" | head -20
  fi
done
# Worst error per algorithm over every shape and window (normalized and abs).
for t in .device/bin/*_test; do grep -hE '^max_error' "$OUT/$(basename "$t").log"; done |
  awk '{ if ($6 > n[$2]) n[$2] = $6; if ($8 > a[$2]) a[$2] = $8; if ($10 > w[$2]) w[$2] = $10 }
       END { for (k in n) printf "worst error %-8s normalized %.3g abs %.3g abs_within_256 %.3g\n", k, n[k], a[k], w[k] }'

# The daemon on the GPU (issue 3): one chunk alone vs 256 streams batched,
# then the README demo over the model and speech the bundle carries
# (.device/pocketsphinx, see build_device_bundle.sh).
if [ -n "${DAEMON_BENCH:-}" ] && [ -x .device/bin/gmmscored_bench ]; then
  echo "=== gmmscored_bench (cuda)"
  .device/bin/gmmscored_bench --backend cuda ${DAEMON_BENCH_ARGS:---streams 1,256} 2>&1 |
    tee "$OUT/gmmscored_bench.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if [ -n "${DAEMON_BENCH:-}" ] && [ -x .device/bin/gmmscored ] && [ -d .device/pocketsphinx ]; then
  echo "=== demo (cuda)"
  GMMSCORE_BIN_DIR=.device/bin GMMSCORE_POCKETSPHINX=$PWD/.device/pocketsphinx \
    GMMSCORE_DEMO_DIR="$OUT/demo" GMMSCORE_DEMO_BACKEND=cuda tools/demo.sh 2>&1 |
    tee "$OUT/demo.log" | tail -40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if [ -n "${SKIP_BENCH:-}" ]; then exit $status; fi
echo "=== benchmark"
.device/bin/loglik_bench ${BENCH_ARGS:-} --csv "$OUT/bench.csv" 2>&1 | tee "$OUT/bench.log" | tail -40
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "=== PyTorch"
python3 tools/bench_pytorch.py ${TORCH_ARGS:-} --csv "$OUT/torch.csv" 2>&1 | tee "$OUT/torch.log" | tail -20
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
python3 tools/summarize_bench.py "$OUT/bench.csv" "$OUT/torch.csv" || status=1
exit $status
