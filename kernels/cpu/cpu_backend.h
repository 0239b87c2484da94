// The CPU scoring backend: float32, multi-threaded, GEMM-shaped like Kaldi's
// DiagGmm::LogLikelihoods.
//
//   std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({.num_threads = 4});
//   GMM_ASSIGN_OR_RETURN(auto prepared, cpu->Prepare(model));
//   GMM_RETURN_IF_ERROR(cpu->Score(*prepared, features.view(), {}, &result));
//
// Method: each frame is expanded to [1, y, y^2] (y = x - centre) and the
// model's params() (rows [K, u, v]) multiply it in chunks of whole states with
// OpenBLAS SGEMM; a vectorised log-sum-exp over each state's Gaussians
// follows (AVX2 + FMA when the CPU has it, chosen at run time; the build
// itself targets baseline x86-64).
//
// Accuracy: the float32 sum K + u.y + v.y^2 is off by a few float ulps of
// its largest terms, not of its result: measured errors stay below
// 9 * 2^-24 * (|K| + sum_d |u_d y_d| + |v_d y_d^2|). On the synthetic
// MFCC-scale data (with 5% outlier frames) the worst element of a 1000-frame
// batch is 3e-5 to 7e-4 nats off the float64 reference: outlier frames give
// terms that cancel, and far-off states at -4000 nats where one float ulp is
// already 2.4e-4. cpu_backend_test states the bound it checks.
//
// Threads: a backend owns a persistent pool; Score never creates threads.
// Every thread that has worked on a Score call keeps its scratch (up to
// about 0.5 MiB) until it exits.
// Creating the first backend calls openblas_set_num_threads(1) (OpenBLAS has
// no per-call setting), so that BLAS calls made from the pool's threads do not
// start threads of their own. This is process-wide: other OpenBLAS users in
// the same process then run single-threaded too.
#ifndef GMMSCORE_KERNELS_CPU_CPU_BACKEND_H_
#define GMMSCORE_KERNELS_CPU_CPU_BACKEND_H_

#include <memory>

#include "kernels/score/scoring_backend.h"

namespace gmmscore {

struct CpuBackendOptions {
  // Threads that work on one Score call, the caller's included (the pool gets
  // num_threads - 1 workers). 0 = std::thread::hardware_concurrency().
  int num_threads = 0;
};

// Never fails; never returns null. The backend:
//   name()    "cpu".
//   Prepare() keeps a reference to the model and plans its state chunks;
//             device_bytes() is 0. INVALID_ARGUMENT for a null model.
//   PrepareTied() keeps the tied model with a TiedMixtureCpuScorer (each
//             codebook Gaussian once per frame; tied_mixture_scorer.h),
//             which scores on the backend's pool; device_bytes() is 0.
//   Score()   ValidateFeatures' error if the features are bad;
//             INVALID_ARGUMENT if `model` was prepared by another backend;
//             otherwise fills result->loglikes (T x S, T = 0 gives 0 x S) and,
//             when options.frame_totals, result->frame_totals (else empties
//             it). options.algorithm is ignored. Thread-safe: concurrent
//             calls share the pool (and each caller works on its own call).
std::unique_ptr<ScoringBackend> CreateCpuBackend(const CpuBackendOptions& options = {});

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CPU_CPU_BACKEND_H_
