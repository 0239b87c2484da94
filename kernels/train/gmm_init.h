// A first GMM from features, as Kaldi's gmm-global-init-from-feats does it
// (InitGmmFromRandomFrames): every Gaussian weight 1/M, its mean a distinct
// random frame, its variance the data's global variance.
//
//   std::mt19937_64 rng(seed);
//   GMM_ASSIGN_OR_RETURN(NaturalGmm gmm, InitGmmFromFrames(frames, /*num_gauss=*/64, rng));
#ifndef GMMSCORE_KERNELS_TRAIN_GMM_INIT_H_
#define GMMSCORE_KERNELS_TRAIN_GMM_INIT_H_

#include <random>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/train/natural_gmm.h"

namespace gmmscore {

// Errors: INVALID_ARGUMENT when num_gauss < 1, there are fewer frames than
// Gaussians, or the features have no positive variance in any dimension
// (Kaldi's check); dimensions of zero variance get a variance of 1e-3 of the
// largest instead of zero. `frames` must hold usable values.
absl::StatusOr<NaturalGmm> InitGmmFromFrames(ConstMatrixView frames, int num_gauss,
                                             std::mt19937_64& rng);

// The per-dimension mean and variance of `frames`, in float64.
void FrameMoments(ConstMatrixView frames, std::vector<double>* mean, std::vector<double>* variance);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_GMM_INIT_H_
