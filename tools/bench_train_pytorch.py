#!/usr/bin/env python3
"""What a user would write instead of our GPU GMM training, timed on the same GPU.

  tools/bench_train_pytorch.py [--quick] [--tf32] [--out train_torch.csv]

Frames are drawn once, on the GPU, from a random diagonal GMM (D=--dim,
--true-gauss Gaussians); each measurement scores them against a random
diagonal model of M Gaussians (means drawn from the frames, variances around
the global variance) and accumulates the statistics sum g, g^T x, g^T x^2.
The frames stay resident on the GPU: no host transfers are timed.

  torch_fused  "written well", per block of --block frames (250k-500k):
                 Xe = [1, x, x^2]                                   (T x 2D+1)
                 L  = Xe @ A^T,  A = [gconst, mean/var, -1/(2 var)] (one GEMM)
                 lse = logsumexp(L, 1);  L = exp(L - lse) in place  (posteriors)
                 S += (L^T @ Xe).double()                           (one GEMM)
  torch_naive  "written the plain way": (x - mean)^2 / var by broadcasting
                 (T x M x D), log_softmax, then g^T x and g^T x^2 separately;
                 blocks as small as --naive-mem-gib forces (it needs ~3 x M x
                 D x 4 bytes per frame).
  torch_em_iter  one whole EM iteration, Machlica's configuration
                 (--em 3100000x40x2048 = T x D x M): torch_fused's E-step,
                 then the ML update (weights, means, variances floored at
                 --var-floor; Gaussians with occupancy <= 10 or weight <= 1e-5
                 keep their parameters, as Kaldi does, none removed) and the
                 rebuild of A; frames_per_s = T / iteration time.

fp32 with TF32 off; --tf32 repeats everything with
torch.backends.cuda.matmul.allow_tf32 on. Statistics accumulate in float64.
CUDA events around whole passes over T frames, --warmup passes first, median
of --repeats (>= 5). Before timing, a check against a float64 run of the same
code on 20k frames (M=256) prints each variant's error to stderr: TF32 in the
[1, x, x^2] GEMM loses digits to cancellation, and this says how many.

CSV on stdout (impl,precision,D,M,T,frames_per_s,ms), row by row as measured,
and to --out; the device and progress go to stderr. Exit 2 without PyTorch or
without a CUDA GPU.
"""
import argparse
import csv
import math
import statistics
import sys
import time

FIELDS = ["impl", "precision", "D", "M", "T", "frames_per_s", "ms"]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dim", type=int, default=39)
    parser.add_argument("--gaussians", default="64,128,256,512,1024,2048,4096", help="M values for the E-step")
    parser.add_argument("--frames", type=int, default=2000000, help="T per E-step measurement")
    parser.add_argument("--block", type=int, default=500000, help="frames per block (250k-500k)")
    parser.add_argument("--mem-gib", type=float, default=24.0,
                        help="cap on the fused block's T x M loglik buffers; shrinks --block for large M")
    parser.add_argument("--naive-mem-gib", type=float, default=8.0, help="cap on the naive T x M x D temporaries")
    parser.add_argument("--true-gauss", type=int, default=64, help="Gaussians of the GMM the frames are drawn from")
    parser.add_argument("--em", default="3100000x40x2048", help="TxDxM of the EM iteration ('' to skip)")
    parser.add_argument("--var-floor", type=float, default=1e-3, help="EM variance floor (Kaldi's min variance)")
    parser.add_argument("--impls", default="fused,naive,em", help="subset of fused,naive,em")
    parser.add_argument("--tf32", action="store_true", help="also measure with TF32 matmuls")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="", help="also write the CSV here")
    parser.add_argument("--quick", action="store_true",
                        help="M in 64,512,4096, T=500k in blocks of 250k, EM on T=1M")
    args = parser.parse_args()
    if args.repeats < 5:
        parser.error("--repeats must be >= 5 (the median of at least 5)")
    if args.quick:
        args.gaussians, args.frames, args.block = "64,512,4096", 500000, 250000
        if args.em == parser.get_default("em"):
            args.em = "1000000x40x2048"
    args.impls = set(args.impls.split(","))
    if not args.impls <= {"fused", "naive", "em"}:
        parser.error("--impls: choose from fused, naive, em")
    return args


