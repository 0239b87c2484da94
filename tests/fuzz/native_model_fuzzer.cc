// The native model file (header, checksum, arrays, FromScoringForm checks).
// Most mutations fail the crc32 first; the seed corpus and -use_value_profile
// help, and DecodeNativeModel is also run with the checksum fixed up so the
// checks behind it are reached.
#include <cstring>

#include <zlib.h>

#include "kernels/io/native_model_file.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gmmscore;
  std::string bytes = fuzz::Bytes(data, size);
  fuzz::CheckNamesInput(DecodeNativeModel(bytes, fuzz::kInputName).status());
  if (bytes.size() >= 64) {
    // crc32 of header bytes 0..59 then the payload, stored at offset 60.
    uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), 60);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + 64), static_cast<uInt>(bytes.size() - 64));
    const uint32_t stored = static_cast<uint32_t>(crc);
    std::memcpy(bytes.data() + 60, &stored, 4);
    fuzz::CheckNamesInput(DecodeNativeModel(bytes, fuzz::kInputName).status());
  }
  return 0;
}
