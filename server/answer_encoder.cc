#include "server/answer_encoder.h"

#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpc/slice.h"
#include "grpcpp/support/slice.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

using google::protobuf::io::CodedOutputStream;
using google::protobuf::internal::WireFormatLite;

// Packed float32 values are their little-endian bytes on the wire, so the
// scores are copied as they lie in memory.
static_assert(std::endian::native == std::endian::little, "the wire's floats are little-endian");

constexpr int kLoglikesField = v1::StateScores::kLoglikesFieldNumber;
constexpr int kHalvesField = v1::StateScores::kLoglikesF16FieldNumber;
using Answer = v1::StreamScoreResponse;
using internal::DeferredValues;

// Bytes of a length-delimited field: tag, length, payload.
size_t DelimitedSize(int field, size_t payload) {
  return CodedOutputStream::VarintSize32(WireFormatLite::MakeTag(
             field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) +
         CodedOutputStream::VarintSize64(payload) + payload;
}

uint8_t* WriteDelimitedHead(int field, size_t payload, uint8_t* out) {
  out = WireFormatLite::WriteTagToArray(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED, out);
  return CodedOutputStream::WriteVarint64ToArray(payload, out);
}

// Bytes of the fields of `scores` numbered below loglikes (model,
// num_frames, num_states) as protobuf writes them: absent when empty or 0.
size_t FieldsBeforeLoglikesSize(const v1::StateScores& scores) {
  static_assert(v1::StateScores::kModelFieldNumber == 1 &&
                v1::StateScores::kNumFramesFieldNumber == 2 &&
                v1::StateScores::kNumStatesFieldNumber == 3 && kLoglikesField == 4);
  size_t size = 0;
  if (!scores.model().empty()) size += DelimitedSize(1, scores.model().size());
  if (scores.num_frames() != 0) size += 1 + CodedOutputStream::VarintSize32(scores.num_frames());
  if (scores.num_states() != 0) size += 1 + CodedOutputStream::VarintSize32(scores.num_states());
  return size;
}

// Bytes of the fields of a dense half-precision `scores` numbered below
// loglikes_f16: those before loglikes and the packed frame totals (loglikes,
// frame_offsets and state_ids are empty: EncodePart checks).
size_t FieldsBeforeHalvesSize(const v1::StateScores& scores) {
  static_assert(v1::StateScores::kFrameTotalsFieldNumber == 5 &&
                v1::StateScores::kFrameOffsetsFieldNumber == 6 &&
                v1::StateScores::kStateIdsFieldNumber == 7 && kHalvesField == 8 &&
                v1::StateScores::kFrameBestFieldNumber == 9);
  size_t size = FieldsBeforeLoglikesSize(scores);
  if (scores.frame_totals_size() != 0) {
    size += DelimitedSize(v1::StateScores::kFrameTotalsFieldNumber, sizeof(float) * scores.frame_totals_size());
  }
  return size;
}

// One StateScores of the answer. Without deferred values, the message
// itself (serialised straight into the answer: a sparse one, or one encoded
// here, carries its values). With them, the message serialised without its
// values, and where they go into it: field `field`, before byte values_at.
struct EncodedPart {
  const v1::StateScores* scores = nullptr;  // sizes cached (ByteSizeLong)
  std::string message;                      // with deferred values: all but them
  size_t values_at = 0;
  int field = 0;                            // 0: no deferred values
  absl::Span<const char> values;            // their bytes as the wire has them

  size_t values_bytes() const { return values.size(); }
  size_t size() const {
    if (field == 0) return scores->GetCachedSize();
    return message.size() + DelimitedSize(field, values.size());
  }
  // Writes the part but its values, calling values_go_here(position,
  // values) where they belong (after their field's tag and length).
  template <typename Cut>
  uint8_t* Write(uint8_t* out, Cut values_go_here) const {
    if (field == 0) return scores->SerializeWithCachedSizesToArray(out);
    std::memcpy(out, message.data(), values_at);
    out += values_at;
    out = WriteDelimitedHead(field, values.size(), out);
    values_go_here(out, values);
    std::memcpy(out, message.data() + values_at, message.size() - values_at);
    return out + message.size() - values_at;
  }
};

// A packed repeated uint32 field as protobuf writes it (absent when empty),
// appended to *out.
void AppendPackedVarints(int field, absl::Span<const uint32_t> values, std::string* out) {
  if (values.empty()) return;
  size_t payload = 0;
  for (uint32_t v : values) payload += CodedOutputStream::VarintSize32(v);
  const size_t at = out->size();
  out->resize(at + DelimitedSize(field, payload));
  uint8_t* p = WriteDelimitedHead(field, payload, reinterpret_cast<uint8_t*>(out->data() + at));
  for (uint32_t v : values) p = CodedOutputStream::WriteVarint32ToArray(v, p);
}

// Whether the selected states `kept` fit the shape of `scores` and the
// values given for them (INTERNAL, naming what does not, otherwise).
absl::Status CheckSelection(const v1::StateScores& scores, const SparseScores& kept, size_t count) {
  if (kept.frame_offsets.empty() || kept.num_frames() != scores.num_frames() ||
      kept.num_states != scores.num_states() || kept.state_ids.size() != count ||
      kept.frame_offsets.back() != count) {
    return absl::InternalError(absl::StrFormat(
        "the answer's selected scores of '%s' (%d frames of %d states) were given %d frame offsets "
        "ending at %d, %d state ids and %d values",
        scores.model(), scores.num_frames(), scores.num_states(), kept.frame_offsets.size(),
        kept.frame_offsets.empty() ? 0 : kept.frame_offsets.back(), kept.state_ids.size(), count));
  }
  return absl::OkStatus();
}

absl::StatusOr<EncodedPart> EncodePart(const v1::StateScores& scores, const DeferredValues& deferred) {
  EncodedPart part{.scores = &scores};
  if (deferred.empty()) {
    scores.ByteSizeLong();  // caches the sizes Write serialises with
    return part;
  }
  const bool halves = deferred.loglikes.empty();
  const size_t count = halves ? deferred.halves.size() : deferred.loglikes.size();
  if (!halves && !deferred.halves.empty()) {
    return absl::InternalError(absl::StrFormat(
        "the answer's scores of '%s' were given both float32 and half-precision values", scores.model()));
  }
  if (deferred.sparse != nullptr) {
    if (halves) {  // or no values at all: an empty selection goes into the message
      return absl::InternalError(absl::StrFormat(
          "the answer's selected scores of '%s' were given %s", scores.model(),
          count == 0 ? "no values" : "half-precision values"));
    }
    GMM_RETURN_IF_ERROR(CheckSelection(scores, *deferred.sparse, count));
  } else if (static_cast<int64_t>(count) !=
             static_cast<int64_t>(scores.num_frames()) * scores.num_states()) {
    return absl::InternalError(absl::StrFormat(
        "the answer's scores of '%s' are %d x %d but the encoder was given %d values",
        scores.model(), scores.num_frames(), scores.num_states(), count));
  }
  if (scores.loglikes_size() != 0 || !scores.loglikes_f16().empty() ||
      scores.frame_offsets_size() != 0 || scores.state_ids_size() != 0 ||
      (!halves && scores.frame_best_size() != 0)) {
    return absl::InternalError(absl::StrFormat(
        "the answer's scores of '%s' carry values of their own besides the %d given to the "
        "encoder",
        scores.model(), count));
  }
  if (halves && scores.frame_best_size() != static_cast<int>(scores.num_frames())) {
    return absl::InternalError(absl::StrFormat(
        "the answer's half-precision scores of '%s' have %d frame bests for %d frames", scores.model(),
        scores.frame_best_size(), scores.num_frames()));
  }
  part.message = scores.SerializeAsString();
  if (deferred.sparse != nullptr) {
    // Fields 6 and 7 follow every field the float32 message holds (1 to 3,
    // and the totals, 5); 8 and 9 are half-precision only.
    AppendPackedVarints(v1::StateScores::kFrameOffsetsFieldNumber, deferred.sparse->frame_offsets,
                        &part.message);
    AppendPackedVarints(v1::StateScores::kStateIdsFieldNumber, deferred.sparse->state_ids, &part.message);
  }
  // Protobuf writes fields in number order.
  part.field = halves ? kHalvesField : kLoglikesField;
  part.values_at = halves ? FieldsBeforeHalvesSize(scores) : FieldsBeforeLoglikesSize(scores);
  part.values = halves ? absl::Span<const char>(reinterpret_cast<const char*>(deferred.halves.data()),
                                                sizeof(uint16_t) * count)
                       : absl::Span<const char>(reinterpret_cast<const char*>(deferred.loglikes.data()),
                                                sizeof(float) * count);
  return part;
}

absl::Status FillShell(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                       const FusedScores* fused, const AnswerHeader& header,
                       v1::StreamScoreResponse* shell, std::vector<DeferredValues>* values) {
  shell->set_first_frame(header.first_frame);
  if (header.adaptation != nullptr) *shell->mutable_adaptation() = *header.adaptation;
  if (header.timing != nullptr) *shell->mutable_timing() = *header.timing;
  return internal::FillAnswerParts(plan, results, fused, shell->mutable_scores(),
                                   fused ? shell->mutable_fused() : nullptr,
                                   fused ? shell->mutable_fusion() : nullptr, values);
}

// An answer's bytes but its deferred values (`frame`, one slice), and where
// each part's values go into them: before frame byte `at`.
struct Layout {
  struct Cut {
    size_t at;
    absl::Span<const char> values;
  };
  grpc::Slice frame;
  std::vector<Cut> cuts;
};

absl::StatusOr<Layout> LayOut(const v1::StreamScoreResponse& shell,
                              absl::Span<const DeferredValues> values) {
  const size_t parts_count = shell.scores_size() + (shell.has_fused() ? 1 : 0);
  if (values.size() != parts_count) {
    return absl::InternalError(absl::StrFormat(
        "the answer has %d score matrices but the encoder was given values for %d", parts_count,
        values.size()));
  }
  std::vector<EncodedPart> parts;
  parts.reserve(parts_count);
  for (size_t i = 0; i < parts_count; ++i) {
    const v1::StateScores& scores =
        i < static_cast<size_t>(shell.scores_size()) ? shell.scores(static_cast<int>(i)) : shell.fused();
    GMM_ASSIGN_OR_RETURN(EncodedPart part, EncodePart(scores, values[i]));
    parts.push_back(std::move(part));
  }
  // Fields in number order, as SerializeAsString writes them (the test
  // holds StreamScoreResponse to these six fields).
  std::string fusion, adaptation, timing;
  if (shell.has_fusion()) fusion = shell.fusion().SerializeAsString();
  if (shell.has_adaptation()) adaptation = shell.adaptation().SerializeAsString();
  if (shell.has_timing()) timing = shell.timing().SerializeAsString();
  auto field_of = [&](size_t i) {
    return i < static_cast<size_t>(shell.scores_size()) ? Answer::kScoresFieldNumber
                                                        : Answer::kFusedFieldNumber;
  };
  size_t size = 0;
  if (shell.first_frame() != 0) size += 1 + CodedOutputStream::VarintSize64(shell.first_frame());
  for (size_t i = 0; i < parts.size(); ++i) {
    size += DelimitedSize(field_of(i), parts[i].size()) - parts[i].values_bytes();
  }
  if (shell.has_fusion()) size += DelimitedSize(Answer::kFusionFieldNumber, fusion.size());
  if (shell.has_adaptation()) size += DelimitedSize(Answer::kAdaptationFieldNumber, adaptation.size());
  if (shell.has_timing()) size += DelimitedSize(Answer::kTimingFieldNumber, timing.size());

  Layout layout{.frame = grpc::Slice(grpc_slice_malloc(size), grpc::Slice::STEAL_REF), .cuts = {}};
  uint8_t* const start = const_cast<uint8_t*>(layout.frame.begin());
  uint8_t* out = start;
  if (shell.first_frame() != 0) {
    out = WireFormatLite::WriteUInt64ToArray(Answer::kFirstFrameFieldNumber, shell.first_frame(), out);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    out = WriteDelimitedHead(field_of(i), parts[i].size(), out);
    out = parts[i].Write(out, [&](const uint8_t* at, absl::Span<const char> v) {
      layout.cuts.push_back({static_cast<size_t>(at - start), v});
    });
  }
  auto write_message = [&out](int field, const std::string& bytes) {
    out = WriteDelimitedHead(field, bytes.size(), out);
    std::memcpy(out, bytes.data(), bytes.size());
    out += bytes.size();
  };
  if (shell.has_fusion()) write_message(Answer::kFusionFieldNumber, fusion);
  if (shell.has_adaptation()) write_message(Answer::kAdaptationFieldNumber, adaptation);
  if (shell.has_timing()) write_message(Answer::kTimingFieldNumber, timing);
  if (static_cast<size_t>(out - start) != size) {
    return absl::InternalError(absl::StrFormat(
        "the answer encoder wrote %d bytes where it counted %d", out - start, size));
  }
  return layout;
}

// The scores an answer took over, alive until gRPC releases the last of
// their slices.
struct TakenScores {
  std::vector<ScoreResult> results;
  std::optional<FusedScores> fused;
};

grpc::Slice SliceOver(absl::Span<const char> values, std::shared_ptr<TakenScores> owner) {
  auto* ref = new std::shared_ptr<TakenScores>(std::move(owner));
  return grpc::Slice(
      grpc_slice_new_with_user_data(const_cast<char*>(values.data()), values.size(),
                                    [](void* p) { delete static_cast<std::shared_ptr<TakenScores>*>(p); },
                                    ref),
      grpc::Slice::STEAL_REF);
}

// The answer's slices: the frame cut where values go, with `values_slice`
// making each values span's slice.
template <typename ValuesSlice>
grpc::ByteBuffer Assemble(const Layout& layout, ValuesSlice values_slice) {
  std::vector<grpc::Slice> slices;
  size_t from = 0;
  for (const Layout::Cut& cut : layout.cuts) {
    if (cut.at > from) slices.push_back(layout.frame.sub(from, cut.at));
    slices.push_back(values_slice(cut.values));
    from = cut.at;
  }
  if (layout.frame.size() > from) slices.push_back(layout.frame.sub(from, layout.frame.size()));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace

absl::StatusOr<grpc::ByteBuffer> EncodeWithValues(const v1::StreamScoreResponse& shell,
                                                  absl::Span<const DeferredValues> values) {
  GMM_ASSIGN_OR_RETURN(Layout layout, LayOut(shell, values));
  if (layout.cuts.empty()) return grpc::ByteBuffer(&layout.frame, 1);
  // One slice: the frame's pieces with the values copied in between.
  size_t size = layout.frame.size();
  for (const Layout::Cut& cut : layout.cuts) size += cut.values.size();
  grpc::Slice whole(grpc_slice_malloc(size), grpc::Slice::STEAL_REF);
  uint8_t* out = const_cast<uint8_t*>(whole.begin());
  size_t from = 0;
  for (const Layout::Cut& cut : layout.cuts) {
    std::memcpy(out, layout.frame.begin() + from, cut.at - from);
    out += cut.at - from;
    std::memcpy(out, cut.values.data(), cut.values.size());
    out += cut.values.size();
    from = cut.at;
  }
  std::memcpy(out, layout.frame.begin() + from, layout.frame.size() - from);
  return grpc::ByteBuffer(&whole, 1);
}

absl::StatusOr<grpc::ByteBuffer> EncodeStreamAnswer(const ScoringPlan& plan,
                                                    absl::Span<const ScoreResult> results,
                                                    const FusedScores* fused,
                                                    const AnswerHeader& header) {
  v1::StreamScoreResponse shell;
  std::vector<DeferredValues> values;
  GMM_RETURN_IF_ERROR(FillShell(plan, results, fused, header, &shell, &values));
  return EncodeWithValues(shell, values);
}

absl::StatusOr<grpc::ByteBuffer> EncodeStreamAnswerTaking(const ScoringPlan& plan,
                                                          std::vector<ScoreResult> results,
                                                          std::optional<FusedScores> fused,
                                                          const AnswerHeader& header) {
  auto taken = std::make_shared<TakenScores>(
      TakenScores{.results = std::move(results), .fused = std::move(fused)});
  v1::StreamScoreResponse shell;
  std::vector<DeferredValues> values;
  GMM_RETURN_IF_ERROR(FillShell(plan, taken->results, taken->fused ? &*taken->fused : nullptr,
                                header, &shell, &values));
  GMM_ASSIGN_OR_RETURN(const Layout layout, LayOut(shell, values));
  return Assemble(layout, [&](absl::Span<const char> v) { return SliceOver(v, taken); });
}

}  // namespace gmmscore
