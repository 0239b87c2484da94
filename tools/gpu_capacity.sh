#!/usr/bin/env bash
# Capacity runs of gmmscored on the GPU machine (issue 6, docs/PERFORMANCE.md),
# over the bundle tools/build_load_bundle.sh packs. Daemon and load
# generator on the same host, loopback, 10-frame (100 ms) chunks at real-time
# pace; a search for the most streams with p99 <= SLO_MS and no failures.
#
#   tools/gpu_capacity.sh CASE [more gmmscore-load flags]
#     a      one model 5000x32x39, full per-state float32 output
#     b      10 speaker-cluster models 5000x32x39, posterior fusion, fused
#            matrix only (10 full matrices per answer would be 2 MB)
#     c      the paper's 5000x256x36 model
#     ptm    a CMU Sphinx PTM model directory (PTM_DIR) on real speech
#            features (PTM_FEATS=ark:FILE), e.g. en-us from pocketsphinx-en-us
#     smoke  500x8x39, a short search: checks that the bundle runs
#
# Environment: OUT (results: CASE.txt/.json/.csv/.svg, the daemon's log;
# default /tmp/gmmscore-capacity), BACKEND (cuda), SLO_MS (50), START and MAX
# (search range), DURATION_S (10 per point), DAEMON_FLAGS (extra gmmscored
# flags, e.g. "--max_batch_frames 8192"), BIN (use these binaries instead of
# the bundle's), POINT (measure this many streams once instead of searching,
# split over LOADS load-generator processes, default 1; the threads of the
# daemon and of each load generator are profiled in the middle of the
# measurement with tools/thread_cpu.py: CASE-threads.txt), DAEMON_BIN (the
# daemon to measure, the bundle's by default: an older build packed with
# EXTRA_FILES for a before/after on one machine), WARM_STREAMS
# (first run that many streams, over one generator per 2000, for WARM_S
# seconds, 10, unmeasured: the
# daemon's buffers and the GPU's clocks settle before the first point, whose
# tails on a cold daemon were 170-400 ms at loads that pass warm), PRECISION
# (fast or exact: every synthesized model gets that `precision` in a config
# file given with --config; e.g. fast lets case c use the tensor cores),
# PERF_S (POINT mode: also sample every CPU with `perf record -a` for that
# many seconds beside the thread profile, CASE-perf.txt by process, library
# and function; needs perf in the bundle: NO_STRIP=1
# EXTRA_FILES=/usr/bin/perf tools/build_load_bundle.sh), TRANSPORT (unix:
# the daemon listens on, and the generators reach it by, a unix socket,
# /tmp/gmmscore-PORT.sock, instead of loopback TCP: clients on the daemon's
# host).
set -uo pipefail
cd "$(dirname "$0")/.."
case_name=${1:?usage: tools/gpu_capacity.sh a|b|c|ptm|smoke [gmmscore-load flags]}
shift
OUT=${OUT:-/tmp/gmmscore-capacity}
work=${WORK:-/tmp/gmmscore-capacity-work}
mkdir -p "$OUT" "$work"

if [ -z "${BIN:-}" ]; then
  if [ ! -x "$work/bundle/bin/gmmscore-load" ]; then
    mkdir -p "$work/bundle"
    tar xJf build-loadpack/bundle.tar.xz -C "$work/bundle" || { echo "no bundle"; exit 1; }
  fi
  BIN=$work/bundle/bin
  export LD_LIBRARY_PATH="$work/bundle/lib:${LD_LIBRARY_PATH:-}"
fi
# cuBLAS comes from the machine's CUDA (or its PyTorch wheel), as in gpu_check.sh.
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 2>/dev/null | head -1)
if [ -n "$cublas" ]; then
  export LD_LIBRARY_PATH="$(dirname "$cublas"):${LD_LIBRARY_PATH:-}"
else
  wheel=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null)
  [ -n "$wheel" ] && export LD_LIBRARY_PATH="$wheel:${LD_LIBRARY_PATH:-}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$OUT/gpu.txt"
