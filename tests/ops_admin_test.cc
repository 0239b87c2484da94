// ModelAdmin under load: 50 live streams keep sending while a model is
// loaded, replaced and unloaded; no chunk fails, streams started before a
// replace finish on the old version, later ones get the new one. Bearer
// token checks; a load beyond the memory budget is RESOURCE_EXHAUSTED.
#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "client/client.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "tests/ops_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

constexpr int kDim = 12;
constexpr SyntheticModelSpec kOld{.num_states = 30, .min_gaussians = 4, .max_gaussians = 4,
                                  .dim = kDim, .seed = 11};
constexpr SyntheticModelSpec kNew{.num_states = 30, .min_gaussians = 4, .max_gaussians = 4,
                                  .dim = kDim, .seed = 22};
constexpr SyntheticModelSpec kOther{.num_states = 30, .min_gaussians = 4, .max_gaussians = 4,
                                    .dim = kDim, .seed = 33};

// Scores of `frames` by the model `spec` describes, on the test backend.
FloatMatrix Offline(const SyntheticModelSpec& spec, const FloatMatrix& frames) {
  auto backend = CreateBackend(TestBackendName());
  auto model = std::make_shared<const DiagGmmModel>(*GenerateSyntheticModel(spec));
  auto prepared = (*backend)->Prepare(model);
  ScoreResult result;
  EXPECT_TRUE((*backend)->Score(**prepared, frames.view(), {}, &result).ok());
  return result.loglikes;
}

float MaxDiff(const FloatMatrix& a, const FloatMatrix& b) {
  float worst = 0;
  for (int64_t t = 0; t < a.rows(); ++t) {
    for (int64_t s = 0; s < a.cols(); ++s) worst = std::max(worst, std::abs(a.at(t, s) - b.at(t, s)));
  }
  return worst;
}

TEST(OpsAdminTest, LoadReplaceUnloadUnderFiftyLiveStreamsFailsNoChunk) {
  auto served = DirectoryDaemon::Start({{"a", kOld}, {"b", kOther}, {"c", kOther}}, {},
                                       {.skip_at_start = {"c"}});
  ASSERT_NE(served, nullptr);
  const std::string address = served->daemon->address();
  const DiagGmmModel old_model = *GenerateSyntheticModel(kOld);
  const FloatMatrix frames = TestFeatures(old_model, 20, 5);
  const FloatMatrix old_scores = Offline(kOld, frames);
  const FloatMatrix new_scores = Offline(kNew, frames);
  ASSERT_GT(MaxDiff(old_scores, new_scores), 1.0f);  // the versions are told apart

  constexpr int kStreams = 50;
  std::atomic<bool> stop{false};
  // answered_once counts streams with at least one answer: only then has
  // the daemon bound the stream to a version (a total of kStreams answers
  // can come from a few fast streams while a slow one has not been read
  // yet; under load that stream then met the new "a" or the unloaded "b").
  std::atomic<int> started{0}, failed_chunks{0}, answered{0}, answered_once{0}, wrong_version{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      auto client = Client::Connect(address);
      ASSERT_TRUE(client.ok());
      v1::StreamConfig config;
      config.add_models(i % 2 == 0 ? "a" : "b");  // half on "a" (replaced), half on "b" (unloaded)
      auto session = (*client)->StartStream(config);
      ASSERT_TRUE(session.ok());
      ++started;
      bool first_answer_seen = false;
      while (!stop.load()) {
        if (!(*session)->Push(frames.view()).ok()) break;
        absl::StatusOr<StreamAnswer> answer = (*session)->Next();
        if (!answer.ok()) {
          ++failed_chunks;
          break;
        }
        ++answered;
        if (!first_answer_seen) {
          first_answer_seen = true;
          ++answered_once;
        }
        // Streams on "a" started before the replace: always the old version.
        if (i % 2 == 0 && MaxDiff(answer->scores, old_scores) > 1e-2f) ++wrong_version;
      }
      (*session)->CloseSend().IgnoreError();
      if (!(*session)->Finish().ok()) ++failed_chunks;
    });
  }
  // Every stream started and answered at least once before the changes (a
  // stream that fails first would keep the count short: a deadline, then
  // the failure is reported below).
  const absl::Time all_answered_by = absl::Now() + absl::Seconds(60);
  while ((started.load() < kStreams || answered_once.load() < kStreams) && failed_chunks.load() == 0 &&
         absl::Now() < all_answered_by) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (answered_once.load() < kStreams) {
    stop = true;
    for (std::thread& t : threads) t.join();
    FAIL() << answered_once.load() << " of " << kStreams << " streams answered before the changes; "
           << failed_chunks.load() << " failed";
  }

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  v1::LoadModelResponse loaded;
  ASSERT_TRUE(AdminLoad(channel, "c", "", &loaded).ok());  // a new model
  EXPECT_FALSE(loaded.replaced());
  served->WriteModel("a", kNew);
  ASSERT_TRUE(AdminLoad(channel, "a", "", &loaded).ok());  // replace
  EXPECT_TRUE(loaded.replaced());
  EXPECT_EQ(loaded.model().version(), 2u);
  ASSERT_TRUE(AdminUnload(channel, "b").ok());
  const int answered_mid = answered.load();

  // The old "a" is still held by its streams.
  EXPECT_GT(served->daemon->repository().memory().retired_versions, 0);
  // New streams: "a" is the new version, "b" is gone, "c" is served.
  {
    auto client = Client::Connect(address);
    ASSERT_TRUE(client.ok());
    v1::StreamConfig config;
    config.add_models("a");
    auto session = (*client)->StartStream(config);
    ASSERT_TRUE((*session)->Push(frames.view()).ok());
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_LT(MaxDiff(answer->scores, new_scores), 1e-2f);
    ASSERT_TRUE((*session)->CloseSend().ok());
    EXPECT_TRUE((*session)->Finish().ok());
    v1::ScoreRequest request;
    request.add_models("b");
    request.mutable_features()->set_dim(kDim);
    EXPECT_EQ((*client)->Score(request).status().code(), absl::StatusCode::kNotFound);
    request.set_models(0, "c");
    EXPECT_TRUE((*client)->Score(request).ok());
  }

  // The streams keep going after the changes: wait for more answers (a
  // condition, not a fixed window).
  const absl::Time more_by = absl::Now() + absl::Seconds(30);
  while (answered.load() <= answered_mid + kStreams && absl::Now() < more_by) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed_chunks.load(), 0);
  EXPECT_EQ(wrong_version.load(), 0);
  EXPECT_GT(answered.load(), answered_mid);  // streams kept going after the changes
  // Every stream ended: the retired versions are freed (once the last
  // session lets go of its plan).
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (served->daemon->repository().memory().retired_versions != 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(served->daemon->repository().memory().retired_versions, 0);
}

