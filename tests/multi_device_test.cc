// One daemon over several devices (--devices): streams and requests go
// where their models are placed, least-loaded first; a stream whose models
// share no device is refused with a message naming where each one is; the
// counters come per device (GetServerStats, /metrics). On the test backend
// (CPU in CI, one GPU on a GPU machine: two schedulers over it).
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/health_reporter.h"
#include "server/server_metrics.h"
#include "tests/adaptation_test_util.h"
#include "tests/faulty_backend.h"
#include "tests/forwarding_backend.h"
#include "tests/host_gather_backend.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

constexpr int kDim = 13;

std::vector<std::pair<std::string, SyntheticModelSpec>> Models() {
  std::vector<std::pair<std::string, SyntheticModelSpec>> models;
  for (const char* name : {"a", "b", "c"}) {
    models.push_back({name,
                      {.num_states = 20, .min_gaussians = 1, .max_gaussians = 4, .dim = kDim,
                       .seed = static_cast<uint64_t>(name[0])}});
  }
  return models;
}

// "a" on device 0 only, "b" on device 1 only, "c" on both.
std::unique_ptr<TestDaemon> StartPlaced() {
  return TestDaemon::Start(Models(), {}, {.count = 2, .placement = {{"a", {0}}, {"b", {1}}}});
}

// Streams `frames` frames through a stream of `models`; its first error,
// or OK once every answer came.
absl::Status RunStream(Client& client, const std::vector<std::string>& models, TestDaemon& daemon,
                       int64_t frames) {
  v1::StreamConfig config;
  for (const std::string& name : models) config.add_models(name);
  if (models.size() > 1) config.mutable_fusion()->set_method(v1::FUSION_METHOD_MAX);
  absl::StatusOr<std::unique_ptr<StreamSession>> session = client.StartStream(config);
  if (!session.ok()) return session.status();
  const FloatMatrix features = TestFeatures(daemon.model(models.front()), frames, 7);
  if (absl::Status pushed = (*session)->Push(features.view()); !pushed.ok()) return pushed;
  if (absl::Status closed = (*session)->CloseSend(); !closed.ok()) return closed;
  for (;;) {
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    if (absl::IsOutOfRange(answer.status())) break;
    if (!answer.ok()) return answer.status();
  }
  return (*session)->Finish();
}

int64_t FramesOn(TestDaemon& daemon, int device) {
  return daemon.daemon().devices().scheduler(device)->stats().frames;
}

// Frames scored on `device` once they reach `expected` (or after 5 s): a
// group's frames are counted after its answers' callbacks ran, so a client
// may hold every answer before the count moves.
int64_t SettledFramesOn(TestDaemon& daemon, int device, int64_t expected) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (FramesOn(daemon, device) != expected && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  return FramesOn(daemon, device);
}

// The daemon at `address`'s GetServerStats answer.
absl::StatusOr<v1::GetServerStatsResponse> ServerStats(const std::string& address) {
  std::unique_ptr<v1::AcousticScorer::Stub> stub = v1::AcousticScorer::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::GetServerStatsResponse stats;
  const grpc::Status got = stub->GetServerStats(&context, v1::GetServerStatsRequest(), &stats);
  if (!got.ok()) return absl::UnknownError(got.error_message());
  return stats;
}

// A session gives its place on its device back as it is destroyed, just
// after its client sees it finish: false if some device still counts a
// stream after 5 s.
bool WaitUntilNoStreamIsAssigned(const DeviceRouter& devices) {
  const absl::Time released = absl::Now() + absl::Seconds(5);
  while (devices.load(0).assigned_weight + devices.load(1).assigned_weight != 0 && absl::Now() < released) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  return devices.load(0).assigned_weight + devices.load(1).assigned_weight == 0;
}

