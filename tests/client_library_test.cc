// The client library against a live daemon: ListModels, Score, and a decoder
// reading a stream through RemoteDecodable, and by Kaldi transition-ids
// through TransitionIdDecodable.
#include <chrono>
#include <cmath>
#include <memory>

#include "absl/time/clock.h"
#include "client/remote_decodable.h"
#include "client/transition_id_decodable.h"
#include "gtest/gtest.h"
#include "proto/wire_convert.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

class ClientLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = TestDaemon::Start(
        {{"x", {.num_states = 20, .min_gaussians = 1, .max_gaussians = 4, .dim = 7, .seed = 1}},
         {"y", {.num_states = 20, .min_gaussians = 1, .max_gaussians = 4, .dim = 7, .seed = 2}}});
    ASSERT_NE(daemon_, nullptr);
    client_ = daemon_->NewClient();
    features_ = TestFeatures(daemon_->model("x"), 57, 3);
  }

  std::unique_ptr<TestDaemon> daemon_;
  std::unique_ptr<Client> client_;
  FloatMatrix features_;
};

TEST_F(ClientLibraryTest, ListModelsDescribesEveryModel) {
  absl::StatusOr<std::vector<v1::ModelInfo>> models = client_->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  const DiagGmmModel& x = daemon_->model("x");
  EXPECT_EQ((*models)[0].name(), "x");
  EXPECT_EQ((*models)[0].dim(), 7u);
  EXPECT_EQ((*models)[0].num_states(), 20u);
  EXPECT_EQ((*models)[0].num_gaussians(), static_cast<uint64_t>(x.num_gaussians()));
  EXPECT_EQ((*models)[0].bytes(), static_cast<uint64_t>(x.ByteSize()));
  EXPECT_EQ((*models)[0].device(), daemon_->daemon().repository().device());
  EXPECT_EQ((*models)[0].max_gaussians_per_state(),
            static_cast<uint32_t>(x.max_gaussians_per_state()));
}

TEST_F(ClientLibraryTest, ScoreGivesTheOfflineScores) {
  v1::ScoreRequest request;
  request.add_models("x");
  FeaturesToProto(features_.view(), request.mutable_features());
  request.mutable_output()->set_frame_totals(true);
  absl::StatusOr<v1::ScoreResponse> response = client_->Score(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->scores_size(), 1);
  EXPECT_FALSE(response->has_fused());
  EXPECT_EQ(response->scores(0).frame_totals_size(), 57);
  const FloatMatrix got = *ScoresFromProto(response->scores(0));
  const FloatMatrix offline = daemon_->ScoreOffline("x", features_.view());
  const FloatMatrix allowance = ScoreAllowance(daemon_->model("x"), features_.view());
  for (int64_t i = 0; i < 57 * 20; ++i) {
    ASSERT_NEAR(got.data()[i], offline.data()[i], allowance.data()[i]);
  }
}

TEST_F(ClientLibraryTest, DecodableReadsTheStreamFrameByFrame) {
  v1::StreamConfig config;
  config.add_models("x");
  config.add_models("y");
  config.mutable_output()->set_fused_only(true);
  auto session = client_->StartStream(config);
  ASSERT_TRUE(session.ok());
  RemoteDecodable decodable(session->get(), /*acoustic_scale=*/0.1f);
  EXPECT_EQ(decodable.NumFramesReady(), 0);

  // The decoder pushes windows of 8 frames and consumes what is ready.
  auto fusion = ModelFusion::Create(2, {.method = FusionMethod::kMax});
  FusedScores expected;
  const FloatMatrix x = daemon_->ScoreOffline("x", features_.view());
  const FloatMatrix y = daemon_->ScoreOffline("y", features_.view());
  ASSERT_TRUE(fusion->Fuse({x.view(), y.view()}, &expected).ok());
  int64_t pushed = 0;
  int32_t frame = 0;
  while (pushed < 57) {
    const int64_t size = std::min<int64_t>(8, 57 - pushed);
    ASSERT_TRUE((*session)->Push(features_.view().Rows(pushed, size)).ok());
    pushed += size;
    if (pushed == 57) ASSERT_TRUE((*session)->CloseSend().ok());
    ASSERT_TRUE(decodable.WaitForFrames(pushed).ok());
    EXPECT_EQ(decodable.NumIndices(), 20);
    for (; frame < decodable.NumFramesReady(); ++frame) {
      for (int s = 0; s < 20; ++s) {
        ASSERT_NEAR(decodable.LogLikelihood(frame, s), 0.1f * expected.loglikes.at(frame, s),
                    1e-3);
      }
    }
    decodable.DiscardFramesBefore(frame - 4);
  }
  EXPECT_EQ(frame, 57);
  // The end shows once the server closed the stream.
  while (!decodable.IsLastFrame(56) && decodable.status().ok()) {
    EXPECT_EQ(decodable.WaitForFrames(58).code(), absl::StatusCode::kOutOfRange);
  }
  EXPECT_TRUE(decodable.IsLastFrame(56));
  EXPECT_FALSE(decodable.IsLastFrame(55));
  EXPECT_TRUE(decodable.status().ok());
  EXPECT_GE(decodable.first_frame_kept(), 48);
  EXPECT_TRUE((*session)->Finish().ok());
}

// A map shaped like a Kaldi TransitionModel's: several transition-ids per
// pdf (self-loop and forward transitions of states sharing a pdf), in an
// order that is not the pdfs'.
std::vector<int32_t> KaldiLikeMap(int num_pdfs, int per_pdf) {
  std::vector<int32_t> map = {-1};  // transition-id 0 is unused
  for (int i = 0; i < num_pdfs * per_pdf; ++i) map.push_back((i * 11 + i / num_pdfs) % num_pdfs);  // 11: prime to 20 and 21, every pdf used
  return map;
}

