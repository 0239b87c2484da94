// Kaldi's binary pieces spelled out byte by byte, as io-funcs.cc and
// kaldi-vector.cc / kaldi-matrix.cc write them, for tests that check readers
// and writers against Kaldi independently of kaldi_binary.h.
//
//   std::string bytes = Tok("<NUMPDFS>") + I32(3) + FV({1, 2});
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BYTES_TEST_UTIL_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BYTES_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gmmscore::io_testing {

// The binary header.
inline std::string BinaryHeader() { return std::string("\0B", 2); }
// WriteToken: the token and a space.
inline std::string Tok(const std::string& token) { return token + " "; }
// The little-endian bytes of `value`.
template <typename T>
std::string Raw(T value) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}
// WriteBasicType: a size byte (negative for unsigned types), the bytes.
inline std::string I32(int32_t v) { return "\x04" + Raw(v); }
inline std::string U16(uint16_t v) { return "\xFE" + Raw(v); }
inline std::string F32(float v) { return "\x04" + Raw(v); }
inline std::string F64(double v) { return "\x08" + Raw(v); }
// Vector::Write and Matrix::Write: "FV "/"DV " + size, "FM "/"DM " + rows +
// cols, then the raw values.
template <typename T>
std::string Values(const std::vector<T>& values) {
  std::string out;
  for (const T v : values) out += Raw(v);
  return out;
}
inline std::string FV(const std::vector<float>& v) { return "FV " + I32(static_cast<int32_t>(v.size())) + Values(v); }
inline std::string DV(const std::vector<double>& v) { return "DV " + I32(static_cast<int32_t>(v.size())) + Values(v); }
inline std::string FM(int32_t rows, int32_t cols, const std::vector<float>& v) {
  return "FM " + I32(rows) + I32(cols) + Values(v);
}
inline std::string DM(int32_t rows, int32_t cols, const std::vector<double>& v) {
  return "DM " + I32(rows) + I32(cols) + Values(v);
}

}  // namespace gmmscore::io_testing

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BYTES_TEST_UTIL_H_
