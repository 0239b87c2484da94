#include "client/cli/train_commands.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/common_flags.h"
#include "client/cli/speaker_sets.h"
#include "client/cli/model_output.h"
#include "kernels/backends/stats_backend_factory.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/kaldi_gmm_accs.h"
#include "kernels/io/kaldi_text_table.h"
#include "kernels/io/model_loader.h"
#include "kernels/train/em_trainer.h"
#include "kernels/train/map_update.h"
#include "kernels/train/mix_up.h"
#include "kernels/train/training_data.h"
#include "kernels/train/transition_update.h"

ABSL_FLAG(std::string, alignments, "", "pdf-id alignment archive (ali-to-pdf output), e.g. ark:ali.ark");
ABSL_FLAG(bool, transition_ids, false,
          "acc-stats: --alignments hold Kaldi transition-ids (ali.N.gz, gunzipped), mapped to pdfs through "
          "--model's TransitionModel and counted, as gmm-acc-stats-ali does");
ABSL_FLAG(double, transition_floor, 0.01, "est: floor of updated transition probabilities (gmm-est's)");
ABSL_FLAG(double, transition_min_count, 5.0,
          "est: a transition-state needs this many counts to be updated (gmm-est's)");
ABSL_FLAG(std::string, posteriors, "", "pdf-id posterior archive (post-to-pdf-post output), e.g. ark:post.ark");
ABSL_FLAG(bool, binary, true, "write accumulators in Kaldi's binary form (--binary=false: text)");
ABSL_FLAG(std::string, stats, "", "accumulator file (Kaldi's, or ours from acc-stats / sum-accs)");
ABSL_FLAG(double, min_gaussian_occupancy, 10.0, "Gaussians with at most this occupancy are not updated (removed)");
ABSL_FLAG(double, min_gaussian_weight, 1e-5, "Gaussians with at most this weight are not updated (removed)");
ABSL_FLAG(double, min_variance, 0.001, "variance floor");
ABSL_FLAG(bool, remove_low_count_gaussians, true, "remove Gaussians with too little data (never a state's last)");
ABSL_FLAG(std::string, update_flags, "mvwt",
          "what est updates: letters m (means), v (variances), w (weights), t (transitions, with a "
          "final.mdl's TransitionModel)");
ABSL_FLAG(int, mix_up, 0, "after the update, split Gaussians up to this total (0: no mixing-up)");
ABSL_FLAG(double, perturb_factor, 0.01, "split Gaussians' means move apart by this many standard deviations");
ABSL_FLAG(double, power, 0.2, "mixing-up an acoustic model: Gaussians per state follow occupancy^power");
ABSL_FLAG(double, min_count, 20.0, "mixing-up an acoustic model: at least this much occupancy per Gaussian");
ABSL_FLAG(int, num_gauss, 256, "Gaussians of the trained GMM");
ABSL_FLAG(int, num_gauss_init, 0, "start with this many and mix up during the first half (0: --num_gauss)");
ABSL_FLAG(int, iterations, 20, "EM iterations");
ABSL_FLAG(std::string, init, "", "start EM from this one-state model instead of random frames");
ABSL_FLAG(int, subsample, 1, "use every k-th frame of each utterance");
ABSL_FLAG(std::string, output_format, "auto",
          "auto (by file name: *.txt Kaldi text, *.mdl/*.ubm/*.dubm Kaldi binary, else native), native, "
          "kaldi-text or kaldi-binary");
ABSL_FLAG(std::string, spk2utt, "", "speaker-to-utterances table (ark:FILE or FILE): one adapted model per speaker");
ABSL_FLAG(std::string, output_dir, "", "directory for per-speaker models (with --spk2utt)");
ABSL_FLAG(double, mean_tau, 10.0, "MAP prior weight of the means");
ABSL_FLAG(double, variance_tau, 50.0, "MAP prior weight of the variances");
ABSL_FLAG(double, weight_tau, 10.0, "MAP prior weight of the mixture weights");
ABSL_FLAG(std::string, update, "means", "what adapt-map changes: a comma list of means, variances, weights");
ABSL_FLAG(int64_t, block_frames, 1 << 20, "frames per block handed to the backend");

