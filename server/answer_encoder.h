// EncodeStreamAnswer: a StreamScore answer written straight into the bytes
// gRPC sends, its scores copied once, or not at all (...Taking).
//
//   GMM_ASSIGN_OR_RETURN(grpc::ByteBuffer bytes,
//                        EncodeStreamAnswer(plan, results, fused, {.first_frame = 40}));
//   reactor->StartWrite(&bytes);  // a stream whose answers are typed ByteBuffer
//
// Why: a dense answer is mostly float32 scores (a 10-frame chunk of a
// 5000-state model carries 200 KB). Filled into a StreamScoreResponse they
// were copied into the message's repeated field, then again when gRPC
// serialised the message into its slice. Here the message is filled with
// everything but those values, and the values go from the scorer's result
// into one slice the size of the whole answer (one copy), or the slices
// point into the result (EncodeStreamAnswerTaking: none). Either is freed
// when the write is done: a stream no longer keeps its largest answer's
// capacity between chunks. Capacity issue 23, docs/PERFORMANCE.md. Half-
// precision scores a backend encoded (ScoreResult::half, on a GPU) travel
// the same way as the loglikes_f16 bytes; halves made here from float32
// scores go into the message as before. States a backend selected (top_k
// on a GPU) are written here too: their float32 values like a dense
// matrix's, their state ids and frame offsets as packed varints straight
// into the answer, never into the message's repeated fields.
//
// The bytes are exactly what StreamScoreResponse::SerializeAsString gives
// for the answer FillAnswer / FillFusedAnswer build (answer_encoder_test
// checks byte for byte), so clients see no difference.
#ifndef GMMSCORE_SERVER_ANSWER_ENCODER_H_
#define GMMSCORE_SERVER_ANSWER_ENCODER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gmmscore/v1/scorer.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "kernels/score/fusion.h"
#include "kernels/score/scoring_backend.h"
#include "server/scoring_plan.h"

namespace gmmscore {

struct AnswerHeader {
  uint64_t first_frame = 0;
  // The adaptation that scored the chunk; null for a stream that does not adapt.
  const v1::AdaptationReport* adaptation = nullptr;
  // The server's times for the chunk; null for a stream that did not ask.
  const v1::ServerTiming* timing = nullptr;
};

// The answer to one chunk: results[i] are plan.models[i]'s scores; `fused`
// (null without fusion) the chunk's fused scores, done by the backend. The
// same errors as FillFusedAnswer / FillAnswer.
absl::StatusOr<grpc::ByteBuffer> EncodeStreamAnswer(const ScoringPlan& plan,
                                                    absl::Span<const ScoreResult> results,
                                                    const FusedScores* fused,
                                                    const AnswerHeader& header);

// The same answer, taking the scores over instead of copying them: the
// values' slices of the ByteBuffer point into the matrices, which live until
// gRPC releases the last of them. No copy of the scores at all; for a
// stream whose scores go nowhere else after the answer (not one that
// adapts: its statistics read them after).
absl::StatusOr<grpc::ByteBuffer> EncodeStreamAnswerTaking(const ScoringPlan& plan,
                                                          std::vector<ScoreResult> results,
                                                          std::optional<FusedScores> fused,
                                                          const AnswerHeader& header);

// The serialised `shell`, with the values of its StateScores
// (shell.scores() in order, then shell.fused() when present) taken from
// `values` where an entry is not empty: float32 loglikes for a StateScores
// with no loglikes, frame_offsets, state_ids or half-precision fields of its
// own; or half-precision loglikes_f16 for one with its frame_best and no
// other values (INTERNAL otherwise, or where the count is not frames x
// states). An entry with `sparse` adds that selection's frame_offsets and
// state_ids, its count being the selection's (INTERNAL where the selection
// does not fit the StateScores' shape). Empty entries leave the message as
// it is.
absl::StatusOr<grpc::ByteBuffer> EncodeWithValues(const v1::StreamScoreResponse& shell,
                                                  absl::Span<const internal::DeferredValues> values);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ANSWER_ENCODER_H_
