#include "kernels/train/stats_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/core/status_macros.h"
#include "kernels/train/host_frame_block.h"

namespace gmmscore {
namespace {

class ReferenceStatsBackend : public StatsBackend {
 public:
  std::string name() const override { return "reference"; }

  absl::Status SetModel(const DiagGmmModel& model) override {
    dim_ = model.dim();
    offsets_.assign(model.state_offsets().begin(), model.state_offsets().end());
    gaussians_.clear();
    log_consts_.clear();
    for (int64_t g = 0; g < model.num_gaussians(); ++g) {
      NaturalGaussian gauss = model.Natural(g);
      double log_const = std::log(gauss.weight) - 0.5 * dim_ * std::log(2.0 * M_PI);
      for (double var : gauss.variance) log_const -= 0.5 * std::log(var);
      log_consts_.push_back(log_const);
      gaussians_.push_back(std::move(gauss));
    }
    shape_ = ModelShape::Of(model);
    has_model_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) override {
    return LoadHostFrames(frames);
  }

  absl::Status Accumulate(const FrameBlock& block, absl::Span<const StatsPair> pairs,
                          GmmStats* stats) override {
    const auto& host = static_cast<const HostFrameBlock&>(block);
    GMM_RETURN_IF_ERROR(ValidateStatsRequest(has_model_ ? &shape_ : nullptr, block.num_frames(),
                                             block.dim(), pairs, *stats));
    const int num_states = static_cast<int>(offsets_.size()) - 1;
    if (pairs.empty()) {
      for (int64_t t = 0; t < block.num_frames(); ++t) AddPair(host.frames().row(t), 0, 0, 1.0, stats);
      return absl::OkStatus();
    }
    for (const StatsPair& pair : pairs) {
      AddPair(host.frames().row(pair.frame), pair.target / num_states, pair.target % num_states,
              pair.weight, stats);
    }
    return absl::OkStatus();
  }

  int64_t frame_memory_budget() const override { return std::numeric_limits<int64_t>::max(); }

 private:
  double LogLikelihood(const float* x, int64_t g) const {
    const NaturalGaussian& gauss = gaussians_[g];
    double sum = log_consts_[g];
    for (int d = 0; d < dim_; ++d) {
      const double diff = x[d] - gauss.mean[d];
      sum -= 0.5 * diff * diff / gauss.variance[d];
    }
    return sum;
  }

  void AddPair(const float* x, int set, int state, double weight, GmmStats* stats) const {
    const int64_t first = offsets_[state], last = offsets_[state + 1];
    std::vector<double> loglik(last - first);
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t g = first; g < last; ++g) {
      loglik[g - first] = LogLikelihood(x, g);
      best = std::max(best, loglik[g - first]);
    }
    double sum = 0.0;
    for (double l : loglik) sum += std::exp(l - best);
    const double total = best + std::log(sum);
    stats->total_loglike += weight * total;
    stats->total_weight += weight;
    const int64_t base = set * stats->num_gaussians();
    for (int64_t g = first; g < last; ++g) {
      const double gamma = weight * std::exp(loglik[g - first] - total);
      const int64_t row = base + g;
      stats->occupancy[row] += gamma;
      for (int d = 0; d < dim_; ++d) {
        stats->mean_acc[row * dim_ + d] += gamma * x[d];
        stats->var_acc[row * dim_ + d] += gamma * static_cast<double>(x[d]) * x[d];
      }
    }
  }

  int dim_ = 0;
  bool has_model_ = false;
  ModelShape shape_;
  std::vector<int64_t> offsets_;
  std::vector<NaturalGaussian> gaussians_;
  std::vector<double> log_consts_;
};

}  // namespace

std::unique_ptr<StatsBackend> CreateReferenceStatsBackend() {
  return std::make_unique<ReferenceStatsBackend>();
}

}  // namespace gmmscore
