// Kaldi's AmDiagGmm acoustic model, text (`gmm-copy --binary=false`) and
// binary (Kaldi's default), alone, after the TransitionModel of a final.mdl,
// or a lone DiagGmm (gmm-global-init), read into a DiagGmmModel and written
// back; ReadKaldiModel also keeps the TransitionModel
// (kaldi_transition_model.h) for its transition-id -> pdf-id map.
//
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel model, ReadKaldiAmDiagGmmText("final.mdl.txt"));
//   GMM_RETURN_IF_ERROR(WriteKaldiAmDiagGmmText(model, "out.mdl.txt"));
//
// The text form is
//   <DIMENSION> D <NUMPDFS> S <DiagGMM> \n
//   <GCONSTS>  [ g1 .. gG ]\n  <WEIGHTS>  [ w1 .. wG ]\n
//   <MEANS_INVVARS>  [\n  row 1 \n  ...  row G ]\n  <INV_VARS>  [\n ... ]\n
//   </DiagGMM> \n   (S blocks in all)
// optionally preceded by Kaldi's <TransitionModel> ... </TransitionModel>
// block, which a whole final.mdl starts with. The binary form is "\0B" then
// the same tokens (each followed by one space), int32s as the byte 4 and
// four little-endian bytes, vectors as "FV " + int32 size + floats and
// matrices as "FM " + int32 rows + int32 cols + floats ("DV "/"DM " hold
// doubles). A lone DiagGmm has no <DIMENSION>/<NUMPDFS>: one pdf. As Kaldi
// does, the stored <GCONSTS> are ignored and recomputed: each Gaussian becomes
// weight w, variance 1/inv_var and mean means_invvars/inv_var (in float64)
// and goes through DiagGmmModelBuilder.
//
// Gaussians of weight exactly 0 (which Kaldi allows, giving gconst -inf)
// contribute nothing to any likelihood and are dropped; a pdf left with none
// is an error.
//
// Errors (all name the file, and the pdf and line where it applies):
//   NOT_FOUND           the file does not exist
//   DATA_LOSS           the text or binary data ends early (truncated)
//   INVALID_ARGUMENT    a bad token, a row count or size that disagrees with
//                       <DIMENSION> or <WEIGHTS>, a non-finite value, an
//                       inv_var <= 0, a negative weight, weights not summing
//                       to 1 (DiagGmmModel::kWeightSumTolerance), content
//                       after the last pdf; binary errors give the byte offset
//
// Thread safety: all functions are reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_AM_DIAG_GMM_H_
#define GMMSCORE_KERNELS_IO_KALDI_AM_DIAG_GMM_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/core/matrix.h"
#include "kernels/io/kaldi_transition_model.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// One Kaldi DiagGmm exactly as Kaldi holds it in memory (float32).
struct KaldiDiagGmm {
  std::vector<float> weights;  // G
  FloatMatrix means_invvars;   // G x D: mean / variance
  FloatMatrix inv_vars;        // G x D: 1 / variance
};

// A Kaldi AmDiagGmm: one DiagGmm per pdf (our state).
struct KaldiAmDiagGmm {
  int dim = 0;
  std::vector<KaldiDiagGmm> pdfs;
};

// A whole Kaldi model file: the TransitionModel when there is one (final.mdl)
// and the acoustic model.
struct KaldiModel {
  std::optional<KaldiTransitionModel> transition_model;
  KaldiAmDiagGmm am;
  bool binary = false;
};

// True when `contents` starts like a Kaldi AmDiagGmm or whole model in text
// (first token <DIMENSION>, <TransitionModel> or <DiagGMM>).
bool LooksLikeKaldiText(absl::string_view contents);
// True when `contents` starts with Kaldi's binary header "\0B".
bool LooksLikeKaldiBinary(absl::string_view contents);

// Parses the text form held in `contents`; `source_name` (usually the path)
// prefixes every error. Checks structure and values as listed above, except
// the weight sum, which KaldiToDiagGmmModel checks.
absl::StatusOr<KaldiAmDiagGmm> ParseKaldiAmDiagGmmText(std::string contents,
                                                      absl::string_view source_name);

