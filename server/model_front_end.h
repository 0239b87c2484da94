// The front end a served model gives its audio streams (StreamConfig.audio):
// from the config file's ModelConfig.front_end section when it has one,
// else a CMU Sphinx model directory's own feat.params, else none.
//
//   GMM_ASSIGN_OR_RETURN(ModelFrontEnd front_end, FrontEndForModel(path, format, dim, config));
//   if (front_end.pipeline == nullptr) ... front_end.missing  // why not, for the client
//
// A configured front end that cannot be built (a file that does not read,
// an option the front end refuses, features of another dimension than the
// model's) fails the model's load: the operator asked for it. A Sphinx
// directory's own feat.params that cannot be built only leaves the model
// without one (it still scores features), and says why.
#ifndef GMMSCORE_SERVER_MODEL_FRONT_END_H_
#define GMMSCORE_SERVER_MODEL_FRONT_END_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/model_loader.h"

namespace gmmscore {

// ModelConfig.front_end: a feat.params file and "-name value" options over it.
struct FrontEndSource {
  std::string feat_params;
  std::string options;
};

struct ModelFrontEnd {
  std::shared_ptr<const FeaturePipeline> pipeline;  // null: none
  std::string missing;  // when null: why, in a sentence a client can act on
};

// `config` may be null (no section). `dim`: the model's feature dimension.
absl::StatusOr<ModelFrontEnd> FrontEndForModel(const std::string& path, ModelFormat format, int dim,
                                               const FrontEndSource* config);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MODEL_FRONT_END_H_
