// Data and float64 answers for the CUDA statistics test and benchmark at
// sizes where GenerateSyntheticFeatures and the single-threaded reference
// are too slow (10^7 frames): frames drawn from the model on many threads,
// and the float64 reference run over slices of the pairs on many threads.
//
//   FloatMatrix frames = DrawModelFrames(model, /*frames=*/10'000'000, /*seed=*/3);
//   GMM_ASSIGN_OR_RETURN(GmmStats want, ParallelReferenceStats(model, frames, pairs, /*num_sets=*/1));
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_TEST_DATA_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_TEST_DATA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// `frames` x dim frames, each from a uniformly chosen Gaussian of the model
// (one in 20 with 4x the spread, as GenerateSyntheticFeatures). The same
// model and seed give the same frames whatever the thread count (frames are
// drawn in fixed slices, each with its own generator).
FloatMatrix DrawModelFrames(const DiagGmmModel& model, int64_t frames, uint64_t seed);

// `model` with faint twins: Gaussian g of each state with g % stride == 0
// (g + 1 in the state) becomes a copy of Gaussian g + 1 (its mean and
// variance) at e^log_factor (< 0) times its weight, the state's weights
// renormalised. Every frame's posterior of a faint twin is then e^log_factor
// times its sibling's: small in float32 (log_factor -60: about 1e-26) but
// not zero, which a kernel that skips negligible pairs must still count.
DiagGmmModel WithFaintGaussians(const DiagGmmModel& model, int stride, double log_factor);

// The worst relative error over the faint twins' rows (WithFaintGaussians,
// in every set): per Gaussian and array (occupancy, first and second
// order), max |got - want| / max |want| over its row. Infinity where got
// is not finite.
double FaintGaussianError(const GmmStats& got, const GmmStats& want, int stride);

// The float64 reference (CreateReferenceStatsBackend) over `frames` and
// `pairs` (empty: a global GMM), computed on hardware threads over slices of
// the pairs (or frames) and added slice by slice.
absl::StatusOr<GmmStats> ParallelReferenceStats(const DiagGmmModel& model, const FloatMatrix& frames,
                                                absl::Span<const StatsPair> pairs, int num_sets);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_TEST_DATA_H_
