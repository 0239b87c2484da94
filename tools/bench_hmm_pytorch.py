#!/usr/bin/env python3
"""PyTorch baselines for the dense-HMM recursions (issue 19's anchor).

torch_forward: a batched forward with scaled probabilities: per frame one
(B x N) @ (N x N) product, times the emissions, renormalised per row, as the
issue's anchor describes (B = 1000, N = 1024, T = 320); 2 B N^2 T flops.
torch_fwd_bwd: the same forward, then the scaled backward (one product per
frame with A^T) and the expected transition counts (one (N x B) @ (B x N)
product per frame), the work hmm_bench times: 6 B N^2 T flops.
Prints one CSV line per implementation and precision:
impl,precision,B,N,T,ms,tflops.

  tools/bench_hmm_pytorch.py [--batch 1000] [--states 1024] [--frames 320]
"""
import argparse
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--states", type=int, default=1024)
    parser.add_argument("--frames", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"PyTorch is not installed ({error})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    b, n, t = args.batch, args.states, args.frames
    print("impl,precision,B,N,T,ms,tflops")
    for dtype, name in ((torch.float32, "fp32"), (torch.float64, "fp64")):
        torch.manual_seed(0)
        a = torch.rand(n, n, device="cuda", dtype=dtype)
        a /= a.sum(dim=1, keepdim=True)
        emissions = torch.rand(t, b, n, device="cuda", dtype=dtype)  # probabilities, already scaled
        initial = torch.full((n,), 1.0 / n, device="cuda", dtype=dtype)

        def forward(keep=False):
            alpha = initial.expand(b, n) * emissions[0]
            log_like = torch.zeros(b, device="cuda", dtype=torch.float64)
            alphas, scales = [], []
            for step in range(t):
                if step > 0:
                    alpha = (alpha @ a) * emissions[step]
                scale = alpha.sum(dim=1, keepdim=True)
                alpha = alpha / scale
                log_like += scale.squeeze(1).log().double()
                if keep:
                    alphas.append(alpha)
                    scales.append(scale)
            return log_like, alphas, scales

        def forward_backward():
            log_like, alphas, scales = forward(keep=True)
            beta = torch.ones(b, n, device="cuda", dtype=dtype)
            counts = torch.zeros(n, n, device="cuda", dtype=dtype)
            for step in range(t - 1, 0, -1):
                weighted = emissions[step] * beta / scales[step]
                counts += (alphas[step - 1].T @ weighted) * a
                beta = weighted @ a.T
            return log_like, counts

        for impl, body, flops in (("torch_forward", forward, 2.0), ("torch_fwd_bwd", forward_backward, 6.0)):
            body()
            torch.cuda.synchronize()
            times = []
            for _ in range(args.repeats):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                body()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            ms = sorted(times)[len(times) // 2]
            print(f"{impl},{name},{b},{n},{t},{ms:.2f},{flops * b * n * n * t / ms / 1e9:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
