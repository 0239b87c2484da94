// Sphinx s3 parameter files: means/variances, mixture_weights and sendump.
// The first byte picks the reader: bits 0-1 the kind (0 Gaussians,
// 1 mixture_weights, 2-3 sendump); for sendump bits 2-3 are streams - 1 and
// bits 4-6 log2(densities) - 1, and a second byte is senones - 1 (the shape
// mdef and means would give). The rest is the file.
#include "kernels/io/sphinx_model.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  if (size < 2) return 0;
  const uint8_t selector = data[0];
  switch (selector & 3) {
    case 0:
      fuzz::CheckNamesInput(DecodeSphinxGaussianFile(fuzz::Bytes(data + 1, size - 1), fuzz::kInputName).status());
      break;
    case 1:
      fuzz::CheckNamesInput(DecodeSphinxMixtureWeights(fuzz::Bytes(data + 1, size - 1), fuzz::kInputName).status());
      break;
    default: {
      const int streams = 1 + ((selector >> 2) & 3);
      const int densities = 1 << (1 + ((selector >> 4) & 7));
      const int senones = 1 + data[1];
      fuzz::CheckNamesInput(
          DecodeSphinxSendump(fuzz::Bytes(data + 2, size - 2), fuzz::kInputName, streams, densities, senones).status());
    }
  }
  return 0;
}
