#!/usr/bin/env bash
# Runs on the GPU machine over a carried .devpack-align/
# (align_device_bundle.sh): the GPU tests of alignment and the HMM
# recursions, then the benchmarks: align_bench (an hour of real speech,
# en-us, scoring included), hmm_bench and PyTorch's dense recursions at the
# issue's anchor shape. Logs go to $OUT (or /tmp/align-gpu); each step has
# its own time limit.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/align-gpu}
mkdir -p "$OUT"
tar xJf .devpack-align/bundle.tar.xz
cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH="$PWD/.device-align/lib:$cublas_dir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export GMMSCORE_POCKETSPHINX_ROOT=$PWD/.device-align/pocketsphinx
bin=.device-align/bin
ps=$GMMSCORE_POCKETSPHINX_ROOT
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
status=0
for t in device_align_engine_test sphinx_bw_cuda_test dense_graph_cuda_test graph_hmm_cuda_test forward_backward_cuda_test; do
  echo "=== $t"
  timeout ${TEST_LIMIT:-150} $bin/$t --gtest_color=no > "$OUT/$t.log" 2>&1 || status=1
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|Failure|Expected|Which is|actual|cuda vs cpu' "$OUT/$t.log" | head -40
done
echo "=== align_bench"
timeout 240 $bin/align_bench --model $ps/model/en-us/en-us --dict $ps/model/en-us/cmudict-en-us.dict \
  --transcripts $ps/test/data/librivox/transcription --wav_dir $ps/test/data/librivox ${ALIGN_ARGS:-} \
  2>&1 | tee "$OUT/align_bench.log" | tail -12 || status=1
echo "=== gmmscore align --backend cuda, and through gmmscored on the GPU (Align RPC)"
lv=$ps/test/data/librivox
for f in $lv/*.wav; do echo "$(basename $f .wav) $f"; done > "$OUT/wav.scp"
timeout 60 $bin/gmmscore align --model $ps/model/en-us/en-us --dict $ps/model/en-us/cmudict-en-us.dict \
  --transcripts $lv/transcription --audio "$OUT/wav.scp" --output ctm:"$OUT/offline_cuda.ctm" --backend cuda 2>&1 | tail -2
timeout 60 $bin/gmmscore align --model $ps/model/en-us/en-us --dict $ps/model/en-us/cmudict-en-us.dict \
  --transcripts $lv/transcription --audio "$OUT/wav.scp" --output ctm:"$OUT/offline_cpu.ctm" --backend cpu 2>&1 | tail -1
mkdir -p "$OUT/repo" && ln -sfn $ps/model/en-us/en-us "$OUT/repo/en-us"
$bin/gmmscored --model_repository "$OUT/repo" --listen 127.0.0.1:0 --backend cuda \
  --align_dictionary $ps/model/en-us/cmudict-en-us.dict 2> "$OUT/gmmscored.log" &
daemon=$!
for _ in $(seq 300); do grep -q "listening on" "$OUT/gmmscored.log" && break; sleep 0.1; done
address=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$OUT/gmmscored.log")
timeout 60 $bin/gmmscore align --server "$address" --model en-us --transcripts $lv/transcription \
  --audio "$OUT/wav.scp" --output ctm:"$OUT/daemon_cuda.ctm" 2>&1 | tail -2
kill -TERM $daemon; wait $daemon
grep -E "aligns|backend" "$OUT/gmmscored.log" | head -3
for f in offline_cuda daemon_cuda; do
  cmp -s "$OUT/offline_cpu.ctm" "$OUT/$f.ctm" && echo "$f.ctm == offline_cpu.ctm" || {
    echo "$f.ctm differs from offline_cpu.ctm:"; diff "$OUT/offline_cpu.ctm" "$OUT/$f.ctm" | head -8; }
done
echo "=== hmm_bench"
timeout 120 $bin/hmm_bench 2>&1 | tee "$OUT/hmm_bench.log" | tail -3
echo "=== bench_hmm_pytorch.py"
timeout 180 python3 .device-align/bench_hmm_pytorch.py 2>&1 | tee "$OUT/bench_hmm_pytorch.log" | tail -6
exit $status
