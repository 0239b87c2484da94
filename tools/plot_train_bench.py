#!/usr/bin/env python3
"""Plots GMM training throughput (frames/s) against the number of Gaussians M.

  tools/plot_train_bench.py ours.csv train_torch.csv [sklearn.csv] -o train_bench.png [--title T] [--dim 39]

Each CSV needs the columns impl, precision, M and frames_per_s (D and T are
used when present; other columns are ignored; lines starting with '#' are
skipped): our trainer's bench output, tools/bench_train_pytorch.py --out, and
tools/compare_sklearn.py --estep-bench --csv all fit. Log-log axes, one line
per impl/precision (with D in the label when the files mix dimensions);
rows of impl 'roof' are drawn as dashed black lines ("fp32 roof" etc.), and
an impl measured at a single M (e.g. torch_em_iter) as a lone marker. Rows
repeated for the same line and M are reduced to their median, with a note
on stderr. --dim keeps only rows of that D.
"""
import argparse
import collections
import csv
import statistics
import sys


def read_rows(paths, dim):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(line for line in f if line.strip() and not line.startswith("#"))
            missing = {"impl", "precision", "M", "frames_per_s"} - set(reader.fieldnames or [])
            if missing:
                sys.exit(f"plot_train_bench.py: {path} lacks column(s) {', '.join(sorted(missing))} "
                         f"(has {', '.join(reader.fieldnames or [])})")
            for r in reader:
                try:
                    row = {"impl": r["impl"], "precision": r["precision"], "M": int(r["M"]),
                           "frames_per_s": float(r["frames_per_s"]),
                           "D": int(r["D"]) if r.get("D") not in (None, "") else None}
                except ValueError as e:
                    sys.exit(f"plot_train_bench.py: {path}: bad row {r}: {e}")
                if dim is None or row["D"] in (None, dim):
                    rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+")
    parser.add_argument("-o", "--out", default="train_bench.png")
    parser.add_argument("--title", default="GMM E-step with statistics: throughput against M")
    parser.add_argument("--dim", type=int, default=None, help="only rows with this D")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    rows = read_rows(args.csv, args.dim)
    if not rows:
        sys.exit("plot_train_bench.py: no rows to plot")
    dims = {r["D"] for r in rows if r["D"] is not None}
    lines = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        key = (r["impl"], r["precision"], r["D"] if len(dims) > 1 else None)
        lines[key][r["M"]].append(r["frames_per_s"])

    fig, ax = plt.subplots(figsize=(8, 5.5))
    markers = "osD^v<>ph*"
    style = 0
    all_m = set()
    for key in sorted(lines, key=lambda k: (k[0] == "roof", k[0], k[1], k[2] or 0)):
        impl, precision, d = key
        points = lines[key]
        for m, values in points.items():
            if len(values) > 1:
                print(f"plot_train_bench.py: {impl}/{precision} M={m}: {len(values)} rows, plotting their median",
                      file=sys.stderr)
        ms = sorted(points)
        all_m.update(ms)
        ys = [statistics.median(points[m]) for m in ms]
        label = f"{precision} roof" if impl == "roof" else f"{impl} ({precision})"
        if d is not None:
            label += f" D={d}"
        if impl == "roof":
            ax.plot(ms, ys, "k--", linewidth=1.2, label=label)
        elif len(ms) == 1:
            ax.plot(ms, ys, linestyle="none", marker=markers[style % len(markers)], markersize=9, label=label)
            style += 1
        else:
            ax.plot(ms, ys, marker=markers[style % len(markers)], linewidth=1.5, label=label)
            style += 1
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted(all_m))
    ax.set_xticklabels([str(m) for m in sorted(all_m)])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("Gaussians M")
    ax.set_ylabel("frames / s")
    title = args.title + (f" (D={dims.pop()})" if len(dims) == 1 else "")
    ax.set_title(title)
    ax.grid(True, which="both", linestyle=":", linewidth=0.6)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}: {len(lines)} lines from {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
