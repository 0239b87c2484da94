// Bad input on a stream (or in a Score request) ends that stream with the
// right status and a message that says what was wrong; the chunks accepted
// before it are still answered; other streams are unaffected and the daemon
// keeps serving.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/rpc_status.h"
#include "proto/wire_convert.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

constexpr int kDim = 13;
constexpr int kMaxChunkFrames = 64;

// What a raw stream got back.
struct Outcome {
  int answers = 0;
  grpc::Status status;
};

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    DaemonOptions options;
    options.limits.max_chunk_frames = kMaxChunkFrames;
    daemon_ = TestDaemon::Start(
                  {{"a", {.num_states = 10, .min_gaussians = 1, .max_gaussians = 3, .dim = kDim,
                          .seed = 1}},
                   {"b", {.num_states = 10, .min_gaussians = 1, .max_gaussians = 3, .dim = kDim,
                          .seed = 2}},
                   {"c", {.num_states = 7, .min_gaussians = 1, .max_gaussians = 3, .dim = kDim,
                          .seed = 3}}},
                  options)
                  .release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(daemon_, nullptr);
    stub_ = v1::AcousticScorer::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }

  // Sends `requests` on a raw stream (no client-library help), half-closes,
  // and reads until the end.
  Outcome RunRaw(const std::vector<v1::StreamScoreRequest>& requests) {
    grpc::ClientContext context;
    auto stream = stub_->StreamScore(&context);
    for (const v1::StreamScoreRequest& request : requests) {
      if (!stream->Write(request)) break;
    }
    stream->WritesDone();
    Outcome outcome;
    v1::StreamScoreResponse response;
    while (stream->Read(&response)) ++outcome.answers;
    outcome.status = stream->Finish();
    return outcome;
  }

  static v1::StreamScoreRequest Config(std::vector<std::string> models) {
    v1::StreamScoreRequest request;
    request.mutable_config();  // present even with no models
    for (const std::string& m : models) request.mutable_config()->add_models(m);
    return request;
  }
  static v1::StreamScoreRequest Chunk(int frames, int dim = kDim, float value = 1.0f) {
    v1::StreamScoreRequest request;
    request.mutable_chunk()->set_num_frames(frames);
    request.mutable_chunk()->set_dim(dim);
    request.mutable_chunk()->mutable_values()->Resize(frames * dim, value);
    return request;
  }

  static void ExpectStatus(const Outcome& outcome, grpc::StatusCode code, const std::string& text,
                           int answers = 0) {
    EXPECT_EQ(outcome.status.error_code(), code) << outcome.status.error_message();
    EXPECT_THAT(outcome.status.error_message(), HasSubstr(text));
    EXPECT_EQ(outcome.answers, answers);
  }

  static TestDaemon* daemon_;
  std::unique_ptr<v1::AcousticScorer::Stub> stub_;
};

TestDaemon* BadInputTest::daemon_ = nullptr;

TEST_F(BadInputTest, WrongDimension) {
  ExpectStatus(RunRaw({Config({"a"}), Chunk(3), Chunk(2, kDim + 1)}),
               grpc::StatusCode::INVALID_ARGUMENT,
               "chunk at frame 3 has dimension 14 but model 'a' has dimension 13", 1);
}

TEST_F(BadInputTest, NanAndInfinityNameTheFrameAndDimension) {
  v1::StreamScoreRequest nan = Chunk(4);
  nan.mutable_chunk()->set_values(2 * kDim + 5, NAN);
  ExpectStatus(RunRaw({Config({"a"}), Chunk(10), nan}), grpc::StatusCode::INVALID_ARGUMENT,
               "frame 12 (row 2 of the chunk at frame 10), dimension 5 is nan", 1);
  v1::StreamScoreRequest inf = Chunk(1);
  inf.mutable_chunk()->set_values(0, -INFINITY);
  ExpectStatus(RunRaw({Config({"a"}), inf}), grpc::StatusCode::INVALID_ARGUMENT,
               "dimension 0 is -inf");
}

TEST_F(BadInputTest, UnknownModel) {
  ExpectStatus(RunRaw({Config({"a", "nobody"}), Chunk(1)}), grpc::StatusCode::NOT_FOUND,
               "no model named 'nobody' (this server serves: a, b, c)");
}

TEST_F(BadInputTest, EmptyChunk) {
  ExpectStatus(RunRaw({Config({"a"}), Chunk(2), Chunk(0)}), grpc::StatusCode::INVALID_ARGUMENT,
               "chunk at frame 2 has no frames", 1);
}

TEST_F(BadInputTest, OversizedChunk) {
  ExpectStatus(RunRaw({Config({"a"}), Chunk(kMaxChunkFrames), Chunk(kMaxChunkFrames + 1)}),
               grpc::StatusCode::INVALID_ARGUMENT,
               absl::StrCat("has ", kMaxChunkFrames + 1, " frames; this server accepts at most ",
                            kMaxChunkFrames, " frames per chunk"),
               1);
}

TEST_F(BadInputTest, ChunkBeforeConfig) {
  ExpectStatus(RunRaw({Chunk(1), Config({"a"})}), grpc::StatusCode::FAILED_PRECONDITION,
               "a chunk before the config");
}

TEST_F(BadInputTest, SecondConfig) {
  ExpectStatus(RunRaw({Config({"a"}), Chunk(1), Config({"b"}), Chunk(1)}),
               grpc::StatusCode::FAILED_PRECONDITION, "a second config", 1);
}

TEST_F(BadInputTest, ValueCountDisagreesWithShape) {
  v1::StreamScoreRequest chunk = Chunk(2);
  chunk.mutable_chunk()->mutable_values()->RemoveLast();
  ExpectStatus(RunRaw({Config({"a"}), chunk}), grpc::StatusCode::INVALID_ARGUMENT,
               "carries 25 values");
}

