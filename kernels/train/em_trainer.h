// EM training of a global diagonal GMM (a UBM) on any StatsBackend, as
// Kaldi's gmm-global-init-from-feats does it: start from `initial` (or
// from random frames with num_gauss_init Gaussians), then each iteration one
// statistics pass and one ML update; during the first half of the
// iterations, mix up by an even step towards num_gauss (splits perturbed by
// perturb_factor sigma).
//
//   EmOptions options;  options.num_gauss = 512;  options.iterations = 20;
//   GMM_ASSIGN_OR_RETURN(NaturalGmm ubm,
//       TrainGmm(*backend, blocks, /*initial=*/std::nullopt, options, [](const EmIteration& it) {
//         printf("iteration %d: %.4f per frame\n", it.iteration, it.loglike_per_frame); }));
//
// The log-likelihood an iteration reports is that of the model it started
// from, over the data (EM raises it every iteration; mixing-up may lower it
// for one). Reentrant; the backend is used by one call at a time.
#ifndef GMMSCORE_KERNELS_TRAIN_EM_TRAINER_H_
#define GMMSCORE_KERNELS_TRAIN_EM_TRAINER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/train/mle_update.h"
#include "kernels/train/natural_gmm.h"
#include "kernels/train/stats_backend.h"
#include "kernels/train/stats_pass.h"

namespace gmmscore {

struct EmOptions {
  int num_gauss = 256;
  int num_gauss_init = 0;  // 0: start at num_gauss
  int iterations = 20;
  double perturb_factor = 0.1;  // gmm-global-init-from-feats splits at 0.1
  uint64_t seed = 777;
  MleOptions mle;
};

struct EmIteration {
  int iteration = 0;  // from 1
  int num_gauss = 0;  // at the start of the iteration
  double loglike_per_frame = 0.0;
  double frames = 0.0;
  double seconds = 0.0;          // statistics + update
  double stats_seconds = 0.0;    // the statistics pass alone
  MleReport update;
};

// Called after each iteration; also per block of the statistics pass with
// (iteration, blocks done, blocks in all) when `progress` is set.
using EmIterationCallback = std::function<void(const EmIteration&)>;
using EmProgressCallback = std::function<void(int, int64_t, int64_t)>;

// INVALID_ARGUMENT for bad options (num_gauss < 1, iterations < 0,
// num_gauss_init > num_gauss), an initial model of several states or of
// another dimension, or no data; backend errors as they come.
absl::StatusOr<NaturalGmm> TrainGmm(StatsBackend& backend, const std::vector<TrainingBlock>& blocks,
                                    std::optional<NaturalGmm> initial, const EmOptions& options,
                                    const EmIterationCallback& on_iteration,
                                    const EmProgressCallback& progress = nullptr);

// Frames for initialisation: every frame when there are at most `limit`,
// else an even subsample of `limit` (deterministic).
FloatMatrix InitialisationFrames(const std::vector<TrainingBlock>& blocks, int64_t limit);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_EM_TRAINER_H_
