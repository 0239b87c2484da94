#!/usr/bin/env bash
# The slow-reader attack of issue 16 against a real gmmscored process:
# STREAMS clients (tests/non_reading_clients_main.cc, one connection each)
# send 1000-frame chunks and never read; the daemon's resident memory is
# sampled every half second for SECONDS seconds. Extra arguments go to
# gmmscored (e.g. limits to compare).
#
#   tools/slow_reader_attack.sh [STREAMS] [SECONDS] [-- gmmscored flags...]
#   tools/slow_reader_attack.sh 200 75
#   tools/slow_reader_attack.sh 200 30 -- --stream_write_timeout_s=0 --answer_memory_mb=0
#
# Needs a build in build/ (gmmscored, gmmscore, non_reading_clients).
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-200}
seconds=${2:-75}
shift $(( $# >= 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/models"
# 500 states x 1 Gaussian x 39 dims: 2 MB of float32 scores a 1000-frame chunk.
build/client/cli/gmmscore synth --states 500 --gaussians 1 --dim 39 --seed 1 \
  --output "$work/models/wide.gmm" >/dev/null
port=$((20000 + RANDOM % 20000))
metrics=$((port + 1))
build/server/gmmscored --model_repository "$work/models" --listen "127.0.0.1:$port" \
  --metrics_listen "127.0.0.1:$metrics" --backend cpu "$@" 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$metrics/metrics" >/dev/null 2>&1 && break
  sleep 0.1
done
rss() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$daemon/status"; }
metric() { curl -sf "http://127.0.0.1:$metrics/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
before=$(rss)
build/tests/non_reading_clients "127.0.0.1:$port" wide 39 "$streams" 1000 40 >"$work/clients.log" &
peak=$before
for i in $(seq $((seconds * 2))); do
  now=$(rss)
  [ "$now" -gt "$peak" ] && peak=$now
  if [ $((i % 10)) -eq 0 ]; then
    echo "t=$((i / 2))s rss=${now}MiB streams=$(metric gmmscore_active_streams)" \
         "unsent=$(metric gmmscore_unsent_answer_bytes) stalled=$(metric gmmscore_streams_stalled_total)"
  fi
  sleep 0.5
done
echo "streams=$streams rss_before=${before}MiB peak=${peak}MiB end=$(rss)MiB" \
     "live_streams=$(metric gmmscore_active_streams) stalled=$(metric gmmscore_streams_stalled_total)" \
     "refused=$(metric gmmscore_answer_memory_refused_total) daemon_flags='$*'"