TEST(MultiDeviceTest, StreamsAndRequestsGoWhereTheirModelsArePlaced) {
  std::unique_ptr<TestDaemon> daemon = StartPlaced();
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = daemon->NewClient();

  ASSERT_TRUE(RunStream(*client, {"a"}, *daemon, 30).ok());
  EXPECT_EQ(SettledFramesOn(*daemon, 0, 30), 30);
  EXPECT_EQ(FramesOn(*daemon, 1), 0);
  ASSERT_TRUE(RunStream(*client, {"b"}, *daemon, 20).ok());
  EXPECT_EQ(SettledFramesOn(*daemon, 1, 20), 20);
  EXPECT_EQ(FramesOn(*daemon, 0), 30);
  // Fused with a model placed everywhere: on the device of the other.
  ASSERT_TRUE(RunStream(*client, {"c", "b"}, *daemon, 10).ok());
  EXPECT_EQ(SettledFramesOn(*daemon, 1, 20 + 2 * 10), 20 + 2 * 10);

  v1::ScoreRequest request;
  request.add_models("a");
  const FloatMatrix frames = TestFeatures(daemon->model("a"), 5, 3);
  request.mutable_features()->set_num_frames(5);
  request.mutable_features()->set_dim(kDim);
  request.mutable_features()->mutable_values()->Add(frames.span().begin(), frames.span().end());
  absl::StatusOr<v1::ScoreResponse> scored = client->Score(request);
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_EQ(SettledFramesOn(*daemon, 0, 35), 35);
  // The same scores as the offline engine's (the replica on device 0).
  const FloatMatrix offline = daemon->ScoreOffline("a", frames.view());
  ASSERT_EQ(scored->scores_size(), 1);
  ASSERT_EQ(scored->scores(0).loglikes_size(), offline.rows() * offline.cols());
  for (int i = 0; i < scored->scores(0).loglikes_size(); ++i) {
    EXPECT_NEAR(scored->scores(0).loglikes(i), offline.span()[i], 1e-3) << i;
  }

  absl::StatusOr<std::vector<v1::ModelInfo>> models = client->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 3u);
  const std::string one = daemon->daemon().repository().device_name(0);
  EXPECT_EQ((*models)[0].device(), one);                  // a
  EXPECT_EQ((*models)[2].device(), absl::StrCat(one, ",", one));  // c: both (same kind)
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

TEST(MultiDeviceTest, ModelsOnNoCommonDeviceAreRefusedNamingWhereEachIs) {
  std::unique_ptr<TestDaemon> daemon = StartPlaced();
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = daemon->NewClient();
  const absl::Status stream = RunStream(*client, {"a", "b"}, *daemon, 10);
  EXPECT_TRUE(absl::IsFailedPrecondition(stream)) << stream;
  EXPECT_TRUE(absl::StrContains(stream.message(), "'a' on")) << stream;
  EXPECT_TRUE(absl::StrContains(stream.message(), "'b' on")) << stream;
  EXPECT_TRUE(absl::StrContains(stream.message(), "models[].devices")) << stream;

  v1::ScoreRequest request;
  request.add_models("a");
  request.add_models("b");
  request.mutable_features()->set_dim(kDim);
  const absl::StatusOr<v1::ScoreResponse> scored = client->Score(request);
  EXPECT_TRUE(absl::IsFailedPrecondition(scored.status())) << scored.status();
  // Nothing was scored, nothing is held, and the daemon serves on.
  EXPECT_EQ(FramesOn(*daemon, 0) + FramesOn(*daemon, 1), 0);
  EXPECT_EQ(daemon->daemon().devices().load(0).assigned_weight, 0);
  EXPECT_EQ(daemon->daemon().devices().load(1).assigned_weight, 0);
  EXPECT_TRUE(RunStream(*client, {"a", "c"}, *daemon, 10).ok());
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

TEST(MultiDeviceTest, OpenStreamsAreSpreadAndCountedPerDevice) {
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(Models(), {}, {.count = 2});
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = daemon->NewClient();
  // Four streams held open: two on each device, whatever order they came in.
  std::vector<std::unique_ptr<StreamSession>> open;
  for (int i = 0; i < 4; ++i) {
    v1::StreamConfig config;
    config.add_models("c");
    absl::StatusOr<std::unique_ptr<StreamSession>> session = client->StartStream(config);
    ASSERT_TRUE(session.ok()) << session.status();
    // An answer proves the config was taken (and the stream placed).
    ASSERT_TRUE((*session)->Push(TestFeatures(daemon->model("c"), 2, i).view()).ok());
    ASSERT_TRUE((*session)->Next().ok());
    open.push_back(*std::move(session));
  }
  const DeviceRouter& devices = daemon->daemon().devices();
  EXPECT_EQ(devices.load(0).assigned_weight, 2);
  EXPECT_EQ(devices.load(1).assigned_weight, 2);

  // Frames are counted once each group's answers were handed out.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (devices.TotalStats().frames < 8 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
  absl::StatusOr<v1::GetServerStatsResponse> response = ServerStats(daemon->address());
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::GetServerStatsResponse* stats = &*response;
  ASSERT_EQ(stats->devices_size(), 2);
  EXPECT_EQ(stats->devices(0).assigned_weight(), 2u);
  EXPECT_EQ(stats->devices(0).frames() + stats->devices(1).frames(), stats->frames());
  EXPECT_EQ(stats->frames(), 8u);

  ServerMetrics metrics;
  const std::string text = metrics.Render({.repository = &daemon->daemon().repository(), .devices = &devices});
  const std::string name = daemon->daemon().repository().device_name(1);
  EXPECT_TRUE(absl::StrContains(
      text, absl::StrCat("gmmscore_device_assigned_weight{device=\"", name, "\",index=\"1\"} 2")))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "gmmscore_device_model_bytes{")) << text;

  for (auto& session : open) {
    ASSERT_TRUE(session->CloseSend().ok());
    EXPECT_TRUE(session->Finish().ok());
  }
  open.clear();
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
  EXPECT_TRUE(WaitUntilNoStreamIsAssigned(devices));
}

