#!/usr/bin/env bash
# Reference forced alignment with pocketsphinx (Debian 0.8+5prealpha) FSG search.
#
# Usage: tools/pocketsphinx_align_reference.sh TRANSCRIPTS WAVDIR|FILEIDS OUT.ctm
#
#   TRANSCRIPTS  Sphinx format, one utterance per line:
#                  <s> words </s> (uttid)     or     words (uttid)
#   WAVDIR       directory holding <uttid>.wav, or
#   FILEIDS      a fileids/ctl list (one path per line, with or without .wav,
#                relative to the list's directory); the basename is the uttid.
#   OUT.ctm      word alignment, "uttid 1 start dur word" (seconds, 2 decimals).
#                Fillers/silence (<sil>, [NOISE], ...) go to OUT.fillers.ctm.
#
# For every utterance a linear FSG (states 0..N, one arc per transcript word)
# is written; pocketsphinx adds the <sil>/filler self-loops on every state
# itself (-fsgusefiller yes, default) and alternate pronunciations
# (-fsgusealtpron yes, default).  Words are lowercased; an utterance with a
# word missing from the dictionary is reported and skipped.
# WAVs must be 16 kHz mono 16-bit PCM; a WAV whose header is not the canonical
# 44 bytes is copied with a canonical header so that -adchdr 44 is right.
# VAD is switched off (-remove_silence no): with the default (yes) pocketsphinx
# drops non-speech frames and frame numbers would no longer be times.
#
# Environment: PS_HMM, PS_DICT (model/dict), PS_ARGS (extra pocketsphinx_batch
# flags), KEEP_TMP=1 (keep work dir, printed to stderr).
# pocketsphinx's xRT figures are printed to stderr.
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 TRANSCRIPTS WAVDIR|FILEIDS OUT.ctm" >&2
    exit 2
fi
TRANS=$1
WAVSRC=$2
OUT=$3
MODEL=/usr/share/pocketsphinx/model/en-us
HMM=${PS_HMM:-$MODEL/en-us}
DICT=${PS_DICT:-$MODEL/cmudict-en-us.dict}
PY=/usr/bin/python3
command -v pocketsphinx_batch >/dev/null || { echo "pocketsphinx_batch not found (apt-get install pocketsphinx)" >&2; exit 1; }
[ -r "$TRANS" ] || { echo "cannot read $TRANS" >&2; exit 1; }
[ -e "$WAVSRC" ] || { echo "no such file or directory: $WAVSRC" >&2; exit 1; }

WORK=$(mktemp -d /tmp/ps_align.XXXXXX)
if [ "${KEEP_TMP:-0}" = 1 ]; then
    echo "work dir: $WORK" >&2
else
    trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK/wav" "$WORK/fsg"

# 1. Prepare: parse transcripts, check dictionary, locate/check wavs, write FSGs + ctl.
"$PY" - "$TRANS" "$WAVSRC" "$DICT" "$WORK" <<'EOF'
import os, re, sys, struct, wave
trans, wavsrc, dictf, work = sys.argv[1:5]

vocab = set()
with open(dictf, encoding="utf-8", errors="replace") as f:
    for line in f:
        p = line.split()
        if p:
            vocab.add(re.sub(r"\(\d+\)$", "", p[0]))

wavmap = {}
if os.path.isdir(wavsrc):
    for fn in os.listdir(wavsrc):
        if fn.lower().endswith(".wav"):
            wavmap[fn[:-4]] = os.path.join(wavsrc, fn)
else:
    base = os.path.dirname(os.path.abspath(wavsrc))
    with open(wavsrc) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            path = p[0] if p[0].lower().endswith(".wav") else p[0] + ".wav"
            if not os.path.isabs(path):
                path = os.path.join(base, path)
            wavmap[os.path.basename(path)[:-4]] = path

def canonical(path):
    """Return (ok, reason, duration); ok if 16k mono s16 PCM with data at byte 44."""
    try:
        w = wave.open(path)
    except Exception as e:
        return False, "unreadable wav: %s" % e, 0
    if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
        return False, "need 16 kHz mono 16-bit (got %d Hz, %d ch, %d bytes)" % (
            w.getframerate(), w.getnchannels(), w.getsampwidth()), 0
    dur = w.getnframes() / 16000.0
    with open(path, "rb") as f:
        h = f.read(44)
    std = (len(h) == 44 and h[:4] == b"RIFF" and h[8:16] == b"WAVEfmt "
           and struct.unpack("<I", h[16:20])[0] == 16 and h[36:40] == b"data")
    return True, "" if std else "rewrite", dur

