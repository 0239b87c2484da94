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
#include "tests/forwarding_backend.h"

namespace gmmscore {

class FaultyBackend final : public ForwardingBackend {
 public:
  static constexpr char kError[] = "injected fault: CUDA error cudaErrorIllegalAddress";

  FaultyBackend(std::unique_ptr<ScoringBackend> inner, std::shared_ptr<std::atomic<bool>> broken)
      : ForwardingBackend(std::move(inner)), broken_(std::move(broken)) {}

  absl::Status Score(const PreparedModel& model, ConstMatrixView features, const ScoreOptions& options,
                     ScoreResult* result) override {
    if (broken_->load()) return absl::InternalError(kError);
    return ForwardingBackend::Score(model, features, options, result);
  }
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    if (broken_->load()) return absl::InternalError(kError);
    return ForwardingBackend::ScoreBatch(jobs, options);
  }
  absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs, absl::Span<const FusionJob> fusions,
                               const ScoreOptions& options) override {
    if (broken_->load()) return absl::InternalError(kError);
    return ForwardingBackend::ScoreFusedBatch(jobs, fusions, options);
  }

 private:
  const std::shared_ptr<std::atomic<bool>> broken_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_FAULTY_BACKEND_H_