std::string CheckHealth(const std::string& address, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return absl::StrCat("rpc:", status.error_code());
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

// `service`'s health once it reads `expected` (or after 10 s): the router
// judges a device before the health service is told.
std::string AwaitHealth(const std::string& address, const std::string& service,
                        const std::string& expected) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::string now = CheckHealth(address, service);
  while (now != expected && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
    now = CheckHealth(address, service);
  }
  return now;
}

// Waits (up to 10 s) until device `device` is failing or not, as asked.
bool AwaitFailing(const DeviceRouter& devices, int device, bool failing) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (devices.failing(device) != failing && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  return devices.failing(device) == failing;
}

// A device whose backend fails (FaultyBackend: CUDA's illegal-address error)
// is failing after DeviceRouter::kFailuresToMarkFailing failed dispatches:
// new streams go to its peer; a stream whose models are only there is still
// placed there and gets the device's error; its models read NOT_SERVING
// unless a replica is elsewhere, and the stats and metrics say so. Once it
// works again, the prober heals it and everything serves as before. Every
// device failing turns the overall status NOT_SERVING.
TEST(MultiDeviceTest, AFailingDeviceGetsNoNewStreamsItsModelsReadNotServingAndItRecovers) {
  std::vector<std::shared_ptr<std::atomic<bool>>> broken = {
      std::make_shared<std::atomic<bool>>(false), std::make_shared<std::atomic<bool>>(false)};
  DaemonOptions options;
  options.device_probe_interval = absl::Milliseconds(20);
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(
      Models(), options,
      {.count = 2,
       .placement = {{"a", {0}}, {"b", {1}}},
       .wrap = [&](int d, std::unique_ptr<ScoringBackend> inner) -> std::unique_ptr<ScoringBackend> {
         return std::make_unique<FaultyBackend>(std::move(inner), broken[d]);
       }});
  ASSERT_NE(daemon, nullptr);
  const DeviceRouter& devices = daemon->daemon().devices();
  const std::string address = daemon->address();
  std::unique_ptr<Client> client = daemon->NewClient();
  EXPECT_EQ(CheckHealth(address, "b"), "SERVING");

  broken[1]->store(true);
  for (int i = 0; i < DeviceRouter::kFailuresToMarkFailing; ++i) {
    const absl::Status failed = RunStream(*client, {"b"}, *daemon, 10);
    EXPECT_TRUE(absl::IsInternal(failed)) << failed;
    EXPECT_TRUE(absl::StrContains(failed.message(), "cudaErrorIllegalAddress")) << failed;
  }
  ASSERT_TRUE(AwaitFailing(devices, 1, true));
  EXPECT_FALSE(devices.failing(0));
  EXPECT_EQ(AwaitHealth(address, "b", "NOT_SERVING"), "NOT_SERVING");  // its only replica
  EXPECT_EQ(CheckHealth(address, "c"), "SERVING");  // a replica on device 0 serves
  EXPECT_EQ(CheckHealth(address, "a"), "SERVING");
  EXPECT_EQ(CheckHealth(address, ""), "SERVING");
  // Fail open: "b" is placed on its failing device and gets its error.
  const absl::Status still = RunStream(*client, {"b"}, *daemon, 10);
  EXPECT_TRUE(absl::IsInternal(still)) << still;
  // "c" is on both; device 1 is the less loaded after the first stream, but
  // failing: all three go to device 0.
  // The four "b" streams' frames, once counted (after their answers).
  const int64_t frames_on_1 = SettledFramesOn(*daemon, 1, 4 * 10);
  ASSERT_EQ(frames_on_1, 4 * 10);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunStream(*client, {"c"}, *daemon, 10).ok());
  EXPECT_EQ(SettledFramesOn(*daemon, 0, 30), 30);
  EXPECT_EQ(FramesOn(*daemon, 1), frames_on_1);

  absl::StatusOr<v1::GetServerStatsResponse> answer = ServerStats(address);
  ASSERT_TRUE(answer.ok()) << answer.status();
  const v1::GetServerStatsResponse& stats = *answer;
  ASSERT_EQ(stats.devices_size(), 2);
  EXPECT_FALSE(stats.devices(0).failing());
  EXPECT_TRUE(stats.devices(1).failing());
  EXPECT_GE(stats.devices(1).failed_dispatches(),
            static_cast<uint64_t>(DeviceRouter::kFailuresToMarkFailing));
  EXPECT_EQ(stats.devices(1).last_error(), FaultyBackend::kError);
  ServerMetrics metrics;
  const std::string text = metrics.Render({.repository = &daemon->daemon().repository(), .devices = &devices});
  const std::string name = daemon->daemon().repository().device_name(1);
  EXPECT_TRUE(absl::StrContains(text, absl::StrCat("gmmscore_device_failing{device=\"", name, "\",index=\"1\"} 1")))
      << text;

  // Both failing: the server as a whole cannot serve.
  broken[0]->store(true);
  for (int i = 0; i < DeviceRouter::kFailuresToMarkFailing; ++i) {
    EXPECT_TRUE(absl::IsInternal(RunStream(*client, {"a"}, *daemon, 10)));
  }
  ASSERT_TRUE(AwaitFailing(devices, 0, true));
  EXPECT_EQ(AwaitHealth(address, "", "NOT_SERVING"), "NOT_SERVING");
  EXPECT_EQ(CheckHealth(address, "c"), "NOT_SERVING");  // told before the overall status

  // Repaired: the prober finds out, and everything serves again.
  broken[0]->store(false);
  broken[1]->store(false);
  ASSERT_TRUE(AwaitFailing(devices, 0, false));
  ASSERT_TRUE(AwaitFailing(devices, 1, false));
  EXPECT_EQ(AwaitHealth(address, "", "SERVING"), "SERVING");
  EXPECT_EQ(AwaitHealth(address, "b", "SERVING"), "SERVING");
  EXPECT_EQ(AwaitHealth(address, "c", "SERVING"), "SERVING");
  EXPECT_TRUE(RunStream(*client, {"b"}, *daemon, 10).ok());
  EXPECT_TRUE(RunStream(*client, {"a", "c"}, *daemon, 10).ok());
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