namespace gmmscore::cli {
namespace {

absl::Status AsUsage(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ? UsageError(status.message()) : status;
}

absl::StatusOr<std::unique_ptr<StatsBackend>> Backend() {
  absl::StatusOr<std::unique_ptr<StatsBackend>> backend = CreateStatsBackend(absl::GetFlag(FLAGS_backend));
  if (!backend.ok()) return AsUsage(backend.status());
  return backend;
}

// A progress line on a terminal only: "\r  iteration 3/20  [#####     ] 50%".
void ShowProgress(const std::string& what, int64_t done, int64_t all) {
  if (!isatty(STDERR_FILENO) || all <= 0) return;
  const int width = 30, filled = static_cast<int>(width * done / all);
  std::fprintf(stderr, "\r  %s [%s%s] %3d%%", what.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), static_cast<int>(100 * done / all));
  if (done == all) std::fprintf(stderr, "\r%*s\r", width + static_cast<int>(what.size()) + 12, "");
}

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "gmmscore: warning: %s\n", w.c_str());
}

absl::StatusOr<TrainingData> LoadData(int num_states, std::map<std::string, int> sets = {},
                                      std::vector<int> transition_id_to_pdf = {}) {
  TrainingDataOptions options;
  options.transition_id_to_pdf = std::move(transition_id_to_pdf);
  options.features = absl::GetFlag(FLAGS_features);
  options.alignments = absl::GetFlag(FLAGS_alignments);
  options.posteriors = absl::GetFlag(FLAGS_posteriors);
  options.num_states = num_states;
  options.subsample = absl::GetFlag(FLAGS_subsample);
  options.block_frames = absl::GetFlag(FLAGS_block_frames);
  options.utterance_sets = std::move(sets);
  GMM_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options));
  PrintWarnings(data.warnings);
  if (data.skipped > static_cast<int64_t>(data.warnings.size())) {
    std::fprintf(stderr, "gmmscore: warning: %lld utterances skipped in all\n",
                 static_cast<long long>(data.skipped));
  }
  if (data.frames == 0) return absl::InvalidArgumentError("no usable frames in the features");
  return data;
}

absl::StatusOr<GmmStats> Accumulate(StatsBackend& backend, const DiagGmmModel& model, const TrainingData& data,
                                    int num_sets) {
  StatsPass pass(&backend, &data.blocks);
  return pass.Run(model, num_sets, [](int64_t done, int64_t all) { ShowProgress("statistics", done, all); });
}

// The TransitionModel of a Kaldi final.mdl at `path`; nullopt for any other
// model file.
std::optional<KaldiTransitionModel> TransitionModelOf(const std::string& path) {
  absl::StatusOr<KaldiModel> kaldi = ReadKaldiModel(path);
  if (!kaldi.ok()) return std::nullopt;
  return std::move(kaldi->transition_model);
}

// Transition accumulators of an acoustic-model accumulator file: the counts
// of transition-id alignments, or zeros of the model's transition-id count
// (pdf ids and posteriors carry none); none without a TransitionModel.
std::vector<double> TransitionAccs(const std::optional<KaldiTransitionModel>& tm, const TrainingData& data) {
  if (!data.transition_counts.empty()) return data.transition_counts;
  if (!tm.has_value()) return {};
  return std::vector<double>(tm->num_transition_ids() + 1, 0.0);
}

absl::Status RunAccStats(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "features", "output"}, "acc-stats"));
  if (specified.contains("alignments") && specified.contains("posteriors")) {
    return UsageError("give --alignments or --posteriors, not both");
  }
  const auto start = std::chrono::steady_clock::now();
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> backend, Backend());
  const std::string model_path = absl::GetFlag(FLAGS_model);
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(model_path));
  const std::optional<KaldiTransitionModel> tm = TransitionModelOf(model_path);
  std::vector<int> transition_id_to_pdf;
  if (absl::GetFlag(FLAGS_transition_ids)) {
    if (!specified.contains("alignments")) return UsageError("--transition_ids reads --alignments; none given");
    if (!tm.has_value()) {
      return UsageError(absl::StrCat("--transition_ids needs a Kaldi final.mdl with a TransitionModel; ", model_path,
                                     " has none"));
    }
    transition_id_to_pdf = tm->transition_id_to_pdf;
  }
  GMM_ASSIGN_OR_RETURN(const TrainingData data, LoadData(model.num_states(), {}, std::move(transition_id_to_pdf)));
  KaldiAccs accs;
  GMM_ASSIGN_OR_RETURN(accs.stats, Accumulate(*backend, model, data, 1));
  accs.is_am = specified.contains("alignments") || specified.contains("posteriors");
  accs.stats.flags = accs.is_am ? kGmmAll : (kGmmMeans | kGmmVariances | kGmmWeights);
  if (accs.is_am) accs.transition_accs = TransitionAccs(tm, data);
  GMM_RETURN_IF_ERROR(WriteKaldiAccs(accs, absl::GetFlag(FLAGS_output), absl::GetFlag(FLAGS_binary)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "gmmscore: acc-stats: %lld utterances, %lld frames, log-likelihood %.4f per frame (%s, %.2f s)\n",
               static_cast<long long>(data.utterances), static_cast<long long>(data.frames),
               accs.stats.total_loglike / std::max(accs.stats.total_weight, 1e-300), backend->name().c_str(),
               seconds);
  return absl::OkStatus();
}

