// Sphinx .mfc cepstra, then batch CMN and the dynamic features.
#include "kernels/io/sphinx_features.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  absl::StatusOr<FloatMatrix> cepstra = DecodeSphinxMfc(fuzz::Bytes(data, size), fuzz::kInputName);
  fuzz::CheckNamesInput(cepstra.status());
  if (!cepstra.ok()) return 0;
  ApplyBatchCmn(&*cepstra);
  for (const char* type : {"1s_c_d_dd", "s2_4x"}) (void)ComputeSphinxFeatures(*cepstra, type);
  return 0;
}
