#include "client/cli/fmllr_command.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/common_flags.h"
#include "client/cli/speaker_sets.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_int_vector_archive.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_posterior_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/model_loader.h"
#include "kernels/train/fmllr_estimate.h"
#include "kernels/train/fmllr_stats.h"

ABSL_DECLARE_FLAG(std::string, alignments);
ABSL_DECLARE_FLAG(std::string, posteriors);
ABSL_DECLARE_FLAG(std::string, spk2utt);
ABSL_DECLARE_FLAG(int, iterations);
ABSL_FLAG(std::string, fmllr_fallback, "diag",
          "est-fmllr: the transform between --fmllr_min_count and --fmllr_min_count_full frames: diag, offset or none");
ABSL_FLAG(double, fmllr_min_count, 50.0, "est-fmllr: below this occupancy the identity transform");
ABSL_FLAG(double, fmllr_min_count_full, 500.0, "est-fmllr: from this occupancy a full transform");

namespace gmmscore::cli {
namespace {

// An utterance's posterior pairs from its alignment or posteriors (none for
// a global GMM); false, with a warning, when it has none or a length that
// is not its frame count (as Kaldi's tools skip it).
bool PairsOf(const std::string& utt, int64_t frames, const std::map<std::string, std::vector<int32_t>>& alignments,
             const std::map<std::string, KaldiPosterior>& posteriors, std::vector<StatsPair>* pairs) {
  pairs->clear();
  if (alignments.empty() && posteriors.empty()) return true;
  if (!alignments.empty()) {
    const auto it = alignments.find(utt);
    if (it == alignments.end() || static_cast<int64_t>(it->second.size()) != frames) return false;
    for (int64_t t = 0; t < frames; ++t) pairs->push_back({static_cast<int32_t>(t), it->second[t], 1.0f});
    return true;
  }
  const auto it = posteriors.find(utt);
  if (it == posteriors.end() || static_cast<int64_t>(it->second.size()) != frames) return false;
  for (int64_t t = 0; t < frames; ++t) {
    for (const auto& [state, weight] : it->second[t]) pairs->push_back({static_cast<int32_t>(t), state, weight});
  }
  return true;
}

struct Inputs {
  std::vector<KaldiMatrixEntry> features;
  std::map<std::string, std::vector<int32_t>> alignments;
  std::map<std::string, KaldiPosterior> posteriors;
};

absl::StatusOr<Inputs> ReadInputs(const SpecifiedFlags& specified) {
  Inputs in;
  GMM_ASSIGN_OR_RETURN(in.features, ReadKaldiMatrixTable(absl::GetFlag(FLAGS_features)));
  if (specified.contains("alignments")) {
    GMM_ASSIGN_OR_RETURN(auto entries, ReadKaldiIntVectorArchive(absl::GetFlag(FLAGS_alignments)));
    for (auto& e : entries) in.alignments[e.key] = std::move(e.value);
  }
  if (specified.contains("posteriors")) {
    GMM_ASSIGN_OR_RETURN(auto entries, ReadKaldiPosteriorArchive(absl::GetFlag(FLAGS_posteriors)));
    for (auto& e : entries) in.posteriors[e.key] = std::move(e.value);
  }
  return in;
}

absl::StatusOr<FmllrOptions> OptionsFromFlags(const SpecifiedFlags& specified) {
  FmllrOptions options;
  if (specified.contains("iterations")) options.num_iterations = absl::GetFlag(FLAGS_iterations);
  options.min_count = absl::GetFlag(FLAGS_fmllr_min_count);
  options.min_count_full = absl::GetFlag(FLAGS_fmllr_min_count_full);
  absl::StatusOr<FmllrMode> fallback = ParseFmllrMode(absl::GetFlag(FLAGS_fmllr_fallback));
  if (!fallback.ok()) return UsageError(fallback.status().message());
  options.fallback = *fallback;
  return options;
}

absl::Status RunEstFmllr(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "features", "output"}, "est-fmllr"));
  if (specified.contains("alignments") && specified.contains("posteriors")) {
    return UsageError("est-fmllr takes at most one of --alignments and --posteriors");
  }
  GMM_ASSIGN_OR_RETURN(const FmllrOptions options, OptionsFromFlags(specified));
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(absl::GetFlag(FLAGS_model)));
  if (!specified.contains("alignments") && !specified.contains("posteriors") && model.num_states() != 1) {
    return UsageError(absl::StrCat("the model has ", model.num_states(),
                                   " states: give --alignments or --posteriors (pdf ids), or a one-state GMM"));
  }
  std::vector<std::string> speakers;
  std::map<std::string, int> speaker_of;
  if (specified.contains("spk2utt")) GMM_RETURN_IF_ERROR(ReadSpeakers(absl::GetFlag(FLAGS_spk2utt), &speakers, &speaker_of));
  GMM_ASSIGN_OR_RETURN(const Inputs in, ReadInputs(specified));

  // One set of statistics per speaker, or per utterance without spk2utt.
  const FmllrAccumulator accumulator(model);
  std::map<std::string, FmllrStats> stats;
  std::vector<std::string> order;
  std::vector<StatsPair> pairs;
  int skipped = 0;
  for (const KaldiMatrixEntry& e : in.features) {
    std::string key = e.key;
    if (!speaker_of.empty()) {
      const auto it = speaker_of.find(e.key);
      if (it == speaker_of.end()) {
        std::fprintf(stderr, "gmmscore: warning: utterance '%s' has no speaker in spk2utt; skipped\n", e.key.c_str());
        ++skipped;
        continue;
      }
      key = speakers[it->second];
    }
    if (!PairsOf(e.key, e.matrix.rows(), in.alignments, in.posteriors, &pairs)) {
      std::fprintf(stderr, "gmmscore: warning: utterance '%s' has no alignment of its %lld frames; skipped\n",
                   e.key.c_str(), static_cast<long long>(e.matrix.rows()));
      ++skipped;
      continue;
    }
    auto [it, added] = stats.emplace(key, FmllrStats::ForDim(model.dim()));
    if (added) order.push_back(key);
    absl::StatusOr<double> like = accumulator.Accumulate(e.matrix.view(), pairs, &it->second);
    if (!like.ok()) return PrefixStatus(absl::StrCat("utterance '", e.key, "'"), like.status());
  }
  if (order.empty()) return absl::FailedPreconditionError("no utterance could be used");

  std::vector<KaldiMatrixEntry> transforms;
  for (const std::string& key : order) {
    GMM_ASSIGN_OR_RETURN(const FmllrResult result, EstimateFmllr(stats.at(key), options));
    const int d = model.dim();
    FloatMatrix matrix(d, d + 1);
    for (int64_t i = 0; i < int64_t{d} * (d + 1); ++i) matrix.data()[i] = static_cast<float>(result.transform[i]);
    transforms.push_back({key, std::move(matrix)});
    std::fprintf(stderr, "gmmscore: %s: %.1f frames, %s transform, objective gain %.4f per frame%s%s\n", key.c_str(),
                 result.report.count, std::string(FmllrModeName(result.report.mode)).c_str(),
                 result.report.gain_per_frame, result.report.reason.empty() ? "" : " (",
                 result.report.reason.empty() ? "" : (result.report.reason + ")").c_str());
  }
  GMM_RETURN_IF_ERROR(WriteKaldiMatrixArchive(absl::GetFlag(FLAGS_output), transforms));
  std::fprintf(stderr, "gmmscore: wrote %zu transforms%s; %d utterances skipped\n", transforms.size(),
               speaker_of.empty() ? " (per utterance)" : " (per speaker)", skipped);
  return absl::OkStatus();
}

}  // namespace

