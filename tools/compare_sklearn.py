#!/usr/bin/env python3
"""scikit-learn's diagonal GMM training on the same features, as a baseline.

  tools/compare_sklearn.py --features feats.ark --num-gauss 16 --iterations 20
  tools/compare_sklearn.py --features X.npy --num-gauss 256 --threads 2 --subsample 4
  tools/compare_sklearn.py --estep-bench --estep-gauss 256,2048 [--features F] [--dim 39]
  tools/compare_sklearn.py --selftest

Fit mode: reads the frames (a Kaldi archive of feature matrices, binary "FM "/
"DM " or text "key  [ rows ]", entries may be mixed; or a 2-D .npy), fits
sklearn.mixture.GaussianMixture(covariance_type='diag', n_components=M,
max_iter=N, tol=0, n_init=1) and prints one JSON object: frames, dim, M,
iterations, the final average log-likelihood per frame (gm.score(X)), the
per-iteration average log-likelihood and times (E-step, M-step, whole
iteration), initialisation and total fit time, and the BLAS threads in use.

Differences from Kaldi's gmm-est / our trainer, to keep in mind when reading
the numbers:
  - reg_covar (default 1e-3) is ADDED to every variance after each M-step;
    Kaldi instead floors each variance at --min-variance (0.001). Same order
    of magnitude, not the same rule.
  - scikit-learn never removes or freezes low-occupancy Gaussians.
  - init 'kmeans' runs a full KMeans (n_init=1) before EM; its time is the
    init_s field, not part of the iterations.
  - features are converted to float64 (--dtype float32 keeps them float32,
    which scikit-learn then computes in).
The per-iteration numbers come from wrapping the estimator's private _e_step
and _m_step (scikit-learn 1.x); if that ever fails, only totals are given.

E-step bench mode (--estep-bench): for each M, a diagonal model (random means
drawn from the frames, variances around the global variance, or fitted with
--estep-model fitted) and the time of gm._estimate_log_prob_resp(X) (the
E-step scikit-learn runs each iteration: log N(x|m) by two GEMMs, logsumexp,
log posteriors) and of that plus exp and the sufficient statistics
sum g, g^T x, g^T x^2 (what scikit-learn's M-step computes from them), as
frames/s, median of --repeats. Without --features it draws D=--dim synthetic
frames. --csv writes rows for tools/plot_train_bench.py.

--threads N sets OMP/OpenBLAS/MKL threads before numpy is imported (and via
threadpoolctl when present). --selftest writes binary and text archives and a
.npy of known frames to a temporary folder, reads them back and fits on each.
"""
import argparse
import json
import os
import statistics
import struct
import sys
import time

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", default="", help="Kaldi archive (binary or text) or .npy")
    parser.add_argument("--num-gauss", type=int, default=16, help="M, Gaussians (fit mode)")
    parser.add_argument("--iterations", type=int, default=20, help="EM iterations (max_iter, tol=0)")
    parser.add_argument("--init-params", default="kmeans", choices=["kmeans", "random_from_data", "k-means++", "random"])
    parser.add_argument("--reg-covar", type=float, default=1e-3, help="added to every variance (Kaldi floors at 0.001)")
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="BLAS/OpenMP threads (0: library default)")
    parser.add_argument("--subsample", type=int, default=1, help="keep every k-th frame")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--estep-bench", action="store_true", help="time scikit-learn's E-step instead of fitting")
    parser.add_argument("--estep-gauss", default="256,2048", help="M values for --estep-bench")
    parser.add_argument("--estep-model", default="random", choices=["random", "fitted"],
                        help="fitted: --iterations EM iterations from random_from_data first")
    parser.add_argument("--frames", type=int, default=0,
                        help="--estep-bench frames (0: min(100000, 2^25/M, frames of --features))")
    parser.add_argument("--dim", type=int, default=39, help="synthetic dimension for --estep-bench")
    parser.add_argument("--repeats", type=int, default=5, help="--estep-bench repeats (median)")
    parser.add_argument("--csv", default="", help="--estep-bench: also write impl,precision,D,M,T,frames_per_s,ms")
    parser.add_argument("--selftest", action="store_true")
    args = parser.parse_args()
    if args.subsample < 1 or args.iterations < 0 or args.num_gauss < 1 or args.repeats < 1:
        parser.error("--subsample, --num-gauss, --repeats must be >= 1 and --iterations >= 0")
    if not (args.features or args.estep_bench or args.selftest):
        parser.error("give --features PATH (or --estep-bench, or --selftest)")
    return args


