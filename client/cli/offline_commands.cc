#include "client/cli/offline_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/common_flags.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/kaldi_fmllr.h"
#include "kernels/io/kaldi_text_table.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/htk_model.h"
#include "kernels/io/kaldi_specifier.h"
#include "kernels/io/model_loader.h"
#include "kernels/io/native_model_file.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/score/scoring_backend.h"

ABSL_FLAG(std::string, fmllr, "",
          "speaker transforms applied before scoring: one Kaldi fMLLR matrix file (D x (D+1) or D x D) "
          "for every utterance, or an ark:/scp: table of them keyed by utterance");
ABSL_FLAG(std::string, utt2spk, "",
          "utterance-to-speaker map (Kaldi's utt2spk, FILE or ark:FILE): --fmllr tables are keyed by speaker");
ABSL_FLAG(std::string, algo, "auto",
          "CUDA algorithm: auto, fused8, fused16, fused32, fused8x2, fused8x4, split8, tf32x3, wgmma, wgmma_f16 "
          "or gemm "
          "(CPU ignores it)");
ABSL_FLAG(int, states, 0, "number of states (pdfs)");
ABSL_FLAG(int, gaussians, 0, "Gaussians in every state (or give --min_gaussians and --max_gaussians)");
ABSL_FLAG(int, min_gaussians, 0, "fewest Gaussians in a state; counts are drawn uniformly from [min, max]");
ABSL_FLAG(int, max_gaussians, 0, "most Gaussians in a state");
ABSL_FLAG(int, dim, 39, "feature dimension");

namespace gmmscore::cli {
namespace {

// Turns a status about a flag's value into a usage error.
absl::Status AsUsage(const absl::Status& status) {
  return status.ok() ? status : UsageError(status.message());
}

// Any model the backends score; tied-mixture ones (Sphinx semi-continuous
// and PTM, multi-stream HTK) are prepared tied (LoadAnyModel).
absl::StatusOr<std::shared_ptr<const PreparedModel>> LoadAndPrepare(const std::string& path,
                                                                    ScoringBackend& backend) {
  GMM_ASSIGN_OR_RETURN(LoadedModel model, LoadAnyModel(path));
  return model.tied != nullptr ? backend.PrepareTied(std::move(model.tied)) : backend.Prepare(std::move(model.untied));
}

// ---------------------------------------------------------------------------
// score

struct ScoreTotals {
  int64_t utterances = 0;
  int64_t frames = 0;
};

// Scores every utterance of `rspecifier` into `writer`.
absl::Status ScoreArchive(const PreparedModel& prepared, ScoringBackend& backend,
                          const ScoreOptions& options, const std::string& rspecifier,
                          const std::string& model_path, const FmllrTransforms* fmllr,
                          KaldiMatrixArchiveWriter& writer, ScoreTotals* totals) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixTableReader> reader, KaldiMatrixTableReader::Open(rspecifier));
  ScoreResult result;
  FloatMatrix transformed;
  while (true) {
    GMM_ASSIGN_OR_RETURN(const bool more, reader->Next());
    if (!more) return absl::OkStatus();
    ConstMatrixView features = reader->matrix().view();
    const std::string where =
        absl::StrCat("utterance '", reader->key(), "' in '", rspecifier, "'");
    if (features.cols != prepared.dim() && features.rows > 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has dimension ", features.cols,
                                                     " but model '", model_path, "' has dimension ",
                                                     prepared.dim()));
    }
    if (features.rows == 0) {
      // Kaldi writes empty matrices as 0 x 0; keep the utterance, no frames.
      GMM_RETURN_IF_ERROR(writer.Write(reader->key(), FloatMatrix(0, prepared.num_states()).view()));
      ++totals->utterances;
      continue;
    }
    if (fmllr != nullptr) {
      GMM_ASSIGN_OR_RETURN(const FeatureTransform* transform, fmllr->For(reader->key()));
      GMM_RETURN_IF_ERROR(transform->Apply(features, &transformed));
      features = transformed.view();
    }
    if (absl::Status status = ValidateFeatures(prepared, features); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", status.message()));
    }
    if (absl::Status status = backend.Score(prepared, features, options, &result); !status.ok()) {
      return PrefixStatus(where, status);
    }
    GMM_RETURN_IF_ERROR(writer.Write(reader->key(), result.loglikes.view()));
    ++totals->utterances;
    totals->frames += features.rows;
  }
}