absl::Status RunSumAccs(const SpecifiedFlags& specified, const std::vector<std::string>& inputs) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"output"}, "sum-accs"));
  if (inputs.empty()) return UsageError("sum-accs needs at least one accumulator file after its flags");
  GMM_ASSIGN_OR_RETURN(const KaldiAccs sum, SumKaldiAccsFiles(inputs));
  GMM_RETURN_IF_ERROR(WriteKaldiAccs(sum, absl::GetFlag(FLAGS_output), absl::GetFlag(FLAGS_binary)));
  std::fprintf(stderr, "gmmscore: sum-accs: summed %zu files, occupancy %.1f\n", inputs.size(),
               sum.stats.total_weight);
  return absl::OkStatus();
}

MleOptions MleOptionsFromFlags() {
  MleOptions options;
  options.min_gaussian_occupancy = absl::GetFlag(FLAGS_min_gaussian_occupancy);
  options.min_gaussian_weight = absl::GetFlag(FLAGS_min_gaussian_weight);
  options.min_variance = absl::GetFlag(FLAGS_min_variance);
  options.remove_low_count_gaussians = absl::GetFlag(FLAGS_remove_low_count_gaussians);
  return options;
}

void PrintUpdate(const MleReport& report) {
  PrintWarnings(report.warnings);
  std::fprintf(stderr, "gmmscore: update: occupancy %.1f, %lld variances floored, %lld Gaussians removed\n",
               report.occupancy, static_cast<long long>(report.floored_variances),
               static_cast<long long>(report.removed_gaussians));
}

absl::Status MixUp(const GmmStats& stats, int target, NaturalGmm* gmm) {
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  if (gmm->num_states() == 1) {
    if (target < gmm->states[0].num_gaussians()) return absl::OkStatus();
    return SplitState(target, absl::GetFlag(FLAGS_perturb_factor), gmm->dim, rng, &gmm->states[0]);
  }
  std::vector<double> occupancy(gmm->num_states());
  for (int s = 0; s < gmm->num_states(); ++s) occupancy[s] = stats.StateOccupancy(0, s);
  return MixUpModel(occupancy, target, absl::GetFlag(FLAGS_perturb_factor), absl::GetFlag(FLAGS_power),
                    absl::GetFlag(FLAGS_min_count), rng, gmm);
}

absl::Status WriteModel(const NaturalGmm& gmm, const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string format, ResolveModelFormat(absl::GetFlag(FLAGS_output_format), path));
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, gmm.ToModel());
  GMM_RETURN_IF_ERROR(WriteModelAs(model, path, format));
  std::fprintf(stderr, "gmmscore: wrote %s (%s): %d states, %lld Gaussians, dimension %d\n", path.c_str(),
               format.c_str(), model.num_states(), static_cast<long long>(model.num_gaussians()), model.dim());
  return absl::OkStatus();
}

// gmm-est's transition update ("t"), on a final.mdl's TransitionModel.
absl::Status UpdateTransitions(const KaldiAccs& accs, KaldiTransitionModel* tm) {
  TransitionUpdateReport report;
  GMM_RETURN_IF_ERROR(MleTransitionUpdate(accs.transition_accs,
                                          {.floor = absl::GetFlag(FLAGS_transition_floor),
                                           .min_count = absl::GetFlag(FLAGS_transition_min_count)},
                                          tm, &report));
  std::fprintf(stderr,
               "gmmscore: transitions: %lld states updated, %lld below --transition_min_count, %lld floored; "
               "objective %+.5f per count over %.0f counts\n",
               static_cast<long long>(report.updated_states), static_cast<long long>(report.skipped_states),
               static_cast<long long>(report.floored), report.objective_improvement / std::max(report.count, 1.0),
               report.count);
  return absl::OkStatus();
}

