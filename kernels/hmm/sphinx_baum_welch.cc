#include "kernels/hmm/sphinx_baum_welch.h"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/core/thread_pool.h"
#include "kernels/hmm/sparse_hmm_cpu.h"
#include "kernels/hmm/utterance_graph.h"
#include "kernels/train/natural_gmm.h"
#include "kernels/train/stats_pass.h"

namespace gmmscore {
namespace {

// Posteriors below this carry nothing measurable into the statistics.
constexpr double kMinPairWeight = 1e-8;

// The senone GMMs of a continuous single-stream model, natural parameters.
absl::StatusOr<NaturalGmm> ContinuousGmm(const SphinxModel& model) {
  if (model.kind != SphinxModelKind::kContinuous || model.model.num_streams() != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "re-estimating the GMMs of a ", SphinxModelKindName(model.kind), " model with ", model.model.num_streams(),
        " streams: only continuous single-stream models are supported (PTM and semi-continuous codebooks are shared "
        "among senones); re-estimate the transitions only"));
  }
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel diag, model.model.ToDiagGmmModel());
  return NaturalGmm::FromModel(diag);
}

// One iteration's accumulators.
struct Accumulated {
  std::vector<double> transition_counts;  // by slot
  double loglike = 0;
  int64_t frames = 0;
  int utterances = 0;
};

// Counts -> probabilities, row by row; rows without counts keep theirs.
SphinxTransitions Reestimate(const SphinxTransitions& old, const std::vector<double>& counts) {
  SphinxTransitions out = old;
  const int n = old.num_emit;
  for (int64_t row = 0; row < int64_t{old.num_tmats} * n; ++row) {
    double sum = 0;
    for (int to = 0; to <= n; ++to) sum += counts[row * (n + 1) + to];
    if (!(sum > 0)) continue;
    for (int to = 0; to <= n; ++to) out.probs[row * (n + 1) + to] = static_cast<float>(counts[row * (n + 1) + to] / sum);
  }
  return out;
}

// The model's files from natural parameters: every senone padded to the
// model's density count with zero-weight Gaussians.
SphinxModelFiles FilesOf(const NaturalGmm& gmm, int densities, const SphinxTransitions& transitions) {
  SphinxModelFiles f;
  const int d = gmm.dim, s_count = gmm.num_states();
  for (SphinxGaussianFile* file : {&f.means, &f.variances}) {
    *file = SphinxGaussianFile{.num_codebooks = s_count, .num_streams = 1, .num_densities = densities, .stream_dims = {d}};
    file->values.assign(int64_t{s_count} * densities * d, file == &f.means ? 0.0f : 1.0f);
  }
  f.num_senones = s_count;
  f.mixture_weights.assign(int64_t{s_count} * densities, 0.0f);
  for (int s = 0; s < s_count; ++s) {
    const NaturalState& state = gmm.states[s];
    for (int g = 0; g < state.num_gaussians() && g < densities; ++g) {
      f.mixture_weights[int64_t{s} * densities + g] = static_cast<float>(state.weights[g]);
      for (int k = 0; k < d; ++k) {
        f.means.values[(int64_t{s} * densities + g) * d + k] = static_cast<float>(state.means[int64_t{g} * d + k]);
        f.variances.values[(int64_t{s} * densities + g) * d + k] = static_cast<float>(state.variances[int64_t{g} * d + k]);
      }
    }
  }
  f.transitions = transitions;
  return f;
}

}  // namespace