# ---------------------------------------------------------------- Kaldi I/O

def _read_kaldi_int32(data, pos, what):
    if data[pos:pos + 1] != b"\x04":
        raise ValueError(f"{what}: expected int32 size byte 0x04 at offset {pos}, got {data[pos:pos + 1]!r}")
    return struct.unpack_from("<i", data, pos + 1)[0], pos + 5


def read_kaldi_ark(path):
    """[(key, float32/float64 ndarray rows x cols)] of a Kaldi matrix archive
    (binary FM/DM or text entries)."""
    import numpy as np
    with open(path, "rb") as f:
        data = f.read()
    entries = []
    pos, n = 0, len(data)
    while True:
        while pos < n and data[pos:pos + 1].isspace():
            pos += 1
        if pos >= n:
            return entries
        end = pos
        while end < n and not data[end:end + 1].isspace():
            end += 1
        key = data[pos:end].decode("utf-8", "replace")
        if end >= n:
            raise ValueError(f"{path}: entry '{key}' has no matrix")
        pos = end + 1  # the single space after the key
        if data[pos:pos + 2] == b"\x00B":
            pos += 2
            token = data[pos:pos + 3]
            if token in (b"FM ", b"DM "):
                pos += 3
                rows, pos = _read_kaldi_int32(data, pos, f"{path}: '{key}' rows")
                cols, pos = _read_kaldi_int32(data, pos, f"{path}: '{key}' cols")
                dtype = np.dtype("<f4") if token == b"FM " else np.dtype("<f8")
                nbytes = rows * cols * dtype.itemsize
                if rows < 0 or cols < 0 or pos + nbytes > n:
                    raise ValueError(f"{path}: '{key}': {rows}x{cols} matrix runs past the end of the file")
                m = np.frombuffer(data, dtype=dtype, count=rows * cols, offset=pos).reshape(rows, cols)
                pos += nbytes
            elif token.startswith(b"CM"):
                raise ValueError(f"{path}: '{key}' is a compressed matrix; convert it with "
                                 "copy-feats --compress=false first")
            else:
                raise ValueError(f"{path}: '{key}': unsupported binary object {token!r} (want 'FM ' or 'DM ')")
        else:
            while pos < n and data[pos:pos + 1].isspace():
                pos += 1
            if data[pos:pos + 1] != b"[":
                raise ValueError(f"{path}: '{key}': expected '[' or binary header at offset {pos}")
            close = data.find(b"]", pos + 1)
            if close < 0:
                raise ValueError(f"{path}: '{key}': no closing ']'")
            lines = [line.split() for line in data[pos + 1:close].split(b"\n")]
            lines = [line for line in lines if line]
            widths = {len(line) for line in lines}
            if len(widths) > 1:
                raise ValueError(f"{path}: '{key}': rows of different lengths {sorted(widths)}")
            m = np.array(lines, dtype=np.float64).reshape(len(lines), widths.pop() if widths else 0)
            pos = close + 1
        entries.append((key, m))


def write_kaldi_ark(path, entries, binary=True):
    """Writes [(key, 2-D array)] as a Kaldi archive (binary FM or text)."""
    import numpy as np
    with open(path, "wb") as f:
        for key, m in entries:
            if binary:
                m = np.ascontiguousarray(m, dtype="<f4")
                f.write(key.encode() + b" \x00BFM " + struct.pack("<bibi", 4, m.shape[0], 4, m.shape[1]))
                f.write(m.tobytes())
            else:
                f.write(key.encode() + b"  [\n")
                for i, row in enumerate(m):
                    f.write(b"  " + " ".join(f"{v:.7g}" for v in row).encode() +
                            (b" ]\n" if i == len(m) - 1 else b" \n"))
                if len(m) == 0:
                    f.write(b" ]\n")


def load_frames(path, subsample=1, dtype="float64"):
    """(frames x dim array, number of utterances)."""
    import numpy as np
    if path.endswith(".npy"):
        x = np.load(path)
        if x.ndim != 2:
            raise ValueError(f"{path}: expected a 2-D array, got shape {x.shape}")
        utts = 1
    else:
        entries = read_kaldi_ark(path)
        if not entries:
            raise ValueError(f"{path}: no entries")
        dims = {m.shape[1] for _, m in entries if m.shape[0]}
        if len(dims) != 1:
            raise ValueError(f"{path}: matrices of different widths {sorted(dims)}")
        x = np.concatenate([m for _, m in entries if m.shape[0]], axis=0)
        utts = len(entries)
    x = np.ascontiguousarray(x[::subsample], dtype=dtype)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{path}: frames hold non-finite values")
    return x, utts


