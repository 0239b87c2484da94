// Loads a model from any supported file format, recognised by content rather
// than by extension.
//
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel model, LoadModel(path));
//   GMM_ASSIGN_OR_RETURN(ModelFormat format, DetectModelFormat(path));
#ifndef GMMSCORE_KERNELS_IO_MODEL_LOADER_H_
#define GMMSCORE_KERNELS_IO_MODEL_LOADER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

enum class ModelFormat {
  kNative,       // native_model_file.h (starts with kNativeModelMagic)
  kKaldiText,    // kaldi_am_diag_gmm.h (first token <DIMENSION> or <TransitionModel>)
  kKaldiBinary,  // Kaldi's binary form (starts "\0B"); kaldi_am_diag_gmm.h
  kSphinx,       // a CMU Sphinx model directory (sphinx_model.h)
  kHtkMmf,       // an HTK MMF text file (htk_model.h)
};

// "native", "kaldi-text", "kaldi-binary", "sphinx", "htk-mmf".
absl::string_view ModelFormatName(ModelFormat format);

// Looks at the first bytes of `path` (or, for a directory, whether it holds
// a Sphinx model's mdef and means). NOT_FOUND if it does not exist;
// INVALID_ARGUMENT if it is none of the formats above.
absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& path);

// Detects the format and reads the model with that format's reader, whose
// errors it returns unchanged (see native_model_file.h, kaldi_am_diag_gmm.h).
// A Sphinx model or HTK MMF becomes a DiagGmmModel when it has one feature stream
// (continuous models); tied multi-stream ones (semi-continuous, PTM) give
// UNIMPLEMENTED here: read them with ReadSphinxModel as a TiedMixtureModel.
// Reentrant.
absl::StatusOr<DiagGmmModel> LoadModel(const std::string& path);

// A model in the form a ScoringBackend takes it: exactly one of `untied`
// (ScoringBackend::Prepare) and `tied` (ScoringBackend::PrepareTied) is set.
struct LoadedModel {
  ModelFormat format = ModelFormat::kNative;
  std::shared_ptr<const DiagGmmModel> untied;
  std::shared_ptr<const TiedMixtureModel> tied;

  int dim() const { return untied != nullptr ? untied->dim() : tied->dim(); }
  int num_states() const { return untied != nullptr ? untied->num_states() : tied->num_states(); }
  // Host bytes of the scoring form (ByteSize()).
  int64_t ByteSize() const { return untied != nullptr ? untied->ByteSize() : tied->ByteSize(); }
};

// Like LoadModel, for every model the backends can score: Sphinx and HTK
// models whose codebooks are shared (semi-continuous, PTM, HTK tied
// mixtures) or that have several feature streams (or a stream weight) come
// back as a TiedMixtureModel instead of UNIMPLEMENTED, so that each codebook
// Gaussian is evaluated once per frame. A single-stream model with one
// codebook per state (Sphinx continuous, plain HTK) stays untied, as
// LoadModel gives it (the fused kernels apply), unless its weights have no
// DiagGmmModel form (e.g. quantised weights that do not sum to 1): then it
// is tied too. Native and Kaldi models are always untied. Errors as
// LoadModel's. Reentrant.
absl::StatusOr<LoadedModel> LoadAnyModel(const std::string& path);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_MODEL_LOADER_H_
