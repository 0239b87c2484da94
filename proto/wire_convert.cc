#include "proto/wire_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "proto/half_float.h"

namespace gmmscore {

absl::StatusOr<FloatMatrix> FeaturesFromProto(const v1::FeatureMatrix& features) {
  const int64_t rows = features.num_frames();
  const int64_t cols = features.dim();
  if (rows > 0 && cols == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("feature matrix has %d frames but dim 0", rows));
  }
  if (static_cast<int64_t>(features.values_size()) != rows * cols) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature matrix says %d frames x %d dims = %d values but carries %d values", rows, cols,
        rows * cols, features.values_size()));
  }
  FloatMatrix out(rows, cols);
  if (rows * cols > 0) {
    std::memcpy(out.data(), features.values().data(), sizeof(float) * rows * cols);
  }
  return out;
}

void FeaturesToProto(ConstMatrixView frames, v1::FeatureMatrix* out) {
  out->set_num_frames(static_cast<uint32_t>(frames.rows));
  out->set_dim(static_cast<uint32_t>(frames.cols));
  auto* values = out->mutable_values();
  values->Resize(static_cast<int>(frames.rows * frames.cols), 0.0f);
  for (int64_t t = 0; t < frames.rows; ++t) {
    std::memcpy(values->mutable_data() + t * frames.cols, frames.row(t),
                sizeof(float) * frames.cols);
  }
}

void PcmToProto(absl::Span<const int16_t> samples, int sample_rate, v1::PcmAudio* out) {
  out->set_sample_rate(static_cast<uint32_t>(sample_rate));
  std::string* bytes = out->mutable_pcm16();
  bytes->resize(2 * samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto value = static_cast<uint16_t>(samples[i]);
    (*bytes)[2 * i] = static_cast<char>(value & 0xff);
    (*bytes)[2 * i + 1] = static_cast<char>(value >> 8);
  }
}

namespace {

void CopyTotals(absl::Span<const float> frame_totals, v1::StateScores* out) {
  auto* totals = out->mutable_frame_totals();
  totals->Resize(static_cast<int>(frame_totals.size()), 0.0f);
  if (!frame_totals.empty()) {
    std::memcpy(totals->mutable_data(), frame_totals.data(), sizeof(float) * frame_totals.size());
  }
}

// The offset a frame's halves are sent from: its best score. A frame
// without a finite best (empty, or every state -inf) is sent as it is:
// -inf - -inf would be NaN.
float FrameBest(absl::Span<const float> frame) {
  float top = -std::numeric_limits<float>::infinity();
  for (float v : frame) top = std::max(top, v);
  // + 0: a best of -0 is sent as +0, whichever zero came first (the GPU's
  // encoder does the same, half_encode_launch.h).
  return std::isfinite(top) ? top + 0.0f : 0.0f;
}

// Overwrites the values of *out: `values`, frame t's being
// [frame_starts[t], frame_starts[t + 1]), as float32 or as halves relative
// to each frame's best.
void SetValues(absl::Span<const float> values, absl::Span<const uint32_t> frame_starts,
               ValueEncoding encoding, v1::StateScores* out) {
  if (encoding == ValueEncoding::kFloat32) {
    out->clear_loglikes_f16();
    out->clear_frame_best();
    out->mutable_loglikes()->Assign(values.begin(), values.end());
    return;
  }
  out->clear_loglikes();
  const int64_t frames = static_cast<int64_t>(frame_starts.size()) - 1;
  auto* best = out->mutable_frame_best();
  best->Resize(static_cast<int>(frames), 0.0f);
  std::string* bytes = out->mutable_loglikes_f16();
  bytes->resize(sizeof(uint16_t) * values.size());
  auto* halves = reinterpret_cast<uint16_t*>(bytes->data());
  for (int64_t t = 0; t < frames; ++t) {
    const absl::Span<const float> frame =
        values.subspan(frame_starts[t], frame_starts[t + 1] - frame_starts[t]);
    const float top = FrameBest(frame);
    best->Set(static_cast<int>(t), top);
    FloatsToHalves(frame, top, halves + frame_starts[t]);
  }
}

std::vector<uint32_t> DenseFrameStarts(int64_t frames, int64_t states) {
  std::vector<uint32_t> starts(frames + 1);
  for (int64_t t = 0; t <= frames; ++t) starts[t] = static_cast<uint32_t>(t * states);
  return starts;
}

}  // namespace

void ScoresToProto(absl::string_view model, const FloatMatrix& loglikes,
                   absl::Span<const float> frame_totals, v1::StateScores* out,
                   const StateSelection& keep, ValueEncoding encoding) {
  if (!keep.dense()) {
    SparseScoresToProto(model, SelectStates(loglikes.view(), keep), frame_totals, out, encoding);
    return;
  }
  const int64_t count = loglikes.rows() * loglikes.cols();
  DenseScoresShapeToProto(model, loglikes.rows(), loglikes.cols(), frame_totals, out);
  if (encoding == ValueEncoding::kFloat32) {
    // One copy straight into the repeated field: Assign would go value by
    // value, Resize would zero the 200 KB of a 5000-state chunk first.
    auto* values = out->mutable_loglikes();
    values->Reserve(static_cast<int>(count));
    if (count > 0) {
      std::memcpy(values->AddNAlreadyReserved(static_cast<int>(count)), loglikes.data(),
                  sizeof(float) * count);
    }
    return;
  }
  SetValues(absl::MakeConstSpan(loglikes.data(), count),
            DenseFrameStarts(loglikes.rows(), loglikes.cols()), encoding, out);
}

void HalfScoresShapeToProto(absl::string_view model, const HalfScores& half,
                            absl::Span<const float> frame_totals, v1::StateScores* out) {
  DenseScoresShapeToProto(model, half.num_frames(), half.num_states, frame_totals, out);
  out->mutable_frame_best()->Assign(half.frame_best.begin(), half.frame_best.end());
}