absl::Status RunScore(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "features", "output"}, "score"));
  const std::string model_path = absl::GetFlag(FLAGS_model);
  const std::string rspecifier = absl::GetFlag(FLAGS_features);
  const std::string wspecifier = absl::GetFlag(FLAGS_output);
  // Everything the flags say is checked before any work is done.
  absl::StatusOr<Algorithm> algorithm = ParseAlgorithm(absl::GetFlag(FLAGS_algo));
  GMM_RETURN_IF_ERROR(AsUsage(algorithm.status()));
  ScoreOptions options;
  options.algorithm = *algorithm;
  options.frame_totals = false;
  GMM_RETURN_IF_ERROR(AsUsage(CheckTableRspecifier(rspecifier)));
  absl::StatusOr<ArchiveSpecifier> output = ParseArchiveWspecifier(wspecifier);
  GMM_RETURN_IF_ERROR(AsUsage(output.status()));

  absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend(absl::GetFlag(FLAGS_backend));
  if (backend.status().code() == absl::StatusCode::kInvalidArgument) return AsUsage(backend.status());
  GMM_RETURN_IF_ERROR(backend.status());
  GMM_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedModel> prepared, LoadAndPrepare(model_path, **backend));
  std::optional<FmllrTransforms> fmllr;
  if (specified.contains("fmllr")) {
    GMM_ASSIGN_OR_RETURN(fmllr, ReadFmllrTransforms(absl::GetFlag(FLAGS_fmllr), prepared->dim()));
    if (specified.contains("utt2spk")) {
      std::string table = absl::GetFlag(FLAGS_utt2spk);
      if (table.find(':') == std::string::npos) table = "ark,t:" + table;
      GMM_ASSIGN_OR_RETURN(fmllr->utt2spk, ReadKaldiTokenTable(table));
    }
  }
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveWriter> writer,
                       KaldiMatrixArchiveWriter::Open(wspecifier));

  const auto start = std::chrono::steady_clock::now();
  ScoreTotals totals;
  absl::Status status = ScoreArchive(*prepared, **backend, options, rspecifier, model_path,
                                     fmllr.has_value() ? &*fmllr : nullptr, *writer, &totals);
  const absl::Status closed = writer->Close();
  if (status.ok()) status = closed;
  if (!status.ok()) {
    // A partial archive would look like a complete one to the next tool.
    if (output->path != "-") std::remove(output->path.c_str());
    return status;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "gmmscore: scored %lld utterances, %lld frames, %d states on %s in %.3f s\n",
               static_cast<long long>(totals.utterances), static_cast<long long>(totals.frames),
               prepared->num_states(), (*backend)->name().c_str(), seconds);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// convert

absl::Status RunConvert(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "output"}, "convert"));
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "native" && format != "kaldi-text" && format != "kaldi-binary") {
    return UsageError(absl::StrCat("unknown --format '", format, "' (expected native, kaldi-text or kaldi-binary)"));
  }
  const std::string output = absl::GetFlag(FLAGS_output);
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(absl::GetFlag(FLAGS_model)));
  GMM_RETURN_IF_ERROR(format == "native"       ? WriteNativeModel(model, output)
                      : format == "kaldi-text" ? WriteKaldiAmDiagGmmText(model, output)
                                               : WriteKaldiAmDiagGmmBinary(model, output));
  std::fprintf(stderr, "gmmscore: wrote %s (%s): %d states, %lld Gaussians, dimension %d\n",
               output.c_str(), format.c_str(), model.num_states(),
               static_cast<long long>(model.num_gaussians()), model.dim());
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// synth

