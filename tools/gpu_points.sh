#!/bin/bash
# Fixed load points of one capacity case (tools/gpu_capacity.sh, POINT mode),
# each on a fresh daemon warmed first (WARM_STREAMS = half the point, WARM_S
# 8 s), its streams split over LOADS load generators so that one
# generator's send lag does not bound the point: by default one per 2000
# streams, at least 2. (On a 16-core H100 host one generator with 4000 top_k
# streams fell 1.2-5.6 s behind its schedule with 2 or 8 pacer threads while
# the daemon answered in 1.3 ms; four with 2000 each kept their send lag
# p99 under 5 ms: docs/PERFORMANCE.md, 2026-11-27.) For comparing daemon
# configurations (1 vs 2 GPUs) near a knee found by a search:
#
#   tools/gpu_points.sh c "one_1200:1200:--devices 0" "two_2400:2400:--devices all"
#
# Each argument is NAME:STREAMS[:DAEMON FLAGS[:LOAD FLAGS]]; results in
# $OUT/NAME/ (the load generators' reports, the thread profile) and
# NAME.log; each generator's latency and SLO lines are printed. LOAD_FLAGS:
# more gmmscore-load flags for every point (e.g. "--float16"); a point's own
# LOAD FLAGS come after them (e.g. "--stream_api callback" for a before and
# after of the generators on one machine).
#
# DISCARD_FIRST=1 runs the first point once more before the others, as
# discard_NAME, and labels it discarded: a fresh machine's first point has
# failed where the same point passed after it (generators' send lag 67-491
# ms; docs/PERFORMANCE.md, 2026-11-27 and 2026-11-28), which the per-point
# warm-up does not cover. It costs one point's time (about 2.5 minutes).
set -u
# RAMP_S (4) and WARMUP_S (2): each point's streams start evenly over RAMP_S
# seconds, and the next WARMUP_S seconds are not measured, so that a point
# measures the steady state. With 1 and 1 (before stop 50), all of a
# point's streams opened within one second, and the backlog of their start
# still filled the first measured seconds, or refused a few streams at their
# start: all four counted float32 4000 and top_k 10000 failures on one
# 16-core H200 came so, their later seconds within the SLO, and its
# discarded first point lost about 1870 admitted streams to the full queue
# (docs/PERFORMANCE.md, stop 50). A burst of opens is its own measurement:
# RAMP_S=1 WARMUP_S=1. gpu_capacity.sh profiles the threads after both.
export RAMP_S=${RAMP_S:-4} WARMUP_S=${WARMUP_S:-2}
# --verify_after_run: the sampled answers are held (up to gmmscore-load's
# --verify_memory_mb, 512 MiB a generator) and checked when the point ends. Checked beside the load (before stop 53), the
# verifiers skipped two thirds of the sample at top_k 10000 and took the
# idle CPU, 12 us a generator's answer (64 against 52 us; the daemon's
# 74-77 us unchanged): docs/PERFORMANCE.md, stop 53.
# --server_timing: every answer carries the daemon's times (about 15 bytes),
# and each generator's report splits its latency after the send into: to
# the daemon's read, in the daemon, and back to the generator's read (one
# host, one clock). Before stop 54 three quarters of top_k's latency was
# outside the daemon's own counts, unsplit. It was the way in, which grows
# with the connections (the daemon reads them one at a time): stop 54's
# top_k figures use LOAD_FLAGS="--top_k 100 --channels 16" (16 a generator
# instead of 63); earlier stops' used the default. Since stop 55 the
# default plans connections by answer bytes (8 a generator of 2000 top_k
# streams, 47-53 for float32 as before; client/load/connection_plan.h).
ramp_s=$RAMP_S warmup_s=$WARMUP_S
case_name=${1:?usage: tools/gpu_points.sh CASE NAME:STREAMS[:DAEMON FLAGS[:LOAD FLAGS]] ...}
shift
OUT=${OUT:-/tmp/gmmscore-points}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
port=50171
specs=("$@")
if [ -n "${DISCARD_FIRST:-}" ] && [ $# -gt 0 ]; then specs=("discard_$1" "$@"); fi
for spec in "${specs[@]}"; do
  IFS=: read -r name streams daemon point_load <<< "$spec"
  label=""
  case "$name" in discard_*) label=" (discarded: this machine's first point)" ;; esac
  echo "=== $name: case $case_name, $streams streams, daemon flags '$daemon', load flags '${LOAD_FLAGS:-} ${point_load:-}' $(date +%T)$label"
  WARM_STREAMS=${WARM_STREAMS:-$((streams / 2))} WARM_S=${WARM_S:-8} POINT=$streams \
    LOADS=${LOADS:-$(( streams > 4000 ? (streams + 1999) / 2000 : 2 ))} DURATION_S=${DURATION_S:-8} DAEMON_FLAGS="$daemon" PORT=$port \
    OUT="$OUT/$name" timeout "${POINT_TIMEOUT_S:-150}" tools/gpu_capacity.sh "$case_name" \
    --ramp_s "$ramp_s" --warmup_s "$warmup_s" --window_s 1 --drain_s 3 --verify_fraction 0.01 --verify_after_run --server_timing ${LOAD_FLAGS:-} ${point_load:-} \
    > "$OUT/$name.log" 2>&1
  echo "exit $?"
  grep -E "warm-up|latency ms|late|SLO|verify" "$OUT/$name.log"
  # The daemon's stalls (server/slow_call_log.h), then its overload
  # refusals: how many, the first and the last (each says how old its queue
  # and backend calls were). The stall's line comes after the refusals it
  # caused: it is written when the call ends.
  grep -hE "backend calls? on " "$OUT/$name"/gmmscored-*.log 2>/dev/null | head -20
  refused=$(grep -hE "ending: RESOURCE_EXHAUSTED: the server is overloaded" "$OUT/$name"/gmmscored-*.log 2>/dev/null)
  if [ -n "$refused" ]; then
    echo "overload refusals: $(wc -l <<< "$refused"), the first and the last:"
    sed -n '1p;$p' <<< "$refused" | cut -c1-400
  fi
  port=$((port + 1))
done
