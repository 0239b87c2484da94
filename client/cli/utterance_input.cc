#include "client/cli/utterance_input.h"

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "client/cli/common_flags.h"
#include "kernels/core/status_macros.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/kaldi_text_table.h"
#include "kernels/io/wav_reader.h"

ABSL_DECLARE_FLAG(std::string, transcripts);
ABSL_DECLARE_FLAG(std::string, audio);

namespace gmmscore::cli {
namespace {

absl::StatusOr<std::map<std::string, FloatMatrix>> ReadFeatureMap(const std::string& model_dir) {
  std::map<std::string, FloatMatrix> out;
  if (!absl::GetFlag(FLAGS_features).empty()) {
    GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> entries, ReadKaldiMatrixTable(absl::GetFlag(FLAGS_features)));
    for (KaldiMatrixEntry& e : entries) out[e.key] = std::move(e.matrix);
    return out;
  }
  std::string scp = absl::GetFlag(FLAGS_audio);
  if (!absl::StrContains(scp, ':')) scp = "ark,t:" + scp;
  GMM_ASSIGN_OR_RETURN(const auto paths, ReadKaldiTokenTable(scp));
  GMM_ASSIGN_OR_RETURN(const FeaturePipeline pipeline, FeaturePipelineForModel(model_dir));
  for (const auto& [key, path] : paths) {
    GMM_ASSIGN_OR_RETURN(const PcmAudio audio, ReadSpeechFile(path, static_cast<int>(pipeline.front_end.sample_rate)));
    GMM_ASSIGN_OR_RETURN(out[key], ComputeFeatures(audio, pipeline, path));
  }
  return out;
}

}  // namespace

absl::StatusOr<UtteranceInputs> ReadUtteranceInputs(const std::string& model_dir) {
  UtteranceInputs in;
  GMM_ASSIGN_OR_RETURN(in.transcripts, ReadTranscripts(absl::GetFlag(FLAGS_transcripts)));
  GMM_ASSIGN_OR_RETURN(in.features, ReadFeatureMap(model_dir));
  for (const Transcript& t : in.transcripts) {
    const auto it = in.features.find(t.utterance);
    if (it == in.features.end()) {
      in.missing.push_back(t.utterance);
      continue;
    }
    in.inputs.push_back({t.utterance, it->second.view(), t.words});
  }
  return in;
}

}  // namespace gmmscore::cli
