// The native model file: a DiagGmmModel's scoring form as it sits in memory,
// behind a 64-byte header, checksummed. Loading is a header read and three
// bulk reads straight into the model's arrays; no parsing.
//
//   GMM_RETURN_IF_ERROR(WriteNativeModel(model, "am.gmm"));
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel loaded, ReadNativeModel("am.gmm"));
//
// Layout (all little-endian; docs/MODEL_FORMAT.md is the full description):
//   header, 64 bytes:
//     0  magic "\x89GMM\r\n\x1a\n"     8  uint32 version (1)
//     12 uint32 header bytes (64)      16 int32 dim D     20 int32 states S
//     24 int64 Gaussians G             32 uint64 payload bytes
//     40 20 reserved zero bytes        60 uint32 crc32 (zlib) of bytes 0..59
//                                          followed by the whole payload
//   payload: int64 state offsets[S+1], float centre[D], float params[G x (1+2D)]
// The arrays are then validated by DiagGmmModel::FromScoringForm.
//
// Errors (each message names the file and the problem):
//   NOT_FOUND           the file does not exist
//   DATA_LOSS           the file is shorter (or longer) than its header says,
//                       or the checksum does not match
//   INVALID_ARGUMENT    wrong magic, unsupported version, header fields that
//                       disagree with each other, arrays FromScoringForm rejects
//
// Thread safety: all functions are reentrant.
#ifndef GMMSCORE_KERNELS_IO_NATIVE_MODEL_FILE_H_
#define GMMSCORE_KERNELS_IO_NATIVE_MODEL_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// PNG-style: a non-ASCII first byte, then a name, then bytes that text-mode
// transfers and truncation at a line end would damage.
inline constexpr char kNativeModelMagic[8] = {'\x89', 'G', 'M', 'M', '\r', '\n', '\x1a', '\n'};
inline constexpr uint32_t kNativeModelVersion = 1;
inline constexpr int64_t kNativeModelHeaderBytes = 64;

// True when `prefix` starts with kNativeModelMagic.
bool LooksLikeNativeModel(absl::string_view prefix);

// The complete file for `model`: header and payload.
std::string EncodeNativeModel(const DiagGmmModel& model);

// Decodes a complete file held in memory; `source_name` prefixes errors.
absl::StatusOr<DiagGmmModel> DecodeNativeModel(absl::string_view bytes,
                                               absl::string_view source_name);

// Reads and validates the file at `path` (see the error list above).
absl::StatusOr<DiagGmmModel> ReadNativeModel(const std::string& path);

// Writes EncodeNativeModel(model) to `path` atomically (temporary + rename).
absl::Status WriteNativeModel(const DiagGmmModel& model, const std::string& path);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_NATIVE_MODEL_FILE_H_