// Two devices, every model on both unless `placement` says otherwise;
// device 0's backend fails while `broken` is set (FaultyBackend), device
// 1's never.
std::unique_ptr<TestDaemon> StartWithFaultyDevice0(std::shared_ptr<std::atomic<bool>> broken,
                                                   std::map<std::string, std::vector<int>> placement = {}) {
  return TestDaemon::Start(
      Models(), {},
      {.count = 2,
       .placement = std::move(placement),
       .wrap = [broken](int d, std::unique_ptr<ScoringBackend> inner) -> std::unique_ptr<ScoringBackend> {
         // Gathering adaptation statistics as CUDA does, on the CPU too.
         inner = HostGatherOnCpu(d, std::move(inner));
         if (d == 1) return inner;
         return std::make_unique<FaultyBackend>(std::move(inner), broken);
       }});
}

// Pushes one chunk of `frames` (its stream frames from `first`) and checks
// its answer against the offline engine: every model's scores where the
// stream names several (fused), the one matrix otherwise.
void ExpectChunkScored(StreamSession& session, TestDaemon& daemon, const std::vector<std::string>& models,
                       const FloatMatrix& frames, int64_t first) {
  ASSERT_TRUE(session.Push(frames.view()).ok());
  absl::StatusOr<StreamAnswer> answer = session.Next();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->first_frame, first);
  for (size_t m = 0; m < models.size(); ++m) {
    const FloatMatrix& got = models.size() > 1 ? answer->model_scores.at(m) : answer->scores;
    const FloatMatrix want = daemon.ScoreOffline(models[m], frames.view());
    const FloatMatrix allow = ScoreAllowance(daemon.model(models[m]), frames.view());
    ASSERT_EQ(got.rows(), want.rows());
    ASSERT_EQ(got.cols(), want.cols());
    for (int64_t i = 0; i < want.rows() * want.cols(); ++i) {
      ASSERT_NEAR(got.data()[i], want.data()[i], allow.data()[i] + 1e-4) << models[m] << " at " << i;
    }
  }
  if (models.size() > 1) EXPECT_EQ(answer->scores.rows(), frames.rows());
}

