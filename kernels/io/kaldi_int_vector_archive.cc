#include "kernels/io/kaldi_int_vector_archive.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/kaldi_binary.h"

namespace gmmscore {
namespace {

using io_internal::KaldiArchiveInput;

absl::Status ReadText(KaldiArchiveInput& in, std::vector<int32_t>* values) {
  const std::string line = in.ReadLine();
  for (const absl::string_view token : absl::StrSplit(line, absl::ByAnyChar(" \t\r\v\f"), absl::SkipEmpty())) {
    const std::optional<int32_t> value = io_internal::ParseTextInt32(token);
    if (!value.has_value()) {
      return in.Error(absl::StatusCode::kInvalidArgument,
                      absl::StrCat("value ", values->size(), ": expected an int32, got \"",
                                   absl::CEscape(token.substr(0, 40)), "\""));
    }
    values->push_back(*value);
  }
  return absl::OkStatus();
}

absl::Status ReadBinary(KaldiArchiveInput& in, std::vector<int32_t>* values) {
  GMM_ASSIGN_OR_RETURN(const int32_t size, in.ReadInt32("the vector size"));
  if (size < 0) return in.Error(absl::StatusCode::kInvalidArgument, absl::StrCat("negative vector size ", size));
  if (const std::optional<int64_t> left = in.remaining(); left.has_value() && *left < int64_t{size} * 5) {
    return in.Error(absl::StatusCode::kDataLoss, absl::StrCat(size, " values need ", int64_t{size} * 5,
                                                              " bytes but only ", *left, " remain (truncated?)"));
  }
  for (int32_t i = 0; i < size; ++i) {
    GMM_ASSIGN_OR_RETURN(const int32_t value, in.ReadInt32(absl::StrCat("value ", i, " of ", size)));
    values->push_back(value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status KaldiInt32VectorHolder::Read(KaldiArchiveInput& in, Value* value) {
  value->clear();
  return in.binary() ? ReadBinary(in, value) : ReadText(in, value);
}

void KaldiInt32VectorHolder::Append(const Value& value, bool text, std::string* out) {
  if (text) {
    for (const int32_t v : value) absl::StrAppend(out, v, " ");
    out->push_back('\n');
    return;
  }
  io_internal::KaldiBinaryWriter writer(out);
  writer.Basic<int32_t>(static_cast<int32_t>(value.size()));
  for (const int32_t v : value) writer.Basic(v);
}

}  // namespace gmmscore
