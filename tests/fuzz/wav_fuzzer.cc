// WAV files (RIFF chunks, fmt, data).
#include "kernels/io/wav_reader.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  fuzz::CheckNamesInput(DecodeWav(fuzz::Bytes(data, size), fuzz::kInputName).status());
  return 0;
}