TEST_F(BadInputTest, EmptyRequest) {
  ExpectStatus(RunRaw({Config({"a"}), v1::StreamScoreRequest()}),
               grpc::StatusCode::INVALID_ARGUMENT, "neither a config nor a chunk");
}

TEST_F(BadInputTest, BadConfigs) {
  ExpectStatus(RunRaw({Config({})}), grpc::StatusCode::INVALID_ARGUMENT, "no models named");
  ExpectStatus(RunRaw({Config({"a", "c"})}), grpc::StatusCode::INVALID_ARGUMENT,
               "must share one state set");
  v1::StreamScoreRequest weights = Config({"a", "b"});
  weights.mutable_config()->mutable_fusion()->set_method(v1::FUSION_METHOD_LOG_SUM_EXP);
  weights.mutable_config()->mutable_fusion()->add_weights(1.0f);
  ExpectStatus(RunRaw({weights}), grpc::StatusCode::INVALID_ARGUMENT, "1 weights for 2 models");
  v1::StreamScoreRequest window = Config({"a", "b"});
  window.mutable_config()->mutable_fusion()->set_method(v1::FUSION_METHOD_POSTERIOR);
  window.mutable_config()->mutable_fusion()->set_window_frames(1000000);
  ExpectStatus(RunRaw({window}), grpc::StatusCode::INVALID_ARGUMENT, "fusion window");
  v1::StreamScoreRequest transform = Config({"a"});
  transform.mutable_config()->mutable_transform()->set_rows(kDim);
  transform.mutable_config()->mutable_transform()->set_cols(kDim + 1);
  ExpectStatus(RunRaw({transform}), grpc::StatusCode::INVALID_ARGUMENT,
               "transform: feature transform is 13 x 14 but has 0 values");
}

TEST_F(BadInputTest, ScoreRequestsAreCheckedToo) {
  std::unique_ptr<Client> client = daemon_->NewClient();
  v1::ScoreRequest request;
  request.add_models("zz");
  EXPECT_EQ(client->Score(request).status().code(), absl::StatusCode::kNotFound);
  request.set_models(0, "a");
  FloatMatrix frames(3, kDim, 0.5f);
  frames.at(1, 2) = NAN;
  FeaturesToProto(frames.view(), request.mutable_features());
  absl::Status status = client->Score(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("frame 1 (row 1"));
  FeaturesToProto(FloatMatrix(2, kDim + 2).view(), request.mutable_features());
  EXPECT_EQ(client->Score(request).status().code(), absl::StatusCode::kInvalidArgument);
  FeaturesToProto(FloatMatrix(0, kDim).view(), request.mutable_features());
  absl::StatusOr<v1::ScoreResponse> empty = client->Score(request);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->scores(0).num_frames(), 0u);
}

TEST_F(BadInputTest, BadStreamsLeaveOtherStreamsAndTheDaemonServing) {
  std::unique_ptr<Client> client = daemon_->NewClient();
  v1::StreamConfig config;
  config.add_models("a");
  config.add_models("b");
  auto healthy = client->StartStream(config);
  ASSERT_TRUE(healthy.ok());
  const FloatMatrix features = TestFeatures(daemon_->model("a"), 60, 9);
  const FloatMatrix offline = daemon_->ScoreOffline("a", features.view());
  const FloatMatrix allowance = ScoreAllowance(daemon_->model("a"), features.view());
  for (int k = 0; k < 6; ++k) {
    // A bad stream between every two healthy chunks.
    v1::StreamScoreRequest nan = Chunk(2);
    nan.mutable_chunk()->set_values(0, NAN);
    ExpectStatus(RunRaw({Config({"a"}), nan}), grpc::StatusCode::INVALID_ARGUMENT, "is nan");
    ExpectStatus(RunRaw({Chunk(1)}), grpc::StatusCode::FAILED_PRECONDITION, "before the config");
    ASSERT_TRUE((*healthy)->Push(features.view().Rows(k * 10, 10)).ok());
    absl::StatusOr<StreamAnswer> answer = (*healthy)->Next();
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_EQ(answer->first_frame, k * 10);
    for (int64_t t = 0; t < 10; ++t) {
      for (int s = 0; s < 10; ++s) {
        ASSERT_NEAR(answer->model_scores[0].at(t, s), offline.at(k * 10 + t, s),
                    allowance.at(k * 10 + t, s));
      }
    }
  }
  EXPECT_TRUE((*healthy)->Finish().ok());
  absl::StatusOr<std::vector<v1::ModelInfo>> models = client->ListModels();
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->size(), 3u);
  EXPECT_TRUE(daemon_->WaitUntilIdle(absl::Seconds(10)));
}

TEST(StreamLimitTest, StreamsBeyondTheLimitAreRefused) {
  DaemonOptions options;
  options.limits.max_streams = 2;
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(
      {{"a", {.num_states = 3, .min_gaussians = 1, .max_gaussians = 1, .dim = 2, .seed = 1}}},
      options);
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = daemon->NewClient();
  v1::StreamConfig config;
  config.add_models("a");
  auto first = client->StartStream(config);
  auto second = client->StartStream(config);
  // The first two are live once they answer a chunk.
  ASSERT_TRUE((*first)->Push(FloatMatrix(1, 2).view()).ok());
  ASSERT_TRUE((*second)->Push(FloatMatrix(1, 2).view()).ok());
  ASSERT_TRUE((*first)->Next().ok());
  ASSERT_TRUE((*second)->Next().ok());
  auto third = client->StartStream(config);
  absl::Status status = (*third)->Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_TRUE((*first)->Finish().ok());
  EXPECT_TRUE((*second)->Finish().ok());
}

}  // namespace
}  // namespace gmmscore