absl::Status RunSynth(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"states", "output"}, "synth"));
  const bool fixed = specified.contains("gaussians");
  const bool ranged = specified.contains("min_gaussians") || specified.contains("max_gaussians");
  if (fixed == ranged) {
    return UsageError(
        "synth needs either --gaussians G or both --min_gaussians and --max_gaussians "
        "(see: gmmscore help synth)");
  }
  if (ranged) GMM_RETURN_IF_ERROR(RequireFlags(specified, {"min_gaussians", "max_gaussians"}, "synth"));
  SyntheticModelSpec spec;
  spec.num_states = absl::GetFlag(FLAGS_states);
  spec.min_gaussians = fixed ? absl::GetFlag(FLAGS_gaussians) : absl::GetFlag(FLAGS_min_gaussians);
  spec.max_gaussians = fixed ? absl::GetFlag(FLAGS_gaussians) : absl::GetFlag(FLAGS_max_gaussians);
  spec.dim = absl::GetFlag(FLAGS_dim);
  spec.seed = absl::GetFlag(FLAGS_seed);
  if (spec.num_states <= 0 || spec.min_gaussians <= 0 || spec.dim <= 0) {
    return UsageError("--states, the Gaussian counts and --dim must be positive");
  }
  if (spec.min_gaussians > spec.max_gaussians) {
    return UsageError(absl::StrCat("--min_gaussians ", spec.min_gaussians, " exceeds --max_gaussians ",
                                   spec.max_gaussians));
  }
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, GenerateSyntheticModel(spec));
  const std::string output = absl::GetFlag(FLAGS_output);
  GMM_RETURN_IF_ERROR(WriteNativeModel(model, output));
  std::fprintf(stderr, "gmmscore: wrote %s (native): %d states, %lld Gaussians, dimension %d, seed %llu\n",
               output.c_str(), model.num_states(), static_cast<long long>(model.num_gaussians()),
               model.dim(), static_cast<unsigned long long>(spec.seed));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// info

// Sphinx and HTK models: their tied / multi-stream structure.
absl::Status PrintTiedInfo(const std::string& path, ModelFormat format) {
  std::string out = absl::StrFormat("model       %s\nformat      %s\n", path, ModelFormatName(format));
  std::optional<SphinxModel> sphinx;
  std::optional<HtkModel> htk;
  if (format == ModelFormat::kSphinx) {
    GMM_ASSIGN_OR_RETURN(sphinx, ReadSphinxModel(path));
    absl::StrAppendFormat(&out, "kind        %s; weights from %s", SphinxModelKindName(sphinx->kind),
                          sphinx->weights_source);
    if (sphinx->quantisation_step > 0) {
      absl::StrAppendFormat(&out, " (quantised, %.4f nats per step)", sphinx->quantisation_step);
    }
    absl::StrAppendFormat(&out, "\nphones      %d base, %d in all; feature type %s\n", sphinx->mdef.base_phones.size(),
                          sphinx->mdef.num_phones, sphinx->feat_params.Get("feat", "(no feat.params)"));
  } else {
    GMM_ASSIGN_OR_RETURN(htk, ReadHtkMmf(path));
    absl::StrAppendFormat(&out, "hmms        %d; parameter kind %s\n", htk->hmm_states.size(),
                          htk->parameter_kind.empty() ? "(none)" : htk->parameter_kind);
  }
  const TiedMixtureModel& model = sphinx.has_value() ? sphinx->model : htk->model;
  absl::StrAppendFormat(&out, "states      %d\ndimension   %d\nstreams     %d:", model.num_states(), model.dim(),
                        model.num_streams());
  for (int f = 0; f < model.num_streams(); ++f) {
    absl::StrAppendFormat(&out, " [%d,%d) weight %g;", model.stream(f).offset,
                          model.stream(f).offset + model.stream(f).dim, model.stream_weight(f));
  }
  absl::StrAppendFormat(&out, "\ncodebooks   %d; %d Gaussians evaluated per frame (largest codebook %d)\n",
                        model.num_codebooks(), model.total_gaussians(), model.max_codebook_size());
  absl::StrAppendFormat(&out, "bytes       %d in memory (tied form); %d if every state owned its Gaussians\n",
                        model.ByteSize(), model.UntiedByteSize());
  std::fputs(out.c_str(), stdout);
  return absl::OkStatus();
}

