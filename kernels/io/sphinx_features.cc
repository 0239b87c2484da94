#include "kernels/io/sphinx_features.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/byte_reader.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {

absl::StatusOr<FloatMatrix> DecodeSphinxMfc(absl::string_view bytes, const std::string& name, int ceplen) {
  io_internal::ByteReader in(bytes, name, false);
  GMM_ASSIGN_OR_RETURN(int32_t count, in.ReadInt32("the value count"));
  const int64_t floats_present = in.remaining() / 4;
  if (count != floats_present || in.remaining() % 4 != 0) {
    const int32_t swapped = io_internal::ByteReader::Swap(count);
    if (swapped == floats_present && in.remaining() % 4 == 0) {
      in.set_big_endian(std::endian::native == std::endian::little);
      count = swapped;
    } else {
      // The byte order whose count is nearer the data decides the message.
      const int64_t nearer = std::min<int64_t>(count < 0 ? INT64_MAX : count, swapped < 0 ? INT64_MAX : swapped);
      if (nearer != INT64_MAX && nearer > floats_present) {
        return in.Truncated(absl::StrCat("the ", nearer, " values the header announces (", floats_present,
                                         " present)"));
      }
      return in.ErrorAt(0, absl::StrCat("value count ", count, " (", swapped, " byte-swapped) does not match the ",
                                        in.remaining(), " bytes of data: not a Sphinx .mfc file"));
    }
  }
  if (count % ceplen != 0) {
    return in.ErrorAt(0, absl::StrCat(count, " values are not a whole number of ", ceplen, "-dim frames"));
  }
  std::vector<float> values;
  GMM_RETURN_IF_ERROR(in.ReadArray(count, "the cepstra", &values));
  FloatMatrix out(count / ceplen, ceplen);
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) {
      return in.ErrorAt(4 + 4 * i, absl::StrCat("frame ", i / ceplen, ", dimension ", i % ceplen, " is not finite"));
    }
  }
  if (count > 0) std::memcpy(out.data(), values.data(), count * sizeof(float));
  return out;
}

absl::StatusOr<FloatMatrix> ReadSphinxMfc(const std::string& path, int ceplen) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, io_internal::ReadFileToString(path));
  return DecodeSphinxMfc(bytes, absl::StrCat("Sphinx feature file '", path, "'"), ceplen);
}

std::string EncodeSphinxMfc(ConstMatrixView cepstra) {
  std::string out;
  const int32_t count = static_cast<int32_t>(cepstra.rows * cepstra.cols);
  out.append(reinterpret_cast<const char*>(&count), 4);
  for (int64_t t = 0; t < cepstra.rows; ++t) {
    out.append(reinterpret_cast<const char*>(cepstra.row(t)), cepstra.cols * sizeof(float));
  }
  return out;
}

absl::Status WriteSphinxMfc(ConstMatrixView cepstra, const std::string& path) {
  return io_internal::WriteFileAtomically(path, EncodeSphinxMfc(cepstra));
}

void ApplyBatchCmn(FloatMatrix* cepstra) {
  if (cepstra->rows() == 0) return;
  std::vector<double> mean(cepstra->cols(), 0.0);
  for (int64_t t = 0; t < cepstra->rows(); ++t) {
    for (int64_t d = 0; d < cepstra->cols(); ++d) mean[d] += cepstra->at(t, d);
  }
  for (double& m : mean) m /= static_cast<double>(cepstra->rows());
  for (int64_t t = 0; t < cepstra->rows(); ++t) {
    for (int64_t d = 0; d < cepstra->cols(); ++d) cepstra->at(t, d) -= static_cast<float>(mean[d]);
  }
}

int SphinxFeatureDim(absl::string_view type, int ceplen) {
  if (type == "1s_c") return ceplen;
  if (type == "1s_c_d") return 2 * ceplen;
  if (type == "1s_c_d_dd") return 3 * ceplen;
  if (type == "s2_4x" && ceplen == 13) return 51;
  return 0;
}

int SphinxFeatureContext(absl::string_view type) {
  if (type == "1s_c") return 0;
  if (type == "1s_c_d") return 2;
  if (type == "1s_c_d_dd") return 3;
  if (type == "s2_4x") return 4;
  return -1;
}

absl::StatusOr<FloatMatrix> ComputeSphinxFeatures(const FloatMatrix& cepstra, absl::string_view type) {
  constexpr int kCep = 13;
  const int width = SphinxFeatureDim(type, kCep);
  if (width == 0) {
    return absl::UnimplementedError(absl::StrCat("Sphinx feature type \"", type,
                                                 "\" is not supported (1s_c, 1s_c_d, 1s_c_d_dd, s2_4x are)"));
  }
  if (cepstra.rows() > 0 && cepstra.cols() != kCep) {
    return absl::InvalidArgumentError(absl::StrCat("Sphinx features need 13-dim cepstra, got ", cepstra.cols()));
  }
  const int64_t frames = cepstra.rows();
  FloatMatrix out(frames, width);
  // c(t) with the ends repeated, as sphinxbase pads the utterance.
  auto c = [&](int64_t t) { return cepstra.row(std::clamp<int64_t>(t, 0, frames - 1)); };
  for (int64_t t = 0; t < frames; ++t) {
    float* f = out.row(t);
    if (type == "s2_4x") {
      for (int i = 0; i < 12; ++i) {
        f[i] = c(t)[i + 1];
        f[12 + i] = c(t + 2)[i + 1] - c(t - 2)[i + 1];
        f[24 + i] = c(t + 4)[i + 1] - c(t - 4)[i + 1];
        f[39 + i] = (c(t + 3)[i + 1] - c(t - 1)[i + 1]) - (c(t + 1)[i + 1] - c(t - 3)[i + 1]);
      }
      f[36] = c(t)[0];
      f[37] = c(t + 2)[0] - c(t - 2)[0];
      f[38] = (c(t + 3)[0] - c(t - 1)[0]) - (c(t + 1)[0] - c(t - 3)[0]);
      continue;
    }
    for (int i = 0; i < kCep; ++i) {
      f[i] = c(t)[i];
      if (width >= 2 * kCep) f[kCep + i] = c(t + 2)[i] - c(t - 2)[i];
      if (width >= 3 * kCep) f[2 * kCep + i] = (c(t + 3)[i] - c(t - 1)[i]) - (c(t + 1)[i] - c(t - 3)[i]);
    }
  }
  return out;
}

}  // namespace gmmscore
