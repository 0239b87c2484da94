// FaultyBackend: a ScoringBackend that passes everything to the one it
// wraps, and fails every scoring call with the INTERNAL error a CUDA fault
// gives (cudaErrorIllegalAddress) while its switch is on: a GPU that breaks
// and recovers, on the CPU in CI or over a real GPU.
//
//   auto broken = std::make_shared<std::atomic<bool>>(false);
//   TestDaemon::Start(models, options, {.count = 2, .wrap = FaultyOn(1, broken)});
//   broken->store(true);   // device 1's scoring calls fail from here on
#ifndef GMMSCORE_TESTS_FAULTY_BACKEND_H_
#define GMMSCORE_TESTS_FAULTY_BACKEND_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "kernels/score/scoring_backend.h"

namespace gmmscore {

class FaultyBackend final : public ScoringBackend {
 public:
  static constexpr char kError[] = "injected fault: CUDA error cudaErrorIllegalAddress";

  FaultyBackend(std::unique_ptr<ScoringBackend> inner, std::shared_ptr<std::atomic<bool>> broken)
      : inner_(std::move(inner)), broken_(std::move(broken)) {}

  std::string name() const override { return inner_->name(); }
  int concurrent_calls() const override { return inner_->concurrent_calls(); }
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
    if (broken_->load()) return absl::InternalError(kError);
    return inner_->Score(model, features, options, result);
  }
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    if (broken_->load()) return absl::InternalError(kError);
    return inner_->ScoreBatch(jobs, options);
  }
  absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs, absl::Span<const FusionJob> fusions,
                               const ScoreOptions& options) override {
    if (broken_->load()) return absl::InternalError(kError);
    return inner_->ScoreFusedBatch(jobs, fusions, options);
  }

 private:
  const std::unique_ptr<ScoringBackend> inner_;
  const std::shared_ptr<std::atomic<bool>> broken_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_FAULTY_BACKEND_H_
