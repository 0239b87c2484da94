#!/usr/bin/env python3
"""Writes tiny_am.txt: a 3-pdf, 3-dim Kaldi AmDiagGmm in the text form
`gmm-copy --binary=false` produces (AM part only), for the io tests.

Values are dyadic so that every float32 is exact. <GCONSTS> are what Kaldi's
DiagGmm::ComputeGconsts gives: BaseFloat accumulation of double terms,
emulated here with struct's float32 rounding. Floats print as "%.7g", the
precision Kaldi output streams use. Run: python3 make_tiny_am.py > tiny_am.txt
"""
import math
import struct

M_LOG_2PI = 1.8378770664093454835606594728112


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


# Natural parameters per pdf: (weight, mean, variance) per Gaussian.
PDFS = [
    [(1.0, [0.5, -1.0, 2.0], [1.0, 2.0, 0.5])],
    [(0.25, [1.0, 0.0, -2.0], [0.25, 1.0, 4.0]),
     (0.75, [-0.5, 1.5, 0.25], [2.0, 2.0, 1.0])],
    [(0.5, [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]),
     (0.25, [3.0, -1.25, 0.5], [8.0, 1.0, 0.125]),
     (0.25, [-2.0, 0.5, -4.0], [1.0, 0.25, 2.0])],
]
DIM = 3


def fmt(x):
    return "%.7g" % x


def vector(values):
    return " [ " + "".join(fmt(v) + " " for v in values) + "]\n"


def matrix(rows):
    return " [" + "".join("\n  " + "".join(fmt(v) + " " for v in row) for row in rows) + "]\n"


def main():
    out = ["<DIMENSION> %d <NUMPDFS> %d " % (DIM, len(PDFS))]
    offset = f32(-0.5 * M_LOG_2PI * DIM)
    for pdf in PDFS:
        weights = [f32(w) for w, _, _ in pdf]
        inv_vars = [[f32(1.0 / v) for v in var] for _, _, var in pdf]
        means_invvars = [[f32(m / v) for m, v in zip(mean, var)] for _, mean, var in pdf]
        gconsts = []
        for w, iv, mi in zip(weights, inv_vars, means_invvars):
            gc = f32(math.log(w) + offset)
            for d in range(DIM):
                gc = f32(gc + (0.5 * math.log(iv[d]) - 0.5 * mi[d] * mi[d] / iv[d]))
            gconsts.append(gc)
        out.append("<DiagGMM> \n<GCONSTS> " + vector(gconsts) + "<WEIGHTS> " + vector(weights) +
                   "<MEANS_INVVARS> " + matrix(means_invvars) + "<INV_VARS> " + matrix(inv_vars) +
                   "</DiagGMM> \n")
    print("".join(out), end="")


if __name__ == "__main__":
    main()
