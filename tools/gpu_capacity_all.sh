#!/usr/bin/env bash
# One device call's worth of daemon measurements on the GPU machine, over the
# bundle tools/build_load_bundle.sh packs (build-loadpack/): the capacity
# cases a, b, c (and ptm, given PTM_DIR and PTM_FEATS) of
# tools/gpu_capacity.sh, case a again with sparse answers (--top_k), with
# smaller batches and (by name only: a_callback, a_float16, a_pacer8) with
# StreamScore on gRPC's callback API, with half-precision answers and with 8
# load-generator pacer threads instead of 2, and a check that
# /metrics exports the NVML GPU gauges. Every result goes to one archive, $OUT/capacity.tgz (the device tool brings back
# few files), and a summary table is printed last.
#
#   tools/gpu_capacity_all.sh            # DURATION_S (default 4) per point
#   CASES="a b" tools/gpu_capacity_all.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gmmscore-capacity-all}
results=/tmp/gmmscore-capacity-results
rm -rf "$results" && mkdir -p "$results" "$OUT"
export DURATION_S=${DURATION_S:-4}
pack() { tar czf "$OUT/capacity.tgz" -C "$results" . ; }

port=50151
# name case start max [extra gmmscore-load flags]
run_case() {
  local name=$1 case_name=$2 start=$3 max=$4
  shift 4
  echo "=== $name (case $case_name, search from $start, max $max)"
  PORT=$port OUT="$results/$name" START=$start MAX=$max timeout "${CASE_TIMEOUT_S:-130}" \
    tools/gpu_capacity.sh "$case_name" --ramp_s 1 --warmup_s 1 --window_s 1 --drain_s 3 "$@" > "$results/$name.log" 2>&1
  echo "exit $?" >> "$results/$name.log"
  pkill -f 'bin/gmmscored' 2>/dev/null  # a case cut off by timeout leaves its daemon
  port=$((port + 1))
  grep -E '^capacity:|exit ' "$results/$name.log" | tail -2
  pack
}

# CASES picks and orders the runs (default: all of them).
for name in ${CASES:-a a_top100 a_batch1024 b c ptm}; do
  case "$name" in
    a) run_case a a "${START_A:-1000}" 4096 ;;
    a_top100) run_case a_top100 a "${START_A:-1000}" 8192 --top_k 100 ;;
    a_callback) DAEMON_FLAGS="--stream_api callback" run_case a_callback a "${START_A:-1000}" 4096 ;;
    a_float16) run_case a_float16 a "${START_A:-1000}" 4096 --float16 ;;
    a_pacer8) run_case a_pacer8 a "${START_A:-1000}" 4096 --pacer_threads 8 ;;
    a_batch1024) DAEMON_FLAGS="--max_batch_frames 1024" run_case a_batch1024 a "${START_A:-1000}" 4096 ;;
    b) run_case b b "${START_B:-250}" 2048 ;;
    c) run_case c c "${START_C:-250}" 2048 ;;
    ptm) [ -n "${PTM_DIR:-}" ] && run_case ptm ptm "${START_PTM:-250}" 4096 ;;
  esac
done

# NVML gauges: the daemon on the GPU with --metrics_listen, one scrape.
echo "=== /metrics on cuda"
work=${WORK:-/tmp/gmmscore-capacity-work}
bin=$work/bundle/bin
if [ -x "$bin/gmmscored" ]; then
  export LD_LIBRARY_PATH="$work/bundle/lib:${LD_LIBRARY_PATH:-}"
  cublas=$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 2>/dev/null | head -1)
  [ -n "$cublas" ] && export LD_LIBRARY_PATH="$(dirname "$cublas"):$LD_LIBRARY_PATH"
  # any case's model repository will do (repo-a only exists when case a ran)
  repo=$(ls -d "$work"/repo-* 2>/dev/null | head -1)
  "$bin/gmmscored" --model_repository "${repo:-$work/repo-a}" --listen 127.0.0.1:50161 --backend cuda \
    --metrics_listen 127.0.0.1:50162 > "$results/metrics-daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 120); do grep -q 'listening on' "$results/metrics-daemon.log" && break; sleep 0.5; done
  python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:50162/metrics", timeout=10).read().decode())' \
    > "$results/metrics.txt" 2>&1
  kill -TERM "$daemon"; wait "$daemon"
  grep -E '^gmmscore_gpu' "$results/metrics.txt"
  pack
fi

echo "=== summary (p99 <= ${SLO_MS:-50} ms, ${DURATION_S} s per point)"
for name in ${CASES:-a a_top100 a_batch1024 b c ptm}; do
  [ -f "$results/$name.log" ] || continue
  printf '%-10s %s\n' "$name" "$(grep -E '^capacity:' "$results/$name.log" | tail -1)"
done
