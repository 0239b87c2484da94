// Conversions between the wire messages of gmmscore.v1 and engine matrices,
// shared by the server and the client library.
//
//   GMM_ASSIGN_OR_RETURN(FloatMatrix frames, FeaturesFromProto(request.chunk()));
//   ScoresToProto("spk1", result.loglikes, {}, response.add_scores());
#ifndef GMMSCORE_PROTO_WIRE_CONVERT_H_
#define GMMSCORE_PROTO_WIRE_CONVERT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/score/half_scores.h"
#include "kernels/score/state_selection.h"

namespace gmmscore {

// The frames of `features` as a num_frames x dim matrix. Checks the shape
// only (values.size() == num_frames * dim, dim > 0 when frames are present);
// INVALID_ARGUMENT naming the numbers otherwise. Values are not checked.
absl::StatusOr<FloatMatrix> FeaturesFromProto(const v1::FeatureMatrix& features);

// Overwrites *out with `frames`.
void FeaturesToProto(ConstMatrixView frames, v1::FeatureMatrix* out);

// Overwrites *out with `samples` (mono, `sample_rate` Hz) as 16-bit
// little-endian PCM bytes (AlignRequest.audio), whatever the host's order.
void PcmToProto(absl::Span<const int16_t> samples, int sample_rate, v1::PcmAudio* out);

// How an answer's values travel (OutputOptions.float16).
enum class ValueEncoding {
  kFloat32,       // StateScores.loglikes
  kHalfFromBest,  // StateScores.loglikes_f16 and frame_best (proto/half_float.h)
};

// Overwrites *out with `loglikes` (T x S) under `model`; `frame_totals`
// (T values, or empty for none) goes to out->frame_totals. A sparse `keep`
// sends only the states it keeps (StateScores.frame_offsets, state_ids).
void ScoresToProto(absl::string_view model, const FloatMatrix& loglikes,
                   absl::Span<const float> frame_totals, v1::StateScores* out,
                   const StateSelection& keep = {},
                   ValueEncoding encoding = ValueEncoding::kFloat32);

// Overwrites *out with everything of a dense float32 answer of `rows` x
// `cols` scores except the values themselves (loglikes left empty), for a
// writer that puts the values straight into the wire bytes
// (server/answer_encoder.h); ScoresToProto is this plus the values.
void DenseScoresShapeToProto(absl::string_view model, int64_t rows, int64_t cols,
                             absl::Span<const float> frame_totals, v1::StateScores* out);

// Overwrites *out with states selected already (on the GPU, by
// ScoreWindow::select): a sparse answer.
void SparseScoresToProto(absl::string_view model, const SparseScores& kept,
                         absl::Span<const float> frame_totals, v1::StateScores* out,
                         ValueEncoding encoding = ValueEncoding::kFloat32);

// Overwrites *out with scores encoded in half precision already (on the GPU,
// by ScoreWindow::half_from_best): the bytes ScoresToProto gives with
// ValueEncoding::kHalfFromBest for the float32 scores they were made from.
void HalfScoresToProto(absl::string_view model, const HalfScores& half,
                       absl::Span<const float> frame_totals, v1::StateScores* out);

// HalfScoresToProto but the halves themselves (loglikes_f16 left empty), for
// a writer that puts them straight into the wire bytes (server/answer_encoder.h).
void HalfScoresShapeToProto(absl::string_view model, const HalfScores& half,
                            absl::Span<const float> frame_totals, v1::StateScores* out);

// `loglikes` encoded as HalfScores on the host: what ScoresToProto sends
// with kHalfFromBest, and what a backend encoding on its device must match.
HalfScores HalfScoresFromFloats(const FloatMatrix& loglikes);

// The loglikes of `scores` as a num_frames x num_states matrix, states a
// sparse answer left out set to -infinity, half-precision values decoded;
// INVALID_ARGUMENT if the counts, offsets, state ids or half-precision
// fields do not fit together.
absl::StatusOr<FloatMatrix> ScoresFromProto(const v1::StateScores& scores);

}  // namespace gmmscore

#endif  // GMMSCORE_PROTO_WIRE_CONVERT_H_
