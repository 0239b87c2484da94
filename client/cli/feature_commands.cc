#include "client/cli/feature_commands.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/common_flags.h"
#include "kernels/core/status_macros.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_specifier.h"
#include "kernels/io/kaldi_text_table.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/io/wav_reader.h"

ABSL_FLAG(std::string, input, "",
          "speech files, comma-separated (keyed by their names), or scp:wav.scp (Kaldi's KEY PATH lines): "
          "RIFF WAV (PCM16 mono) or raw little-endian PCM16 at the model's sample rate");
ABSL_FLAG(std::string, feat_params, "",
          "a Sphinx feat.params naming the front end (instead of --model's)");
ABSL_FLAG(std::string, cmn, "",
          "cepstral mean normalisation: batch (the utterance's mean), live (a running mean from "
          "-cmninit, exactly as an audio stream of the daemon computes it) or none; empty: feat.params' -cmn");
ABSL_FLAG(bool, remove_silence, false,
          "drop the frames sphinxbase's VAD calls silence (pocketsphinx's default; off keeps frame t at "
          "time t / frate)");

namespace gmmscore::cli {
namespace {

absl::StatusOr<FeaturePipeline> PipelineFromFlags(const SpecifiedFlags& specified) {
  if (specified.contains("feat_params")) {
    const std::string path = absl::GetFlag(FLAGS_feat_params);
    GMM_ASSIGN_OR_RETURN(const SphinxFeatParams params, ReadSphinxFeatParams(path));
    return FeaturePipelineFromFeatParams(params, absl::StrCat("feat.params '", path, "'"));
  }
  const std::string model = absl::GetFlag(FLAGS_model);
  if (!std::filesystem::is_directory(model)) {
    return UsageError(absl::StrCat("--model '", model,
                                   "' is not a Sphinx model directory; the front end comes from a feat.params: "
                                   "give --feat_params FILE for other models"));
  }
  return FeaturePipelineForModel(model);
}

absl::Status ApplyCmnFlag(FeaturePipeline* pipeline) {
  const std::string cmn = absl::GetFlag(FLAGS_cmn);
  if (cmn.empty()) return absl::OkStatus();
  if (cmn == "batch") pipeline->cmn = CmnMode::kBatch;
  else if (cmn == "live") pipeline->cmn = CmnMode::kLive;
  else if (cmn == "none") pipeline->cmn = CmnMode::kNone;
  else return UsageError(absl::StrCat("--cmn '", cmn, "' is not batch, live or none"));
  if (pipeline->cmn == CmnMode::kLive && pipeline->front_end.remove_silence) {
    return UsageError("--cmn live with --remove_silence: an audio stream keeps every frame");
  }
  return absl::OkStatus();
}

const char* CmnName(CmnMode mode) {
  switch (mode) {
    case CmnMode::kBatch: return "batch";
    case CmnMode::kLive: return "live";
    case CmnMode::kNone: break;
  }
  return "no";
}

// "dir/utt1.wav" -> "utt1": the archive key of one input.
std::string UtteranceKey(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// One utterance: its archive key and its speech file.
struct SpeechInput {
  std::string key;
  std::string path;
};

// --input: "scp:wav.scp" (Kaldi's "KEY PATH" lines, as compute-mfcc-feats
// reads them, in file order) or comma-separated files keyed by their names.
absl::StatusOr<std::vector<SpeechInput>> InputsFromFlag(const std::string& flag) {
  std::vector<SpeechInput> inputs;
  if (absl::StartsWith(flag, "scp:")) {
    GMM_ASSIGN_OR_RETURN(const std::vector<KaldiTokenListEntry> lines,
                         ReadKaldiTokenListTable(absl::StrCat("ark,t:", flag.substr(4))));
    for (const KaldiTokenListEntry& line : lines) {
      if (line.value.size() != 1) {
        return absl::UnimplementedError(absl::StrCat(
            flag, ": utterance '", line.key,
            "' is not \"KEY PATH\" (pipes and extended filenames are not supported; convert to WAV files)"));
      }
      inputs.push_back({line.key, line.value[0]});
    }
  } else {
    for (const std::string& path : std::vector<std::string>(absl::StrSplit(flag, ',', absl::SkipEmpty()))) {
      inputs.push_back({UtteranceKey(path), path});
    }
  }
  std::set<std::string> keys;
  for (const SpeechInput& input : inputs) {
    if (!keys.insert(input.key).second) {
      return UsageError(absl::StrCat("two inputs share the archive key '", input.key,
                                     "' (keys are wav.scp keys, or file names without directory and extension)"));
    }
  }
  if (inputs.empty()) return UsageError("--input names no file");
  return inputs;
}

absl::Status WriteFeatures(const std::vector<SpeechInput>& inputs, const FeaturePipeline& pipeline,
                           KaldiMatrixArchiveWriter& writer, int64_t* frames) {
  for (const SpeechInput& input : inputs) {
    GMM_ASSIGN_OR_RETURN(const PcmAudio audio,
                         ReadSpeechFile(input.path, static_cast<int>(pipeline.front_end.sample_rate)));
    GMM_ASSIGN_OR_RETURN(const FloatMatrix features, ComputeFeatures(audio, pipeline, input.path));
    GMM_RETURN_IF_ERROR(writer.Write(input.key, features.view()));
    *frames += features.rows();
  }
  return absl::OkStatus();
}

absl::Status RunFeatures(const SpecifiedFlags& specified) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"input", "output"}, "features"));
  if (specified.contains("model") == specified.contains("feat_params")) {
    return UsageError("features needs exactly one of --model (a Sphinx model directory) and --feat_params");
  }
  GMM_ASSIGN_OR_RETURN(const std::vector<SpeechInput> inputs, InputsFromFlag(absl::GetFlag(FLAGS_input)));
  const std::string wspecifier = absl::GetFlag(FLAGS_output);
  absl::StatusOr<ArchiveSpecifier> output = ParseArchiveWspecifier(wspecifier);
  if (!output.ok()) return UsageError(output.status().message());
  absl::StatusOr<FeaturePipeline> pipeline = PipelineFromFlags(specified);
  GMM_RETURN_IF_ERROR(pipeline.status());
  pipeline->front_end.remove_silence = absl::GetFlag(FLAGS_remove_silence);
  GMM_RETURN_IF_ERROR(ApplyCmnFlag(&*pipeline));

  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveWriter> writer, KaldiMatrixArchiveWriter::Open(wspecifier));
  int64_t frames = 0;
  absl::Status status = WriteFeatures(inputs, *pipeline, *writer, &frames);
  const absl::Status closed = writer->Close();
  if (status.ok()) status = closed;
  if (!status.ok()) {
    // A partial archive would look like a complete one to the next tool.
    if (output->path != "-") std::remove(output->path.c_str());
    return status;
  }
  std::fprintf(stderr, "gmmscore: wrote %zu utterances, %lld frames of %s features (%d Hz, %s CMN)\n",
               inputs.size(), static_cast<long long>(frames), pipeline->feature_type.c_str(),
               static_cast<int>(pipeline->front_end.sample_rate),
               CmnName(pipeline->cmn));
  return absl::OkStatus();
}

}  // namespace