def load_torch():
    """The torch module and CUDA device, or exit 2 saying why not."""
    try:
        import torch
    except ImportError as e:
        print(f"bench_train_pytorch.py: PyTorch is not installed ({e}); this benchmark needs PyTorch "
              "with CUDA and a GPU (pip install torch numpy)", file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print(f"bench_train_pytorch.py: no CUDA GPU visible to PyTorch {torch.__version__} "
              f"(built with CUDA {torch.version.cuda}); nothing to measure", file=sys.stderr)
        sys.exit(2)
    return torch


class Bench:
    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.device = torch.device("cuda")
        self.gen = torch.Generator(device=self.device).manual_seed(args.seed)

    def set_precision(self, precision):
        self.torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        self.torch.backends.cudnn.allow_tf32 = precision == "tf32"

    # ------------------------------------------------------------ data, models

    def draw_frames(self, t, d):
        """t x d fp32 frames from a random diagonal GMM of --true-gauss Gaussians."""
        torch, g, dev = self.torch, self.gen, self.device
        k = self.args.true_gauss
        mu = 2.0 * torch.randn(k, d, device=dev, generator=g)
        sd = (0.3 + 1.7 * torch.rand(k, d, device=dev, generator=g)).sqrt()
        w = 0.5 + torch.rand(k, device=dev, generator=g)
        x = torch.empty(t, d, device=dev)
        for b0 in range(0, t, 1 << 20):  # bounded temporaries
            b1 = min(t, b0 + (1 << 20))
            comp = torch.multinomial(w, b1 - b0, replacement=True, generator=g)
            x[b0:b1] = mu[comp] + sd[comp] * torch.randn(b1 - b0, d, device=dev, generator=g)
        return x

    def random_model(self, x, m):
        """(weights, means, variances) in float64: means drawn from the frames."""
        torch, g, dev = self.torch, self.gen, self.device
        idx = torch.randint(0, x.shape[0], (m,), device=dev, generator=g)
        mu = x[idx].double()
        var = x[:200000].double().var(0, keepdim=True) * (0.5 + 1.5 * torch.rand(m, x.shape[1], device=dev,
                                                                                 generator=g, dtype=torch.float64))
        w = 0.5 + torch.rand(m, device=dev, generator=g, dtype=torch.float64)
        return w / w.sum(), mu, var

    def model_matrix(self, w, mu, var, dtype):
        """A (M x 2D+1): [gconst, mean/var, -1/(2 var)], so that [1, x, x^2] A^T = log w N(x)."""
        torch = self.torch
        d = mu.shape[1]
        gconst = w.log() - 0.5 * (d * math.log(2 * math.pi) + var.log().sum(1) + (mu * mu / var).sum(1))
        return torch.cat([gconst[:, None], mu / var, -0.5 / var], dim=1).to(dtype).contiguous()

    # ------------------------------------------------------------ E-steps

    def fused_buffers(self, d, m, dtype, block):
        torch = self.torch
        xe = torch.empty(block, 2 * d + 1, device=self.device, dtype=dtype)
        xe[:, 0] = 1.0
        ll = torch.empty(block, m, device=self.device, dtype=dtype)
        acc = torch.zeros(m, 2 * d + 1, device=self.device, dtype=torch.float64)
        return xe, ll, acc

    def estep_fused(self, x, a, bufs, block):
        """Statistics [sum g, g^T x, g^T x^2] (M x 2D+1, float64) into bufs[2];
        returns the total log-likelihood (a float64 GPU scalar)."""
        torch = self.torch
        xe_buf, l_buf, acc = bufs
        d = x.shape[1]
        acc.zero_()
        total = torch.zeros((), device=self.device, dtype=torch.float64)
        at = a.t()
        for b0 in range(0, x.shape[0], block):
            xb = x[b0:b0 + block]
            tb = xb.shape[0]
            xe = xe_buf[:tb]
            xe[:, 1:d + 1].copy_(xb)
            torch.mul(xb, xb, out=xe[:, d + 1:])
            ll = l_buf[:tb]
            torch.matmul(xe, at, out=ll)
            lse = torch.logsumexp(ll, dim=1)
            total += lse.sum(dtype=torch.float64)
            ll.sub_(lse[:, None]).exp_()
            acc.add_(ll.t() @ xe)  # fp32 GEMM, converted per block
        return total

    def estep_naive(self, x, w, mu, var, block):
        """The same statistics, the plain way; returns (total, stats)."""
        torch = self.torch
        m, d = mu.shape
        const = w.log() - 0.5 * (d * math.log(2 * math.pi) + var.log().sum(1))
        occ = torch.zeros(m, device=self.device, dtype=torch.float64)
        sx = torch.zeros(m, d, device=self.device, dtype=torch.float64)
        sx2 = torch.zeros(m, d, device=self.device, dtype=torch.float64)
        total = torch.zeros((), device=self.device, dtype=torch.float64)
        for b0 in range(0, x.shape[0], block):
            xb = x[b0:b0 + block]
            ll = const - 0.5 * ((xb[:, None, :] - mu[None]) ** 2 / var[None]).sum(-1)
            total += torch.logsumexp(ll, dim=1).sum(dtype=torch.float64)
            gamma = torch.log_softmax(ll, dim=1).exp()
            occ += gamma.sum(0)
            sx += gamma.t() @ xb
            sx2 += gamma.t() @ (xb * xb)
        return total, torch.cat([occ[:, None], sx, sx2], dim=1)

    def fused_block(self, m):
        cap = int(self.args.mem_gib * (1 << 30) / (m * 4 * 2))  # ll buffer + logsumexp's temporary
        return max(1024, min(self.args.block, cap))

    def naive_block(self, m, d):
        return max(1, min(self.args.block, int(self.args.naive_mem_gib * (1 << 30) / (3 * m * d * 4))))

    # ------------------------------------------------------------ M-step

    def m_step(self, acc, w, mu, var, min_occ=10.0, min_weight=1e-5):
        """Kaldi's MleDiagGmmUpdate on float64 statistics, without removal."""
        torch = self.torch
        d = mu.shape[1]
        occ = acc[:, 0]
        prob = occ / occ.sum()
        ok = (occ > min_occ) & (prob > min_weight)
        safe = torch.where(ok, occ, torch.ones_like(occ))[:, None]
        new_mu = acc[:, 1:d + 1] / safe
        new_var = (acc[:, d + 1:] / safe - new_mu * new_mu).clamp_(min=self.args.var_floor)
        new_w = torch.where(ok, prob, prob.clamp(min=min_weight))
        return new_w, torch.where(ok[:, None], new_mu, mu), torch.where(ok[:, None], new_var, var)

    # ------------------------------------------------------------ timing

    def median_ms(self, fn):
        torch = self.torch
        for _ in range(self.args.warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.args.repeats):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return statistics.median(times)

    # ------------------------------------------------------------ accuracy

    def check(self, x, precisions):
        """Each variant's error against float64 on 20k frames, M=256 (stderr)."""
        torch = self.torch
        xs = x[:20000]
        w, mu, var = self.random_model(xs, 256)
        t, d = xs.shape
        ref_bufs = self.fused_buffers(d, 256, torch.float64, t)
        ref_total = self.estep_fused(xs.double(), self.model_matrix(w, mu, var, torch.float64), ref_bufs, t).item()
        ref = ref_bufs[2].clone()
        for precision in precisions:
            self.set_precision(precision)
            bufs = self.fused_buffers(d, 256, torch.float32, t)
            total = self.estep_fused(xs, self.model_matrix(w, mu, var, torch.float32), bufs, t).item()
            n_total, n_stats = self.estep_naive(xs, w.float(), mu.float(), var.float(), t)
            for name, tot, stats in (("torch_fused", total, bufs[2]), ("torch_naive", n_total.item(), n_stats)):
                err = [((stats[:, c] - ref[:, c]).abs().max() / ref[:, c].abs().max()).item()
                       for c in (slice(0, 1), slice(1, d + 1), slice(d + 1, 2 * d + 1))]
                print(f"check {name:11s} {precision}: avg loglik/frame {tot / t:.6f} (float64 {ref_total / t:.6f}, "
                      f"diff {abs(tot - ref_total) / t:.2e}); max error / max of occ {err[0]:.1e}, "
                      f"g^T x {err[1]:.1e}, g^T x^2 {err[2]:.1e}", file=sys.stderr)
        del ref_bufs


def main():
    args = parse_args()
    torch = load_torch()
    bench = Bench(torch, args)
    props = torch.cuda.get_device_properties(bench.device)
    print(f"device: {props.name}, {props.total_memory / (1 << 30):.1f} GiB, {props.multi_processor_count} SMs; "
          f"torch {torch.__version__}, CUDA {torch.version.cuda}", file=sys.stderr)
    precisions = ["fp32", "tf32"] if args.tf32 else ["fp32"]

    out_file = open(args.out, "w", newline="") if args.out else None
    writers = [csv.DictWriter(sys.stdout, fieldnames=FIELDS, lineterminator="\n")]
    if out_file:
        writers.append(csv.DictWriter(out_file, fieldnames=FIELDS, lineterminator="\n"))
    for writer in writers:
        writer.writeheader()

    def emit(impl, precision, d, m, t, ms):
        row = {"impl": impl, "precision": precision, "D": d, "M": m, "T": t,
               "frames_per_s": f"{t / (ms * 1e-3):.1f}", "ms": f"{ms:.3f}"}
        for writer in writers:
            writer.writerow(row)
        sys.stdout.flush()
        if out_file:
            out_file.flush()

    d = args.dim
    t0 = time.time()
    x = bench.draw_frames(args.frames, d)
    if args.impls & {"fused", "naive"}:
        bench.check(x, precisions)
    for m in (int(v) for v in args.gaussians.split(",")):
        if not args.impls & {"fused", "naive"}:
            break
        w, mu, var = bench.random_model(x, m)
        for precision in precisions:
            bench.set_precision(precision)
            if "fused" in args.impls:
                block = bench.fused_block(m)
                a = bench.model_matrix(w, mu, var, torch.float32)
                bufs = bench.fused_buffers(d, m, torch.float32, block)
                ms = bench.median_ms(lambda: bench.estep_fused(x, a, bufs, block))
                print(f"torch_fused {precision} M={m:5d} block {block}: {ms:9.2f} ms", file=sys.stderr)
                emit("torch_fused", precision, d, m, args.frames, ms)
                del a, bufs
                torch.cuda.empty_cache()
            if "naive" in args.impls:
                block = bench.naive_block(m, d)
                wf, muf, varf = w.float(), mu.float(), var.float()
                ms = bench.median_ms(lambda: bench.estep_naive(x, wf, muf, varf, block))
                print(f"torch_naive {precision} M={m:5d} block {block}: {ms:9.2f} ms", file=sys.stderr)
                emit("torch_naive", precision, d, m, args.frames, ms)
                torch.cuda.empty_cache()
    del x
    torch.cuda.empty_cache()

    if "em" in args.impls and args.em:
        t, ed, m = (int(v) for v in args.em.split("x"))
        x = bench.draw_frames(t, ed)
        block = bench.fused_block(m)
        bufs = bench.fused_buffers(ed, m, torch.float32, block)
        for precision in precisions:
            bench.set_precision(precision)
            model = list(bench.random_model(x, m))
            logliks = []

            def iteration():
                a = bench.model_matrix(*model, torch.float32)
                logliks.append(bench.estep_fused(x, a, bufs, block))
                model[:] = bench.m_step(bufs[2], *model)

            ms = bench.median_ms(iteration)
            trace = " ".join(f"{v.item() / t:.3f}" for v in logliks)
            print(f"torch_em_iter {precision} T={t} D={ed} M={m} block {block}: {ms:9.2f} ms; "
                  f"avg loglik/frame per iteration: {trace}", file=sys.stderr)
            emit("torch_em_iter", precision, ed, m, t, ms)
        del x, bufs
    print(f"done in {time.time() - t0:.0f} s", file=sys.stderr)
    if out_file:
        out_file.close()


if __name__ == "__main__":
    main()
