#include "kernels/hmm/align_engine.h"

#include <chrono>

#include "kernels/core/status_macros.h"
#include "kernels/hmm/sparse_hmm_cpu.h"

namespace gmmscore {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class HostAlignEngine : public AlignEngine {
 public:
  HostAlignEngine(std::shared_ptr<const TiedMixtureModel> model, ScoringBackend* scorer, ThreadPool* pool)
      : model_(std::move(model)), scorer_(scorer), pool_(pool) {}

  std::string name() const override { return scorer_->name(); }

  std::vector<absl::StatusOr<ViterbiPath>> BestPaths(absl::Span<const HmmGraph* const> graphs,
                                                     absl::Span<const ConstMatrixView> features,
                                                     AlignTiming* timing) override {
    auto start = std::chrono::steady_clock::now();
    std::vector<absl::StatusOr<ViterbiPath>> out(graphs.size(), absl::InternalError("not aligned"));
    std::vector<FloatMatrix> emissions(graphs.size());
    std::vector<size_t> scored;
    for (size_t u = 0; u < graphs.size(); ++u) {
      absl::StatusOr<FloatMatrix> scores = ScoreSenones(*graphs[u], features[u]);
      if (!scores.ok()) {
        out[u] = scores.status();
        continue;
      }
      emissions[u] = *std::move(scores);
      scored.push_back(u);
    }
    timing->scoring += SecondsSince(start);
    start = std::chrono::steady_clock::now();
    std::vector<const HmmGraph*> ready;
    std::vector<ConstMatrixView> views;
    for (size_t u : scored) {
      ready.push_back(graphs[u]);
      views.push_back(emissions[u].view());
    }
    std::vector<absl::StatusOr<ViterbiPath>> paths = GraphViterbiCpu(ready, views, pool_);
    for (size_t k = 0; k < scored.size(); ++k) out[scored[k]] = std::move(paths[k]);
    timing->viterbi += SecondsSince(start);
    return out;
  }

 private:
  // T x graph.columns.size(): the graph's senones only.
  absl::StatusOr<FloatMatrix> ScoreSenones(const HmmGraph& graph, ConstMatrixView features) {
    GMM_ASSIGN_OR_RETURN(TiedMixtureModel subset, model_->SubsetStates(graph.columns));
    GMM_ASSIGN_OR_RETURN(const std::shared_ptr<const PreparedModel> prepared,
                         scorer_->PrepareTied(std::make_shared<const TiedMixtureModel>(std::move(subset))));
    ScoreResult result;
    GMM_RETURN_IF_ERROR(scorer_->Score(*prepared, features, {.frame_totals = false}, &result));
    return std::move(result.loglikes);
  }

  std::shared_ptr<const TiedMixtureModel> model_;
  ScoringBackend* scorer_;
  ThreadPool* pool_;
};

}  // namespace

std::unique_ptr<AlignEngine> MakeHostAlignEngine(std::shared_ptr<const TiedMixtureModel> model,
                                                 ScoringBackend* scorer, ThreadPool* pool) {
  return std::make_unique<HostAlignEngine>(std::move(model), scorer, pool);
}

}  // namespace gmmscore
