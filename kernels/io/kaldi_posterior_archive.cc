#include "kernels/io/kaldi_posterior_archive.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/kaldi_binary.h"
#include "kernels/io/internal/kaldi_text.h"

namespace gmmscore {
namespace {

using io_internal::KaldiArchiveInput;

// ReadPosterior's limit on the frame count.
constexpr int32_t kMaxFrames = 10000000;
// Bytes of one binary (id, weight) pair: two basic types of 4 bytes.
constexpr int64_t kPairBytes = 10;

// Walks one text line: "[", pairs, "]", frame after frame.
class LineParser {
 public:
  LineParser(KaldiArchiveInput& in, absl::string_view line) : in_(in), line_(line) {}

  absl::Status Parse(KaldiPosterior* posterior) {
    while (true) {
      SkipSpace();
      if (pos_ == line_.size()) return absl::OkStatus();
      const absl::string_view open = Word(/*stop_at_bracket=*/false);
      if (open != "[") {
        return Error(absl::StrCat("frame ", posterior->size(), ": expected \"[\", got \"",
                                  absl::CEscape(open.substr(0, 40)), "\"",
                                  io_internal::ParseTextInt32(open).has_value()
                                      ? " (alignments given where posteriors were expected?)"
                                      : ""));
      }
      posterior->emplace_back();
      GMM_RETURN_IF_ERROR(ParseFrame(posterior->size() - 1, &posterior->back()));
    }
  }

 private:
  absl::Status ParseFrame(size_t frame, std::vector<std::pair<int32_t, float>>* pairs) {
    while (true) {
      SkipSpace();
      if (pos_ == line_.size()) return Error(absl::StrCat("frame ", frame, ": the line ends before \"]\""));
      if (line_[pos_] == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      const absl::string_view id_word = Word(true);
      SkipSpace();
      const absl::string_view weight_word = Word(true);
      const std::optional<int32_t> id = io_internal::ParseTextInt32(id_word);
      const std::optional<float> weight = io_internal::ParseFloat(weight_word);
      if (!id.has_value() || !weight.has_value()) {
        return Error(absl::StrCat("frame ", frame, ", pair ", pairs->size(),
                                  ": expected an int32 id and a weight, got \"",
                                  absl::CEscape(id_word.substr(0, 40)), "\" and \"",
                                  absl::CEscape(weight_word.substr(0, 40)), "\""));
      }
      pairs->emplace_back(*id, *weight);
    }
  }

  static bool IsSpace(char c) { return io_internal::IsKaldiSpace(static_cast<unsigned char>(c)); }
  void SkipSpace() {
    while (pos_ < line_.size() && IsSpace(line_[pos_])) ++pos_;
  }
  // The next run of non-space bytes, ending before a ']' when asked.
  absl::string_view Word(bool stop_at_bracket) {
    const size_t begin = pos_;
    while (pos_ < line_.size() && !IsSpace(line_[pos_]) && !(stop_at_bracket && line_[pos_] == ']')) ++pos_;
    return line_.substr(begin, pos_ - begin);
  }
  absl::Status Error(absl::string_view what) const { return in_.Error(absl::StatusCode::kInvalidArgument, what); }

  KaldiArchiveInput& in_;
  const absl::string_view line_;
  size_t pos_ = 0;
};

absl::Status ReadBinaryFrame(KaldiArchiveInput& in, int32_t frame, std::vector<std::pair<int32_t, float>>* pairs) {
  GMM_ASSIGN_OR_RETURN(const int32_t count, in.ReadInt32(absl::StrCat("the pair count of frame ", frame)));
  if (count < 0) {
    return in.Error(absl::StatusCode::kInvalidArgument, absl::StrCat("frame ", frame, ": negative pair count ", count));
  }
  if (const std::optional<int64_t> left = in.remaining(); left.has_value() && *left < count * kPairBytes) {
    return in.Error(absl::StatusCode::kDataLoss, absl::StrCat("frame ", frame, ": ", count, " pairs need ",
                                                              count * kPairBytes, " bytes but only ", *left,
                                                              " remain (truncated?)"));
  }
  for (int32_t i = 0; i < count; ++i) {
    const std::string what = absl::StrCat("frame ", frame, ", pair ", i);
    GMM_ASSIGN_OR_RETURN(const int32_t id, in.ReadInt32(absl::StrCat(what, " id")));
    GMM_ASSIGN_OR_RETURN(const float weight, in.ReadFloat(absl::StrCat(what, " weight")));
    pairs->emplace_back(id, weight);
  }
  return absl::OkStatus();
}

absl::Status ReadBinary(KaldiArchiveInput& in, KaldiPosterior* posterior) {
  GMM_ASSIGN_OR_RETURN(const int32_t frames, in.ReadInt32("the frame count"));
  if (frames < 0 || frames > kMaxFrames) {
    return in.Error(absl::StatusCode::kInvalidArgument,
                    absl::StrCat("frame count ", frames, " is negative or implausibly large"));
  }
  for (int32_t t = 0; t < frames; ++t) {
    posterior->emplace_back();
    GMM_RETURN_IF_ERROR(ReadBinaryFrame(in, t, &posterior->back()));
  }
  return absl::OkStatus();
}

// WritePosterior, text: "[ id weight ... ] " per frame, then a newline.
void AppendText(const KaldiPosterior& posterior, std::string* out) {
  for (const auto& frame : posterior) {
    out->append("[ ");
    for (const auto& [id, weight] : frame) {
      absl::StrAppend(out, id, " ");
      io_internal::AppendFloat(weight, out);
      out->push_back(' ');
    }
    out->append("] ");
  }
  out->push_back('\n');
}

}  // namespace

absl::Status KaldiPosteriorHolder::Read(KaldiArchiveInput& in, Value* value) {
  value->clear();
  if (in.binary()) return ReadBinary(in, value);
  const std::string line = in.ReadLine();
  return LineParser(in, line).Parse(value);
}

void KaldiPosteriorHolder::Append(const Value& value, bool text, std::string* out) {
  if (text) return AppendText(value, out);
  io_internal::KaldiBinaryWriter writer(out);
  writer.Basic<int32_t>(static_cast<int32_t>(value.size()));
  for (const auto& frame : value) {
    writer.Basic<int32_t>(static_cast<int32_t>(frame.size()));
    for (const auto& [id, weight] : frame) {
      writer.Basic(id);
      writer.Basic(weight);
    }
  }
}

}  // namespace gmmscore