# ---------------------------------------------------------------- threads

def set_thread_env(threads):
    """Before numpy's import: the env variables the BLAS/OpenMP runtimes read."""
    if threads > 0:
        for var in THREAD_VARS:
            os.environ[var] = str(threads)


def thread_info(threads):
    """Limits the BLAS pools (threadpoolctl) and says what is in use."""
    info = {"requested": threads or None, "cpu_count": os.cpu_count(),
            "env": {v: os.environ[v] for v in THREAD_VARS if v in os.environ}}
    import numpy  # noqa: F401  (loads the BLAS, so that threadpoolctl sees it)
    import sklearn.mixture  # noqa: F401  (and scipy's, and OpenMP's)
    try:
        import threadpoolctl
    except ImportError:
        info["threadpoolctl"] = None
        return info, None
    limiter = threadpoolctl.threadpool_limits(limits=threads) if threads > 0 else None
    info["pools"] = [{"api": p.get("internal_api"), "lib": os.path.basename(p.get("filepath", "")),
                      "num_threads": p.get("num_threads")} for p in threadpoolctl.threadpool_info()]
    return info, limiter


# ---------------------------------------------------------------- fit

def fit(x, args):
    import numpy as np
    import sklearn
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture
    import warnings

    gm = GaussianMixture(n_components=args.num_gauss, covariance_type="diag", max_iter=args.iterations, tol=0.0,
                         n_init=1, init_params=args.init_params, reg_covar=args.reg_covar,
                         random_state=args.random_state)
    marks = []  # ("e"|"m", start, stop, avg loglik)
    per_iteration = True
    try:
        e_step, m_step = gm._e_step, gm._m_step

        def timed_e(X):
            t0 = time.perf_counter()
            out = e_step(X)
            marks.append(("e", t0, time.perf_counter(), float(out[0])))
            return out

        def timed_m(X, log_resp):
            t0 = time.perf_counter()
            out = m_step(X, log_resp)
            marks.append(("m", t0, time.perf_counter(), None))
            return out

        gm._e_step, gm._m_step = timed_e, timed_m
    except AttributeError:
        per_iteration = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # tol=0: never "converges", by design
        t0 = time.perf_counter()
        gm.fit(x)
        fit_s = time.perf_counter() - t0
    score = float(gm.score(x))
    result = {"frames": int(x.shape[0]), "dim": int(x.shape[1]), "M": args.num_gauss,
              "iterations": int(gm.n_iter_), "avg_loglik_per_frame": score}
    es = [m for m in marks if m[0] == "e"]
    ms = [m for m in marks if m[0] == "m"]
    if per_iteration and len(es) == gm.n_iter_ + 1 and len(ms) == gm.n_iter_ and gm.n_iter_ > 0:
        # E-step i starts iteration i; the (n+1)-th E-step is fit()'s final one.
        iter_s = [es[i + 1][1] - es[i][1] for i in range(gm.n_iter_)]
        result.update({
            "iteration_s": [round(v, 6) for v in iter_s],
            "mean_iteration_s": statistics.mean(iter_s),
            "median_iteration_s": statistics.median(iter_s),
            "estep_s": [round(e[2] - e[1], 6) for e in es[:-1]],
            "mstep_s": [round(m[2] - m[1], 6) for m in ms],
            # the model's average log-likelihood before iteration i's M-step
            "loglik_per_iteration": [e[3] for e in es[:-1]],
            "init_s": es[0][1] - t0,
        })
        result["estep_frames_per_s"] = x.shape[0] / statistics.median(result["estep_s"])
    else:
        result["mean_iteration_s"] = fit_s / max(1, gm.n_iter_)  # includes the init
        result["note"] = "per-iteration times unavailable: iteration time = fit_s / iterations"
    result["fit_s"] = fit_s
    result.update({"init_params": args.init_params, "reg_covar": args.reg_covar, "tol": 0.0,
                   "random_state": args.random_state, "dtype": str(x.dtype),
                   "sklearn": sklearn.__version__, "numpy": np.__version__})
    return result, gm


# ---------------------------------------------------------------- E-step bench

