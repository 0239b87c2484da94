// Whole-file reads and atomic whole-file writes with errno mapped to Status.
// Internal to kernels/io.
//
//   GMM_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
//   GMM_RETURN_IF_ERROR(WriteFileAtomically(path, bytes));
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_FILE_UTIL_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore::io_internal {

// A Status for a failed system call on `path`: ENOENT -> NOT_FOUND,
// EACCES -> PERMISSION_DENIED, ENOSPC -> RESOURCE_EXHAUSTED, and so on
// (absl::ErrnoToStatusCode). The message names the action and the path.
absl::Status ErrnoStatus(int error_number, absl::string_view action, absl::string_view path);

// The whole contents of `path` (one read for regular files). NOT_FOUND when it
// does not exist; other errno-derived codes for other failures.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `data` to a temporary file beside `path`, then renames it over
// `path`, so readers never see a half-written file. On failure the temporary
// is removed and `path` is untouched.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view data);

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_FILE_UTIL_H_
