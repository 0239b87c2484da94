#!/usr/bin/env python3
"""Merges loglik_bench and bench_pytorch CSVs into one short table:
frames/s per model, window and algorithm, and each one's speed-up over
PyTorch and over the cuBLAS two-kernel path."""
import csv
import sys


def main(bench_csv, torch_csv):
    rows = list(csv.DictReader(open(bench_csv)))
    # x_torch is against PyTorch in float32 ("pytorch"); its TF32 and float16
    # forms (bench_pytorch.py --precisions) are listed as rows of their own.
    all_torch = list(csv.DictReader(open(torch_csv)))
    torch_rows = {(r["model"], r["frames"]): float(r["kernel_ms"])
                  for r in all_torch if r.get("algo", "pytorch") == "pytorch"}
    other_torch = [r for r in all_torch if r.get("algo", "pytorch") != "pytorch"]
    if rows:
        print(f"\nGPU {rows[0]['device']}: FMA peak {float(rows[0]['fma_peak_tflops']):.1f} TFLOP/s, "
              f"copy {float(rows[0]['copy_gbs']):.0f} GB/s (measured this run)")
    print(f"{'model':12s} {'T':>5s} {'algo':8s} {'frames/s':>11s} {'TFLOP/s':>8s} {'%FMA':>6s} "
          f"{'x_gemm':>7s} {'x_torch':>8s} {'e2e_ms':>8s} {'max_err':>8s}")
    keys = {(r["model"], r["frames"]) for r in all_torch}
    for model, frames in sorted(keys, key=lambda k: (k[0], int(k[1]))):
        torch_ms = torch_rows.get((model, frames))
        if torch_ms is not None:
            print(f"{model:12s} {frames:>5s} {'pytorch':8s} {int(frames) / (torch_ms * 1e-3):11.0f}")
        for r in other_torch:
            if r["model"] == model and r["frames"] == frames:
                ratio = f"{torch_ms / float(r['kernel_ms']):8.2f}" if torch_ms else f"{'':8s}"
                print(f"{model:12s} {frames:>5s} {r['algo']:8s} {float(r['frames_per_s']):11.0f} "
                      f"{'':8s} {'':6s} {'':7s} {ratio} {'':8s} {float(r['max_abs_error']):8.2g}")
        for r in rows:
            if r["model"] == model and r["frames"] == frames:
                x_torch = f"{torch_ms / float(r['kernel_ms']):8.2f}" if torch_ms else f"{'-':>8s}"
                print(f"{model:12s} {frames:>5s} {r['algo']:8s} {float(r['frames_per_s']):11.0f} "
                      f"{float(r['tflops']):8.2f} {float(r['pct_fma']):6.1f} {float(r['x_gemm']):7.2f} "
                      f"{x_torch} {float(r['e2e_ms']):8.3f} {r['max_err']:>8s}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
