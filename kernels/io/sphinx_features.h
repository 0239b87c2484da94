// CMU Sphinx feature files (.mfc cepstra) and the feature computation a
// Sphinx model expects on top of them (feat.params: -feat, -cmn).
//
//   GMM_ASSIGN_OR_RETURN(FloatMatrix cep, ReadSphinxMfc("goforward.mfc"));   // T x 13
//   ApplyBatchCmn(&cep);                                                      // -cmn batch/current
//   GMM_ASSIGN_OR_RETURN(FloatMatrix feats, ComputeSphinxFeatures(cep, "1s_c_d_dd"));  // T x 39
//
// .mfc layout: int32 count of the floats that follow, then count float32
// values, frames of `ceplen` (13) each. No byte-order mark: as sphinxbase's
// feat_s2mfc_read does, the byte order is the one in which count matches the
// file size (count * 4 + 4 bytes).
//
// Feature types (sphinxbase feat.c; c = cepstra, window padded at both ends
// by repeating the first and last frame):
//   1s_c        [c]                                                 13
//   1s_c_d      [c, d]          d(t) = c(t+2) - c(t-2)              26
//   1s_c_d_dd   [c, d, dd]      dd(t) = (c(t+3) - c(t-1)) - (c(t+1) - c(t-3))   39
//   s2_4x       [c1..12 | d1..12 (t+-2), d1..12 (t+-4) | c0, d0, dd0 | dd1..12]
//               = 12 + 24 + 3 + 12 = 51, the four streams of semi-continuous
//               Sphinx-2 models
// Batch CMN subtracts each dimension's mean over the utterance (sphinxbase
// cmn.c, CMN_BATCH), on the cepstra, before the dynamic features.
//
// Errors: NOT_FOUND missing file; DATA_LOSS when the size fits neither byte
// order's count (truncated); INVALID_ARGUMENT for a count that is not a whole
// number of frames or non-finite values (naming frame and dimension);
// UNIMPLEMENTED for other feature types. Reentrant.
#ifndef GMMSCORE_KERNELS_IO_SPHINX_FEATURES_H_
#define GMMSCORE_KERNELS_IO_SPHINX_FEATURES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

absl::StatusOr<FloatMatrix> ReadSphinxMfc(const std::string& path, int ceplen = 13);
absl::StatusOr<FloatMatrix> DecodeSphinxMfc(absl::string_view bytes, const std::string& name, int ceplen = 13);
// Little-endian, as sphinx_fe writes on x86.
std::string EncodeSphinxMfc(ConstMatrixView cepstra);
absl::Status WriteSphinxMfc(ConstMatrixView cepstra, const std::string& path);

// Subtracts the per-dimension mean over all frames (no-op for 0 frames).
void ApplyBatchCmn(FloatMatrix* cepstra);

// Output width of a feature type for 13-dim cepstra, or 0 when unknown.
int SphinxFeatureDim(absl::string_view type, int ceplen = 13);

// Frames on each side of frame t that its features read (0 for 1s_c, 2 for
// 1s_c_d, 3 for 1s_c_d_dd, 4 for s2_4x): a live front end can give frame t
// once frame t + this has arrived. -1 when unknown.
int SphinxFeatureContext(absl::string_view type);

// Dynamic features of `cepstra` (T x 13) for `type` (see the file comment).
// T = 0 gives 0 x width. UNIMPLEMENTED for another type, INVALID_ARGUMENT
// when the cepstra are not 13 wide.
absl::StatusOr<FloatMatrix> ComputeSphinxFeatures(const FloatMatrix& cepstra, absl::string_view type);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_SPHINX_FEATURES_H_
