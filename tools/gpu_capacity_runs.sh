#!/bin/bash
# Several capacity searches in one device call (tools/gpu_capacity.sh over
# tools/build_load_bundle.sh's bundle), each with answer verification on and
# cut at CASE_TIMEOUT_S, for repeated runs and variants of a case:
#
#   tools/gpu_capacity_runs.sh "a1:a:1500:4096" "a2:a:1500:4096" \
#       "a_f16:a:2000:8192:--float16" "a_w2:a:1500:4096::--scheduler_workers 2"
#
# Each argument is NAME:CASE:START:MAX[:LOAD FLAGS[:DAEMON FLAGS]]. Results
# go to $OUT/NAME/ and $OUT/NAME.log; the capacity and verification lines are
# printed as each search ends. DURATION_S (8) per point, SLO_MS (50).
set -u
OUT=${OUT:-/tmp/gmmscore-capacity-runs}
mkdir -p "$OUT"
export DURATION_S=${DURATION_S:-8} SLO_MS=${SLO_MS:-50}
cd "$(dirname "$0")/.."
port=50151
for spec in "$@"; do
  IFS=: read -r name case_name start max extra daemon <<< "$spec"
  echo "=== $name (case $case_name, from $start) $(date +%T)"
  # shellcheck disable=SC2086  # the flag lists are meant to split
  DAEMON_FLAGS="$daemon" PORT=$port OUT="$OUT/$name" START=$start MAX=$max timeout "${CASE_TIMEOUT_S:-150}" \
    tools/gpu_capacity.sh "$case_name" --ramp_s 1 --warmup_s 1 --window_s 1 --drain_s 3 --verify_fraction 0.01 $extra \
    > "$OUT/$name.log" 2>&1
  echo "exit $?" >> "$OUT/$name.log"
  pkill -f 'bin/gmmscored' 2>/dev/null  # a search cut off by the timeout leaves its daemon
  port=$((port + 1))
  grep -E '^capacity:|mismatch|verified|exit ' "$OUT/$name.log" | tail -4
done
