#include "client/cli/hmm_commands.h"

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/common_flags.h"
#include "client/cli/model_output.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/backends/stats_backend_factory.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/baum_welch.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/model_loader.h"

ABSL_FLAG(std::string, hmm, "", "dense HMM file (docs/TRAINING.md: gmmscore-dense-hmm 1)");
ABSL_FLAG(std::string, output_model, "", "hmm-train: also write the re-estimated GMMs here");
ABSL_DECLARE_FLAG(int, iterations);
ABSL_DECLARE_FLAG(std::string, output_format);

namespace gmmscore::cli {
namespace {

struct Utterances {
  std::vector<std::string> keys;
  std::vector<FloatMatrix> frames;
};

absl::StatusOr<Utterances> ReadUtterances() {
  GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> entries, ReadKaldiMatrixTable(absl::GetFlag(FLAGS_features)));
  Utterances out;
  for (KaldiMatrixEntry& entry : entries) {
    out.keys.push_back(std::move(entry.key));
    out.frames.push_back(std::move(entry.matrix));
  }
  if (out.keys.empty()) return absl::InvalidArgumentError("the feature archive is empty");
  return out;
}

absl::StatusOr<HmmWithGmms> LoadHmmAndModel() {
  GMM_ASSIGN_OR_RETURN(DenseHmm hmm, ReadDenseHmm(absl::GetFlag(FLAGS_hmm)));
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(absl::GetFlag(FLAGS_model)));
  return HmmWithGmms{std::move(hmm), NaturalGmm::FromModel(model)};
}

absl::StatusOr<std::unique_ptr<ScoringBackend>> Scorer() {
  absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend(absl::GetFlag(FLAGS_backend));
  if (backend.status().code() == absl::StatusCode::kInvalidArgument) return UsageError(backend.status().message());
  return backend;
}

absl::Status RunHmmForward(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"hmm", "model", "features"}, "hmm-forward"));
  GMM_ASSIGN_OR_RETURN(const HmmWithGmms model, LoadHmmAndModel());
  GMM_ASSIGN_OR_RETURN(const Utterances data, ReadUtterances());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<ScoringBackend> scorer, Scorer());
  GMM_ASSIGN_OR_RETURN(const auto likes, DenseHmmLogLikelihoods(*scorer, model, data.frames));
  int failed = 0;
  for (size_t u = 0; u < likes.size(); ++u) {
    if (likes[u].ok()) {
      std::printf("%s %.6f %lld\n", data.keys[u].c_str(), *likes[u], static_cast<long long>(data.frames[u].rows()));
    } else {
      ++failed;
      std::fprintf(stderr, "gmmscore: error: utterance '%s': %s\n", data.keys[u].c_str(),
                   std::string(likes[u].status().message()).c_str());
    }
  }
  if (failed == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(failed, " of ", likes.size(), " utterances have no path"));
}

absl::Status RunHmmTrain(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"hmm", "model", "features", "output"}, "hmm-train"));
  GMM_ASSIGN_OR_RETURN(HmmWithGmms model, LoadHmmAndModel());
  GMM_ASSIGN_OR_RETURN(const Utterances data, ReadUtterances());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<ScoringBackend> scorer, Scorer());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> stats, CreateStatsBackend(absl::GetFlag(FLAGS_backend)));
  BaumWelchOptions options;
  options.iterations = absl::GetFlag(FLAGS_iterations);
  options.update_gmm = specified.contains("output_model");
  GMM_ASSIGN_OR_RETURN(model, TrainDenseHmm(*scorer, *stats, data.frames, std::move(model), options,
                                            [&](const BaumWelchIteration& it) {
                                              std::fprintf(stderr,
                                                           "gmmscore: iteration %d/%d: log-likelihood %.5f per "
                                                           "frame over %lld frames, %.3f s\n",
                                                           it.iteration, options.iterations, it.loglike_per_frame,
                                                           static_cast<long long>(it.frames), it.seconds);
                                              for (int u : it.skipped) {
                                                std::fprintf(stderr, "gmmscore: error: utterance '%s': no path\n",
                                                             data.keys[u].c_str());
                                              }
                                            }));
  GMM_RETURN_IF_ERROR(WriteDenseHmm(model.hmm, absl::GetFlag(FLAGS_output)));
  if (options.update_gmm) {
    const std::string path = absl::GetFlag(FLAGS_output_model);
    GMM_ASSIGN_OR_RETURN(const std::string format, ResolveModelFormat(absl::GetFlag(FLAGS_output_format), path));
    GMM_ASSIGN_OR_RETURN(const DiagGmmModel gmm, model.gmm.ToModel());
    GMM_RETURN_IF_ERROR(WriteModelAs(gmm, path, format));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> HmmCommands() {
  return {
      {"hmm-forward", "log-likelihood of each utterance under a dense HMM with GMM emissions",
       "gmmscore hmm-forward --hmm H --model M --features ark:F [--backend auto|cpu|cuda]\n\n"
       "Prints 'utterance log-likelihood frames' per utterance; an utterance no state sequence\n"
       "produces gets an error line and the rest go on (exit status 1 if any failed).",
       {"hmm", "model", "features", "backend"},
       RunHmmForward},
      {"hmm-train", "Baum-Welch re-estimation of a dense HMM (and, with --output_model, its GMMs)",
       "gmmscore hmm-train --hmm H --model M --features ark:F --iterations N --output H2\n"
       "                   [--output_model M2 [--output_format ...]] [--backend auto|cpu|cuda]",
       {"hmm", "model", "features", "iterations", "output", "output_model", "output_format", "backend"},
       RunHmmTrain},
  };
}

}  // namespace gmmscore::cli
