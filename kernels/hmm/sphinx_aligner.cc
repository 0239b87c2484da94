#include "kernels/hmm/sphinx_aligner.h"

#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SphinxAligner::SphinxAligner(SphinxLexicon lexicon, std::shared_ptr<const TiedMixtureModel> model,
                             double frame_seconds, SphinxAlignerOptions options)
    : lexicon_(std::move(lexicon)), model_(std::move(model)), options_(std::move(options)) {
  frame_seconds_ = frame_seconds;
  const int threads = options_.threads > 0 ? options_.threads : static_cast<int>(std::thread::hardware_concurrency());
  pool_ = std::make_unique<ThreadPool>(std::max(0, threads - 1), "gs-align");
}

absl::StatusOr<std::unique_ptr<SphinxAligner>> SphinxAligner::Create(const std::string& model_dir,
                                                                     const std::string& dictionary,
                                                                     ScoringBackend* scorer,
                                                                     SphinxAlignerOptions options) {
  if (scorer == nullptr && !options.engine) return absl::InvalidArgumentError("the aligner needs a scoring backend");
  GMM_ASSIGN_OR_RETURN(SphinxLexicon lexicon, LoadSphinxLexicon(model_dir, dictionary));
  GMM_ASSIGN_OR_RETURN(SphinxModel sphinx, ReadSphinxModel(model_dir));
  if (sphinx.model.num_states() != lexicon.mdef.num_senones) {
    return absl::InvalidArgumentError(absl::StrCat(model_dir, ": the model has ", sphinx.model.num_states(),
                                                   " senones, mdef ", lexicon.mdef.num_senones));
  }
  double frate = 100;
  if (!absl::SimpleAtod(sphinx.feat_params.Get("-frate", "100"), &frate) || !(frate > 0)) frate = 100;
  // One copy of the senones, shared by the aligner and its engine.
  auto model = std::make_shared<const TiedMixtureModel>(std::move(sphinx.model));
  AlignEngineFactory factory = options.engine;
  std::unique_ptr<SphinxAligner> aligner(new SphinxAligner(std::move(lexicon), model, 1.0 / frate, std::move(options)));
  if (factory) {
    GMM_ASSIGN_OR_RETURN(aligner->engine_, factory(std::move(model)));
  } else {
    aligner->engine_ = MakeHostAlignEngine(std::move(model), scorer, aligner->pool_.get());
  }
  return aligner;
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

  std::vector<size_t> ready;
  std::vector<const HmmGraph*> graph_ptrs;
  std::vector<ConstMatrixView> features;
  for (size_t u = 0; u < batch.size(); ++u) {
    if (!graphs[u]) continue;
    ready.push_back(u);
    graph_ptrs.push_back(&graphs[u]->hmm);
    features.push_back(batch[u].features);
  }
  std::vector<absl::StatusOr<ViterbiPath>> paths = engine_->BestPaths(graph_ptrs, features, &timing_);

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
