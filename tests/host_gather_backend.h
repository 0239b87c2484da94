// HostGatherBackend: a ScoringBackend that passes scoring to the one it
// wraps and gathers fMLLR statistics (kernels/score/fmllr_gather.h) itself,
// on the host, after each call: FmllrAccumulator over PairsFromScores of the
// window's own scores, into the target's segment. With it a CPU daemon plans
// and reads its adapting streams' statistics as a CUDA one does (segments,
// reads at updates, host fallbacks), so CI exercises that path; the CUDA
// kernels themselves are tested against the float64 reference in
// kernels/train/cuda/fmllr_gather_test.cc.
//
//   TestDaemon::Start(models, options, {.wrap = HostGatherOnCpu});
#ifndef GMMSCORE_TESTS_HOST_GATHER_BACKEND_H_
#define GMMSCORE_TESTS_HOST_GATHER_BACKEND_H_

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/score/fmllr_gather.h"
#include "kernels/score/scoring_backend.h"
#include "kernels/train/fmllr_stats.h"
#include "kernels/train/state_posteriors.h"
#include "tests/forwarding_backend.h"

namespace gmmscore {

class HostGatherTarget final : public FmllrGatherTarget {
 public:
  HostGatherTarget(const PreparedModel* prepared, PosteriorPolicy policy)
      : prepared_(prepared), policy_(std::move(policy)), accumulator_(prepared->model()) {
    for (auto& segment : segments_) segment.assign(FmllrGatherValues(prepared->dim()), 0.0);
  }
  int dim() const override { return prepared_->dim(); }
  const PreparedModel* prepared() const { return prepared_; }

  absl::Status Take(int segment, absl::Span<double> sums) override {
    if (poisoned()) return absl::FailedPreconditionError("poisoned");
    if (segment < 0 || segment >= kSegments ||
        static_cast<int64_t>(sums.size()) != FmllrGatherValues(dim())) {
      return absl::InvalidArgumentError(absl::StrCat("take segment ", segment));
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += segments_[segment][i];
    segments_[segment].assign(sums.size(), 0.0);
    return absl::OkStatus();
  }

  // One scored window: raw frames and their dense scores.
  absl::Status Add(int segment, ConstMatrixView frames, ConstMatrixView loglikes) {
    const std::vector<StatsPair> pairs = PairsFromScores(loglikes, policy_);
    if (pairs.empty()) return absl::OkStatus();  // to the accumulator: every frame
    FmllrStats stats = FmllrStats::ForDim(dim());
    absl::Status added = accumulator_.Accumulate(frames, pairs, &stats).status();
    if (!added.ok()) return added;
    const int ext = dim() + 1;
    const int64_t per_dim = ext * (ext + 1) / 2;
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double>& out = segments_[segment];
    out[0] += stats.beta;
    for (size_t i = 0; i < stats.k.size(); ++i) out[1 + i] += stats.k[i];
    double* packed = out.data() + 1 + stats.k.size();
    for (int i = 0; i < dim(); ++i) {
      for (int p = 0; p < ext; ++p) {
        for (int q = p; q < ext; ++q) {
          packed[i * per_dim + FmllrPackedIndex(p, q, ext)] += stats.g_matrix(i)[p * ext + q];
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  const PreparedModel* const prepared_;
  const PosteriorPolicy policy_;
  const FmllrAccumulator accumulator_;
  std::mutex mu_;
  std::array<std::vector<double>, kSegments> segments_;
};

class HostGatherBackend final : public ForwardingBackend {
 public:
  explicit HostGatherBackend(std::unique_ptr<ScoringBackend> inner)
      : ForwardingBackend(std::move(inner)) {}

  absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> CreateFmllrGather(
      const PreparedModel& model, const PosteriorPolicy& policy) override {
    if (model.tied()) return absl::FailedPreconditionError("tied-mixture model");
    return std::make_unique<HostGatherTarget>(&model, policy);
  }
  // The windows without their gathering to the inner backend (dense, as the
  // CPU's are), then each gathering window's statistics.
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    std::vector<ScoreWindow> plain(jobs.begin(), jobs.end());
    for (ScoreWindow& job : plain) {
      if (job.gather == nullptr) continue;
      const auto* target = dynamic_cast<const HostGatherTarget*>(job.gather);
      if (target == nullptr || target->prepared() != job.model || job.gather_segment < 0 ||
          job.gather_segment >= FmllrGatherTarget::kSegments) {
        return absl::InvalidArgumentError("a window gathers into a target for another model");
      }
      job.gather = nullptr;
    }
    if (absl::Status scored = inner().ScoreBatch(plain, options); !scored.ok()) return scored;
    for (const ScoreWindow& job : jobs) {
      if (job.gather == nullptr || job.features.rows == 0) continue;
      absl::Status added = static_cast<HostGatherTarget*>(job.gather)
                               ->Add(job.gather_segment, job.features, job.result->loglikes.view());
      if (!added.ok()) {
        for (const ScoreWindow& other : jobs) {
          if (other.gather != nullptr) other.gather->Poison();
        }
        return added;
      }
    }
    return absl::OkStatus();
  }
  // Fused on the host (the base class), over this ScoreBatch.
  absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs,
                               absl::Span<const FusionJob> fusions,
                               const ScoreOptions& options) override {
    return ScoringBackend::ScoreFusedBatch(jobs, fusions, options);
  }
};

// For TestDevices::wrap: a CPU backend gathers on the host; any other (CUDA,
// which gathers on its device) is left as it is.
inline std::unique_ptr<ScoringBackend> HostGatherOnCpu(int, std::unique_ptr<ScoringBackend> backend) {
  if (backend->name() != "cpu") return backend;
  return std::make_unique<HostGatherBackend>(std::move(backend));
}

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_HOST_GATHER_BACKEND_H_
