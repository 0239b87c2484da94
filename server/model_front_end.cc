#include "server/model_front_end.h"

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/sphinx_features.h"
#include "kernels/io/sphinx_model.h"

namespace gmmscore {
namespace {

// The section's options over its file (or over the model directory's own
// feat.params when it names no file).
absl::StatusOr<FeaturePipeline> ConfiguredPipeline(const std::string& path, ModelFormat format,
                                                   const FrontEndSource& config) {
  SphinxFeatParams params;
  std::string file = config.feat_params;
  std::error_code missing;
  if (file.empty() && format == ModelFormat::kSphinx && std::filesystem::exists(path + "/feat.params", missing)) {
    file = path + "/feat.params";
  }
  if (!file.empty()) {
    GMM_ASSIGN_OR_RETURN(params, ReadSphinxFeatParams(file));
  }
  const std::vector<absl::string_view> words =
      absl::StrSplit(config.options, absl::ByAnyChar(" \t\n\r"), absl::SkipEmpty());
  if (words.size() % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("front_end.options \"", config.options, "\" is not a list of \"-name value\" pairs"));
  }
  for (size_t i = 0; i < words.size(); i += 2) {
    if (words[i].size() < 2 || words[i][0] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("front_end.options: \"", words[i], "\" is not an -option"));
    }
    params.values[std::string(words[i].substr(1))] = std::string(words[i + 1]);
  }
  return FeaturePipelineFromFeatParams(params, "front_end");
}

}  // namespace

absl::StatusOr<ModelFrontEnd> FrontEndForModel(const std::string& path, ModelFormat format, int dim,
                                               const FrontEndSource* config) {
  if (config != nullptr) {
    absl::StatusOr<FeaturePipeline> pipeline = ConfiguredPipeline(path, format, *config);
    if (!pipeline.ok()) return PrefixStatus("config front_end", pipeline.status());
    const int features = SphinxFeatureDim(pipeline->feature_type, pipeline->front_end.num_cepstra);
    if (features != dim) {
      return absl::InvalidArgumentError(absl::StrCat("config front_end: -feat ", pipeline->feature_type, " gives ",
                                                     features, "-dim features, but the model's are ", dim));
    }
    return ModelFrontEnd{.pipeline = std::make_shared<const FeaturePipeline>(*std::move(pipeline))};
  }
  if (format != ModelFormat::kSphinx) {
    return ModelFrontEnd{.missing = "it is not a CMU Sphinx model directory and its config entry has no "
                                    "front_end section"};
  }
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(path);
  if (!pipeline.ok()) {
    return ModelFrontEnd{.missing = absl::StrCat("its feat.params cannot be used: ", pipeline.status().message())};
  }
  return ModelFrontEnd{.pipeline = std::make_shared<const FeaturePipeline>(*std::move(pipeline))};
}

}  // namespace gmmscore