// A stream whose chunk fails with a device fault moves to a healthy device
// holding its models, where the chunk is scored again: the client gets
// every answer, right, and no error. Single-model and fused streams alike,
// moved off one device and later back off the other; the moves are counted
// per device in /metrics. A stream with no healthy peer to go to is not
// moved (the first test above).
TEST(MultiDeviceTest, StreamsMoveOffADeviceThatFailsTheirChunksAndLoseNoChunk) {
  std::vector<std::shared_ptr<std::atomic<bool>>> broken = {
      std::make_shared<std::atomic<bool>>(false), std::make_shared<std::atomic<bool>>(false)};
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(
      Models(), {},
      {.count = 2,
       .wrap = [&](int d, std::unique_ptr<ScoringBackend> inner) -> std::unique_ptr<ScoringBackend> {
         return std::make_unique<FaultyBackend>(std::move(inner), broken[d]);
       }});
  ASSERT_NE(daemon, nullptr);
  const DeviceRouter& devices = daemon->daemon().devices();
  std::unique_ptr<Client> client = daemon->NewClient();
  const std::vector<std::string> single = {"c"};
  const std::vector<std::string> fused = {"a", "c"};
  // Placed least-loaded first: the single stream on device 0, the fused one
  // (weight 2) on device 1.
  v1::StreamConfig single_config;
  single_config.add_models("c");
  v1::StreamConfig fused_config;
  for (const std::string& name : fused) fused_config.add_models(name);
  fused_config.mutable_fusion()->set_method(v1::FUSION_METHOD_MAX);
  // The single stream answers a chunk before the fused one opens, so that
  // its config was placed first (a config is read on the server's time).
  absl::StatusOr<std::unique_ptr<StreamSession>> one = client->StartStream(single_config);
  ASSERT_TRUE(one.ok()) << one.status();
  const FloatMatrix opening = TestFeatures(daemon->model("c"), 12, 1);
  ExpectChunkScored(**one, *daemon, single, opening, 0);
  ASSERT_EQ(SettledFramesOn(*daemon, 0, 12), 12);
  absl::StatusOr<std::unique_ptr<StreamSession>> two = client->StartStream(fused_config);
  ASSERT_TRUE(two.ok()) << two.status();
  ExpectChunkScored(**two, *daemon, fused, opening, 0);
  int64_t first = 12;
  auto chunk_round = [&](uint64_t seed) {
    const FloatMatrix frames = TestFeatures(daemon->model("c"), 12, seed);
    ExpectChunkScored(**one, *daemon, single, frames, first);
    ExpectChunkScored(**two, *daemon, fused, frames, first);
    first += frames.rows();
  };
  // Frames are counted per model scored: a fused chunk of 12 counts 24.
  ASSERT_EQ(SettledFramesOn(*daemon, 0, 12), 12);
  ASSERT_EQ(SettledFramesOn(*daemon, 1, 24), 24);

  broken[0]->store(true);  // the single stream's device: it moves to device 1
  chunk_round(2);
  chunk_round(3);
  EXPECT_EQ(devices.moves_from(0), 1);
  EXPECT_EQ(devices.moves_from(1), 0);
  EXPECT_EQ(SettledFramesOn(*daemon, 1, 24 + 2 * 36), 24 + 2 * 36);

  broken[0]->store(false);  // repaired; now device 1 breaks: both move to 0
  broken[1]->store(true);
  chunk_round(4);
  chunk_round(5);
  EXPECT_EQ(devices.moves_from(0), 1);
  EXPECT_EQ(devices.moves_from(1), 2);
  // Device 0 also counts the 12 frames of the dispatch that failed there.
  EXPECT_EQ(SettledFramesOn(*daemon, 0, 24 + 2 * 36), 24 + 2 * 36);
  for (StreamSession* session : {one->get(), two->get()}) {
    ASSERT_TRUE(session->CloseSend().ok());
    EXPECT_TRUE(absl::IsOutOfRange(session->Next().status()));
    EXPECT_TRUE(session->Finish().ok());
  }
  ServerMetrics metrics;
  const std::string text = metrics.Render({.repository = &daemon->daemon().repository(), .devices = &devices});
  const std::string name = daemon->daemon().repository().device_name(1);
  EXPECT_TRUE(absl::StrContains(
      text, absl::StrCat("gmmscore_device_stream_moves_total{device=\"", name, "\",index=\"1\"} 2")))
      << text;
  broken[1]->store(false);
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

// Reports fixed pinned score memory, as a CUDA backend would.
class PinnedReportingBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  PinnedScoresStats pinned_scores() const override {
    return {.held_bytes = int64_t{24} << 20, .in_use_bytes = int64_t{8} << 20, .refusals = 3};
  }
};

