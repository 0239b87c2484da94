#!/usr/bin/env bash
# The README's first command: from a fresh Debian 12 machine to real speech
# scored and aligned through the daemon.
#
#   tools/demo.sh
#
# 1. installs the dependencies (tools/install_deps.sh; does nothing if present),
# 2. builds gmmscored and gmmscore (CUDA backend too when nvcc is found),
# 3. makes a model repository holding CMU Sphinx's US English acoustic model
#    (pocketsphinx-en-us: 5126 senones, PTM) with its pronunciation dictionary,
# 4. computes the model's features (its feat.params front end) from the
#    librivox recordings of pocketsphinx-testdata (`gmmscore features`),
# 5. starts gmmscored on loopback (GPU if there is one, else CPU),
# 6. streams every recording through it in 10-frame chunks with
#    `gmmscore stream` (senone log-likelihoods, as a decoder would take them)
#    and prints a summary: frames, real-time factor, best senones over time,
# 7. aligns the recordings' transcripts through the daemon's Align RPC
#    (`gmmscore align --server`) and prints each word with its time,
# 8. stops the daemon with SIGTERM (it drains and exits 0).
#
# Environment: GMMSCORE_BUILD_DIR (default build/), GMMSCORE_DEMO_DIR
# (default demo_out/), GMMSCORE_DEMO_BACKEND (default auto); on the GPU
# machine (no Debian packages there): GMMSCORE_BIN_DIR (prebuilt gmmscored
# and gmmscore: skips steps 1-2) and GMMSCORE_POCKETSPHINX (a copy of
# /usr/share/pocketsphinx).
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

ps=${GMMSCORE_POCKETSPHINX:-/usr/share/pocketsphinx}
model=$ps/model/en-us/en-us
dict=$ps/model/en-us/cmudict-en-us.dict
speech=$ps/test/data/librivox
say "model repository ($out/models): CMU Sphinx en-us"
rm -rf "$out"
mkdir -p "$out/models"
ln -s "$model" "$out/models/en-us"
"$gmmscore" info --model "$model" | sed 's/^/  /'

say "features from real speech (pocketsphinx-testdata: librivox, 5 recordings)"
mapfile -t recordings < <(ls "$speech"/*.wav)
"$gmmscore" features --model "$model" --input "$(IFS=,; echo "${recordings[*]}")" --output "ark:$out/feats.ark"
for f in "${recordings[@]}"; do echo "$(basename "$f" .wav) $f"; done > "$out/wav.scp"

say "start gmmscored on loopback"
"$gmmscored" --model_repository "$out/models" --listen 127.0.0.1:0 --backend "$backend" --align_dictionary "$dict" \
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

say "stream the recordings (10-frame chunks: senone log-likelihoods, as a decoder takes them)"
"$gmmscore" stream --server "$address" --model en-us --chunk_frames 10 --features "ark:$out/feats.ark" \
  --output "ark:$out/loglikes.ark"
echo "per-frame senone log-likelihoods: $out/loglikes.ark (Kaldi binary archive, frames x 5126)"

say "align the transcripts through the daemon (Align RPC): each word and its time"
"$gmmscore" align --server "$address" --model en-us --transcripts "$speech/transcription" \
  --audio "$out/wav.scp" --output "ctm:$out/words.ctm"
awk '{ if ($1 != utt) { if (utt != "") print line; utt = $1; line = $1 ":" }
       line = line sprintf(" %s@%.2f", $5, $3) }
     END { print line }' "$out/words.ctm" | fold -s -w 110 | sed 's/^/  /'
echo "word segments: $out/words.ctm (CTM: utterance, channel, start, duration, word)"

say "stop gmmscored (SIGTERM: drain, exit 0)"
kill -TERM "$daemon"
status=0
wait "$daemon" || status=$?
trap - EXIT
tail -n 2 "$out/gmmscored.log" | sed 's/^/  /'
echo "gmmscored exited with status $status"
