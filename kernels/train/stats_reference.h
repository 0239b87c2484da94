// The float64 reference for GMM statistics: every likelihood, posterior and
// sum in double, from each Gaussian's natural parameters
// (DiagGmmModel::Natural), frame by frame. Slow and obviously right; the CPU
// and CUDA statistics are tested against it.
//
//   std::unique_ptr<StatsBackend> reference = CreateReferenceStatsBackend();
#ifndef GMMSCORE_KERNELS_TRAIN_STATS_REFERENCE_H_
#define GMMSCORE_KERNELS_TRAIN_STATS_REFERENCE_H_

#include <memory>

#include "kernels/train/stats_backend.h"

namespace gmmscore {

std::unique_ptr<StatsBackend> CreateReferenceStatsBackend();

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_STATS_REFERENCE_H_