// A final.mdl goes back out whole (TransitionModel + AmDiagGmm) in a Kaldi
// format; the native format has no place for the TransitionModel.
absl::Status WriteEstimated(const NaturalGmm& gmm, const std::optional<KaldiTransitionModel>& tm) {
  const std::string path = absl::GetFlag(FLAGS_output);
  GMM_ASSIGN_OR_RETURN(const std::string format, ResolveModelFormat(absl::GetFlag(FLAGS_output_format), path));
  if (!tm.has_value() || format == "native") {
    if (tm.has_value()) std::fprintf(stderr, "gmmscore: note: the native format keeps no TransitionModel\n");
    return WriteModel(gmm, path);
  }
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, gmm.ToModel());
  GMM_RETURN_IF_ERROR(WriteKaldiModel(*tm, model, path, format == "kaldi-binary"));
  std::fprintf(stderr, "gmmscore: wrote %s (%s, with its TransitionModel): %d states, %lld Gaussians, dimension %d\n",
               path.c_str(), format.c_str(), model.num_states(), static_cast<long long>(model.num_gaussians()),
               model.dim());
  return absl::OkStatus();
}

absl::Status RunEst(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "stats", "output"}, "est"));
  GMM_RETURN_IF_ERROR(ResolveModelFormat(absl::GetFlag(FLAGS_output_format), "").status());
  MleOptions options = MleOptionsFromFlags();
  absl::StatusOr<uint16_t> flags = ParseUpdateFlags(absl::GetFlag(FLAGS_update_flags));
  GMM_RETURN_IF_ERROR(AsUsage(flags.status()));
  options.update = *flags;
  const std::string model_path = absl::GetFlag(FLAGS_model);
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(model_path));
  std::optional<KaldiTransitionModel> tm = TransitionModelOf(model_path);
  GMM_ASSIGN_OR_RETURN(const KaldiAccs accs, ReadKaldiAccs(absl::GetFlag(FLAGS_stats)));
  MleReport report;
  GMM_ASSIGN_OR_RETURN(NaturalGmm gmm, MleUpdate(NaturalGmm::FromModel(model), accs.stats, options, &report));
  PrintUpdate(report);
  if (tm.has_value() && (*flags & kGmmTransitions) != 0 && accs.is_am) {
    if (accs.transition_accs.empty()) {
      // Accumulated against a copy of the model without its TransitionModel.
      std::fprintf(stderr, "gmmscore: note: the accumulators hold no transition counts: transitions kept\n");
    } else {
      GMM_RETURN_IF_ERROR(UpdateTransitions(accs, &*tm));
    }
  }
  if (absl::GetFlag(FLAGS_mix_up) > 0) GMM_RETURN_IF_ERROR(MixUp(accs.stats, absl::GetFlag(FLAGS_mix_up), &gmm));
  return WriteEstimated(gmm, tm);
}

void PrintIteration(const EmIteration& it, int iterations) {
  std::fprintf(stderr,
               "gmmscore: iteration %d/%d: %d Gaussians, log-likelihood %.5f per frame over %.0f frames, "
               "%.3f s (statistics %.3f s), %lld variances floored, %lld Gaussians removed\n",
               it.iteration, iterations, it.num_gauss, it.loglike_per_frame, it.frames, it.seconds,
               it.stats_seconds, static_cast<long long>(it.update.floored_variances),
               static_cast<long long>(it.update.removed_gaussians));
  PrintWarnings(it.update.warnings);
}

