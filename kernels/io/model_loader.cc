#include "kernels/io/model_loader.h"

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/htk_model.h"
#include "kernels/io/internal/input_stream.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/native_model_file.h"
#include "kernels/io/sphinx_model.h"

namespace gmmscore {
namespace {

// Enough to hold the first Kaldi token after any leading whitespace.
constexpr int64_t kSniffBytes = 4096;

// Untied when the model is one stream with a codebook per state and has a
// DiagGmmModel form; tied otherwise.
LoadedModel FromTied(ModelFormat format, TiedMixtureModel tied) {
  LoadedModel loaded;
  loaded.format = format;
  if (tied.num_streams() == 1 && tied.num_codebooks() == tied.num_states()) {
    absl::StatusOr<DiagGmmModel> untied = tied.ToDiagGmmModel();
    if (untied.ok()) {
      loaded.untied = std::make_shared<const DiagGmmModel>(*std::move(untied));
      return loaded;
    }
  }
  loaded.tied = std::make_shared<const TiedMixtureModel>(std::move(tied));
  return loaded;
}

}  // namespace

absl::string_view ModelFormatName(ModelFormat format) {
  switch (format) {
    case ModelFormat::kNative:
      return "native";
    case ModelFormat::kKaldiText:
      return "kaldi-text";
    case ModelFormat::kKaldiBinary:
      return "kaldi-binary";
    case ModelFormat::kSphinx:
      return "sphinx";
    case ModelFormat::kHtkMmf:
      return "htk-mmf";
  }
  return "unknown";
}

absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& path) {
  if (LooksLikeSphinxModelDirectory(path)) return ModelFormat::kSphinx;
  absl::StatusOr<std::unique_ptr<io_internal::InputStream>> opened =
      io_internal::InputStream::OpenFile(path);
  if (!opened.ok()) {
    return PrefixStatus("model file", opened.status());
  }
  std::unique_ptr<io_internal::InputStream> in = *std::move(opened);
  std::string prefix(kSniffBytes, '\0');
  prefix.resize(static_cast<size_t>(in->Read(prefix.data(), kSniffBytes)));
  GMM_RETURN_IF_ERROR(in->status());
  if (LooksLikeNativeModel(prefix)) return ModelFormat::kNative;
  if (LooksLikeKaldiBinary(prefix)) return ModelFormat::kKaldiBinary;
  if (LooksLikeKaldiText(prefix)) return ModelFormat::kKaldiText;
  if (LooksLikeHtkMmf(prefix)) return ModelFormat::kHtkMmf;
  if (prefix.empty()) return absl::InvalidArgumentError(absl::StrCat("model file '", path, "' is empty"));
  return absl::InvalidArgumentError(absl::StrCat(
      "model file '", path,
      "' is not a recognised model: expected a gmmscore native model, a Kaldi model (text or "
      "binary), an HTK MMF or a Sphinx model directory"));
}

absl::StatusOr<DiagGmmModel> LoadModel(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const ModelFormat format, DetectModelFormat(path));
  switch (format) {
    case ModelFormat::kNative:
      return ReadNativeModel(path);
    case ModelFormat::kKaldiText:
      return ReadKaldiAmDiagGmmText(path);
    case ModelFormat::kKaldiBinary:
      return ReadKaldiAmDiagGmmText(path);  // reads both forms
    case ModelFormat::kSphinx: {
      GMM_ASSIGN_OR_RETURN(const SphinxModel sphinx, ReadSphinxModel(path));
      absl::StatusOr<DiagGmmModel> model = sphinx.model.ToDiagGmmModel();
      if (!model.ok()) {
        return PrefixStatus(
            absl::StrCat("Sphinx model '", path, "' (", SphinxModelKindName(sphinx.kind), ")"),
            model.status());
      }
      return model;
    }
    case ModelFormat::kHtkMmf: {
      GMM_ASSIGN_OR_RETURN(const HtkModel htk, ReadHtkMmf(path));
      absl::StatusOr<DiagGmmModel> model = htk.model.ToDiagGmmModel();
      if (!model.ok()) {
        return PrefixStatus(absl::StrCat("HTK MMF '", path, "'"), model.status());
      }
      return model;
    }
  }
  return absl::InternalError("unhandled model format");
}

absl::StatusOr<LoadedModel> LoadAnyModel(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const ModelFormat format, DetectModelFormat(path));
  switch (format) {
    case ModelFormat::kSphinx: {
      GMM_ASSIGN_OR_RETURN(SphinxModel sphinx, ReadSphinxModel(path));
      return FromTied(format, std::move(sphinx.model));
    }
    case ModelFormat::kHtkMmf: {
      GMM_ASSIGN_OR_RETURN(HtkModel htk, ReadHtkMmf(path));
      return FromTied(format, std::move(htk.model));
    }
    default:
      break;
  }
  GMM_ASSIGN_OR_RETURN(DiagGmmModel model, LoadModel(path));
  LoadedModel loaded;
  loaded.format = format;
  loaded.untied = std::make_shared<const DiagGmmModel>(std::move(model));
  return loaded;
}

}  // namespace gmmscore
