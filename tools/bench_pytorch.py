#!/usr/bin/env python3
"""What a user would write instead of gmmscore, timed on the same GPU.

    torch.logsumexp((Xe @ A.T).view(T, S, G), -1)   with Xe = [1, y, y^2]

fp32 with TF32 off ("pytorch"), and with --precisions the forms a user
after speed would write instead: TF32 matmuls ("pytorch_tf32") and the
matmul in float16 with its result taken to float32 before the log-sum-exp
("pytorch_f16"). CUDA events, warm-up, median of --repeats; the model is
rotated over enough copies to exceed 4x the L2 and the features over 8 sets,
as loglik_bench does. Reports frames/s for each model and window length,
and each form's worst error in nats against float64 on the first window's
first 8 frames.
"""
import argparse
import csv
import math

import torch


def median_ms(run, repeats):
    """Median of `repeats` CUDA-event timings of run(i), after 3 warm-up calls."""
    for i in range(3):
        run(i)
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        run(i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configs", default="5000x16x36,5000x256x36")
    parser.add_argument("--frames", default="8,16,256")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--precisions", default="fp32", help="fp32, tf32, fp16 (comma-separated)")
    parser.add_argument("--csv", default="")
    args = parser.parse_args()
    names = {"fp32": "pytorch", "tf32": "pytorch_tf32", "fp16": "pytorch_f16"}
    precisions = args.precisions.split(",")
    for p in precisions:
        if p not in names:
            parser.error(f"unknown precision {p!r} (expected fp32, tf32 or fp16)")

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    l2_bytes = getattr(props, "L2_cache_size", 50 << 20)
    gen = torch.Generator(device=device).manual_seed(1)
    rows = []
    for config in args.configs.split(","):
        states, gaussians, dim = (int(v) for v in config.split("x"))
        cols = 1 + 2 * dim
        model_bytes = states * gaussians * cols * 4
        copies = max(1, min(8, math.ceil(4 * l2_bytes / model_bytes)))
        models = []
        for _ in range(copies):
            a = torch.randn(states * gaussians, cols, device=device, generator=gen)
            a[:, 1 + dim:] = -0.5 * torch.rand(states * gaussians, dim, device=device, generator=gen) - 0.01
            models.append(a)
        for frames in (int(f) for f in args.frames.split(",")):
            feats = []
            for _ in range(8):
                y = torch.randn(frames, dim, device=device, generator=gen)
                feats.append(torch.cat([torch.ones(frames, 1, device=device), y, y * y], dim=1))
            checked = min(frames, 8)  # frames of window 0 checked against float64
            exact = torch.logsumexp(
                (feats[0][:checked].double() @ models[0].double().T).view(checked, states, gaussians), -1)
            for precision in precisions:
                torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
                half = precision == "fp16"
                f_in = [f.half() for f in feats] if half else feats
                m_in = [m.half() for m in models] if half else models

                def run(i):
                    scores = (f_in[i % 8] @ m_in[i % copies].T).float()
                    return torch.logsumexp(scores.view(frames, states, gaussians), -1)
                error = (run(0)[:checked].double() - exact).abs().max().item()
                ms = median_ms(run, args.repeats)
                name = names[precision]
                rows.append({"model": config, "frames": frames, "algo": name, "kernel_ms": ms,
                             "frames_per_s": frames / (ms * 1e-3), "max_abs_error": error,
                             "device": props.name, "torch": torch.__version__})
                print(f"{config:12s} {frames:6d} {name:13s} {ms:10.4f} ms {frames / (ms * 1e-3):12.0f} frames/s"
                      f"  error {error:.3g}")
                del f_in, m_in
            torch.backends.cuda.matmul.allow_tf32 = False
            del feats
        del models
        torch.cuda.empty_cache()
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