std::vector<Command> FeatureCommands() {
  return {
      {"features", "compute a Sphinx model's features from speech audio; write a Kaldi archive",
       "gmmscore features --input SPEECH[,SPEECH...]|scp:wav.scp (--model SPHINX_DIR | --feat_params FILE)\n"
       "                  --output ark[,t]:FEATS [--cmn batch|live|none] [--remove_silence]\n\n"
       "Reads each SPEECH file (RIFF WAV, 16-bit PCM mono; or headerless little-endian 16-bit PCM\n"
       "at the model's sample rate) and computes the features the model scores: sphinxbase's MFCC\n"
       "front end with the options of the model's feat.params (-samprate -lowerf -upperf -nfilt\n"
       "-ncep -nfft -wlen -transform -lifter ...; dither always off), then CMN and the dynamic\n"
       "features (-cmn, -feat, e.g. 1s_c_d_dd: 39 dims). One utterance per file, keyed by its\n"
       "name without directory and extension, or by its key in --input scp:wav.scp (in the\n"
       "scp's order). On error the partial output file is removed.\n"
       "--cmn live gives what the daemon's audio streams (StreamConfig.audio) compute from the\n"
       "same audio, however it is cut into chunks.",
       {"input", "model", "feat_params", "output", "cmn", "remove_silence"},
       RunFeatures},
  };
}

}  // namespace gmmscore::cli
