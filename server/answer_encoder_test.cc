#include "server/answer_encoder.h"

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "kernels/score/state_selection.h"
#include "proto/wire_convert.h"

namespace gmmscore {
namespace {

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

// A plan over models that are only names: the answer's assembly reads
// nothing else of them.
ScoringPlan PlanOf(const std::vector<std::string>& names) {
  ScoringPlan plan;
  for (const std::string& name : names) {
    auto model = std::make_shared<ServedModel>();
    model->name = name;
    plan.models.push_back(std::move(model));
  }
  return plan;
}

class AnswerEncoderTest : public ::testing::Test {
 protected:
  // T x S scores with a few awkward values: -inf (a state no frame can
  // reach), a huge one, and NaN's bits (sent as they are, never made here).
  FloatMatrix Scores(int64_t frames, int64_t states) {
    std::normal_distribution<float> value(-60.0f, 25.0f);
    FloatMatrix m(frames, states);
    for (int64_t i = 0; i < frames * states; ++i) m.data()[i] = value(rng_);
    if (frames * states > 2) {
      m.data()[0] = -std::numeric_limits<float>::infinity();
      m.data()[1] = 3.0e38f;
      m.data()[2] = std::numeric_limits<float>::quiet_NaN();
    }
    return m;
  }
  std::vector<float> Values(int64_t n) {
    const FloatMatrix m = Scores(1, n);
    return std::vector<float>(m.data(), m.data() + n);
  }
  std::vector<ScoreResult> Results(int models, int64_t frames, int64_t states, bool totals) {
    std::vector<ScoreResult> results(models);
    for (ScoreResult& r : results) {
      r.loglikes = Scores(frames, states);
      if (totals) r.frame_totals = Values(frames);
    }
    return results;
  }
  FusedScores Fused(int models, int64_t frames, int64_t states, bool totals) {
    FusedScores fused;
    fused.loglikes = Scores(frames, states);
    fused.dominant_model = models - 1;
    for (int m = 0; m < models; ++m) fused.model_share.push_back(1.0f / models);
    fused.model_weights = Values(frames * models);
    if (totals) fused.frame_totals = Values(frames);
    return fused;
  }

  // What the session sent before the encoder: the message, serialised.
  static std::string Expected(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                              const FusedScores* fused, const AnswerHeader& header) {
    v1::StreamScoreResponse response;
    response.set_first_frame(header.first_frame);
    if (header.adaptation != nullptr) *response.mutable_adaptation() = *header.adaptation;
    if (header.timing != nullptr) *response.mutable_timing() = *header.timing;
    const absl::Status filled = fused != nullptr ? FillFusedAnswer(plan, results, *fused, &response)
                                                 : FillAnswer(plan, results, nullptr, &response);
    EXPECT_TRUE(filled.ok()) << filled;
    return response.SerializeAsString();
  }

  void ExpectSameBytes(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                       const FusedScores* fused, const AnswerHeader& header,
                       const std::string& what) {
    absl::StatusOr<grpc::ByteBuffer> encoded = EncodeStreamAnswer(plan, results, fused, header);
    ASSERT_TRUE(encoded.ok()) << what << ": " << encoded.status();
    const std::string bytes = BytesOf(*encoded);
    const std::string expected = Expected(plan, results, fused, header);
    EXPECT_EQ(bytes, expected) << what;
    v1::StreamScoreResponse parsed;
    EXPECT_TRUE(parsed.ParseFromString(bytes)) << what;

    // Taking the scores over: the same bytes, in slices that point into
    // them, alive after the caller's copies are gone (the sanitizer pass
    // would see a read of freed memory or a leak).
    std::vector<ScoreResult> taken(results.begin(), results.end());
    std::optional<FusedScores> taken_fused;
    if (fused != nullptr) taken_fused = *fused;
    absl::StatusOr<grpc::ByteBuffer> owning =
        EncodeStreamAnswerTaking(plan, std::move(taken), std::move(taken_fused), header);
    ASSERT_TRUE(owning.ok()) << what << ": " << owning.status();
    grpc::ByteBuffer copy(*owning);  // as gRPC holds it: another reference
    owning->Clear();
    EXPECT_EQ(BytesOf(copy), expected) << what << " (taken)";
  }