ctl = open(os.path.join(work, "ctl"), "w")
fsgctl = open(os.path.join(work, "fsgctl"), "w")
ref = open(os.path.join(work, "ref"), "w")
n_ok = n_skip = 0
with open(trans, encoding="utf-8") as f:
    for lineno, line in enumerate(f, 1):
        line = line.strip()
        if not line:
            continue
        m = re.match(r"^(.*)\(([^()\s]+)\)\s*$", line)
        if not m:
            print("line %d: no (uttid), skipped" % lineno, file=sys.stderr)
            n_skip += 1
            continue
        uttid = m.group(2)
        words = [w.lower() for w in m.group(1).split()]
        words = [w for w in words if w not in ("<s>", "</s>", "<sil>")]
        if not words:
            print("%s: empty transcript, skipped" % uttid, file=sys.stderr)
            n_skip += 1
            continue
        oov = sorted(set(w for w in words if w not in vocab))
        if oov:
            print("%s: not in dictionary: %s -- skipped" % (uttid, " ".join(oov)),
                  file=sys.stderr)
            n_skip += 1
            continue
        if uttid not in wavmap or not os.path.isfile(wavmap[uttid]):
            print("%s: no wav found, skipped" % uttid, file=sys.stderr)
            n_skip += 1
            continue
        src = os.path.abspath(wavmap[uttid])
        ok, why, dur = canonical(src)
        if not ok:
            print("%s: %s -- skipped" % (uttid, why), file=sys.stderr)
            n_skip += 1
            continue
        dst = os.path.join(work, "wav", uttid + ".wav")
        if why == "rewrite":
            with wave.open(src) as r, wave.open(dst, "wb") as w:
                w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
                w.writeframes(r.readframes(r.getnframes()))
        else:
            os.symlink(src, dst)
        fsgpath = os.path.join(work, "fsg", uttid + ".fsg")
        with open(fsgpath, "w") as g:
            n = len(words)
            g.write("FSG_BEGIN %s\nNUM_STATES %d\nSTART_STATE 0\nFINAL_STATE %d\n"
                    % (uttid, n + 1, n))
            for i, w in enumerate(words):
                g.write("TRANSITION %d %d 1.0 %s\n" % (i, i + 1, w))
            g.write("FSG_END\n")
        ctl.write("%s\n" % uttid)
        fsgctl.write("%s\n" % fsgpath)
        ref.write("%s %.3f %s\n" % (uttid, dur, " ".join(words)))
        n_ok += 1
print("prepared %d utterances, skipped %d" % (n_ok, n_skip), file=sys.stderr)
if n_ok == 0:
    sys.exit(1)
EOF

# 2. Align.  One decoder process; per-utterance FSG via -fsgctl.
# shellcheck disable=SC2086
pocketsphinx_batch \
    -hmm "$HMM" -dict "$DICT" \
    -ctl "$WORK/ctl" -fsgctl "$WORK/fsgctl" \
    -cepdir "$WORK/wav" -cepext .wav -adcin yes -adchdr 44 \
    -remove_silence no \
    -hypseg "$WORK/hypseg" ${PS_ARGS:-} \
    > "$WORK/log" 2>&1 || { tail -30 "$WORK/log" >&2; echo "pocketsphinx_batch failed (log: $WORK/log)" >&2; exit 1; }

# 3. hypseg -> CTM.  hypseg: uttid S 0 T t A a L l  (sf ascr lscr word)*  last_ef
# A word's frames are sf .. next sf - 1 (sf of a segment = predecessor's end + 1),
# the last one ends at last_ef (inclusive), 100 frames/s.
"$PY" - "$WORK/hypseg" "$WORK/ref" "$OUT" "$WORK/log" <<'EOF'
import re, sys
hypseg, reff, out, logf = sys.argv[1:5]
FR = 100.0
ref = {}
for line in open(reff):
    p = line.split()
    ref[p[0]] = (float(p[1]), p[2:])
fill_out = re.sub(r"\.ctm$", "", out) + ".fillers.ctm"
fo, ff = open(out, "w"), open(fill_out, "w")
done = set()
bad = 0
for line in open(hypseg):
    p = line.split()
    if not p:
        continue
    utt = p[0]
    segs = []
    rest = p[9:]
    while len(rest) >= 5:
        segs.append((int(rest[0]), rest[3]))
        rest = rest[4:]
    if len(rest) != 1 or not segs:
        print("%s: no alignment (grammar final state not reached?)" % utt, file=sys.stderr)
        bad += 1
        continue
    last_ef = int(rest[0])
    words = []
    rows = []
    for i, (sf, w) in enumerate(segs):
        ef = segs[i + 1][0] - 1 if i + 1 < len(segs) else last_ef
        base = re.sub(r"\(\d+\)$", "", w)
        filler = base.startswith("<") or base.startswith("[") or base.startswith("+")
        rows.append((filler, "%s 1 %.2f %.2f %s\n" % (utt, sf / FR, (ef - sf + 1) / FR, base)))
        if not filler:
            words.append(base)
    if utt in ref and words != ref[utt][1]:
        print("%s: aligned words differ from transcript, skipped:\n  ref %s\n  hyp %s"
              % (utt, " ".join(ref[utt][1]), " ".join(words)), file=sys.stderr)
        bad += 1
        continue
    for filler, row in rows:
        (ff if filler else fo).write(row)
    done.add(utt)
for u in ref:
    if u not in done:
        print("%s: not aligned" % u, file=sys.stderr)
print("aligned %d/%d utterances -> %s (fillers: %s)" % (len(done), len(ref), out, fill_out),
      file=sys.stderr)

# xRT figures from the pocketsphinx log.
tot_speech = tot_cpu = tot_wall = 0.0
for line in open(logf, errors="replace"):
    m = re.search(r"TOTAL fsg ([\d.]+) (CPU|wall) ([\d.]+|-?nan) xRT", line)
    if m:
        if m.group(2) == "CPU":
            tot_cpu += float(m.group(1))
        else:
            tot_wall += float(m.group(1))
    m = re.search(r"batch\.c\(\d+\): (TOTAL .*|AVERAGE .*)$", line)
    if m:
        print("pocketsphinx: " + m.group(1), file=sys.stderr)
        m2 = re.match(r"TOTAL ([\d.]+) seconds speech", m.group(1))
        if m2:
            tot_speech = float(m2.group(1))
if tot_speech > 0:
    print("pocketsphinx: TOTAL fsg (sum over per-utterance FSG searches) "
          "%.2f s CPU %.3f xRT, %.2f s wall %.3f xRT, %.2f s speech"
          % (tot_cpu, tot_cpu / tot_speech, tot_wall, tot_wall / tot_speech, tot_speech),
          file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
