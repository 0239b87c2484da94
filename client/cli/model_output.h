// Writing a model in the format its user asks for: native, Kaldi text or
// Kaldi binary, named by --output_format or, with "auto", by the file name
// ("*.txt": Kaldi text; "*.mdl", "*.ubm", "*.dubm": Kaldi binary; anything
// else: native). A one-state model in Kaldi form is a lone DiagGmm (what
// gmm-global-* read), others an AmDiagGmm. Every format loads into gmmscored.
#ifndef GMMSCORE_CLIENT_CLI_MODEL_OUTPUT_H_
#define GMMSCORE_CLIENT_CLI_MODEL_OUTPUT_H_

#include <string>

#include "absl/status/statusor.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore::cli {

// "native", "kaldi-text" or "kaldi-binary" for `format` and `path`; a usage
// error for an unknown format name.
absl::StatusOr<std::string> ResolveModelFormat(const std::string& format, const std::string& path);

// Writes `model` to `path` in `format` (a resolved name).
absl::Status WriteModelAs(const DiagGmmModel& model, const std::string& path, const std::string& format);

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_MODEL_OUTPUT_H_