def random_model(x, m, rng, reg_covar):
    """A fitted-looking diagonal GaussianMixture with M=m, without fitting."""
    import numpy as np
    from sklearn.mixture import GaussianMixture
    gm = GaussianMixture(n_components=m, covariance_type="diag", reg_covar=reg_covar)
    var = x.var(axis=0) + reg_covar
    gm.means_ = x[rng.choice(x.shape[0], size=m, replace=x.shape[0] < m)].astype(np.float64)
    gm.covariances_ = var[None, :] * rng.uniform(0.5, 2.0, size=(m, x.shape[1]))
    w = rng.uniform(0.5, 1.5, size=m)
    gm.weights_ = w / w.sum()
    gm.precisions_cholesky_ = 1.0 / np.sqrt(gm.covariances_)
    gm.precisions_ = 1.0 / gm.covariances_
    for name in ("means_", "covariances_", "weights_", "precisions_cholesky_", "precisions_"):
        setattr(gm, name, getattr(gm, name).astype(x.dtype))  # float32 frames: compute in float32
    return gm


def estep_bench(x_all, args, source):
    import numpy as np
    import sklearn
    from sklearn.mixture import GaussianMixture
    from sklearn.mixture._gaussian_mixture import _estimate_gaussian_parameters
    import warnings
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(args.random_state)
    rows = []
    for m in (int(v) for v in args.estep_gauss.split(",")):
        frames = args.frames or min(x_all.shape[0], 100000, (1 << 25) // m)
        x = x_all[:frames]
        if args.estep_model == "fitted":
            gm = GaussianMixture(n_components=m, covariance_type="diag", max_iter=max(1, args.iterations), tol=0.0,
                                 init_params="random_from_data", reg_covar=args.reg_covar,
                                 random_state=args.random_state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                gm.fit(x)
        else:
            gm = random_model(x, m, rng, args.reg_covar)

        def resp_only():
            return gm._estimate_log_prob_resp(x)

        def resp_and_stats():
            log_norm, log_resp = gm._estimate_log_prob_resp(x)
            resp = np.exp(log_resp)
            # What sklearn's M-step computes from the posteriors for 'diag':
            # nk = sum g, means = g^T x / nk, covariances from g^T x^2 / nk.
            _estimate_gaussian_parameters(x, resp, args.reg_covar, "diag")
            return log_norm

        for name, fn in (("sklearn_estep", resp_only), ("sklearn_estep_stats", resp_and_stats)):
            fn()  # warm-up
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            s = statistics.median(times)
            rows.append({"impl": name, "precision": "fp64" if x.dtype == np.float64 else "fp32",
                         "D": int(x.shape[1]), "M": m, "T": int(x.shape[0]),
                         "frames_per_s": x.shape[0] / s, "ms": s * 1e3})
            print(f"{name:20s} D={x.shape[1]} M={m:5d} T={x.shape[0]:7d} {s * 1e3:10.1f} ms "
                  f"{x.shape[0] / s:12.0f} frames/s", file=sys.stderr)
    if args.csv:
        import csv
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            writer.writeheader()
            writer.writerows(rows)
    return {"mode": "estep_bench", "source": source,
            "model": args.estep_model, "repeats": args.repeats, "rows": rows,
            "sklearn": sklearn.__version__, "numpy": np.__version__}


def synthetic_frames(t, d, seed, true_gauss=32, spread=2.0):
    """Frames drawn from a random diagonal GMM (means N(0, spread^2))."""
    import numpy as np
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, spread, size=(true_gauss, d))
    sd = np.sqrt(rng.uniform(0.3, 2.0, size=(true_gauss, d)))
    w = rng.uniform(0.5, 1.5, size=true_gauss)
    comp = rng.choice(true_gauss, size=t, p=w / w.sum())
    return mu[comp] + sd[comp] * rng.standard_normal((t, d)), (w / w.sum(), mu, sd * sd)


# ---------------------------------------------------------------- self-test

def selftest(args):
    import tempfile
    import numpy as np
    x, (w, mu, var) = synthetic_frames(6000, 5, seed=3, true_gauss=4, spread=6.0)
    x32 = x.astype(np.float32)
    utts = [(f"utt{i}", x32[i * 1000:(i + 1) * 1000]) for i in range(6)]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        binary, text, npy = (os.path.join(tmp, n) for n in ("b.ark", "t.ark", "x.npy"))
        write_kaldi_ark(binary, utts, binary=True)
        write_kaldi_ark(text, utts, binary=False)
        with open(text, "ab") as f:  # an empty matrix, and a mixed archive
            f.write(b"empty  [ ]\n")
        with open(binary, "rb") as f:
            blob = f.read()
        mixed = os.path.join(tmp, "mixed.ark")
        with open(mixed, "wb") as f:
            f.write(blob)
            f.write(open(text, "rb").read())
        np.save(npy, x32)
        truncated = os.path.join(tmp, "trunc.ark")
        with open(truncated, "wb") as f:
            f.write(blob[:-7])
        try:
            read_kaldi_ark(truncated)
            failures.append("a truncated binary archive was accepted")
        except ValueError:
            pass
        back_b = read_kaldi_ark(binary)
        back_t = read_kaldi_ark(text)
        if [k for k, _ in back_b] != [k for k, _ in utts] or any(
                not np.array_equal(a, b) for (_, a), (_, b) in zip(back_b, utts)):
            failures.append("binary archive did not read back exactly")
        if len(back_t) != 7 or back_t[-1][1].shape != (0, 0) or any(
                np.max(np.abs(a - b)) > 1e-5 * max(1.0, np.max(np.abs(b))) for (_, a), (_, b) in zip(back_t, utts)):
            failures.append("text archive did not read back (within %.7g printing)")
        if len(read_kaldi_ark(mixed)) != 13:
            failures.append("mixed binary+text archive: wrong entry count")
        # The header layout byte by byte: key ' ' '\0B' 'FM ' 0x04 rows 0x04 cols.
        if blob[:5 + 2 + 3 + 10] != b"utt0 \x00BFM \x04" + struct.pack("<i", 1000) + b"\x04" + struct.pack("<i", 5):
            failures.append("binary header layout")
        results = {}
        for name, path in (("binary", binary), ("text", text), ("npy", npy)):
            frames, _ = load_frames(path)
            a = argparse.Namespace(**{**vars(args), "num_gauss": 4, "iterations": 30, "init_params": "kmeans",
                                      "reg_covar": 1e-3, "random_state": 0})
            res, _ = fit(frames, a)
            results[name] = res
            if res["frames"] != 6000 or res["dim"] != 5 or res["iterations"] != 30:
                failures.append(f"{name}: frames/dim/iterations {res['frames']}/{res['dim']}/{res['iterations']}")
            lls = res.get("loglik_per_iteration", [])
            if len(lls) != 30 or any(b < a - 1e-6 for a, b in zip(lls, lls[1:])):
                failures.append(f"{name}: per-iteration log-likelihood missing or decreasing")
        # The true model's average log-likelihood: a well-separated 4-Gaussian
        # fit should land within a few hundredths of it.
        from scipy.special import logsumexp
        ll = (np.log(w)[None, :] - 0.5 * (np.log(2 * np.pi * var).sum(1)[None, :]
                                          + (((x32[:, None, :] - mu[None]) ** 2) / var[None]).sum(-1)))
        true_ll = float(logsumexp(ll, axis=1).mean())
        for name, res in results.items():
            if abs(res["avg_loglik_per_frame"] - true_ll) > 0.05:
                failures.append(f"{name}: fitted {res['avg_loglik_per_frame']:.4f} vs true model {true_ll:.4f}")
        if abs(results["binary"]["avg_loglik_per_frame"] - results["npy"]["avg_loglik_per_frame"]) > 1e-9:
            failures.append("binary archive and .npy fits differ")
    summary = {"selftest": "FAIL" if failures else "ok", "failures": failures, "true_model_avg_loglik": true_ll,
               "fitted_avg_loglik": {k: v["avg_loglik_per_frame"] for k, v in results.items()}}
    return summary, 1 if failures else 0


def main():
    args = parse_args()
    set_thread_env(args.threads)  # before numpy's import
    threads, _limiter = thread_info(args.threads)
    if args.selftest:
        out, rc = selftest(args)
        print(json.dumps(out, indent=2))
        return rc
    if args.estep_bench:
        if args.features:
            x, _ = load_frames(args.features, args.subsample, args.dtype)
            source = args.features
        else:
            m_max = max(int(v) for v in args.estep_gauss.split(","))
            t = args.frames or min(100000, (1 << 25) // min(int(v) for v in args.estep_gauss.split(",")))
            x = synthetic_frames(max(t, m_max), args.dim, args.random_state)[0].astype(args.dtype)
            source = f"synthetic: frames drawn from a random 32-Gaussian diagonal GMM, D={args.dim}"
        out = estep_bench(x, args, source)
    else:
        x, utts = load_frames(args.features, args.subsample, args.dtype)
        if x.shape[0] < args.num_gauss:
            print(f"compare_sklearn.py: {x.shape[0]} frames, fewer than M={args.num_gauss}", file=sys.stderr)
            return 1
        out, _ = fit(x, args)
        out = {"features": args.features, "utterances": utts, "subsample": args.subsample, **out}
    out["threads"] = threads
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
