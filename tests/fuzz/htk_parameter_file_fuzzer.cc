// HTK parameter (feature) files: 12-byte big-endian header, then samples.
#include "kernels/io/htk_model.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  fuzz::CheckNamesInput(DecodeHtkParameterFile(fuzz::Bytes(data, size), fuzz::kInputName).status());
  return 0;
}