  // Float32 values of a backend's selection go out without a copy when the
  // encoder takes the results over: one of the answer's slices is them.
  static void ExpectSelectedValuesTaken(const ScoringPlan& plan, const std::vector<ScoreResult>& results,
                                        const std::string& what) {
    if (plan.encoding != ValueEncoding::kFloat32 || results[0].sparse->values.empty()) return;
    std::vector<ScoreResult> taken = results;
    const float* values = taken[0].sparse->values.data();  // moving the vector keeps its buffer
    absl::StatusOr<grpc::ByteBuffer> owning = EncodeStreamAnswerTaking(plan, std::move(taken), std::nullopt, {});
    ASSERT_TRUE(owning.ok()) << what << ": " << owning.status();
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(owning->Dump(&slices).ok());
    bool found = false;
    for (const grpc::Slice& slice : slices) found |= static_cast<const void*>(slice.begin()) == values;
    EXPECT_TRUE(found) << what << ": the selected values were copied, not written from the results";
  }

  // Server times as a stream stamps them: a wall clock now or at the
  // epoch, held for nothing up to longer than a varint's four bytes hold;
  // now and then negative (a wall clock stepped back: ten-byte varints).
  v1::ServerTiming Timing() {
    v1::ServerTiming timing;
    std::uniform_int_distribution<int64_t> unix_us(0, int64_t{1} << 52);
    std::uniform_int_distribution<int> held_bits(0, 40);
    const int64_t sign = rng_() % 8 == 0 ? -1 : 1;
    if (rng_() % 4 != 0) timing.set_chunk_read_unix_us(sign * unix_us(rng_));
    if (rng_() % 4 != 0) {
      timing.set_held_us(sign * ((int64_t{1} << held_bits(rng_)) | static_cast<int64_t>(rng_() & 1)));
    }
    return timing;
  }