// Converts to the scoring form (see the file comment). INVALID_ARGUMENT,
// naming `source_name` and the pdf, when a pdf's weights do not sum to 1 or
// it has no Gaussian of non-zero weight.
absl::StatusOr<DiagGmmModel> KaldiToDiagGmmModel(const KaldiAmDiagGmm& kaldi,
                                                 absl::string_view source_name);

// The Kaldi arrays of `model`: weights, means/var and 1/var rounded to float
// from DiagGmmModel::Natural (float64).
KaldiAmDiagGmm DiagGmmModelToKaldi(const DiagGmmModel& model);

// The text Kaldi writes for `kaldi` (AmDiagGmm::Write, binary=false, at the
// precision a Kaldi output stream uses), byte for byte, gconsts computed as
// DiagGmm::ComputeGconsts does. Only the AmDiagGmm part: no TransitionModel.
std::string FormatKaldiAmDiagGmmText(const KaldiAmDiagGmm& kaldi);

// Text or binary (by the "\0B" header), with or without a TransitionModel,
// or a lone DiagGmm. Errors as listed above, naming `source_name`.
absl::StatusOr<KaldiModel> ParseKaldiModel(std::string contents, absl::string_view source_name);
absl::StatusOr<KaldiModel> ReadKaldiModel(const std::string& path);

// The binary AmDiagGmm Kaldi writes (AmDiagGmm::Write, binary=true) behind
// the "\0B" header, byte for byte, gconsts as DiagGmm::ComputeGconsts.
std::string FormatKaldiAmDiagGmmBinary(const KaldiAmDiagGmm& kaldi);
absl::Status WriteKaldiAmDiagGmmBinary(const DiagGmmModel& model, const std::string& path);

// A lone DiagGmm as gmm-global-init-from-feats and gmm-global-est write it
// (DiagGmm::Write: "<DiagGMM> <GCONSTS> [..] <WEIGHTS> [..] <MEANS_INVVARS>
// [..] <INV_VARS> [..] </DiagGMM>"), text or binary ("\0B" header), byte for
// byte; the dimension is the number of columns of `gmm.means_invvars`.
// ParseKaldiModel reads either back as a one-pdf model.
std::string FormatKaldiDiagGmmText(const KaldiDiagGmm& gmm);
std::string FormatKaldiDiagGmmBinary(const KaldiDiagGmm& gmm);
// Writes the one GMM of `model` (DiagGmmModelToKaldi) atomically.
// INVALID_ARGUMENT unless the model has exactly one state.
absl::Status WriteKaldiDiagGmm(const DiagGmmModel& model, const std::string& path, bool binary);

// ParseKaldiModel, then KaldiToDiagGmmModel on its acoustic model.
absl::StatusOr<DiagGmmModel> DecodeKaldiAmDiagGmm(std::string contents,
                                                  absl::string_view source_name);

// Reads the file at `path`, text or binary (DecodeKaldiAmDiagGmm).
absl::StatusOr<DiagGmmModel> ReadKaldiAmDiagGmmText(const std::string& path);

// Writes FormatKaldiAmDiagGmmText(DiagGmmModelToKaldi(model)) to `path`,
// atomically (a temporary file renamed into place).
absl::Status WriteKaldiAmDiagGmmText(const DiagGmmModel& model, const std::string& path);

// A whole final.mdl as gmm-est writes it: the TransitionModel, then the
// AmDiagGmm, text or binary (one "\0B" header), byte for byte.
std::string FormatKaldiModel(const KaldiTransitionModel& tm, const KaldiAmDiagGmm& am, bool binary);
// Writes FormatKaldiModel(tm, DiagGmmModelToKaldi(model)) atomically.
// INVALID_ARGUMENT when the transition model's pdfs are not the model's
// states (tm.num_pdfs() != model.num_states()).
absl::Status WriteKaldiModel(const KaldiTransitionModel& tm, const DiagGmmModel& model, const std::string& path,
                             bool binary);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_AM_DIAG_GMM_H_
