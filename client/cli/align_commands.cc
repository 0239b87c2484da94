#include "client/cli/align_commands.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/common_flags.h"
#include "client/cli/ctm_output.h"
#include "client/cli/utterance_input.h"
#include "kernels/backends/align_engine_factory.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/io/kaldi_int_vector_archive.h"

ABSL_FLAG(std::string, dict, "", "pronunciation dictionary (cmudict format, word(2) alternatives)");
ABSL_FLAG(std::string, transcripts, "",
          "transcripts: Sphinx '<s> words </s> (uttid)' lines or Kaldi 'uttid words' lines");
ABSL_FLAG(std::string, audio, "",
          "align: a Kaldi wav.scp ('uttid path' lines); stream: speech files, comma-separated, one audio "
          "stream each (WAV PCM16 mono, or raw PCM16 at --sample_rate)");
ABSL_FLAG(bool, phones, false, "align: write phone segments to the CTM instead of words");
ABSL_FLAG(std::string, frames, "", "align: also write each frame's senone id (Kaldi int-vector archive)");

namespace gmmscore::cli {
namespace {

// Utterances per Align call: bounds the memory of scores and graphs.
constexpr size_t kBatchUtterances = 256;

struct Totals {
  int aligned = 0, failed = 0;
  int64_t frames = 0;
};

// Aligns one batch, appending CTM text and frame alignments, printing an
// error line for each utterance that fails.
void AlignBatch(SphinxAligner& aligner, absl::Span<const AlignInput> batch, bool phones, std::string* ctm,
                std::vector<KaldiIntVectorEntry>* frames, Totals* totals) {
  const auto results = aligner.Align(batch);
  for (size_t u = 0; u < batch.size(); ++u) {
    if (!results[u].ok()) {
      ++totals->failed;
      std::fprintf(stderr, "gmmscore: error: utterance '%s': %s\n", batch[u].utterance.c_str(),
                   std::string(results[u].status().message()).c_str());
      continue;
    }
    ++totals->aligned;
    totals->frames += batch[u].features.rows;
    *ctm += phones ? PhoneCtm(batch[u].utterance, *results[u], aligner.frame_seconds())
                   : WordCtm(batch[u].utterance, *results[u], aligner.frame_seconds());
    if (frames != nullptr) frames->push_back({batch[u].utterance, results[u]->senones});
  }
}

// The engine --backend names (the GPU's, or the host engine over the CPU
// backend, which `cpu` then owns).
absl::StatusOr<std::unique_ptr<SphinxAligner>> MakeAligner(const std::string& model_dir,
                                                           std::unique_ptr<ScoringBackend>* cpu) {
  absl::StatusOr<AlignEngineFactory> engine = AlignEngineFor(absl::GetFlag(FLAGS_backend));
  if (engine.status().code() == absl::StatusCode::kInvalidArgument) return UsageError(engine.status().message());
  GMM_RETURN_IF_ERROR(engine.status());
  SphinxAlignerOptions options;
  options.engine = *std::move(engine);
  if (!options.engine) {
    GMM_ASSIGN_OR_RETURN(*cpu, CreateBackend("cpu"));
  }
  return SphinxAligner::Create(model_dir, absl::GetFlag(FLAGS_dict), cpu->get(), std::move(options));
}

absl::Status RunAlign(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"model", "dict", "transcripts", "output"}, "align"));
  if (specified.contains("features") == specified.contains("audio")) {
    return UsageError("align needs exactly one of --features ark:F and --audio wav.scp");
  }
  GMM_ASSIGN_OR_RETURN(const std::string ctm_path, CtmPath(absl::GetFlag(FLAGS_output)));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  std::unique_ptr<ScoringBackend> cpu;
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<SphinxAligner> aligner, MakeAligner(model_dir, &cpu));
  const auto start = std::chrono::steady_clock::now();
  GMM_ASSIGN_OR_RETURN(const UtteranceInputs in, ReadUtteranceInputs(model_dir));
  Totals totals;
  for (const std::string& id : in.missing) {
    ++totals.failed;
    std::fprintf(stderr, "gmmscore: error: utterance '%s': no features or audio for it\n", id.c_str());
  }
  const bool want_frames = specified.contains("frames");
  std::string ctm;
  std::vector<KaldiIntVectorEntry> frames;
  for (size_t first = 0; first < in.inputs.size(); first += kBatchUtterances) {
    const size_t count = std::min(kBatchUtterances, in.inputs.size() - first);
    AlignBatch(*aligner, absl::MakeConstSpan(in.inputs).subspan(first, count), absl::GetFlag(FLAGS_phones), &ctm,
               want_frames ? &frames : nullptr, &totals);
  }
  GMM_RETURN_IF_ERROR(WriteCtm(ctm_path, ctm));
  if (want_frames) GMM_RETURN_IF_ERROR(WriteKaldiIntVectorArchive(absl::GetFlag(FLAGS_frames), frames));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double speech = totals.frames * aligner->frame_seconds();
  std::fprintf(stderr, "gmmscore: aligned %d of %d utterances, %.1f s of speech in %.2f s (%.0fx real time, %s)\n",
               totals.aligned, totals.aligned + totals.failed, speech, seconds, speech / std::max(seconds, 1e-9),
               aligner->engine_name().c_str());
  if (totals.failed == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(totals.failed, " of ", totals.aligned + totals.failed, " utterances could not be aligned"));
}

}  // namespace

std::vector<Command> AlignCommands(const AlignRemoteMode& remote) {
  std::vector<std::string> flags = {"model",  "dict",   "transcripts", "features", "audio",
                                    "output", "phones", "frames",      "backend"};
  flags.insert(flags.end(), remote.flags.begin(), remote.flags.end());
  auto run = [remote](const SpecifiedFlags& specified) {
    if (remote.run && specified.contains("server")) return remote.run(specified);
    return RunAlign(specified);
  };
  return {
      {"align", "forced alignment of transcripts with a CMU Sphinx model: word (or phone) times as CTM",
       "gmmscore align --model SPHINX_DIR --dict DICT --transcripts FILE\n"
       "               (--features ark:F | --audio wav.scp) --output ctm:FILE\n"
       "               [--phones] [--frames ark,t:F] [--backend auto|cpu|cuda]\n" +
           remote.synopsis +
           "\n"
           "Each transcript becomes an HMM of its words (all pronunciations; optional silence and\n"
           "noise between words, as pocketsphinx's FSG search has them); Viterbi over the model's\n"
           "senone scores gives 'utt 1 start duration word' lines, in seconds. --audio computes the\n"
           "model's features from speech (feat.params). An utterance that cannot be aligned (a word\n"
           "not in the dictionary, an empty transcript, too few frames) gets an error line and the\n"
           "rest go on; the exit status is then 1.",
       std::move(flags), std::move(run)},
  };
}

}  // namespace gmmscore::cli