  std::mt19937 rng_{std::random_device{}()};
};

// Names whose length needs one and two varint bytes.
const std::string kLongName(200, 'n');

TEST_F(AnswerEncoderTest, DenseAnswersAreTheMessagesBytes) {
  v1::AdaptationReport report;
  report.set_version(3);
  report.set_frames(1234);
  for (int models : {1, 2, 3}) {
    std::vector<std::string> names = {"a", kLongName, ""};
    names.resize(models);
    for (int64_t frames : {0, 1, 3, 10, 200}) {
      for (int64_t states : {1, 5, 200, 5000}) {
        if (frames * states > 200 * 200) continue;
        for (bool totals : {false, true}) {
          ScoringPlan plan = PlanOf(names);
          plan.frame_totals = totals;
          const std::vector<ScoreResult> results = Results(models, frames, states, totals);
          for (uint64_t first : {uint64_t{0}, uint64_t{10}, (uint64_t{1} << 40) + 7}) {
            const std::string what = absl::StrCat(models, " models, ", frames, " x ", states,
                                                  " totals ", totals, " first ", first);
            ExpectSameBytes(plan, results, nullptr, {.first_frame = first}, what);
            ExpectSameBytes(plan, results, nullptr, {.first_frame = first, .adaptation = &report},
                            what + " adapting");
            const v1::ServerTiming timing = Timing();
            ExpectSameBytes(plan, results, nullptr, {.first_frame = first, .timing = &timing},
                            absl::StrCat(what, " timed ", timing.ShortDebugString()));
            ExpectSameBytes(plan, results, nullptr,
                            {.first_frame = first, .adaptation = &report, .timing = &timing},
                            absl::StrCat(what, " adapting, timed ", timing.ShortDebugString()));
          }
        }
      }
    }
  }
}

TEST_F(AnswerEncoderTest, FusedAnswersAreTheMessagesBytes) {
  for (int models : {2, 3}) {
    for (bool fused_only : {false, true}) {
      for (bool totals : {false, true}) {
        for (bool backend_totals : {false, true}) {
          ScoringPlan plan = PlanOf({"x", kLongName, "z"});
          plan.models.resize(models);
          plan.fused_only = fused_only;
          plan.frame_totals = totals;
          const std::vector<ScoreResult> results = Results(models, 7, 300, totals);
          // Totals left to the answer (computed there) or given by the backend.
          const FusedScores fused = Fused(models, 7, 300, totals && backend_totals);
          const std::string what = absl::StrCat(models, " models, fused_only ", fused_only,
                                                " totals ", totals, " from the backend ", backend_totals);
          ExpectSameBytes(plan, results, &fused, {.first_frame = 70}, what);
          const v1::ServerTiming timing = Timing();
          ExpectSameBytes(plan, results, &fused, {.first_frame = 70, .timing = &timing},
                          absl::StrCat(what, " timed ", timing.ShortDebugString()));
        }
      }
    }
  }
  // A fused chunk of no frames still carries its (empty) fused matrix.
  ScoringPlan plan = PlanOf({"x", "y"});
  const std::vector<ScoreResult> none = Results(2, 0, 300, false);
  const FusedScores empty = Fused(2, 0, 300, false);
  ExpectSameBytes(plan, none, &empty, {}, "no frames");
}

TEST_F(AnswerEncoderTest, SparseAndHalfPrecisionAnswersAreTheMessagesBytes) {
  const std::vector<ScoreResult> results = Results(2, 10, 500, true);
  for (ValueEncoding encoding : {ValueEncoding::kFloat32, ValueEncoding::kHalfFromBest}) {
    ScoringPlan plan = PlanOf({"a", "b"});
    plan.frame_totals = true;
    plan.encoding = encoding;
    ExpectSameBytes(plan, results, nullptr, {.first_frame = 5}, "dense");
    plan.sparse.top_k = 17;
    ExpectSameBytes(plan, results, nullptr, {.first_frame = 5}, "top_k");
    plan.sparse = StateSelection{};
    plan.sparse.beam = 20.0f;
    ExpectSameBytes(plan, results, nullptr, {.first_frame = 5}, "beam");
  }
  // States selected by the backend beside a dense matrix from another.
  ScoringPlan plan = PlanOf({"a", "b"});
  plan.num_states = 500;
  std::vector<ScoreResult> mixed = Results(2, 10, 500, false);
  StateSelection keep;
  keep.top_k = 9;
  mixed[1].sparse = SelectStates(mixed[1].loglikes.view(), keep);
  mixed[1].loglikes = FloatMatrix();
  ExpectSameBytes(plan, mixed, nullptr, {.first_frame = 1}, "backend-selected");
}

// States a backend selected (top_k on a GPU) go out as the bytes protobuf
// gives for the message SparseScoresToProto fills: state ids of one, two and
// three varint bytes, frame offsets past 127, no frames, totals or not, a
// dense matrix beside them, and half precision (encoded into the message).
TEST_F(AnswerEncoderTest, BackendSelectedStatesAreTheMessagesBytes) {
  for (ValueEncoding encoding : {ValueEncoding::kFloat32, ValueEncoding::kHalfFromBest}) {
    for (bool totals : {false, true}) {
      for (int64_t frames : {int64_t{0}, int64_t{1}, int64_t{10}, int64_t{33}}) {
        for (int64_t states : {int64_t{3}, int64_t{500}, int64_t{20000}}) {
          for (int top_k : {1, 2, 100}) {
            if (top_k >= states) continue;
            ScoringPlan plan = PlanOf({kLongName, "b"});
            plan.frame_totals = totals;
            plan.encoding = encoding;
            plan.sparse.top_k = top_k;
            plan.num_states = static_cast<int>(states);
            std::vector<ScoreResult> results = Results(2, frames, states, totals);
            // The first model's states selected as the backend does; the
            // second's matrix cut here.
            results[0].sparse = SelectStates(results[0].loglikes.view(), plan.sparse);
            results[0].loglikes = FloatMatrix();
            const std::string what =
                absl::StrCat(encoding == ValueEncoding::kFloat32 ? "float32" : "float16", " totals ", totals,
                             " ", frames, " x ", states, " top_k ", top_k);
            ExpectSameBytes(plan, results, nullptr, {.first_frame = 90}, what);
            const v1::ServerTiming timing = Timing();
            ExpectSameBytes(plan, results, nullptr, {.first_frame = 90, .timing = &timing},
                            absl::StrCat(what, " timed ", timing.ShortDebugString()));
            ExpectSelectedValuesTaken(plan, results, what);
          }
        }
      }
    }
  }
  // A selection among another number of states than the stream's model has.
  ScoringPlan plan = PlanOf({"a"});
  plan.num_states = 501;
  std::vector<ScoreResult> results = Results(1, 4, 500, false);
  results[0].sparse = SelectStates(results[0].loglikes.view(), {.top_k = 3});
  absl::StatusOr<grpc::ByteBuffer> misfit = EncodeStreamAnswer(plan, results, nullptr, {});
  EXPECT_EQ(misfit.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(misfit.status().message().find("among 500"), std::string::npos) << misfit.status();
}

// State ids at the edges of every varint length (one to five bytes), in
// any order and frame: still the message's bytes.
TEST_F(AnswerEncoderTest, StateIdsAtVarintEdgesAreTheMessagesBytes) {
  const std::vector<uint32_t> edges = {0,          1,          127,        128,
                                       16383,      16384,      (1u << 21) - 1, 1u << 21,
                                       (1u << 28) - 1, 1u << 28, 0xFFFFFFFFu};
  std::uniform_int_distribution<size_t> pick(0, edges.size() - 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t frames = 1 + trial % 3;
    std::vector<ScoreResult> results(1);
    SparseScores& kept = results[0].sparse.emplace();
    kept.num_states = std::numeric_limits<int32_t>::max();  // the message's most
    for (int64_t t = 0; t < frames; ++t) {
      const int count = 1 + static_cast<int>(pick(rng_));
      for (int i = 0; i < count; ++i) {
        kept.state_ids.push_back(edges[pick(rng_)]);
        kept.values.push_back(-static_cast<float>(i));
      }
      kept.frame_offsets.push_back(static_cast<uint32_t>(kept.state_ids.size()));
    }
    ScoringPlan plan = PlanOf({"a"});
    plan.num_states = static_cast<int>(kept.num_states);
    plan.sparse.top_k = 12;
    ExpectSameBytes(plan, results, nullptr, {.first_frame = 7},
                    absl::StrCat("trial ", trial, ": ", absl::StrJoin(kept.state_ids, ",")));
  }
}

// Halves a backend encoded (on a GPU) go out as the bytes the host's
// encoding of the same float32 scores gives, with and without frame totals,
// names of one- and two-byte lengths, several models, no frames.
TEST_F(AnswerEncoderTest, BackendHalvesAreTheMessagesBytes) {
  for (bool totals : {false, true}) {
    for (const std::string& name : {std::string("a"), kLongName}) {
      for (int64_t frames : {int64_t{10}, int64_t{1}, int64_t{0}}) {
        ScoringPlan plan = PlanOf({name, "b"});
        plan.frame_totals = totals;
        plan.encoding = ValueEncoding::kHalfFromBest;
        plan.num_states = 500;
        const std::vector<ScoreResult> floats = Results(2, frames, 500, totals);
        std::vector<ScoreResult> halves = floats;
        for (ScoreResult& r : halves) {
          r.half = HalfScoresFromFloats(r.loglikes);
          r.loglikes = FloatMatrix();
        }
        const AnswerHeader header{.first_frame = 40};
        const std::string what = absl::StrCat("totals ", totals, " name ", name.size(), " frames ", frames);
        absl::StatusOr<grpc::ByteBuffer> encoded = EncodeStreamAnswer(plan, halves, nullptr, header);
        ASSERT_TRUE(encoded.ok()) << what << ": " << encoded.status();
        const std::string expected = Expected(plan, floats, nullptr, header);
        EXPECT_EQ(BytesOf(*encoded), expected) << what;
        // And taken over, as ExpectSameBytes does for float32 answers.
        absl::StatusOr<grpc::ByteBuffer> owning = EncodeStreamAnswerTaking(plan, halves, std::nullopt, header);
        ASSERT_TRUE(owning.ok()) << what << ": " << owning.status();
        grpc::ByteBuffer copy(*owning);
        owning->Clear();
        EXPECT_EQ(BytesOf(copy), expected) << what << " (taken)";
      }
    }
  }
}

TEST_F(AnswerEncoderTest, RefusesValuesItCannotPlace) {
  v1::StreamScoreResponse shell;
  v1::StateScores* scores = shell.add_scores();
  scores->set_model("a");
  scores->set_num_frames(1);
  scores->set_num_states(2);
  const std::vector<float> values = {1.0f, 2.0f};
  const absl::Span<const float> span(values);
  const std::vector<uint16_t> halves = {1, 2};
  using internal::DeferredValues;
  // One matrix, two value spans.
  std::vector<DeferredValues> two = {{.loglikes = span}, {.loglikes = span}};
  EXPECT_EQ(EncodeWithValues(shell, two).status().code(), absl::StatusCode::kInternal);
  // Values that do not fill the matrix's shape.
  std::vector<DeferredValues> short_span = {{.loglikes = span.subspan(1)}};
  absl::StatusOr<grpc::ByteBuffer> misfit = EncodeWithValues(shell, short_span);
  EXPECT_EQ(misfit.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(misfit.status().message().find("1 x 2"), std::string::npos) << misfit.status();
  // Both kinds of values for one matrix.
  std::vector<DeferredValues> mixed = {{.loglikes = span, .halves = halves}};
  EXPECT_EQ(EncodeWithValues(shell, mixed).status().code(), absl::StatusCode::kInternal);
  // Halves without a best for each frame.
  std::vector<DeferredValues> unanchored = {{.halves = halves}};
  absl::StatusOr<grpc::ByteBuffer> no_best = EncodeWithValues(shell, unanchored);
  EXPECT_EQ(no_best.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(no_best.status().message().find("frame bests"), std::string::npos) << no_best.status();
  // A selection that does not fit the matrix: 2 states kept of frame 0's 2,
  // but offsets that end at 1; then half-precision values for a selection.
  SparseScores kept{.num_states = 2, .frame_offsets = {0, 1}, .state_ids = {0, 1}, .values = values};
  std::vector<DeferredValues> misplaced = {{.loglikes = span, .sparse = &kept}};
  absl::StatusOr<grpc::ByteBuffer> unfit = EncodeWithValues(shell, misplaced);
  EXPECT_EQ(unfit.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(unfit.status().message().find("selected"), std::string::npos) << unfit.status();
  kept.frame_offsets = {0, 2};
  std::vector<DeferredValues> fitting = {{.loglikes = span, .sparse = &kept}};
  EXPECT_TRUE(EncodeWithValues(shell, fitting).ok());
  std::vector<DeferredValues> selected_halves = {{.halves = halves, .sparse = &kept}};
  absl::StatusOr<grpc::ByteBuffer> halved = EncodeWithValues(shell, selected_halves);
  EXPECT_EQ(halved.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(halved.status().message().find("selected scores of 'a' were given half-precision"), std::string::npos)
      << halved.status();
  std::vector<DeferredValues> selected_nothing = {{.sparse = &kept}};
  absl::StatusOr<grpc::ByteBuffer> nothing = EncodeWithValues(shell, selected_nothing);
  EXPECT_EQ(nothing.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(nothing.status().message().find("given no values"), std::string::npos) << nothing.status();
  // A matrix with values of its own and values given.
  scores->add_loglikes(5.0f);
  std::vector<DeferredValues> one = {{.loglikes = span}};
  absl::StatusOr<grpc::ByteBuffer> both = EncodeWithValues(shell, one);
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(both.status().message().find("of their own"), std::string::npos) << both.status();
  // Without given values, the message as it is.
  std::vector<DeferredValues> none = {DeferredValues{}};
  absl::StatusOr<grpc::ByteBuffer> plain = EncodeWithValues(shell, none);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(BytesOf(*plain), shell.SerializeAsString());
}

// The encoder writes StreamScoreResponse's fields itself: a field added to
// the message must be added there too, or answers would go without it.
TEST(AnswerEncoderGuardTest, TheAnswerHasTheFieldsTheEncoderWrites) {
  const google::protobuf::Descriptor* answer = v1::StreamScoreResponse::descriptor();
  ASSERT_EQ(answer->field_count(), 6) << "server/answer_encoder.cc writes six fields";
  const char* names[] = {"first_frame", "scores", "fused", "fusion", "adaptation", "timing"};
  for (int number = 1; number <= 6; ++number) {
    const google::protobuf::FieldDescriptor* field = answer->FindFieldByNumber(number);
    ASSERT_NE(field, nullptr) << number;
    EXPECT_EQ(field->name(), names[number - 1]);
  }
  EXPECT_EQ(answer->FindFieldByNumber(1)->type(), google::protobuf::FieldDescriptor::TYPE_UINT64);
  const google::protobuf::FieldDescriptor* loglikes =
      v1::StateScores::descriptor()->FindFieldByNumber(4);
  ASSERT_NE(loglikes, nullptr);
  EXPECT_EQ(loglikes->name(), "loglikes");
  EXPECT_EQ(loglikes->type(), google::protobuf::FieldDescriptor::TYPE_FLOAT);
  EXPECT_TRUE(loglikes->is_packed());
  // Half-precision answers: the encoder writes loglikes_f16 (8) after the
  // fields below it, the packed frame totals (5) among them, and before the
  // packed frame bests (9).
  const google::protobuf::Descriptor* scores = v1::StateScores::descriptor();
  ASSERT_EQ(scores->field_count(), 9) << "server/answer_encoder.cc places values among nine fields";
  EXPECT_EQ(scores->FindFieldByNumber(5)->name(), "frame_totals");
  EXPECT_TRUE(scores->FindFieldByNumber(5)->is_packed());
  EXPECT_EQ(scores->FindFieldByNumber(8)->name(), "loglikes_f16");
  EXPECT_EQ(scores->FindFieldByNumber(8)->type(), google::protobuf::FieldDescriptor::TYPE_BYTES);
  EXPECT_EQ(scores->FindFieldByNumber(9)->name(), "frame_best");
  EXPECT_TRUE(scores->FindFieldByNumber(9)->is_packed());
  // Selections: the encoder appends frame_offsets (6) and state_ids (7) as
  // packed varints after the totals.
  for (int number : {6, 7}) {
    const google::protobuf::FieldDescriptor* field = scores->FindFieldByNumber(number);
    EXPECT_EQ(field->name(), number == 6 ? "frame_offsets" : "state_ids");
    EXPECT_EQ(field->type(), google::protobuf::FieldDescriptor::TYPE_UINT32);
    EXPECT_TRUE(field->is_packed());
  }
}

}  // namespace
}  // namespace gmmscore
