#!/usr/bin/env bash
# A model replaced again and again (ModelAdmin.LoadModel, `gmmscore admin
# replace`) while STREAMS streams of case (a) are scored (issue 24: zero
# failed chunks on every device), over tools/build_load_bundle.sh's bundle.
#
#   DAEMON_FLAGS="--devices all" STREAMS=1000 tools/gpu_replace_under_load.sh
#
# Environment: STREAMS (1000), DURATION_S (30), EVERY_S (3: seconds between
# replacements), DAEMON_FLAGS, OUT (/tmp/gmmscore-replace). Prints the load
# generator's report (its failures, chunk latency) and the replacements
# done; exits non-zero when a replacement or a stream failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gmmscore-replace}
work=${WORK:-/tmp/gmmscore-capacity-work}
mkdir -p "$OUT" "$work/bundle"
[ -x "$work/bundle/bin/gmmscore-load" ] || tar xJf build-loadpack/bundle.tar.xz -C "$work/bundle" || { echo "no bundle"; exit 1; }
BIN=$work/bundle/bin
export LD_LIBRARY_PATH="$work/bundle/lib:${LD_LIBRARY_PATH:-}"
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 2>/dev/null | head -1)
[ -n "$cublas" ] && export LD_LIBRARY_PATH="$(dirname "$cublas"):$LD_LIBRARY_PATH"

repo=$work/repo-replace
mkdir -p "$repo"
[ -f "$repo/big.gmm" ] || "$BIN/gmmscore" synth --states 5000 --gaussians 32 --dim 39 --seed 1 \
  --output "$repo/big.gmm" >/dev/null || exit 1
port=${PORT:-50199}
log=$OUT/gmmscored.log
# shellcheck disable=SC2086
"$BIN/gmmscored" --model_repository "$repo" --listen "127.0.0.1:$port" --backend cuda \
  --max_streams 100000 --admin_open ${DAEMON_FLAGS:-} > "$log" 2>&1 &
daemon=$!
for _ in $(seq 600); do
  grep -q 'listening on' "$log" && break
  kill -0 "$daemon" 2>/dev/null || { echo "gmmscored did not start:"; cat "$log"; exit 1; }
  sleep 0.5
done
grep -E 'backend|model' "$log"

duration=${DURATION_S:-30}
"$BIN/gmmscore-load" --server "127.0.0.1:$port" --model big --model_file "$repo/big.gmm" \
  --streams "${STREAMS:-1000}" --duration_s "$duration" --slo_ms 50 --pacer_threads 2 \
  --verify_fraction 0.001 --json "$OUT/load.json" > "$OUT/load.txt" 2>&1 &
load=$!
replaced=0
failed=0
sleep 3  # connected and ramped
end=$((SECONDS + duration - 4))
while [ "$SECONDS" -lt "$end" ] && kill -0 "$load" 2>/dev/null; do
  if "$BIN/gmmscore" admin replace --server "127.0.0.1:$port" --name big >> "$OUT/replace.txt" 2>&1; then
    replaced=$((replaced + 1))
  else
    failed=$((failed + 1))
  fi
  sleep "${EVERY_S:-3}"
done
wait "$load"
load_status=$?
cat "$OUT/load.txt"
echo "replacements: $replaced done, $failed failed (every ${EVERY_S:-3} s, DAEMON_FLAGS='${DAEMON_FLAGS:-}')"
tail -3 "$OUT/replace.txt"
kill -TERM "$daemon"
wait "$daemon"
[ "$load_status" -eq 0 ] && [ "$failed" -eq 0 ]
