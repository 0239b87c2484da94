// Where `gmmscore align` (offline and --server) writes its CTM: --output
// ctm:FILE, or ctm:- for standard output.
//
//   GMM_ASSIGN_OR_RETURN(const std::string path, CtmPath(absl::GetFlag(FLAGS_output)));
//   GMM_RETURN_IF_ERROR(WriteCtm(path, ctm_text));
#ifndef GMMSCORE_CLIENT_CLI_CTM_OUTPUT_H_
#define GMMSCORE_CLIENT_CLI_CTM_OUTPUT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmmscore::cli {

// "ctm:FILE" -> FILE, "ctm:-" -> "-"; a usage error otherwise.
absl::StatusOr<std::string> CtmPath(const std::string& output);

// `text` to `path` ("-": standard output); UNAVAILABLE naming the path.
absl::Status WriteCtm(const std::string& path, const std::string& text);

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_CTM_OUTPUT_H_
