#include "tests/adaptation_test_util.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "kernels/train/fmllr_stats.h"
#include "proto/wire_convert.h"

namespace gmmscore {

absl::StatusOr<v1::GetAdaptationResponse> FetchAdaptation(v1::AcousticScorer::Stub* stub,
                                                          const std::string& name) {
  grpc::ClientContext context;
  v1::GetAdaptationRequest request;
  request.set_name(name);
  v1::GetAdaptationResponse response;
  const grpc::Status status = stub->GetAdaptation(&context, request, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return response;
}

namespace {

// Waits until `name` shows a version above `after`; its response, or
// nothing (and a test failure) after 20 s.
std::optional<v1::GetAdaptationResponse> AwaitVersion(v1::AcousticScorer::Stub* stub,
                                                      const std::string& name, uint64_t after) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  for (;;) {
    absl::StatusOr<v1::GetAdaptationResponse> got = FetchAdaptation(stub, name);
    if (got.ok() && got->report().version() > after) return *std::move(got);
    if (absl::Now() > give_up) {
      ADD_FAILURE() << "no update of '" << name << "' after version " << after;
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

absl::StatusOr<v1::GetAdaptationResponse> AwaitPublished(v1::AcousticScorer::Stub* stub,
                                                         const std::string& name, uint64_t frames) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  for (;;) {
    absl::StatusOr<v1::GetAdaptationResponse> got = FetchAdaptation(stub, name);
    if (got.ok() && got->report().frames() == frames) return got;
    if (absl::Now() > give_up) {
      ADD_FAILURE() << "'" << name << "' was not published from " << frames << " frames";
      return got.ok() ? absl::DeadlineExceededError("not published") : got.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

LockstepStream RunLockstep(v1::AcousticScorer::Stub* stub, const v1::StreamConfig& config,
                           ConstMatrixView frames, const std::function<int64_t()>& next_chunk,
                           const std::function<v1::ChunkPosteriors(int64_t, int64_t)>& posteriors) {
  LockstepStream out;
  grpc::ClientContext context;
  auto stream = stub->StreamScore(&context);
  v1::StreamScoreRequest first;
  *first.mutable_config() = config;
  EXPECT_TRUE(stream->Write(first));
  const v1::AdaptationConfig& a = config.adaptation();
  int64_t due = static_cast<int64_t>(a.start_after_frames());
  uint64_t version = 0;
  for (int64_t t = 0; t < frames.rows;) {
    const int64_t n = std::min<int64_t>(frames.rows - t, std::max<int64_t>(1, next_chunk()));
    v1::StreamScoreRequest request;
    FeaturesToProto(frames.Rows(t, n), request.mutable_chunk());
    if (posteriors) *request.mutable_posteriors() = posteriors(t, n);
    if (!stream->Write(request)) break;
    v1::StreamScoreResponse response;
    if (!stream->Read(&response)) break;
    AdaptedAnswer answer{.first_frame = static_cast<int64_t>(response.first_frame()),
                         .report = response.adaptation()};
    absl::StatusOr<FloatMatrix> scores = ScoresFromProto(response.scores(0));
    EXPECT_TRUE(scores.ok()) << scores.status();
    if (scores.ok()) answer.scores = *std::move(scores);
    for (int m = 1; m < response.scores_size(); ++m) {
      absl::StatusOr<FloatMatrix> other = ScoresFromProto(response.scores(m));
      EXPECT_TRUE(other.ok()) << other.status();
      if (other.ok()) answer.other_scores.push_back(*std::move(other));
    }
    if (response.has_fused()) {
      absl::StatusOr<FloatMatrix> fused = ScoresFromProto(response.fused());
      EXPECT_TRUE(fused.ok()) << fused.status();
      if (fused.ok()) answer.fused = *std::move(fused);
    }
    out.answers.push_back(std::move(answer));
    t += n;
    if (a.method() != v1::AdaptationConfig::METHOD_UNSPECIFIED && !a.save_as().empty() && t >= due) {
      std::optional<v1::GetAdaptationResponse> got = AwaitVersion(stub, a.save_as(), version);
      if (!got.has_value()) break;
      EXPECT_EQ(got->report().frames(), static_cast<uint64_t>(t));
      version = got->report().version();
      out.published[version] = *std::move(got);
      due = a.single_update() ? INT64_MAX : t + static_cast<int64_t>(a.update_every_frames());
    }
  }
  stream->WritesDone();
  v1::StreamScoreResponse extra;
  EXPECT_FALSE(stream->Read(&extra));
  out.status = stream->Finish();
  EXPECT_TRUE(out.status.ok()) << out.status.error_message();
  return out;
}

absl::StatusOr<FmllrResult> OfflineFmllr(const DiagGmmModel& model, ConstMatrixView frames,
                                         const std::vector<StatsPair>& pairs) {
  FmllrStats stats = FmllrStats::ForDim(model.dim());
  absl::Status added = FmllrAccumulator(model).Accumulate(frames, pairs, &stats).status();
  if (!added.ok()) return added;
  return EstimateFmllr(stats, {.min_count = 50, .min_count_full = 500});
}

std::vector<StatsPair> PairsOfAnswers(const std::vector<AdaptedAnswer>& answers, int64_t end,
                                      const PosteriorPolicy& policy) {
  std::vector<StatsPair> pairs;
  for (const AdaptedAnswer& a : answers) {
    if (a.first_frame >= end) break;
    for (StatsPair p : PairsFromScores(a.scores.view(), policy)) {
      p.frame += static_cast<int32_t>(a.first_frame);
      pairs.push_back(p);
    }
  }
  return pairs;
}

}  // namespace gmmscore
