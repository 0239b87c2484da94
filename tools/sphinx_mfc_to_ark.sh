#!/usr/bin/env bash
# Converts Sphinx .mfc feature files (13 MFCCs per frame) to one Kaldi text
# archive of 39-dimensional frames: the 13 cepstra, their deltas and their
# accelerations, as Kaldi's `add-deltas` computes them (window 2, edge
# frames repeated).
#
#   tools/sphinx_mfc_to_ark.sh OUT.ark FILE.mfc...     # keys: file names without .mfc
#
# The .mfc format (Sphinx feature files, e.g. Debian's pocketsphinx-testdata):
# a 4-byte integer N = the number of float values that follow, then N
# float32 values, frame after frame. Sphinx writes them in the writing
# machine's byte order; the reader tells the order by which reading of the
# header equals (file size - 4) / 4, as Sphinx itself does.
#
# Deltas: d_t = sum_{n=1..2} n (c_{t+n} - c_{t-n}) / 10. Accelerations apply
# the same filter twice, i.e. the 9-tap filter (delta * delta) to the cepstra,
# with the frame index clamped to [0, T-1] (Kaldi's DeltaFeatures).
# Only coreutils `od` and awk are needed.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 OUT.ark FILE.mfc..." >&2
  exit 2
fi
out=$1
shift
: > "$out"
for mfc in "$@"; do
  size=$(stat -c %s "$mfc")
  values=$(( (size - 4) / 4 ))
  endian=""
  for candidate in little big; do
    header=$(od -An -v -t u4 -N 4 --endian=$candidate "$mfc" | tr -d ' ')
    if [[ "$header" == "$values" ]]; then endian=$candidate; break; fi
  done
  if [[ -z "$endian" || $(( values % 13 )) -ne 0 ]]; then
    echo "$0: $mfc is not a 13-coefficient Sphinx .mfc file" >&2
    exit 1
  fi
  key=$(basename "$mfc" .mfc)
  # One frame (13 floats = 52 bytes) per line.
  od -An -v -t f4 -w52 -j 4 --endian=$endian "$mfc" |
    awk -v key="$key" '
      { n++; for (d = 1; d <= 13; d++) c[n, d] = $d }
      function clamp(t) { return t < 1 ? 1 : (t > n ? n : t) }
      END {
        # First-order filter w1[-2..2] = n / 10; second order w2 = w1 * w1.
        for (k = -2; k <= 2; k++) w1[k] = k / 10
        for (k = -4; k <= 4; k++) {
          w2[k] = 0
          for (j = -2; j <= 2; j++) if (k - j >= -2 && k - j <= 2) w2[k] += w1[j] * w1[k - j]
        }
        printf "%s  [\n", key
        for (t = 1; t <= n; t++) {
          line = ""
          for (d = 1; d <= 13; d++) line = line sprintf(" %.7g", c[t, d])
          for (d = 1; d <= 13; d++) {
            s = 0; for (k = -2; k <= 2; k++) s += w1[k] * c[clamp(t + k), d]
            line = line sprintf(" %.7g", s)
          }
          for (d = 1; d <= 13; d++) {
            s = 0; for (k = -4; k <= 4; k++) s += w2[k] * c[clamp(t + k), d]
            line = line sprintf(" %.7g", s)
          }
          printf " %s%s\n", line, (t == n ? " ]" : "")
        }
      }' >> "$out"
done
