#include "kernels/train/em_trainer.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/train/gmm_init.h"
#include "kernels/train/mix_up.h"

namespace gmmscore {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

absl::Status CheckOptions(const EmOptions& options, const std::vector<TrainingBlock>& blocks) {
  if (options.num_gauss < 1 || options.iterations < 0 || options.num_gauss_init < 0 ||
      options.num_gauss_init > options.num_gauss) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EM needs num_gauss >= 1 (got ", options.num_gauss, "), iterations >= 0 (got ",
        options.iterations, ") and 0 <= num_gauss_init <= num_gauss (got ", options.num_gauss_init, ")"));
  }
  int64_t frames = 0;
  for (const TrainingBlock& block : blocks) frames += block.frames.rows();
  if (frames == 0) return absl::InvalidArgumentError("no training frames");
  return absl::OkStatus();
}

}  // namespace

FloatMatrix InitialisationFrames(const std::vector<TrainingBlock>& blocks, int64_t limit) {
  int64_t total = 0;
  int64_t dim = 0;
  for (const TrainingBlock& block : blocks) {
    total += block.frames.rows();
    dim = block.frames.cols();
  }
  const int64_t keep = std::min(total, limit);
  FloatMatrix out(keep, dim);
  int64_t t = 0, next_out = 0;
  for (const TrainingBlock& block : blocks) {
    for (int64_t r = 0; r < block.frames.rows(); ++r, ++t) {
      // Frame t is kept when it is the first at or past next_out * total / keep.
      if (next_out < keep && t * keep >= next_out * total) {
        std::copy_n(block.frames.row(r), dim, out.row(next_out++));
      }
    }
  }
  return out;
}

absl::StatusOr<NaturalGmm> TrainGmm(StatsBackend& backend, const std::vector<TrainingBlock>& blocks,
                                    std::optional<NaturalGmm> initial, const EmOptions& options,
                                    const EmIterationCallback& on_iteration,
                                    const EmProgressCallback& progress) {
  GMM_RETURN_IF_ERROR(CheckOptions(options, blocks));
  std::mt19937_64 rng(options.seed);
  NaturalGmm gmm;
  if (initial.has_value()) {
    gmm = *std::move(initial);
    if (gmm.num_states() != 1 || gmm.dim != blocks.front().frames.cols()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the initial model must be one GMM of dimension ", blocks.front().frames.cols(),
          " (it has ", gmm.num_states(), " states of dimension ", gmm.dim, ")"));
    }
  } else {
    const int start = options.num_gauss_init > 0 ? options.num_gauss_init : options.num_gauss;
    const FloatMatrix init_frames = InitialisationFrames(blocks, int64_t{1} << 22);
    GMM_ASSIGN_OR_RETURN(gmm, InitGmmFromFrames(init_frames.view(), start, rng));
  }
  const int half = std::max(options.iterations / 2, 1);
  const int step = std::max((options.num_gauss - gmm.states[0].num_gaussians()) / half, 1);
  StatsPass pass(&backend, &blocks);
  for (int iter = 1; iter <= options.iterations; ++iter) {
    const auto start = std::chrono::steady_clock::now();
    EmIteration report;
    report.iteration = iter;
    report.num_gauss = gmm.states[0].num_gaussians();
    GMM_ASSIGN_OR_RETURN(DiagGmmModel model, gmm.ToModel());
    GMM_ASSIGN_OR_RETURN(GmmStats stats, pass.Run(model, 1, [&](int64_t done, int64_t all) {
      if (progress) progress(iter, done, all);
    }));
    report.stats_seconds = SecondsSince(start);
    report.frames = stats.total_weight;
    report.loglike_per_frame = stats.total_loglike / std::max(stats.total_weight, 1e-300);
    GMM_ASSIGN_OR_RETURN(gmm, MleUpdate(gmm, stats, options.mle, &report.update));
    const int current = gmm.states[0].num_gaussians();
    if (iter <= half && current < options.num_gauss) {
      GMM_RETURN_IF_ERROR(SplitState(std::min(options.num_gauss, current + step),
                                     options.perturb_factor, gmm.dim, rng, &gmm.states[0]));
    }
    report.seconds = SecondsSince(start);
    if (on_iteration) on_iteration(report);
  }
  return gmm;
}

}  // namespace gmmscore