TEST(MultiDeviceTest, PinnedScoreMemoryIsReportedPerDevice) {
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(
      Models(), {},
      {.count = 2,
       .wrap = [](int d, std::unique_ptr<ScoringBackend> inner) -> std::unique_ptr<ScoringBackend> {
         if (d == 0) return inner;  // the CPU backend: none
         return std::make_unique<PinnedReportingBackend>(std::move(inner));
       }});
  ASSERT_NE(daemon, nullptr);
  const DeviceRouter& devices = daemon->daemon().devices();
  ServerMetrics metrics;
  const std::string text = metrics.Render({.repository = &daemon->daemon().repository(), .devices = &devices});
  auto sample = [&](const char* family, int d, const char* value) {
    return absl::StrCat(family, "{device=\"", devices.name(d), "\",index=\"", d, "\"} ", value);
  };
  EXPECT_TRUE(absl::StrContains(text, sample("gmmscore_device_pinned_scores_bytes", 1, "25165824"))) << text;
  EXPECT_TRUE(absl::StrContains(text, sample("gmmscore_device_pinned_scores_in_use_bytes", 1, "8388608")));
  EXPECT_TRUE(absl::StrContains(text, sample("gmmscore_device_pinned_scores_refusals_total", 1, "3")));
  EXPECT_TRUE(absl::StrContains(text, sample("gmmscore_device_pinned_scores_bytes", 0, "0")));

  absl::StatusOr<v1::GetServerStatsResponse> answer = ServerStats(daemon->address());
  ASSERT_TRUE(answer.ok()) << answer.status();
  const v1::GetServerStatsResponse& stats = *answer;
  ASSERT_EQ(stats.devices_size(), 2);
  EXPECT_EQ(stats.devices(0).pinned_scores_bytes(), 0u);
  EXPECT_EQ(stats.devices(1).pinned_scores_bytes(), uint64_t{24} << 20);
  EXPECT_EQ(stats.devices(1).pinned_scores_in_use_bytes(), uint64_t{8} << 20);
  EXPECT_EQ(stats.devices(1).pinned_scores_refusals(), 3u);
}