void HalfScoresToProto(absl::string_view model, const HalfScores& half,
                       absl::Span<const float> frame_totals, v1::StateScores* out) {
  HalfScoresShapeToProto(model, half, frame_totals, out);
  out->set_loglikes_f16(reinterpret_cast<const char*>(half.values.data()),
                        sizeof(uint16_t) * half.values.size());
}

HalfScores HalfScoresFromFloats(const FloatMatrix& loglikes) {
  const int64_t frames = loglikes.rows(), states = loglikes.cols();
  HalfScores half{.num_states = states,
                  .values = std::vector<uint16_t>(frames * states),
                  .frame_best = std::vector<float>(frames)};
  for (int64_t t = 0; t < frames; ++t) {
    const absl::Span<const float> frame(loglikes.row(t), states);
    half.frame_best[t] = FrameBest(frame);
    FloatsToHalves(frame, half.frame_best[t], half.values.data() + t * states);
  }
  return half;
}

void DenseScoresShapeToProto(absl::string_view model, int64_t rows, int64_t cols,
                             absl::Span<const float> frame_totals, v1::StateScores* out) {
  out->set_model(std::string(model));
  out->set_num_frames(static_cast<uint32_t>(rows));
  out->set_num_states(static_cast<uint32_t>(cols));
  CopyTotals(frame_totals, out);
  out->clear_frame_offsets();
  out->clear_state_ids();
  out->clear_loglikes();
  out->clear_loglikes_f16();
  out->clear_frame_best();
}

void SparseScoresToProto(absl::string_view model, const SparseScores& kept,
                         absl::Span<const float> frame_totals, v1::StateScores* out,
                         ValueEncoding encoding) {
  out->set_model(std::string(model));
  out->set_num_frames(static_cast<uint32_t>(kept.num_frames()));
  out->set_num_states(static_cast<uint32_t>(kept.num_states));
  CopyTotals(frame_totals, out);
  out->mutable_frame_offsets()->Assign(kept.frame_offsets.begin(), kept.frame_offsets.end());
  out->mutable_state_ids()->Assign(kept.state_ids.begin(), kept.state_ids.end());
  SetValues(kept.values, kept.frame_offsets, encoding, out);
}

absl::StatusOr<FloatMatrix> ScoresFromProto(const v1::StateScores& scores) {
  const int64_t rows = scores.num_frames();
  const int64_t cols = scores.num_states();
  const bool half = !scores.loglikes_f16().empty() || scores.frame_best_size() > 0;
  int64_t count = scores.loglikes_size();
  if (half) {
    if (scores.loglikes_size() != 0 || scores.loglikes_f16().size() % 2 != 0 ||
        scores.frame_best_size() != rows) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "half-precision scores of '%s': %d bytes of halves, %d frame_best values and %d float "
          "values for %d frames (want an even byte count, one best per frame, no float values)",
          scores.model(), scores.loglikes_f16().size(), scores.frame_best_size(),
          scores.loglikes_size(), rows));
    }
    count = static_cast<int64_t>(scores.loglikes_f16().size() / 2);
  }
  // Frame t's sent values [begin, end) into dst: copied, or decoded against
  // the frame's best.
  const auto* halves = reinterpret_cast<const uint16_t*>(scores.loglikes_f16().data());
  auto read_frame = [&](int64_t t, int64_t begin, int64_t end, float* dst) {
    if (half) {
      HalvesToFloats(absl::MakeConstSpan(halves + begin, end - begin),
                     scores.frame_best(static_cast<int>(t)), dst);
    } else if (end > begin) {
      std::memcpy(dst, scores.loglikes().data() + begin, sizeof(float) * (end - begin));
    }
  };
  if (scores.frame_offsets_size() == 0 && scores.state_ids_size() == 0) {
    if (count != rows * cols) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "scores of '%s' say %d frames x %d states but carry %d values", scores.model(), rows, cols,
          count));
    }
    FloatMatrix out(rows, cols);
    for (int64_t t = 0; t < rows; ++t) read_frame(t, t * cols, (t + 1) * cols, out.data() + t * cols);
    return out;
  }
  const int64_t kept = scores.state_ids_size();
  if (scores.frame_offsets_size() != rows + 1 || count != kept ||
      scores.frame_offsets(0) != 0 || scores.frame_offsets(static_cast<int>(rows)) != kept) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sparse scores of '%s': %d frames need %d offsets from 0 to the %d state ids and %d values; "
        "got %d offsets",
        scores.model(), rows, rows + 1, kept, count, scores.frame_offsets_size()));
  }
  FloatMatrix out(rows, cols, -std::numeric_limits<float>::infinity());
  std::vector<float> frame_values;
  for (int64_t t = 0; t < rows; ++t) {
    const uint32_t begin = scores.frame_offsets(static_cast<int>(t));
    const uint32_t end = scores.frame_offsets(static_cast<int>(t + 1));
    if (end < begin || end > kept) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sparse scores of '%s': frame %d's offsets %d..%d go backwards or past the %d state ids",
          scores.model(), t, begin, end, kept));
    }
    frame_values.resize(end - begin);
    read_frame(t, begin, end, frame_values.data());
    for (uint32_t i = begin; i < end; ++i) {
      const uint32_t s = scores.state_ids(static_cast<int>(i));
      if (s >= cols || (i > begin && s <= scores.state_ids(static_cast<int>(i - 1)))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "sparse scores of '%s': frame %d has state id %d out of range or order (%d states)",
            scores.model(), t, s, cols));
      }
      out.at(t, s) = frame_values[i - begin];
    }
  }
  return out;
}

}  // namespace gmmscore