# The bundle's OpenBLAS (Debian 12's 0.3.21) does not know the H200 hosts'
# CPU model and falls back to its SSE3 kernels there: the generators'
# --verify_fraction checks then take 2.2x the CPU they need, on the cores
# the daemon is measured on (docs/PERFORMANCE.md, stop 49). Both processes
# warn of it; here AVX2's kernels are chosen unless the caller chose.
if [ -z "${OPENBLAS_CORETYPE+set}" ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=Haswell
fi
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} (unset: OpenBLAS's own pick)" | tee -a "$OUT/gpu.txt"

repo=$work/repo-$case_name
mkdir -p "$repo"
synthesized=()
synth() {  # NAME STATES GAUSSIANS DIM SEED
  synthesized+=("$1")
  [ -f "$repo/$1.gmm" ] || "$BIN/gmmscore" synth --states "$2" --gaussians "$3" --dim "$4" \
    --seed "$5" --output "$repo/$1.gmm" >/dev/null || exit 1
}
verify=(--verify_fraction 0.001)
case "$case_name" in
  a) synth big 5000 32 39 1
     load=(--model big --model_file "$repo/big.gmm" --streams "${START:-250}")
     max=${MAX:-4096} ;;
  b) names=()
     for i in 0 1 2 3 4 5 6 7 8 9; do synth "spk$i" 5000 32 39 $((i + 1)); names+=("spk$i"); done
     load=(--model "$(IFS=,; echo "${names[*]}")" --fusion posterior --fused_only
           --streams "${START:-100}")
     verify=()  # per-model matrices are not sent with --fused_only
     max=${MAX:-2048} ;;
  c) synth paper 5000 256 36 1
     load=(--model paper --model_file "$repo/paper.gmm" --streams "${START:-100}")
     max=${MAX:-2048} ;;
  ptm) # a CMU Sphinx PTM model (en-us: codebooks shared by the senones of a
     # base phone) and real speech features: PTM_DIR, PTM_FEATS (ark:FILE)
     [ -d "${PTM_DIR:-}" ] && [ -n "${PTM_FEATS:-}" ] || { echo "ptm needs PTM_DIR and PTM_FEATS"; exit 2; }
     [ -e "$repo/ptm" ] || cp -r "$PTM_DIR" "$repo/ptm"
     load=(--model ptm --features "$PTM_FEATS" --streams "${START:-100}")
     verify=()  # the verifier reads untied models only
     max=${MAX:-4096} ;;
  smoke) synth small 500 8 39 1
     load=(--model small --model_file "$repo/small.gmm" --streams "${START:-50}")
     verify=(--verify_fraction 0.05)
     max=${MAX:-800} DURATION_S=${DURATION_S:-3} ;;
  *) echo "unknown case $case_name (a, b, c, ptm or smoke)"; exit 2 ;;
esac

port=${PORT:-50151}
case ${TRANSPORT:-tcp} in
  tcp) address=127.0.0.1:$port ;;
  unix) address=unix:/tmp/gmmscore-$port.sock ;;
  *) echo "unknown TRANSPORT ${TRANSPORT} (tcp or unix)"; exit 2 ;;
