// Streams for the live-adaptation tests: one chunk at a time, waiting after
// each chunk that makes an update due until the update is published
// (AdaptationConfig.save_as), so that the next chunk is scored by it, as in
// a live stream whose updates (milliseconds) are far faster than speech.
//
//   LockstepStream run = RunLockstep(stub, config, frames, [&] { return 40 + rng() % 61; });
//   for (const AdaptedAnswer& a : run.answers) ... a.report.version() ...
#ifndef GMMSCORE_TESTS_ADAPTATION_TEST_UTIL_H_
#define GMMSCORE_TESTS_ADAPTATION_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/fmllr_estimate.h"
#include "kernels/train/state_posteriors.h"

namespace gmmscore {

struct AdaptedAnswer {
  int64_t first_frame = 0;
  FloatMatrix scores;  // the first model's
  std::vector<FloatMatrix> other_scores;  // the other models', in config order
  FloatMatrix fused;   // several models: the fused matrix
  v1::AdaptationReport report;
};

struct LockstepStream {
  std::vector<AdaptedAnswer> answers;
  // Every version published while the stream ran (GetAdaptation).
  std::map<uint64_t, v1::GetAdaptationResponse> published;
  grpc::Status status;
};

// GetAdaptation(name) as a Status.
absl::StatusOr<v1::GetAdaptationResponse> FetchAdaptation(v1::AcousticScorer::Stub* stub,
                                                          const std::string& name);

// Waits (20 s at most) until the update published under `name` is the one
// from `frames` frames: a stream that publishes makes its closing update
// after it ends. Fails the test otherwise.
absl::StatusOr<v1::GetAdaptationResponse> AwaitPublished(v1::AcousticScorer::Stub* stub,
                                                         const std::string& name, uint64_t frames);

// Streams `frames` under `config` (which adapts, with save_as set) in chunks
// of next_chunk() frames; `posteriors(first, n)` (optional) gives each
// chunk's decoder posteriors. Fails the test when an update is not
// published within 20 s of being due or when it says other frames than
// the chunk ends it was due at.
LockstepStream RunLockstep(
    v1::AcousticScorer::Stub* stub, const v1::StreamConfig& config, ConstMatrixView frames,
    const std::function<int64_t()>& next_chunk,
    const std::function<v1::ChunkPosteriors(int64_t, int64_t)>& posteriors = nullptr);

// What est-fmllr makes of `frames` under `pairs` with the daemon's default
// counts (fmllr_min_count 50, full from 500).
absl::StatusOr<FmllrResult> OfflineFmllr(const DiagGmmModel& model, ConstMatrixView frames,
                                         const std::vector<StatsPair>& pairs);

// Pairs of frames [0, end) from the answers' own scores (what the server
// saw), in stream frame numbers.
std::vector<StatsPair> PairsOfAnswers(const std::vector<AdaptedAnswer>& answers, int64_t end,
                                      const PosteriorPolicy& policy);

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_ADAPTATION_TEST_UTIL_H_
