// GMM statistics on the CPU in float32 with OpenBLAS, on a thread pool: the
// fast CPU path (the reference is stats_reference.h).
//
//   std::unique_ptr<StatsBackend> cpu = CreateCpuStatsBackend({.num_threads = 0});
//
// Per state, blocks of 128 frames go through two SGEMMs: scores =
// [y, y^2] [u, v]^T + K (the scoring form, y = x - centre); the scores
// within 20 nats of a frame's best are recomputed in float64 around each
// Gaussian's mean (the expanded form loses ~1e-4 nats to cancellation far
// from the centre); posteriors in place; then [sum g x, sum g x^2] =
// Gamma^T [x, x^2] on raw features (sums of positive terms, no cancellation
// when converting). Each block's float32 sums are added into float64
// accumulators, so error does not grow with the amount of data: the tests
// see 1e-7 relative against the float64 reference, at 10^7 frames too. A state with many frames is split
// into at most num_threads ranges whose float64 partials are added in range
// order: results depend on the thread count only through float rounding and
// are identical from run to run.
//
// Like the CPU scoring backend, creating one sets OpenBLAS to one thread
// (process-wide): the pool supplies the parallelism.
#ifndef GMMSCORE_KERNELS_TRAIN_CPU_STATS_BACKEND_H_
#define GMMSCORE_KERNELS_TRAIN_CPU_STATS_BACKEND_H_

#include <memory>

#include "kernels/train/stats_backend.h"

namespace gmmscore {

struct CpuStatsOptions {
  int num_threads = 0;  // 0: every hardware thread
};

std::unique_ptr<StatsBackend> CreateCpuStatsBackend(const CpuStatsOptions& options = {});

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CPU_STATS_BACKEND_H_