// An fMLLR-adapting stream moves like any other (its transform is applied
// wherever it scores); a MAP-adapting one does not, since its adapted
// models are prepared on the device it started on: its chunk gets the
// device's error.
TEST(MultiDeviceTest, AnFmllrStreamMovesAMapStreamStays) {
  auto broken = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<TestDaemon> daemon = StartWithFaultyDevice0(broken);
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = daemon->NewClient();
  const FloatMatrix frames = TestFeatures(daemon->model("c"), 10, 5);
  auto run = [&](v1::AdaptationConfig::Method method) -> absl::Status {
    v1::StreamConfig config;
    config.add_models("c");
    config.mutable_adaptation()->set_method(method);
    config.mutable_adaptation()->set_start_after_frames(1000000);  // no update within the test
    absl::StatusOr<std::unique_ptr<StreamSession>> session = client->StartStream(config);
    if (!session.ok()) return session.status();
    if (absl::Status pushed = (*session)->Push(frames.view()); !pushed.ok()) return pushed;
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    if (answer.ok()) {
      EXPECT_TRUE(answer->adaptation.has_value());
      (*session)->CloseSend().IgnoreError();
      EXPECT_TRUE(absl::IsOutOfRange((*session)->Next().status()));
    }
    const absl::Status finished = (*session)->Finish();
    return answer.ok() ? finished : answer.status();
  };
  broken->store(true);  // each stream is placed on device 0 (both idle, the lower index)
  const absl::Status map = run(v1::AdaptationConfig::MAP_MEANS);
  EXPECT_TRUE(absl::IsInternal(map)) << map;
  EXPECT_EQ(daemon->daemon().devices().moves_from(0), 0);
  // Else the MAP stream, still counted on device 0, sends the next to device 1.
  ASSERT_TRUE(WaitUntilNoStreamIsAssigned(daemon->daemon().devices()));
  const absl::Status fmllr = run(v1::AdaptationConfig::FMLLR);
  EXPECT_TRUE(fmllr.ok()) << fmllr;
  EXPECT_EQ(daemon->daemon().devices().moves_from(0), 1);
  broken->store(false);
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

// An fMLLR stream whose device gathers its statistics while scoring moves
// off that device in the middle of an update: the update is still made from
// every frame before it (two chunks read from the first device's
// statistics, the moved chunk gathered on the host), and every update
// equals the offline estimate from its frames and their answers' posteriors.
TEST(MultiDeviceTest, AnFmllrStreamKeepsItsStatisticsWhenItMoves) {
  const uint64_t seed = std::random_device()();
  SCOPED_TRACE(seed);
  auto broken = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<TestDaemon> daemon = StartWithFaultyDevice0(broken);
  ASSERT_NE(daemon, nullptr);
  auto stub = v1::AcousticScorer::NewStub(
      grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials()));
  v1::StreamConfig config;
  config.add_models("c");
  config.set_stream_id("moving");
  v1::AdaptationConfig* adaptation = config.mutable_adaptation();
  adaptation->set_method(v1::AdaptationConfig::FMLLR);
  adaptation->set_start_after_frames(60);
  adaptation->set_update_every_frames(60);
  adaptation->set_save_as("moving");
  const DiagGmmModel& model = daemon->model("c");
  const FloatMatrix x = TestFeatures(model, 200, seed);
  int chunks = 0;
  // Placed on device 0 (both idle, the lower index), which fails from the
  // third chunk on.
  const LockstepStream run = RunLockstep(stub.get(), config, x.view(), [&] {
    if (++chunks == 3) broken->store(true);
    return int64_t{20};
  });
  ASSERT_TRUE(run.status.ok()) << run.status.error_message();
  EXPECT_EQ(daemon->daemon().devices().moves_from(0), 1);
  ASSERT_FALSE(run.published.empty());
  for (const auto& [version, published] : run.published) {
    const int64_t n = static_cast<int64_t>(published.report().frames());
    SCOPED_TRACE(testing::Message() << "version " << version << " from " << n << " frames");
    absl::StatusOr<FmllrResult> offline =
        OfflineFmllr(model, x.view().Rows(0, n), PairsOfAnswers(run.answers, n, {}));
    ASSERT_TRUE(offline.ok()) << offline.status();
    EXPECT_NEAR(published.report().count(), offline->report.count, 1e-6 * offline->report.count);
    ASSERT_EQ(published.transform().values_size(), static_cast<int>(offline->transform.size()));
    for (size_t i = 0; i < offline->transform.size(); ++i) {
      ASSERT_NEAR(published.transform().values(i), offline->transform[i], 1e-4) << i;
    }
  }
  const AdaptationCounters counters = daemon->daemon().adaptation_counters();
  EXPECT_EQ(counters.device_gathered_frames, 40);  // the two chunks before the move
  EXPECT_EQ(counters.skipped_frames, 0);
  EXPECT_EQ(counters.failed_updates, 0);
  broken->store(false);
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

// A unary Score whose job fails with a device fault is scored again on a
// healthy peer, as a stream's chunk is: single and fused requests succeed,
// right, while device 0 fails under them; once it is marked failing, new
// requests go to device 1 at once (no more moves). With no peer holding its
// models, a request still gets the device's error.
TEST(MultiDeviceTest, ScoreRequestsMoveOffADeviceThatFailsThem) {
  auto broken = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<TestDaemon> daemon = StartWithFaultyDevice0(broken, {{"b", {0}}});
  ASSERT_NE(daemon, nullptr);
  const DeviceRouter& devices = daemon->daemon().devices();
  std::unique_ptr<Client> client = daemon->NewClient();
  const FloatMatrix frames = TestFeatures(daemon->model("c"), 9, 3);
  auto request_of = [&](const std::vector<std::string>& models) {
    v1::ScoreRequest request;
    for (const std::string& name : models) request.add_models(name);
    if (models.size() > 1) request.mutable_fusion()->set_method(v1::FUSION_METHOD_MAX);
    request.mutable_features()->set_num_frames(frames.rows());
    request.mutable_features()->set_dim(frames.cols());
    request.mutable_features()->mutable_values()->Add(frames.data(), frames.data() + frames.rows() * frames.cols());
    return request;
  };
  auto expect_scored = [&](const std::vector<std::string>& models) {
    absl::StatusOr<v1::ScoreResponse> response = client->Score(request_of(models));
    ASSERT_TRUE(response.ok()) << response.status();
    ASSERT_EQ(response->scores_size(), static_cast<int>(models.size()));
    for (size_t m = 0; m < models.size(); ++m) {
      const FloatMatrix want = daemon->ScoreOffline(models[m], frames.view());
      const FloatMatrix allow = ScoreAllowance(daemon->model(models[m]), frames.view());
      const v1::StateScores& got = response->scores(static_cast<int>(m));
      ASSERT_EQ(got.loglikes_size(), want.rows() * want.cols());
      for (int i = 0; i < got.loglikes_size(); ++i) {
        ASSERT_NEAR(got.loglikes(i), want.data()[i], allow.data()[i] + 1e-4) << models[m] << " at " << i;
      }
    }
    if (models.size() > 1) EXPECT_EQ(response->fused().num_frames(), static_cast<uint32_t>(frames.rows()));
  };
  // Each goes to device 0 first: ties go to the lower index, and then
  // device 1 has the recent backend time.
  broken->store(true);
  expect_scored({"c"});       // fails on 0, scored on 1
  expect_scored({"a", "c"});  // the same, fused
  EXPECT_EQ(devices.moves_from(0), 2);
  const absl::Status alone = client->Score(request_of({"b"})).status();  // only on device 0
  EXPECT_TRUE(absl::IsInternal(alone)) << alone;
  ASSERT_TRUE(devices.failing(0));  // three faults in a row
  expect_scored({"c"});  // placed on device 1 at once
  EXPECT_EQ(devices.moves_from(0), 2);
  broken->store(false);
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

// A posterior fusion's chunks are fused one at a time, in order (the later
// ones held until the one before is back): a stream that moves while
// several are queued still answers each once, in order, fused from the
// right state: the same fused scores as a stream that never moved.
TEST(MultiDeviceTest, APosteriorFusedStreamMovesWithItsHeldChunksInOrder) {
  v1::StreamConfig config;
  config.add_models("a");
  config.add_models("c");
  config.mutable_fusion()->set_method(v1::FUSION_METHOD_POSTERIOR);
  // On a fresh daemon (its first stream goes to device 0), every chunk
  // pushed before any answer is read, so that the later ones are held while
  // the first is scored; device 0 breaks before chunk `break_before` (-1:
  // never).
  auto run = [&](int break_before, int64_t* moves) -> std::vector<StreamAnswer> {
    std::vector<StreamAnswer> answers;
    auto broken = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<TestDaemon> daemon = StartWithFaultyDevice0(broken);
    EXPECT_NE(daemon, nullptr);
    if (daemon == nullptr) return answers;
    std::unique_ptr<Client> client = daemon->NewClient();
    absl::StatusOr<std::unique_ptr<StreamSession>> session = client->StartStream(config);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return answers;
    for (uint64_t i = 0; i < 6; ++i) {
      if (static_cast<int>(i) == break_before) broken->store(true);
      const FloatMatrix chunk = TestFeatures(daemon->model("a"), 8, i + 1);
      EXPECT_TRUE((*session)->Push(chunk.view()).ok());
    }
    EXPECT_TRUE((*session)->CloseSend().ok());
    for (;;) {
      absl::StatusOr<StreamAnswer> answer = (*session)->Next();
      if (absl::IsOutOfRange(answer.status())) break;
      EXPECT_TRUE(answer.ok()) << answer.status();
      if (!answer.ok()) break;
      answers.push_back(*std::move(answer));
    }
    EXPECT_TRUE((*session)->Finish().ok());
    *moves = daemon->daemon().devices().moves_from(0);
    EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
    return answers;
  };
  int64_t moves = -1;
  const std::vector<StreamAnswer> steady = run(-1, &moves);
  ASSERT_EQ(steady.size(), 6u);
  EXPECT_EQ(moves, 0);
  for (int break_before : {0, 2}) {
    const std::vector<StreamAnswer> moved = run(break_before, &moves);
    ASSERT_EQ(moved.size(), steady.size()) << break_before;
    EXPECT_EQ(moves, 1) << break_before;
    for (size_t i = 0; i < steady.size(); ++i) {
      EXPECT_EQ(moved[i].first_frame, steady[i].first_frame);
      EXPECT_TRUE(moved[i].scores == steady[i].scores) << "chunk " << i << ", break before " << break_before;
      EXPECT_EQ(moved[i].dominant_model, steady[i].dominant_model) << "chunk " << i;
    }
  }
}

// One device: its failure turns every model and the overall status
// NOT_SERVING (a liveness probe restarts the daemon), while streams are
// still taken and get the device's own error; repaired, all serves again.
TEST(MultiDeviceTest, AOneDeviceDaemonWhoseDeviceFailsReadsNotServingAndKeepsTrying) {
  auto broken = std::make_shared<std::atomic<bool>>(false);
  DaemonOptions options;
  options.device_probe_interval = absl::Milliseconds(20);
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(
      Models(), options,
      {.wrap = [&](int, std::unique_ptr<ScoringBackend> inner) -> std::unique_ptr<ScoringBackend> {
         return std::make_unique<FaultyBackend>(std::move(inner), broken);
       }});
  ASSERT_NE(daemon, nullptr);
  const std::string address = daemon->address();
  std::unique_ptr<Client> client = daemon->NewClient();
  ASSERT_TRUE(RunStream(*client, {"a"}, *daemon, 10).ok());
  EXPECT_EQ(CheckHealth(address, ""), "SERVING");
  broken->store(true);
  for (int i = 0; i < DeviceRouter::kFailuresToMarkFailing; ++i) {
    EXPECT_TRUE(absl::IsInternal(RunStream(*client, {"a"}, *daemon, 10)));
  }
  EXPECT_EQ(AwaitHealth(address, "", "NOT_SERVING"), "NOT_SERVING");
  EXPECT_EQ(CheckHealth(address, HealthReporter::kScorerService), "NOT_SERVING");
  for (const char* model : {"a", "b", "c"}) EXPECT_EQ(CheckHealth(address, model), "NOT_SERVING") << model;
  const absl::Status tried = RunStream(*client, {"b"}, *daemon, 10);
  EXPECT_TRUE(absl::IsInternal(tried)) << tried;
  broken->store(false);
  EXPECT_EQ(AwaitHealth(address, "", "SERVING"), "SERVING");
  EXPECT_EQ(AwaitHealth(address, "b", "SERVING"), "SERVING");
  EXPECT_TRUE(RunStream(*client, {"b"}, *daemon, 10).ok());
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

}  // namespace
}  // namespace gmmscore