TEST(OpsAdminTest, TokenMissingOrWrongIsUnauthenticated) {
  DaemonOptions options;
  options.ops.admin_token = "correct-horse-battery-staple";
  auto served = DirectoryDaemon::Start({{"a", kOld}}, options);
  ASSERT_NE(served, nullptr);
  auto channel =
      grpc::CreateChannel(served->daemon->address(), grpc::InsecureChannelCredentials());
  grpc::Status missing = AdminLoad(channel, "a");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status wrong = AdminLoad(channel, "a", "correct-horse-battery-stapler");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message().find("correct-horse"), std::string::npos);  // not echoed
  EXPECT_EQ(AdminUnload(channel, "a", "nope").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(AdminLoad(channel, "a", "correct-horse-battery-staple").ok());
  // The scoring service needs no token.
  auto client = Client::Connect(served->daemon->address());
  EXPECT_TRUE((*client)->ListModels().ok());
}

TEST(OpsAdminTest, LoadBeyondTheMemoryBudgetIsResourceExhausted) {
  const int64_t one_model = GenerateSyntheticModel(kOld)->ByteSize();
  auto served = DirectoryDaemon::Start({{"a", kOld}, {"b", kOther}}, {},
                                       {.memory_budget_bytes = one_model * 3 / 2,
                                        .skip_at_start = {"b"}});
  ASSERT_NE(served, nullptr);
  auto channel =
      grpc::CreateChannel(served->daemon->address(), grpc::InsecureChannelCredentials());
  grpc::Status status = AdminLoad(channel, "b");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  // Replacing "a" needs room for both versions while streams may hold the
  // old one: refused too; nothing changed.
  EXPECT_EQ(AdminLoad(channel, "a").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(served->daemon->repository().models().size(), 1u);
  EXPECT_EQ(served->daemon->repository().models()[0].version, 1u);
  // Bad names and the last model.
  EXPECT_EQ(AdminLoad(channel, "../etc").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AdminUnload(channel, "a").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace gmmscore
