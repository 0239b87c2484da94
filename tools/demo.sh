#!/usr/bin/env bash
# The README's first command: from a fresh Debian 12 machine to real speech
# scored through the daemon.
#
#   tools/demo.sh
#
# 1. installs the dependencies (tools/install_deps.sh; does nothing if present),
# 2. builds gmmscored and gmmscore (CUDA backend too when nvcc is found),
# 3. makes a demo model repository: two synthetic 39-dim speaker-cluster
#    models (`gmmscore synth`; 2000 states x 16 Gaussians each),
# 4. computes 39-dim features (13 MFCCs + deltas + accelerations) from real
#    speech in Debian's pocketsphinx-testdata (tools/sphinx_mfc_to_ark.sh),
# 5. starts gmmscored on loopback (GPU if there is one, else CPU),
# 6. streams every utterance through it in 10-frame chunks with
#    `gmmscore stream`, fusing the two models by running posteriors, and
#    prints a summary: frames, real-time factor, best states over time and
#    which model dominated,
# 7. stops the daemon with SIGTERM (it drains and exits 0).
#
# Environment: GMMSCORE_BUILD_DIR (default build/), GMMSCORE_DEMO_DIR
# (default demo_out/), GMMSCORE_DEMO_BACKEND (default auto); on the GPU
# machine (no Debian packages there): GMMSCORE_BIN_DIR (prebuilt gmmscored
# and gmmscore: skips steps 1-2) and GMMSCORE_DEMO_FEATURES (a features
# archive made here: skips step 4).
# The models are synthetic, so the states they pick are not phones; the point
# is the path real features take and how fast it is.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${GMMSCORE_BUILD_DIR:-$root/build}
out=${GMMSCORE_DEMO_DIR:-$root/demo_out}
backend=${GMMSCORE_DEMO_BACKEND:-auto}
say() { printf '\n== %s\n' "$*"; }

if [[ -n ${GMMSCORE_BIN_DIR:-} ]]; then
  gmmscored=$GMMSCORE_BIN_DIR/gmmscored
  gmmscore=$GMMSCORE_BIN_DIR/gmmscore
else
  say "dependencies"
  "$root/tools/install_deps.sh"

  say "build ($build)"
  cmake_log=$(mktemp)
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$cmake_log" 2>&1 ||
    { cat "$cmake_log"; exit 1; }
  rm -f "$cmake_log"
  ninja -C "$build" gmmscored gmmscore | tail -n 1
  gmmscored=$build/server/gmmscored
  gmmscore=$build/client/cli/gmmscore
fi

say "demo model repository ($out/models)"
rm -rf "$out"
mkdir -p "$out/models"
"$gmmscore" synth --states 2000 --gaussians 16 --dim 39 --seed 1 --output "$out/models/speaker_a.gmm"
"$gmmscore" synth --states 2000 --gaussians 16 --dim 39 --seed 2 --output "$out/models/speaker_b.gmm"

say "features from real speech (pocketsphinx-testdata)"
if [[ -n ${GMMSCORE_DEMO_FEATURES:-} ]]; then
  cp "$GMMSCORE_DEMO_FEATURES" "$out/feats.ark"
  echo "$GMMSCORE_DEMO_FEATURES (made on the development machine) -> $out/feats.ark"
else
  data=/usr/share/pocketsphinx/test/data
  if [[ ! -f $data/goforward.mfc ]]; then
    data=$(dirname "$(dpkg -L pocketsphinx-testdata | grep '/goforward.mfc$' | head -n 1)")
  fi
  mapfile -t recordings < <(ls "$data/goforward.mfc" "$data"/tidigits/*.mfc | head -n 8)
  "$root/tools/sphinx_mfc_to_ark.sh" "$out/feats.ark" "${recordings[@]}"
  echo "${#recordings[@]} recordings -> $out/feats.ark (13 MFCCs + deltas + accelerations = 39 dims)"
fi

say "start gmmscored on loopback"
"$gmmscored" --model_repository "$out/models" --listen 127.0.0.1:0 --backend "$backend" \
  2> "$out/gmmscored.log" &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  grep -q "listening on" "$out/gmmscored.log" && break
  kill -0 "$daemon" 2>/dev/null || { cat "$out/gmmscored.log"; exit 1; }
  sleep 0.1
done
address=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$out/gmmscored.log")
[[ -n $address ]] || { cat "$out/gmmscored.log"; exit 1; }
sed 's/^/  /' "$out/gmmscored.log"
"$gmmscore" models --server "$address"

say "stream the recordings (10-frame chunks, posterior fusion of speaker_a and speaker_b)"
"$gmmscore" stream --server "$address" --model speaker_a,speaker_b --fusion posterior \
  --acoustic_scale 0.1 --chunk_frames 10 --features "ark,t:$out/feats.ark" \
  --output "ark:$out/loglikes.ark"
echo "per-frame state log-likelihoods: $out/loglikes.ark (Kaldi binary archive, frames x 2000)"

say "stop gmmscored (SIGTERM: drain, exit 0)"
kill -TERM "$daemon"
status=0
wait "$daemon" || status=$?
trap - EXIT
tail -n 2 "$out/gmmscored.log" | sed 's/^/  /'
echo "gmmscored exited with status $status"