absl::Status RunInfo(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model"}, "info"));
  const std::string path = absl::GetFlag(FLAGS_model);
  GMM_ASSIGN_OR_RETURN(const ModelFormat format, DetectModelFormat(path));
  if (format == ModelFormat::kSphinx || format == ModelFormat::kHtkMmf) return PrintTiedInfo(path, format);
  GMM_ASSIGN_OR_RETURN(const DiagGmmModel model, LoadModel(path));
  int min_gaussians = model.max_gaussians_per_state();
  for (int s = 0; s < model.num_states(); ++s) {
    min_gaussians = std::min(min_gaussians, model.num_gaussians_in_state(s));
  }
  const auto center = model.center();
  const auto [lowest, highest] = std::minmax_element(center.begin(), center.end());
  double center_sum = 0.0;
  for (const float c : center) center_sum += c;
  std::string first_values;
  for (size_t d = 0; d < std::min<size_t>(center.size(), 6); ++d) {
    absl::StrAppend(&first_values, d == 0 ? "" : " ", absl::StrFormat("%.4g", center[d]));
  }
  if (center.size() > 6) absl::StrAppend(&first_values, " ...");
  std::error_code error;
  const uintmax_t file_bytes = std::filesystem::file_size(path, error);

  std::string out;
  absl::StrAppendFormat(&out, "model       %s\n", path);
  absl::StrAppendFormat(&out, "format      %s\n", ModelFormatName(format));
  absl::StrAppendFormat(&out, "states      %d\n", model.num_states());
  absl::StrAppendFormat(&out, "dimension   %d\n", model.dim());
  absl::StrAppendFormat(&out, "gaussians   %d total; per state min %d, max %d, mean %.2f\n",
                        model.num_gaussians(), min_gaussians, model.max_gaussians_per_state(),
                        static_cast<double>(model.num_gaussians()) / model.num_states());
  absl::StrAppendFormat(&out, "bytes       %d in memory (scoring form)", model.ByteSize());
  if (!error) absl::StrAppendFormat(&out, ", %d on disk", file_bytes);
  absl::StrAppendFormat(&out, "\ncentre      min %.4g, max %.4g, mean %.4g; first: %s\n", *lowest,
                        *highest, center_sum / static_cast<double>(center.size()), first_values);
  std::fputs(out.c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> OfflineCommands() {
  return {
      {"score", "score a feature archive with a model; write a Kaldi log-likelihood archive",
       "gmmscore score --model M --features ark:FEATS --output ark[,t]:OUT\n"
       "               [--backend cpu|cuda|auto]\n"
       "               [--algo auto|fused8|fused16|fused32|fused8x2|fused8x4|split8|tf32x3|wgmma|wgmma_f16|gemm]\n"
       "               [--fmllr TRANS.mat | --fmllr ark:TRANS.ark [--utt2spk ark:utt2spk]]\n\n"
       "For every utterance of FEATS (frames x dim float matrices), writes the frames x states\n"
       "matrix of state log-likelihoods under the same key, as Kaldi's gmm-compute-likes does.\n"
       "The model may be a native file or a Kaldi text AmDiagGmm. Output is binary for ark:,\n"
       "text for ark,t:; ark:- reads stdin or writes stdout. On error the partial output file\n"
       "is removed. --algo picks the CUDA kernel (docs/PERFORMANCE.md): auto chooses by window\n"
       "length and model size; tf32x3, wgmma and wgmma_f16 (H100/H200) are the tensor-core paths (\"fast\"\n"
       "precision, up to 1e-3 nats); the CPU backend ignores it. --fmllr applies Kaldi fMLLR transforms y = A x + b to\n"
       "the features first: one matrix file for all utterances, or a table keyed by utterance\n"
       "(or by speaker, with --utt2spk: Kaldi's utt2spk file, 'utt spk' lines).",
       {"model", "features", "output", "backend", "algo", "fmllr", "utt2spk"},
       RunScore},
      {"convert", "convert a model to the native format or to Kaldi text",
       "gmmscore convert --model M --output OUT [--format native|kaldi-text|kaldi-binary]\n\n"
       "Reads M (format detected by content: native, Kaldi text or binary, single-stream HTK MMF or\n"
       "Sphinx model directory) and writes it as a native model file (fast to load,\n"
       "checksummed; docs/MODEL_FORMAT.md) or as a Kaldi AmDiagGmm (text: 7 significant digits,\n"
       "so not bit-exact; binary: float32 exact).",
       {"model", "output", "format"},
       RunConvert},
      {"synth", "write a deterministic synthetic model (native format)",
       "gmmscore synth --states S (--gaussians G | --min_gaussians A --max_gaussians B)\n"
       "               [--dim D] [--seed N] --output OUT\n\n"
       "MFCC-scale synthetic model for tests and benchmarks; the same arguments give the same file.",
       {"states", "gaussians", "min_gaussians", "max_gaussians", "dim", "seed", "output"},
       RunSynth},
      {"info", "describe a model: states, dimension, Gaussians, bytes, centre",
       "gmmscore info --model M\n\nPrints the model's format, sizes and a summary of its centre; for Sphinx\n"
       "and HTK models also the kind, streams, codebooks and tied versus untied memory.",
       {"model"},
       RunInfo},
  };
}

}  // namespace gmmscore::cli