esac
log=$OUT/gmmscored-$case_name.log
config=()
if [ -n "${PRECISION:-}" ] && [ ${#synthesized[@]} -eq 0 ]; then
  echo "PRECISION applies to synthesized models only; case $case_name has none"; exit 2
fi
if [ -n "${PRECISION:-}" ]; then
  config_file=$OUT/gmmscored-$case_name.config
  for name in "${synthesized[@]}"; do
    echo "models { name: \"$name\" precision: \"$PRECISION\" }"
  done > "$config_file"
  config=(--config "$config_file")
fi
# The daemon's /metrics, saved when the run ends ($OUT/CASE-metrics.txt):
# the histograms of its backend calls and queue waits show a stall that the
# load generators' means and the refusals' messages only hint at.
metrics_address=127.0.0.1:$((port + 1000))
# shellcheck disable=SC2086
"${DAEMON_BIN:-$BIN/gmmscored}" --model_repository "$repo" --listen "$address" \
  --metrics_listen "$metrics_address" \
  --backend "${BACKEND:-cuda}" --max_streams 100000 "${config[@]}" ${DAEMON_FLAGS:-} > "$log" 2>&1 &
daemon=$!
for _ in $(seq 600); do
  grep -q 'listening on' "$log" && break
  kill -0 "$daemon" 2>/dev/null || { echo "gmmscored did not start:"; cat "$log"; exit 1; }
  sleep 0.5
done
grep -E 'backend|model|listening' "$log"

duration=${DURATION_S:-10}
common=(--server "$address" "${load[@]}" "${verify[@]}" --slo_ms "${SLO_MS:-50}"
        --duration_s "$duration" --pacer_threads 2)
if [ -n "${WARM_STREAMS:-}" ]; then
  # At most 2000 streams a generator, as in the points (tools/gpu_points.sh):
  # one generator falls behind its own schedule beyond that.
  warms=$(( (WARM_STREAMS + 1999) / 2000 ))
  warm_pids=()
  for i in $(seq "$warms"); do
    suffix=$([ "$i" -eq 1 ] || echo "$i")
    "$BIN/gmmscore-load" "${common[@]}" --duration_s "${WARM_S:-10}" --seed "$((100 + i))" \
      --streams $((WARM_STREAMS / warms + (i <= WARM_STREAMS % warms))) \
      "$@" > "$OUT/$case_name-warm$suffix.txt" 2>&1 &
    warm_pids+=($!)
  done
  for pid in "${warm_pids[@]}"; do wait "$pid"; done
  # The first generator's latency line (each one's is in CASE-warm*.txt).
  echo "warm-up: $WARM_STREAMS streams over $warms generators for ${WARM_S:-10} s: $(grep -m1 -E 'p99|failed' "$OUT/$case_name-warm.txt")"
fi
if [ -z "${POINT:-}" ]; then
  "$BIN/gmmscore-load" "${common[@]}" --search --search_max "$max" \
    --json "$OUT/$case_name.json" --csv "$OUT/$case_name.csv" \
    --plot "$OUT/$case_name.svg" "$@" 2>&1 | tee "$OUT/$case_name.txt"
  status=${PIPESTATUS[0]}
else
  # One point, its streams split over LOADS load generators (processes) so
  # that the client side can be told apart from the server as a limit.
  loads=${LOADS:-1}
  pids=()
  for i in $(seq "$loads"); do
    # The first POINT % loads generators take one stream more: POINT in all.
    "$BIN/gmmscore-load" "${common[@]}" --streams $((POINT / loads + (i <= POINT % loads))) --seed "$i" \
      --json "$OUT/$case_name-load$i.json" "$@" > "$OUT/$case_name-load$i.txt" 2>&1 &
    pids+=($!)
  done
  # Threads sampled over the middle of the measured time: after connecting
  # (1 s), the ramp and the warm-up (RAMP_S and WARMUP_S: the --ramp_s and
  # --warmup_s that tools/gpu_points.sh gives the generators; 1 and 1 by
  # default, gmmscore-load's own).
  sleep "$(awk -v r="${RAMP_S:-1}" -v w="${WARMUP_S:-1}" 'BEGIN { print 1 + r + w }')"
  if [ -n "${PERF_S:-}" ]; then
    perf=$(command -v "$BIN/perf" perf | head -1)
    if [ -z "$perf" ]; then
      echo "PERF_S: no perf in the bundle or on PATH; not profiled"
    else
      "$perf" record -a -F 499 -o "$OUT/perf.data" -- sleep "$PERF_S" > "$OUT/perf-record.log" 2>&1 &
      perf_pid=$!
    fi
  fi
  python3 tools/thread_cpu.py --seconds "$(python3 -c "print(max(1, $duration / 2))")" \
    "$daemon" "${pids[@]}" > "$OUT/$case_name-threads.txt" 2>&1
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  if [ -n "${perf_pid:-}" ]; then  # reported once the load is over, so as not to load it
    wait "$perf_pid" && "$perf" report -i "$OUT/perf.data" --sort comm,dso,sym --stdio \
      --percent-limit 0.3 > "$OUT/$case_name-perf.txt" 2>> "$OUT/perf-record.log"
    rm -f "$OUT/perf.data"
  fi
  cat "$OUT/$case_name"-load*.txt "$OUT/$case_name-threads.txt"
fi
python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('http://$metrics_address/metrics', timeout=10).read().decode())" \
  > "$OUT/$case_name-metrics.txt" 2>&1 || echo "metrics not read: $(tail -1 "$OUT/$case_name-metrics.txt")"
kill -TERM "$daemon"
wait "$daemon"
tail -1 "$log"
exit "$status"