absl::Status RunTrainGmm(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"features", "output"}, "train-gmm"));
  GMM_RETURN_IF_ERROR(ResolveModelFormat(absl::GetFlag(FLAGS_output_format), "").status());
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> backend, Backend());
  std::optional<NaturalGmm> init;
  if (specified.contains("init")) {
    GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(absl::GetFlag(FLAGS_init)));
    init = NaturalGmm::FromModel(model);
  }
  GMM_ASSIGN_OR_RETURN(const TrainingData data, LoadData(1));
  EmOptions options;
  options.num_gauss = init.has_value() ? static_cast<int>(init->num_gaussians()) : absl::GetFlag(FLAGS_num_gauss);
  if (specified.contains("num_gauss")) options.num_gauss = absl::GetFlag(FLAGS_num_gauss);
  options.num_gauss_init = absl::GetFlag(FLAGS_num_gauss_init);
  options.iterations = absl::GetFlag(FLAGS_iterations);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.mle = MleOptionsFromFlags();
  std::fprintf(stderr, "gmmscore: train-gmm: %lld utterances, %lld frames, backend %s\n",
               static_cast<long long>(data.utterances), static_cast<long long>(data.frames),
               backend->name().c_str());
  absl::StatusOr<NaturalGmm> gmm = TrainGmm(
      *backend, data.blocks, std::move(init), options,
      [&](const EmIteration& it) { PrintIteration(it, options.iterations); },
      [&](int iter, int64_t done, int64_t all) {
        ShowProgress(absl::StrCat("iteration ", iter, "/", options.iterations), done, all);
      });
  GMM_RETURN_IF_ERROR(AsUsage(gmm.status()));
  return WriteModel(*gmm, absl::GetFlag(FLAGS_output));
}

absl::StatusOr<uint16_t> MapUpdateFlags(const std::string& list) {
  uint16_t flags = 0;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    if (part == "means") flags |= kGmmMeans;
    else if (part == "variances") flags |= kGmmVariances;
    else if (part == "weights") flags |= kGmmWeights;
    else return UsageError(absl::StrCat("--update: '", part, "' is not means, variances or weights"));
  }
  if (flags == 0) return UsageError("--update names nothing to adapt");
  return flags;
}