Command EstFmllrCommand() {
  return {"est-fmllr", "estimate fMLLR feature transforms per speaker (or utterance), as Kaldi's gmm-est-fmllr",
          "gmmscore est-fmllr --model M --features ark:F [--spk2utt ark:S]\n"
          "                   [--alignments ark:A | --posteriors ark:P] --output ark:TRANS\n"
          "                   [--iterations 10] [--fmllr_min_count 50] [--fmllr_min_count_full 500]\n"
          "                   [--fmllr_fallback diag|offset|none]\n\n"
          "Accumulates the fMLLR statistics of each speaker's frames under the model's Gaussian posteriors\n"
          "(within the aligned pdf, or the posteriors' pdfs; a one-state GMM needs neither) and estimates\n"
          "W = [A b] row by row (Gales 1998). Below --fmllr_min_count frames the identity, below\n"
          "--fmllr_min_count_full the fallback. TRANS is what Kaldi writes (D x (D+1) matrices), keyed by\n"
          "speaker with --spk2utt, else by utterance; `gmmscore score --fmllr ark:TRANS [--utt2spk U]`\n"
          "applies it.",
          {"model", "features", "spk2utt", "alignments", "posteriors", "output", "iterations", "fmllr_min_count",
           "fmllr_min_count_full", "fmllr_fallback"},
          RunEstFmllr};
}

}  // namespace gmmscore::cli