absl::StatusOr<SphinxModelFiles> TrainSphinxModel(
    const std::string& model_dir, const SphinxLexicon& lexicon_in, absl::Span<const AlignInput> utterances,
    ScoringBackend& scorer, StatsBackend& stats, const SphinxBaumWelchOptions& options,
    const std::function<void(const SphinxBaumWelchIteration&)>& on_iteration) {
  if (utterances.empty()) return absl::InvalidArgumentError("no utterances");
  if (options.iterations < 0) return absl::InvalidArgumentError("iterations must be >= 0");
  GMM_ASSIGN_OR_RETURN(SphinxModel model, ReadSphinxModel(model_dir));
  const int dim = model.model.dim();
  for (size_t u = 0; u < utterances.size(); ++u) {
    if (utterances[u].features.cols != dim) {
      return absl::InvalidArgumentError(absl::StrCat("utterance '", utterances[u].utterance, "' has dimension ",
                                                     utterances[u].features.cols, ", the model ", dim));
    }
  }
  // The GMMs being re-estimated, or (transitions only) the model as it is.
  std::optional<NaturalGmm> gmm;
  std::shared_ptr<const PreparedModel> fixed;
  if (options.update_gmm) {
    GMM_ASSIGN_OR_RETURN(gmm, ContinuousGmm(model));
  } else {
    GMM_ASSIGN_OR_RETURN(fixed, scorer.PrepareTied(std::make_shared<const TiedMixtureModel>(std::move(model.model))));
  }
  SphinxLexicon lexicon = lexicon_in;
  const int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  ThreadPool pool(std::max(0, threads - 1), "gs-bw");

  // All frames in one resident block; utterance u starts at offsets[u].
  std::vector<TrainingBlock> blocks(1);
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const AlignInput& u : utterances) offsets.push_back(std::exchange(total, total + u.features.rows));
  blocks[0].frames = FloatMatrix(total, dim);
  for (size_t u = 0; u < utterances.size(); ++u) {
    const ConstMatrixView f = utterances[u].features;
    for (int64_t t = 0; t < f.rows; ++t) std::copy(f.row(t), f.row(t) + f.cols, blocks[0].frames.row(offsets[u] + t));
  }
  StatsPass pass(&stats, &blocks);

  for (int iter = 1; iter <= options.iterations; ++iter) {
    const auto start = std::chrono::steady_clock::now();
    SphinxBaumWelchIteration report;
    report.iteration = iter;
    // The scoring model of this iteration: the updated GMMs, or the file's.
    std::shared_ptr<const PreparedModel> prepared = fixed;
    if (gmm) {
      GMM_ASSIGN_OR_RETURN(DiagGmmModel current, gmm->ToModel());
      GMM_ASSIGN_OR_RETURN(prepared, scorer.Prepare(std::make_shared<const DiagGmmModel>(std::move(current))));
    }
    std::vector<UtteranceGraph> graphs;
    std::vector<FloatMatrix> emissions;
    std::vector<int> members;
    for (size_t u = 0; u < utterances.size(); ++u) {
      absl::StatusOr<UtteranceGraph> g = CompileUtteranceGraph(lexicon, utterances[u].words, options.graph);
      if (g.ok() && utterances[u].features.rows < g->hmm.MinFrames()) {
        g = absl::FailedPreconditionError(absl::StrCat(utterances[u].features.rows, " frames, the transcript needs ",
                                                       g->hmm.MinFrames()));
      }
      if (!g.ok()) {
        report.failed.push_back({static_cast<int>(u), std::string(g.status().message())});
        continue;
      }
      ScoreResult scored;
      GMM_RETURN_IF_ERROR(scorer.Score(*prepared, utterances[u].features, {.frame_totals = false}, &scored));
      FloatMatrix e(scored.loglikes.rows(), static_cast<int64_t>(g->hmm.columns.size()));
      for (int64_t t = 0; t < e.rows(); ++t) {
        for (int64_t c = 0; c < e.cols(); ++c) e.row(t)[c] = scored.loglikes.at(t, g->hmm.columns[c]);
      }
      graphs.push_back(*std::move(g));
      emissions.push_back(std::move(e));
      members.push_back(static_cast<int>(u));
    }
    std::vector<const HmmGraph*> graph_ptrs;
    std::vector<ConstMatrixView> views;
    for (size_t k = 0; k < graphs.size(); ++k) {
      graph_ptrs.push_back(&graphs[k].hmm);
      views.push_back(emissions[k].view());
    }
    const auto posteriors = options.forward_backward
                                ? options.forward_backward(graph_ptrs, views)
                                : GraphForwardBackwardCpu(graph_ptrs, views, /*want_gamma=*/true, &pool);

    const int n = lexicon.num_emit;
    std::vector<double> counts(int64_t{lexicon.transitions.num_tmats} * n * (n + 1), 0.0);
    blocks[0].pairs.clear();
    double loglike = 0;
    for (size_t k = 0; k < graphs.size(); ++k) {
      const int u = members[k];
      if (!posteriors[k].ok()) {
        report.failed.push_back({u, std::string(posteriors[k].status().message())});
        continue;
      }
      const GraphPosteriors& post = *posteriors[k];
      const HmmGraph& h = graphs[k].hmm;
      loglike += post.log_likelihood;
      report.frames += views[k].rows;
      ++report.utterances;
      for (int64_t a = 0; a < h.num_arcs(); ++a) {
        if (h.arc_slot[a] >= 0) counts[h.arc_slot[a]] += post.arc_counts[a];
      }
      for (size_t f = 0; f < h.final_states.size(); ++f) {
        if (h.final_slot[f] >= 0) counts[h.final_slot[f]] += post.final_counts[f];
      }
      // Senone posteriors per frame: states sharing a senone add up.
      std::vector<double> column_post(h.columns.size());
      for (int64_t t = 0; t < views[k].rows; ++t) {
        std::fill(column_post.begin(), column_post.end(), 0.0);
        for (int32_t s = 0; s < h.num_states(); ++s) column_post[h.emission[s]] += post.gamma[t * h.num_states() + s];
        for (size_t c = 0; c < column_post.size(); ++c) {
          if (column_post[c] > kMinPairWeight) {
            blocks[0].pairs.push_back(
                {static_cast<int32_t>(offsets[u] + t), h.columns[c], static_cast<float>(column_post[c])});
          }
        }
      }
    }
    if (report.frames == 0) {
      return absl::FailedPreconditionError(absl::StrCat("none of the ", utterances.size(), " utterances can be aligned",
                                                        report.failed.empty() ? "" : ": ", report.failed.empty() ? "" : report.failed[0].second));
    }
    report.loglike_per_frame = loglike / static_cast<double>(report.frames);
    if (options.update_transitions) lexicon.transitions = Reestimate(lexicon.transitions, counts);
    if (gmm) {
      GMM_ASSIGN_OR_RETURN(const DiagGmmModel current, gmm->ToModel());
      GMM_ASSIGN_OR_RETURN(const GmmStats gmm_stats, pass.Run(current));
      GMM_ASSIGN_OR_RETURN(gmm, MleUpdate(*gmm, gmm_stats, options.mle, &report.update));
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_iteration) on_iteration(report);
  }
  if (!gmm) {
    SphinxModelFiles files;
    files.gmm = false;
    files.transitions = lexicon.transitions;
    return files;
  }
  GMM_ASSIGN_OR_RETURN(const SphinxGaussianFile means_file, ReadSphinxGaussianFile(model_dir + "/means"));
  return FilesOf(*gmm, means_file.num_densities, lexicon.transitions);
}

}  // namespace gmmscore
