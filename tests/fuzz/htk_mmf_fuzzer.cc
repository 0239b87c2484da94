// HTK MMF text models (macros, streams, mixtures).
#include "kernels/io/htk_model.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  fuzz::CheckNamesInput(ParseHtkMmf(fuzz::Bytes(data, size), fuzz::kInputName).status());
  return 0;
}
