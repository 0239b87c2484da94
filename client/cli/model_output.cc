#include "client/cli/model_output.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/native_model_file.h"

namespace gmmscore::cli {

absl::StatusOr<std::string> ResolveModelFormat(const std::string& format, const std::string& path) {
  if (format == "native" || format == "kaldi-text" || format == "kaldi-binary") return format;
  if (format != "auto") {
    return UsageError(absl::StrCat("unknown output format '", format,
                                   "' (expected auto, native, kaldi-text or kaldi-binary)"));
  }
  if (absl::EndsWith(path, ".txt")) return std::string("kaldi-text");
  for (const char* suffix : {".mdl", ".ubm", ".dubm"}) {
    if (absl::EndsWith(path, suffix)) return std::string("kaldi-binary");
  }
  return std::string("native");
}

absl::Status WriteModelAs(const DiagGmmModel& model, const std::string& path, const std::string& format) {
  if (format == "native") return WriteNativeModel(model, path);
  const bool binary = format == "kaldi-binary";
  if (model.num_states() == 1) return WriteKaldiDiagGmm(model, path, binary);
  return binary ? WriteKaldiAmDiagGmmBinary(model, path) : WriteKaldiAmDiagGmmText(model, path);
}

}  // namespace gmmscore::cli
