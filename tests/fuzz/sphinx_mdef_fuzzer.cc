// Sphinx model definitions, text and binary (BMDF).
#include "kernels/io/sphinx_model.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  fuzz::CheckNamesInput(DecodeSphinxMdef(fuzz::Bytes(data, size), fuzz::kInputName).status());
  return 0;
}
