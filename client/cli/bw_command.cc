#include "client/cli/bw_command.h"

#include <cstdio>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/common_flags.h"
#include "client/cli/utterance_input.h"
#include "kernels/backends/align_engine_factory.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/backends/stats_backend_factory.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/sphinx_baum_welch.h"

ABSL_DECLARE_FLAG(std::string, dict);
ABSL_DECLARE_FLAG(int, iterations);
ABSL_DECLARE_FLAG(std::string, output_dir);
ABSL_DECLARE_FLAG(std::string, update_flags);

namespace gmmscore::cli {
namespace {

// --update_flags letters: m, v, w for the GMMs, t for the transitions
// (bw's default: all four).
absl::Status ApplyUpdateFlags(const SpecifiedFlags& specified, SphinxBaumWelchOptions* options) {
  const std::string letters = specified.contains("update_flags") ? absl::GetFlag(FLAGS_update_flags) : "mvwt";
  absl::StatusOr<uint16_t> flags = ParseUpdateFlags(letters);
  if (!flags.ok()) return UsageError(flags.status().message());
  options->update_transitions = (*flags & kGmmTransitions) != 0;
  options->mle.update = *flags & (kGmmMeans | kGmmVariances | kGmmWeights);
  options->update_gmm = options->mle.update != 0;
  return absl::OkStatus();
}

void Report(const SphinxBaumWelchIteration& it, int iterations, const UtteranceInputs& in) {
  std::fprintf(stderr,
               "gmmscore: iteration %d/%d: log-likelihood %.5f per frame over %lld frames of %d utterances, %.3f s\n",
               it.iteration, iterations, it.loglike_per_frame, static_cast<long long>(it.frames), it.utterances,
               it.seconds);
  if (it.iteration > 1) return;  // the same utterances fail every iteration
  for (const auto& [index, why] : it.failed) {
    std::fprintf(stderr, "gmmscore: error: utterance '%s': %s\n", in.inputs[index].utterance.c_str(), why.c_str());
  }
}

absl::Status RunBw(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "dict", "transcripts", "output_dir"}, "bw"));
  if (specified.contains("features") == specified.contains("audio")) {
    return UsageError("bw needs exactly one of --features ark:F and --audio wav.scp");
  }
  SphinxBaumWelchOptions options;
  options.iterations = specified.contains("iterations") ? absl::GetFlag(FLAGS_iterations) : 1;
  GMM_RETURN_IF_ERROR(ApplyUpdateFlags(specified, &options));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  GMM_ASSIGN_OR_RETURN(const SphinxLexicon lexicon, LoadSphinxLexicon(model_dir, absl::GetFlag(FLAGS_dict)));
  GMM_ASSIGN_OR_RETURN(const UtteranceInputs in, ReadUtteranceInputs(model_dir));
  for (const std::string& id : in.missing) {
    std::fprintf(stderr, "gmmscore: error: utterance '%s': no features or audio for it\n", id.c_str());
  }
  absl::StatusOr<std::unique_ptr<ScoringBackend>> scorer = CreateBackend(absl::GetFlag(FLAGS_backend));
  if (scorer.status().code() == absl::StatusCode::kInvalidArgument) return UsageError(scorer.status().message());
  GMM_RETURN_IF_ERROR(scorer.status());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> stats, CreateStatsBackend(absl::GetFlag(FLAGS_backend)));
  GMM_ASSIGN_OR_RETURN(options.forward_backward, ForwardBackwardFor(absl::GetFlag(FLAGS_backend)));
  GMM_ASSIGN_OR_RETURN(const SphinxModelFiles files,
                       TrainSphinxModel(model_dir, lexicon, in.inputs, **scorer, *stats, options,
                                        [&](const SphinxBaumWelchIteration& it) {
                                          Report(it, options.iterations, in);
                                        }));
  GMM_RETURN_IF_ERROR(WriteSphinxModelDirectory(files, model_dir, absl::GetFlag(FLAGS_output_dir)));
  std::fprintf(stderr, "gmmscore: wrote %s (%s)\n", absl::GetFlag(FLAGS_output_dir).c_str(),
               files.gmm ? "means, variances, mixture_weights, transition_matrices" : "transition_matrices");
  return absl::OkStatus();
}

}  // namespace

Command BwCommand() {
  return {"bw", "Baum-Welch re-estimation of a CMU Sphinx model from transcribed speech",
          "gmmscore bw --model SPHINX_DIR --dict DICT --transcripts FILE\n"
          "            (--features ark:F | --audio wav.scp) --iterations N --output_dir DIR\n"
          "            [--update_flags mvwt] [--backend auto|cpu|cuda]\n\n"
          "Each iteration aligns every transcript softly (forward-backward over its utterance graph)\n"
          "and re-estimates the senone GMMs (m means, v variances, w weights; continuous models\n"
          "only) and the transition matrices (t). DIR gets the new parameter files beside a copy of\n"
          "the model's mdef, feat.params and noisedict: a model pocketsphinx loads. Utterances that\n"
          "cannot be aligned get an error line and are left out; the others go on.",
          {"model", "dict", "transcripts", "features", "audio", "iterations", "output_dir", "update_flags", "backend"},
          RunBw};
}

}  // namespace gmmscore::cli
