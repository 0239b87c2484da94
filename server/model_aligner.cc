#include "server/model_aligner.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "server/client_text.h"

namespace gmmscore {

absl::Status ClientAlignStatus(const absl::Status& engine) {
  switch (engine.code()) {
    case absl::StatusCode::kNotFound:
      return absl::InvalidArgumentError(engine.message());
    case absl::StatusCode::kFailedPrecondition:
      return absl::OutOfRangeError(engine.message());
    default:
      return engine;
  }
}

absl::StatusOr<std::unique_ptr<ModelAligner>> ModelAligner::Create(const std::string& model_dir,
                                                                   const std::string& dictionary,
                                                                   ScoringBackend* backend,
                                                                   const ModelAlignerOptions& options) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<SphinxAligner> aligner,
                       SphinxAligner::Create(model_dir, dictionary, backend,
                                             {.engine = options.engine, .threads = options.threads}));
  GMM_ASSIGN_OR_RETURN(FeaturePipeline pipeline, FeaturePipelineForModel(model_dir));
  return std::unique_ptr<ModelAligner>(new ModelAligner(std::move(aligner), std::move(pipeline), dictionary));
}

absl::Status ModelAligner::CheckWords(absl::Span<const std::string> words) const {
  if (words.empty()) {
    return absl::InvalidArgumentError("the transcript has no words (AlignRequest.words is empty)");
  }
  for (size_t w = 0; w < words.size(); ++w) {
    if (aligner_->lexicon().dictionary.Find(words[w]) == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "\"%s\" (word %d) is not in the model's dictionary %s", ClientText(words[w]), w + 1, dictionary_));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<FloatMatrix> ModelAligner::ComputeFeatures(const PcmAudio& audio, const std::string& name) const {
  return gmmscore::ComputeFeatures(audio, pipeline_, name);
}

std::vector<absl::StatusOr<Alignment>> ModelAligner::Align(absl::Span<const AlignInput> batch) {
  std::vector<absl::StatusOr<Alignment>> out = aligner_->Align(batch);
  for (absl::StatusOr<Alignment>& result : out) {
    if (!result.ok()) result = ClientAlignStatus(result.status());
  }
  return out;
}

}  // namespace gmmscore
