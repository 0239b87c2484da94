// Kaldi models, text and binary (final.mdl with TransitionModel, AmDiagGmm,
// lone DiagGmm), down to the scoring form.
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  absl::StatusOr<KaldiModel> model = ParseKaldiModel(fuzz::Bytes(data, size), fuzz::kInputName);
  fuzz::CheckNamesInput(model.status());
  fuzz::CheckNamesInput(DecodeKaldiAmDiagGmm(fuzz::Bytes(data, size), fuzz::kInputName).status());
  return 0;
}