absl::Status RunAdaptMap(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "features"}, "adapt-map"));
  const bool per_speaker = specified.contains("spk2utt");
  if (per_speaker != specified.contains("output_dir") || per_speaker == specified.contains("output")) {
    return UsageError("adapt-map writes --output, or with --spk2utt one model per speaker into --output_dir");
  }
  MapOptions options;
  GMM_ASSIGN_OR_RETURN(options.update, MapUpdateFlags(absl::GetFlag(FLAGS_update)));
  options.mean_tau = absl::GetFlag(FLAGS_mean_tau);
  options.variance_tau = absl::GetFlag(FLAGS_variance_tau);
  options.weight_tau = absl::GetFlag(FLAGS_weight_tau);
  options.min_variance = absl::GetFlag(FLAGS_min_variance);
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> backend, Backend());
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(absl::GetFlag(FLAGS_model)));
  std::vector<std::string> speakers{""};
  std::map<std::string, int> sets;
  if (per_speaker) {
    speakers.clear();
    GMM_RETURN_IF_ERROR(ReadSpeakers(absl::GetFlag(FLAGS_spk2utt), &speakers, &sets));
  }
  GMM_ASSIGN_OR_RETURN(const TrainingData data, LoadData(model.num_states(), sets));
  // One pass for every speaker: each speaker's frames feed its own set.
  GMM_ASSIGN_OR_RETURN(const GmmStats stats, Accumulate(*backend, model, data, static_cast<int>(speakers.size())));
  const NaturalGmm prior = NaturalGmm::FromModel(model);
  if (per_speaker) std::filesystem::create_directories(absl::GetFlag(FLAGS_output_dir));
  // Per-speaker files are named SPEAKER.gmm (native), .txt or .mdl (Kaldi).
  GMM_ASSIGN_OR_RETURN(const std::string format, ResolveModelFormat(absl::GetFlag(FLAGS_output_format), ""));
  const char* extension = format == "kaldi-text" ? ".txt" : format == "kaldi-binary" ? ".mdl" : ".gmm";
  for (int set = 0; set < static_cast<int>(speakers.size()); ++set) {
    GMM_ASSIGN_OR_RETURN(const NaturalGmm adapted, MapUpdate(prior, stats, options, set));
    const std::string path = per_speaker ? absl::StrCat(absl::GetFlag(FLAGS_output_dir), "/", speakers[set], extension)
                                         : absl::GetFlag(FLAGS_output);
    GMM_RETURN_IF_ERROR(WriteModel(adapted, path));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> TrainCommands() {
  std::vector<Command> commands = {
      {"acc-stats", "accumulate GMM statistics (Kaldi AccumDiagGmm / gmm-acc-stats-ali files)",
       "gmmscore acc-stats --model M --features ark:F [--alignments ark:A [--transition_ids] | --posteriors ark:P]\n"
       "                   --output ACCS [--binary=false] [--backend cpu|cuda|reference] [--subsample k]\n"
       "                   (cuda[:N]/tf32x3: the 3xTF32 tensor-core kernels; docs/PERFORMANCE.md says when they pay)\n\n"
       "Without alignments or posteriors M must be one GMM (a UBM): every frame feeds it, as\n"
       "gmm-global-acc-stats. With pdf-id alignments (ali-to-pdf) or pdf-id posteriors\n"
       "(post-to-pdf-post) each frame feeds its states, as gmm-acc-stats-ali / gmm-acc-stats; the\n"
       "file is then Kaldi's acoustic-model accumulator (transition counts zero: pdf ids carry none).\n"
       "With --transition_ids the alignments are Kaldi's own (transition-ids, M a final.mdl): each\n"
       "frame feeds its transition-id's pdf and the transitions are counted, exactly gmm-acc-stats-ali.",
       {"model", "features", "alignments", "transition_ids", "posteriors", "output", "binary", "backend",
        "subsample", "block_frames"},
       RunAccStats},
      {"sum-accs", "sum accumulator files of parallel jobs",
       "gmmscore sum-accs --output ACCS [--binary=false] IN...\n\n"
       "As gmm-sum-accs / gmm-global-sum-accs: every input must have the same shape.",
       {"output", "binary"}, nullptr, RunSumAccs},
      {"est", "re-estimate a model from accumulators (ML update, optional mixing-up)",
       "gmmscore est --model M --stats ACCS --output M2 [--min_gaussian_occupancy 10] [--min_variance 0.001]\n"
       "             [--mix_up N] [--update_flags mvwt] [--output_format auto|native|kaldi-text|kaldi-binary]\n"
       "             [--transition_floor 0.01] [--transition_min_count 5]\n\n"
       "Kaldi's MleDiagGmmUpdate (gmm-est / gmm-global-est), then optional mixing-up to N Gaussians.\n"
       "A final.mdl keeps its TransitionModel: its probabilities are re-estimated from the\n"
       "accumulator's transition counts (\"t\", TransitionModel::MleUpdate) and the whole model is\n"
       "written back in a Kaldi format, as gmm-est writes it.",
       {"model", "stats", "output", "min_gaussian_occupancy", "min_gaussian_weight", "min_variance",
        "remove_low_count_gaussians", "update_flags", "transition_floor", "transition_min_count", "mix_up",
        "perturb_factor", "power", "min_count", "seed", "output_format"},
       RunEst},
      {"train-gmm", "train a GMM (UBM) from features with EM, on the GPU where there is one",
       "gmmscore train-gmm --features ark:F --num_gauss M [--num_gauss_init M0 | --init MODEL]\n"
       "                   --iterations N --output M2 [--backend auto|cpu|cuda] [--subsample k]\n\n"
       "As gmm-global-init-from-feats: random frames as means (or --init), then EM; with\n"
       "--num_gauss_init the model mixes up evenly during the first half of the iterations.",
       {"features", "num_gauss", "num_gauss_init", "init", "iterations", "output", "output_format", "backend",
        "subsample", "seed", "min_gaussian_occupancy", "min_gaussian_weight", "min_variance",
        "remove_low_count_gaussians", "block_frames"},
       RunTrainGmm},
      {"adapt-map", "MAP-adapt a model to a speaker's data (or one model per speaker)",
       "gmmscore adapt-map --model M --features ark:F [--alignments ark:A | --posteriors ark:P]\n"
       "                   (--output M2 | --spk2utt ark:S --output_dir DIR)\n"
       "                   [--mean_tau 10 --variance_tau 50 --weight_tau 10 --update means,weights,variances]\n\n"
       "As gmm-adapt-map; all speakers in one statistics pass.",
       {"model", "features", "alignments", "posteriors", "output", "spk2utt", "output_dir", "mean_tau",
        "variance_tau", "weight_tau", "update", "min_variance", "backend", "output_format", "subsample"},
       RunAdaptMap},
  };
  return commands;
}

}  // namespace gmmscore::cli
