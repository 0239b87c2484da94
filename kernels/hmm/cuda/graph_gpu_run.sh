#!/usr/bin/env bash
# Runs on the GPU machine over a carried .devpack-graph/ (graph_device_bundle.sh):
# the plan and CUDA tests for real (printing their graph_error lines),
# compute-sanitizer memcheck and racecheck on small cases, then the
# benchmark. Logs go to $OUT (or /tmp/graph-gpu); each step has its own
# time limit, so one slow step leaves the others' results.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/graph-gpu}
mkdir -p "$OUT"
tar xJf .devpack-graph/bundle.tar.xz
cublas_dir=$(dirname "$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 \
  2>/dev/null | head -1)" 2>/dev/null)
if [ -z "$cublas_dir" ] || [ "$cublas_dir" = "." ]; then
  cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))')
fi
export LD_LIBRARY_PATH="$PWD/.device-graph/lib:$cublas_dir:${LD_LIBRARY_PATH:-}"
bin=.device-graph/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
status=0

for t in graph_batch_plan_test graph_hmm_cuda_test; do
  echo "=== $t"
  start=$SECONDS
  timeout ${TEST_LIMIT:-150} $bin/$t --gtest_color=no > "$OUT/$t.log" 2>&1 || status=1
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|seed|Failure|Expected|Which is|actual|graph_error' "$OUT/$t.log" | head -60
  echo "$t seconds $((SECONDS - start))"
done

if [ -z "${SKIP_SANITIZER:-}" ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    echo "=== compute-sanitizer $tool"
    filter='*ManyIncomingArcs*:*NoPath*'
    [ $tool = memcheck ] && filter="$filter:*DeviceScores*"
    timeout ${SANITIZER_LIMIT:-60} compute-sanitizer --tool $tool --print-limit 10 $bin/graph_hmm_cuda_test \
      --gtest_color=no --gtest_filter="$filter" > "$OUT/$tool.log" 2>&1
    echo "exit $?"
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|hazard|PASSED|FAILED|Barrier' "$OUT/$tool.log" | head -12
  done
fi

if [ -z "${SKIP_BENCH:-}" ]; then
  echo "=== bench"
  start=$SECONDS
  timeout ${BENCH_LIMIT:-200} $bin/graph_hmm_bench ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "bench seconds $((SECONDS - start))"
fi

if [ -z "${SKIP_NCU:-}" ] && command -v ncu >/dev/null; then
  for c in ${NCU_CASES:-batch long}; do
    echo "=== ncu: the $c case's Viterbi and float64 forward-backward kernels"
    timeout ${NCU_LIMIT:-90} ncu --clock-control none --kernel-name-base function \
      -k 'regex:ViterbiKernel|ForwardBackwardKernel' -c 2 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
      $bin/graph_hmm_bench --cases $c --repeats 0 --host_entry=false > "$OUT/ncu_$c.log" 2>&1
    echo "exit $?"
    grep -E 'Kernel<|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit (Reg|Shared)|No Eligible|Active Warps Per|Warp Cycles Per Issued|Dynamic Shared|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth' "$OUT/ncu_$c.log" | head -50
  done
fi
cat .device-graph/ptxas.txt | paste - - - | sed -E 's/_ZN8gmmscore.*kernels_cu_[0-9a-f]+//' | cut -c1-160
exit $status
