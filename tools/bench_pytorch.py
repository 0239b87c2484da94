#!/usr/bin/env python3
"""What a user would write instead of gmmscore, timed on the same GPU.

    torch.logsumexp((Xe @ A.T).view(T, S, G), -1)   with Xe = [1, y, y^2]

fp32 with TF32 off, CUDA events, warm-up, median of --repeats; the model is
rotated over enough copies to exceed 4x the L2 and the features over 8 sets,
as loglik_bench does. Reports frames/s for each model and window length.
"""
import argparse
import csv
import math

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configs", default="5000x16x36,5000x256x36")
    parser.add_argument("--frames", default="8,16,256")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--csv", default="")
    args = parser.parse_args()

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
            def run(i):
                return torch.logsumexp((feats[i % 8] @ models[i % copies].T).view(frames, states, gaussians), -1)
            for i in range(3):
                run(i)
            torch.cuda.synchronize()
            times = []
            for i in range(args.repeats):
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                start.record()
                run(i)
                stop.record()
                stop.synchronize()
                times.append(start.elapsed_time(stop))
            ms = sorted(times)[len(times) // 2]
            rows.append({"model": config, "frames": frames, "algo": "pytorch", "kernel_ms": ms,
                         "frames_per_s": frames / (ms * 1e-3), "device": props.name,
                         "torch": torch.__version__})
            print(f"{config:12s} {frames:6d} pytorch {ms:10.4f} ms {frames / (ms * 1e-3):12.0f} frames/s")
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
