// ForwardingBackend: a ScoringBackend that passes every call to the one it
// wraps; the tests' decorators (FaultyBackend, HostGatherBackend) derive
// from it and override only what they change.
#ifndef GMMSCORE_TESTS_FORWARDING_BACKEND_H_
#define GMMSCORE_TESTS_FORWARDING_BACKEND_H_

#include <memory>
#include <string>
#include <utility>

#include "kernels/score/scoring_backend.h"

namespace gmmscore {

class ForwardingBackend : public ScoringBackend {
 public:
  explicit ForwardingBackend(std::unique_ptr<ScoringBackend> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  int concurrent_calls() const override { return inner_->concurrent_calls(); }
  PinnedScoresStats pinned_scores() const override { return inner_->pinned_scores(); }
  bool ReturnsSelected(const PreparedModel& model, const StateSelection& select) const override {
    return inner_->ReturnsSelected(model, select);
  }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) override {
    return inner_->Prepare(std::move(model));
  }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> PrepareTied(
      std::shared_ptr<const TiedMixtureModel> model) override {
    return inner_->PrepareTied(std::move(model));
  }
  absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> CreateFmllrGather(
      const PreparedModel& model, const PosteriorPolicy& policy) override {
    return inner_->CreateFmllrGather(model, policy);
  }
  absl::Status Score(const PreparedModel& model, ConstMatrixView features, const ScoreOptions& options,
                     ScoreResult* result) override {
    return inner_->Score(model, features, options, result);
  }
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    return inner_->ScoreBatch(jobs, options);
  }
  absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs, absl::Span<const FusionJob> fusions,
                               const ScoreOptions& options) override {
    return inner_->ScoreFusedBatch(jobs, fusions, options);
  }

 protected:
  ScoringBackend& inner() const { return *inner_; }

 private:
  const std::unique_ptr<ScoringBackend> inner_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_FORWARDING_BACKEND_H_
