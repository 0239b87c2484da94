#include "kernels/hmm/sphinx_aligner.h"

#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/sparse_hmm_cpu.h"

namespace gmmscore {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SphinxAligner::SphinxAligner(SphinxLexicon lexicon, SphinxModel model, ScoringBackend* scorer,
                             SphinxAlignerOptions options)
    : lexicon_(std::move(lexicon)), model_(std::move(model)), scorer_(scorer), options_(std::move(options)) {
  const int threads = options_.threads > 0 ? options_.threads : static_cast<int>(std::thread::hardware_concurrency());
  pool_ = std::make_unique<ThreadPool>(std::max(0, threads - 1), "gs-align");
  double frate = 100;
  if (!absl::SimpleAtod(model_.feat_params.Get("-frate", "100"), &frate) || !(frate > 0)) frate = 100;
  frame_seconds_ = 1.0 / frate;
  if (!options_.viterbi) {
    options_.viterbi = [this](absl::Span<const HmmGraph* const> graphs, absl::Span<const ConstMatrixView> emissions) {
      return GraphViterbiCpu(graphs, emissions, pool_.get());
    };
  }
}

absl::StatusOr<std::unique_ptr<SphinxAligner>> SphinxAligner::Create(const std::string& model_dir,
                                                                     const std::string& dictionary,
                                                                     ScoringBackend* scorer,
                                                                     SphinxAlignerOptions options) {
  if (scorer == nullptr) return absl::InvalidArgumentError("the aligner needs a scoring backend");
  GMM_ASSIGN_OR_RETURN(SphinxLexicon lexicon, LoadSphinxLexicon(model_dir, dictionary));
  GMM_ASSIGN_OR_RETURN(SphinxModel model, ReadSphinxModel(model_dir));
  if (model.model.num_states() != lexicon.mdef.num_senones) {
    return absl::InvalidArgumentError(absl::StrCat(model_dir, ": the model has ", model.model.num_states(),
                                                   " senones, mdef ", lexicon.mdef.num_senones));
  }
  return std::unique_ptr<SphinxAligner>(
      new SphinxAligner(std::move(lexicon), std::move(model), scorer, std::move(options)));
}

absl::StatusOr<FloatMatrix> SphinxAligner::ScoreGraphSenones(const HmmGraph& graph, ConstMatrixView features) {
  GMM_ASSIGN_OR_RETURN(TiedMixtureModel subset, model_.model.SubsetStates(graph.columns));
  GMM_ASSIGN_OR_RETURN(const std::shared_ptr<const PreparedModel> prepared,
                       scorer_->PrepareTied(std::make_shared<const TiedMixtureModel>(std::move(subset))));
  ScoreResult result;
  GMM_RETURN_IF_ERROR(scorer_->Score(*prepared, features, {.frame_totals = false}, &result));
  return std::move(result.loglikes);
}

std::vector<absl::StatusOr<Alignment>> SphinxAligner::Align(absl::Span<const AlignInput> batch) {
  timing_ = {};
  std::vector<absl::StatusOr<Alignment>> out(batch.size(), absl::InternalError("not aligned"));
  std::vector<std::optional<UtteranceGraph>> graphs(batch.size());
  auto start = std::chrono::steady_clock::now();
  pool_->ParallelFor(static_cast<int64_t>(batch.size()), [&](int64_t u) {
    absl::StatusOr<UtteranceGraph> g = CompileUtteranceGraph(lexicon_, batch[u].words, options_.graph);
    if (!g.ok()) {
      out[u] = g.status();
      return;
    }
    const int32_t needed = g->hmm.MinFrames();
    if (batch[u].features.rows < needed) {
      out[u] = absl::FailedPreconditionError(absl::StrCat(batch[u].features.rows, " frames, but the transcript's ",
                                                          batch[u].words.size(), " words need at least ", needed));
      return;
    }
    graphs[u] = *std::move(g);
  });
  timing_.graphs = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  std::vector<FloatMatrix> emissions(batch.size());
  std::vector<size_t> ready;
  for (size_t u = 0; u < batch.size(); ++u) {
    if (!graphs[u]) continue;
    absl::StatusOr<FloatMatrix> scores = ScoreGraphSenones(graphs[u]->hmm, batch[u].features);
    if (!scores.ok()) {
      out[u] = scores.status();
      continue;
    }
    emissions[u] = *std::move(scores);
    ready.push_back(u);
  }
  timing_.scoring = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  std::vector<const HmmGraph*> graph_ptrs;
  std::vector<ConstMatrixView> views;
  for (size_t u : ready) {
    graph_ptrs.push_back(&graphs[u]->hmm);
    views.push_back(emissions[u].view());
  }
  std::vector<absl::StatusOr<ViterbiPath>> paths = options_.viterbi(graph_ptrs, views);
  timing_.viterbi = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  for (size_t k = 0; k < ready.size(); ++k) {
    const size_t u = ready[k];
    if (!paths[k].ok()) {
      out[u] = paths[k].status();
      continue;
    }
    out[u] = AlignmentFromPath(lexicon_, *graphs[u], *paths[k]);
  }
  timing_.segments = SecondsSince(start);
  return out;
}

}  // namespace gmmscore