TEST_F(ClientLibraryTest, TransitionIdDecodableScoresEachIdWithItsPdf) {
  v1::StreamConfig config;
  config.add_models("x");
  auto session = client_->StartStream(config);
  ASSERT_TRUE(session.ok());
  const std::vector<int32_t> map = KaldiLikeMap(20, 3);
  auto decodable = TransitionIdDecodable::Create(session->get(), map, /*acoustic_scale=*/0.1f);
  ASSERT_TRUE(decodable.ok()) << decodable.status();
  EXPECT_EQ((*decodable)->NumIndices(), 60);
  ASSERT_TRUE((*session)->Push(features_.view()).ok());
  ASSERT_TRUE((*session)->CloseSend().ok());
  ASSERT_TRUE((*decodable)->WaitForFrames(57).ok()) << (*decodable)->status();
  const FloatMatrix x = daemon_->ScoreOffline("x", features_.view());
  const FloatMatrix allowance = ScoreAllowance(daemon_->model("x"), features_.view());
  for (int32_t t = 0; t < 57; ++t) {
    for (int32_t tid = 1; tid <= 60; ++tid) {
      ASSERT_NEAR((*decodable)->LogLikelihood(t, tid), 0.1f * x.at(t, map[tid]),
                  0.1f * allowance.at(t, map[tid]) + 1e-5f)
          << "frame " << t << " transition-id " << tid;
    }
  }
  EXPECT_TRUE((*decodable)->IsLastFrame(56) || (*decodable)->WaitForFrames(58).code() ==
                                                    absl::StatusCode::kOutOfRange);
  EXPECT_TRUE((*session)->Finish().ok());
}

TEST_F(ClientLibraryTest, TransitionIdDecodableRefusesAMapOfAnotherModel) {
  EXPECT_EQ(TransitionIdDecodable::Create(nullptr, {-1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TransitionIdDecodable::Create(nullptr, {-1, 3, -2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::StreamConfig config;
  config.add_models("x");
  auto session = client_->StartStream(config);
  ASSERT_TRUE(session.ok());
  // 21 pdfs for a model of 20 states: the final.mdl of another model.
  auto decodable = TransitionIdDecodable::Create(session->get(), KaldiLikeMap(21, 2));
  ASSERT_TRUE(decodable.ok());
  ASSERT_TRUE((*session)->Push(features_.view()).ok());
  const absl::Status waited = (*decodable)->WaitForFrames(10);
  EXPECT_EQ(waited.code(), absl::StatusCode::kFailedPrecondition) << waited;
  EXPECT_NE(waited.message().find("20 states"), std::string::npos) << waited;
  EXPECT_EQ((*decodable)->status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*decodable)->NumFramesReady(), 0);
  EXPECT_FALSE((*decodable)->IsLastFrame(56));
  (*session)->Cancel();
}

// The wall clock the daemon stamps answers with (a client's clock_gettime).
int64_t UnixMicrosNow() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A stream that asks for the server's times gets them in every answer:
// read while the stream was open, held for no less than nothing.
TEST_F(ClientLibraryTest, TimedStreamAnswersCarryTheServersTimes) {
  for (bool timed : {false, true}) {
    v1::StreamConfig config;
    config.add_models("x");
    config.mutable_output()->set_server_timing(timed);
    const int64_t before_us = UnixMicrosNow();
    auto session = client_->StartStream(config);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Push(features_.view()).ok());
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    const int64_t after_us = UnixMicrosNow();
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_EQ(answer->server_timing.has_value(), timed);
    if (timed) {
      EXPECT_GE(answer->server_timing->chunk_read_unix_us(), before_us);
      EXPECT_GE(answer->server_timing->held_us(), 0);
      EXPECT_LE(answer->server_timing->chunk_read_unix_us() + answer->server_timing->held_us(),
                after_us);
    }
    ASSERT_TRUE((*session)->CloseSend().ok());
    EXPECT_TRUE((*session)->Finish().ok());
  }
}

TEST_F(ClientLibraryTest, StreamErrorsReachTheDecoderAndPush) {
  v1::StreamConfig config;
  config.add_models("nope");
  auto session = client_->StartStream(config);
  ASSERT_TRUE(session.ok());
  RemoteDecodable decodable(session->get());
  EXPECT_EQ(decodable.WaitForFrames(1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(decodable.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*session)->Push(features_.view()).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*session)->Finish().code(), absl::StatusCode::kNotFound);
}

TEST(ClientConnectTest, UnreachableServerIsUnavailable) {
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect("127.0.0.1:1", {.connect_timeout = absl::Milliseconds(200)});
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find("127.0.0.1:1"), std::string::npos);
}

TEST(ClientConnectTest, ARefusedPortFailsFastNotAfterTheTimeout) {
  // Port 1 refuses at once on loopback; the default timeout is 10 s, which
  // `gmmscore models` used to wait in full (the CLI sets fail_fast).
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect("127.0.0.1:1", {.fail_fast = true});
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find("the connection failed"), std::string::npos) << client.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Without it, Connect keeps trying for its whole timeout (a decoder
  // started beside a daemon that is still loading).
  const absl::Time patient = absl::Now();
  client = Client::Connect("127.0.0.1:1", {.connect_timeout = absl::Milliseconds(700)});
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(absl::Now() - patient, absl::Milliseconds(600));
}

}  // namespace
}  // namespace gmmscore
