#!/usr/bin/env bash
# Runs on the GPU machine over a carried .devpack-train/ (device_bundle.sh):
# the statistics test for real, the benchmark, then compute-sanitizer
# (memcheck, racecheck) on small cases and one Nsight Compute profile of
# each kernel. Logs and the CSV go to $OUT (or /tmp/stats-gpu). Each step has
# its own time limit, so one slow step leaves the others' results.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/stats-gpu}
mkdir -p "$OUT"
tar xJf .devpack-train/bundle.tar.xz
cublas_dir=$(dirname "$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 \
  2>/dev/null | head -1)" 2>/dev/null)
if [ -z "$cublas_dir" ] || [ "$cublas_dir" = "." ]; then
  cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))')
fi
export LD_LIBRARY_PATH="$PWD/.device-train/lib:$cublas_dir:${LD_LIBRARY_PATH:-}"
bin=.device-train/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
status=0

if [ -z "${SKIP_TEST:-}" ]; then
echo "=== test"
start=$SECONDS
timeout ${TEST_LIMIT:-120} $bin/cuda_stats_backend_test --gtest_color=no > "$OUT/test.log" 2>&1 || status=1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran' "$OUT/test.log"
grep -E 'Failure|error:|Expected|Which is|actual' "$OUT/test.log" | head -30
# Worst error per measure, for each kernel (a comparison's name ends in
# _fp32, _fp64mma or _tf32x3; the other-variant tests' names carry no suffix).
grep -E '^stats_error' "$OUT/test.log" | awk '{k = ($2 ~ /_tf32x3$/) ? "tf32x3" : (($2 ~ /_fp64mma$/) ? "fp64mma" : "fp32"); n[k]++;
  for (i = 3; i <= NF; i += 2) if ($(i+1) > w[k, $i]) w[k, $i] = $(i+1)}
  END {for (key in w) {split(key, p, SUBSEP); print "worst " p[1] " (" n[p[1]] " comparisons): " p[2] " " w[key]}}' | sort
grep -E '^stats_error (drift|fp64mma_drift|global_D39_M2048_T100000|global_D40_M2048_T100000|chunks)' "$OUT/test.log"
echo "test seconds $((SECONDS - start))"
fi

if [ -z "${SKIP_BENCH:-}" ]; then
echo "=== bench"
start=$SECONDS
timeout ${BENCH_LIMIT:-90} $bin/train_stats_bench --csv "$OUT/bench.csv" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "bench seconds $((SECONDS - start))"
fi

if [ -f .device-train/demo/feats.ark ] && [ -x $bin/gmmscore ]; then
  echo "=== train-gmm on real speech: cuda, cuda/tf32x3, then cpu; then acc-stats of one model on each"
  feats=ark:.device-train/demo/feats.ark
  for backend in cuda cuda/tf32x3 cpu; do
    name=${backend//\//_}
    timeout 120 $bin/gmmscore train-gmm --features $feats --num_gauss 64 --num_gauss_init 8 --iterations 12 \
      --backend $backend --output "$OUT/real_$name.txt" > "$OUT/train_$name.log" 2>&1 || status=1
    grep -E "iteration (1|6|12)/|backend|wrote|error" "$OUT/train_$name.log"
  done
  for backend in cuda cuda/tf32x3 cpu; do
    timeout 60 $bin/gmmscore acc-stats --model "$OUT/real_cpu.txt" --features $feats --backend $backend \
      --binary=false --output "$OUT/acc_${backend//\//_}.txt" 2>&1 | grep -E "acc-stats|error"
  done
  python3 - "$OUT/acc_cpu.txt" "$OUT/acc_cuda.txt" "$OUT/acc_cuda_tf32x3.txt" <<'PY'
import re, sys
nums = [[float(x) for x in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", open(p).read())] for p in sys.argv[1:]]
b = nums[0]
for path, a in zip(sys.argv[2:], nums[1:]):
    worst = max(abs(x - y) / max(abs(y), 1e-3) for x, y in zip(a, b)) if len(a) == len(b) else float("nan")
    print(f"acc-stats {path.split('acc_')[-1][:-4]} vs cpu: {len(a)} numbers, max relative difference {worst:.3g}")
PY
fi

if [ -z "${SKIP_TORCH:-}" ] && python3 -c 'import torch' 2>/dev/null; then
  echo "=== PyTorch, same machine"
  timeout ${TORCH_LIMIT:-200} python3 tools/bench_train_pytorch.py --tf32 --impls ${TORCH_IMPLS:-fused,em} \
    ${TORCH_ARGS:-} --out "$OUT/torch.csv" > "$OUT/torch.log" 2>&1 || status=1
  tail -n 20 "$OUT/torch.log"
fi

if [ -z "${SKIP_SANITIZER:-}" ] && command -v compute-sanitizer >/dev/null; then
  small='Dims/*:*Alignment*:*Posteriors*:*SeveralSets*:*SmallChunks*:Shapes/GlobalGmmTest.MatchesFloat64Reference/D13_M2048_T65'
  # synccheck: the warp syncs and ballots of the float64 kernel's packing.
  for tool in memcheck racecheck synccheck; do
    echo "=== compute-sanitizer $tool"
    filter=$small
    [ $tool != memcheck ] && filter='Dims/DimensionTest.MatchesFloat64Reference/3:*SeveralSets*:Shapes/GlobalGmmTest.MatchesFloat64Reference/D39_M2048_T65'
    timeout ${SANITIZER_LIMIT:-45} compute-sanitizer --tool $tool --print-limit 20 \
      $bin/cuda_stats_backend_test --gtest_color=no --gtest_filter="$filter" > "$OUT/$tool.log" 2>&1
    echo "exit $?"
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Invalid|Race|hazard|Barrier|PASSED|FAILED' "$OUT/$tool.log" | head -12
  done
fi

if [ -z "${SKIP_NCU:-}" ] && command -v ncu >/dev/null; then
  echo "=== ncu"
  # By default the kept-score kernel the policy picks on sm_90,
  # KeptStatsDmmaKernel, on a global GMM (the first match); NCU_KERNEL=
  # 'StatsKernel<\(int\)64, \(int\)5, \(int\)8>' for the float32 one; NCU_COUNT launches (1).
  timeout ${NCU_LIMIT:-60} ncu --clock-control none --kernel-name-base demangled \
    -k "regex:${NCU_KERNEL:-KeptStatsDmmaKernel}" -c ${NCU_COUNT:-1} \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
    --section LaunchStats --section Occupancy --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum \
    $bin/train_stats_bench --gaussians=2048 --frames=500000 --states=0 --estep=false --kernel_gaussians= \
    --min_seconds=0 > "$OUT/ncu.log" 2>&1
  echo "exit $?"
  grep -E 'Kernel|LseKernel|StatsKernel|SM Busy|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|bank_conflicts|op_shared_ld|Duration|Stall' "$OUT/ncu.log" | head -60
fi
if command -v cuobjdump >/dev/null; then
  # SASS of the D = 39 instances (tile 64, 5 columns) for offline reading.
  cuobjdump -sass .device-train/stats_kernels.cubin |
    awk '/Function : /{f = ($0 ~ /StatsKernelILi64ELi5E|LseKernelILi64E/)} f' > "$OUT/sass.txt"
  echo "=== SASS histogram (StatsKernel<64,5>, LseKernel<64>)"
  grep -oE '^ +/\*[0-9a-f]+\*/ +[A-Z0-9.]+' "$OUT/sass.txt" | awk '{print $2}' | sort | uniq -c | sort -rn | head -25
fi
exit $status
