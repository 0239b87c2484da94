// 64 concurrent streams with uneven chunks (1..50 frames) and different model
// sets, fusion methods and transforms get, chunk by chunk and in order, the
// scores the offline engine gives for the same frames (<= 1e-4 nats), while
// the scheduler batches chunks of different streams into shared calls.
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/fusion.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

constexpr int kStreams = 64;

struct StreamSetup {
  std::vector<std::string> models;
  v1::FusionOptions fusion;
  FusionOptions engine_fusion;  // the same, for the offline fusion
  std::vector<float> transform;  // empty: none
  FloatMatrix features;
  std::vector<int> chunk_sizes;
};

StreamSetup MakeSetup(int i, TestDaemon& daemon) {
  std::mt19937_64 rng(1000 + i);
  StreamSetup setup;
  if (i % 5 == 4) {
    setup.models = {"other"};  // a model with its own state set, alone
  } else {
    const int count = 1 + i % 3;
    for (int k = 0; k < count; ++k) setup.models.push_back(absl::StrCat("spk", (i + k) % 4));
  }
  switch (i % 3) {
    case 0:
      setup.fusion.set_method(v1::FUSION_METHOD_MAX);
      setup.engine_fusion.method = FusionMethod::kMax;
      break;
    case 1:
      setup.fusion.set_method(v1::FUSION_METHOD_LOG_SUM_EXP);
      setup.engine_fusion.method = FusionMethod::kLogSumExp;
      for (size_t m = 0; m < setup.models.size(); ++m) {
        setup.fusion.add_weights(1.0f + m);
        setup.engine_fusion.weights.push_back(1.0f + m);
      }
      break;
    default:
      setup.fusion.set_method(v1::FUSION_METHOD_POSTERIOR);
      setup.fusion.set_window_frames(1 + i % 30);
      setup.fusion.set_acoustic_scale(0.25f);
      setup.engine_fusion = {.method = FusionMethod::kPosterior,
                             .window_frames = 1 + i % 30,
                             .acoustic_scale = 0.25};
  }
  const DiagGmmModel& first = daemon.model(setup.models.front());
  if (i % 4 == 1) setup.transform = TestTransform(first.dim(), i);
  const int frames = 80 + static_cast<int>(rng() % 170);
  setup.features = TestFeatures(first, frames, 2000 + i);
  for (int done = 0; done < frames;) {
    const int size = std::min<int>(1 + rng() % 50, frames - done);
    setup.chunk_sizes.push_back(size);
    done += size;
  }
  return setup;
}

// Largest |a - b| / allowance over rows [first, first + a.rows) of `b`
// (<= 1 passes). `allowance` is T x S, or a single scale when `scale` > 0.
double WorstRatio(const FloatMatrix& a, const FloatMatrix& b, int64_t first,
                  const FloatMatrix* allowance, double scale = 0.0) {
  if (a.cols() != b.cols()) return INFINITY;
  double worst = 0.0;
  for (int64_t t = 0; t < a.rows(); ++t) {
    for (int64_t s = 0; s < a.cols(); ++s) {
      const double diff = std::abs(static_cast<double>(a.at(t, s)) - b.at(first + t, s));
      const double allowed = allowance != nullptr ? allowance->at(first + t, s) : scale;
      worst = std::max(worst, diff / allowed);
    }
  }
  return worst;
}

// Runs one stream and returns "" or what went wrong.
std::string RunStream(int i, Client& client, TestDaemon& daemon) {
  StreamSetup setup = MakeSetup(i, daemon);

  // The offline engine: transform, then every model over the whole utterance,
  // then the fusion over the whole utterance in one call.
  FloatMatrix frames = setup.features;
  if (!setup.transform.empty()) {
    const int dim = setup.features.cols();
    auto transform = FeatureTransform::Create(dim, dim + 1, setup.transform);
    if (!transform.ok() || !transform->Apply(setup.features.view(), &frames).ok()) {
      return "bad test transform";
    }
  }
  std::vector<FloatMatrix> offline;
  std::vector<FloatMatrix> allowance;
  double fused_allowance = 0.0;  // fusion is 1-Lipschitz in its inputs; posterior
                                 // weights add up to 2 * scale times more
  for (const std::string& name : setup.models) {
    offline.push_back(daemon.ScoreOffline(name, frames.view()));
    allowance.push_back(ScoreAllowance(daemon.model(name), frames.view()));
    for (float a : allowance.back().span()) fused_allowance = std::max<double>(fused_allowance, a);
  }
  fused_allowance *= 1.0 + 2.0 * setup.engine_fusion.acoustic_scale;
  FusedScores offline_fused;
  if (setup.models.size() > 1) {
    auto fusion = ModelFusion::Create(setup.models.size(), setup.engine_fusion);
    std::vector<ConstMatrixView> views;
    for (const FloatMatrix& m : offline) views.push_back(m.view());
    if (!fusion.ok() || !fusion->Fuse(views, &offline_fused).ok()) return "offline fusion failed";
  }

  v1::StreamConfig config;
  for (const std::string& name : setup.models) config.add_models(name);
  *config.mutable_fusion() = setup.fusion;
  config.set_stream_id(absl::StrCat("stream-", i));
  if (!setup.transform.empty()) {
    const int dim = setup.features.cols();
    config.mutable_transform()->set_rows(dim);
    config.mutable_transform()->set_cols(dim + 1);
    config.mutable_transform()->mutable_values()->Add(setup.transform.begin(),
                                                      setup.transform.end());
  }
  absl::StatusOr<std::unique_ptr<StreamSession>> session = client.StartStream(config);
  if (!session.ok()) return session.status().ToString();
  int64_t pushed = 0;
  for (int size : setup.chunk_sizes) {
    absl::Status status = (*session)->Push(setup.features.view().Rows(pushed, size));
    if (!status.ok()) return absl::StrCat("push: ", status.ToString());
    pushed += size;
  }
  if (!(*session)->CloseSend().ok()) return "close";

  int64_t first = 0;
  for (size_t k = 0; k < setup.chunk_sizes.size(); ++k) {
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    if (!answer.ok()) return absl::StrCat("answer ", k, ": ", answer.status().ToString());
    if (answer->first_frame != first || answer->scores.rows() != setup.chunk_sizes[k]) {
      return absl::StrCat("answer ", k, " covers frames from ", answer->first_frame, " (",
                          answer->scores.rows(), ") instead of ", first, " (",
                          setup.chunk_sizes[k], ")");
    }
    if (setup.models.size() == 1) {
      const double ratio = WorstRatio(answer->scores, offline[0], first, &allowance[0]);
      if (ratio > 1.0) return absl::StrCat("answer ", k, " differs by ", ratio, " allowances");
    } else {
      if (answer->model_scores.size() != setup.models.size()) return "missing model scores";
      for (size_t m = 0; m < setup.models.size(); ++m) {
        const double ratio =
            WorstRatio(answer->model_scores[m], offline[m], first, &allowance[m]);
        if (ratio > 1.0) {
          return absl::StrCat("answer ", k, " model ", setup.models[m], " differs by ", ratio,
                              " allowances");
        }
      }
      const double ratio =
          WorstRatio(answer->scores, offline_fused.loglikes, first, nullptr, fused_allowance);
      if (ratio > 1.0) {
        return absl::StrCat("answer ", k, " fused differs by ", ratio, " allowances");
      }
      if (answer->fusion.model_share_size() != static_cast<int>(setup.models.size())) {
        return "no fusion report";
      }
    }
    first += setup.chunk_sizes[k];
  }
  absl::StatusOr<StreamAnswer> after = (*session)->Next();
  if (!absl::IsOutOfRange(after.status())) {
    return absl::StrCat("after the last answer: ", after.status().ToString());
  }
  absl::Status end = (*session)->Finish();
  return end.ok() ? "" : absl::StrCat("finish: ", end.ToString());
}

// Both gRPC APIs that can carry StreamScore (server/scorer_service.h), on
// one device and on two (two schedulers over the test backend: over one GPU
// on a GPU machine), whose answers must be the same.
struct EquivalenceCase {
  StreamApi api;
  int devices;
};

class StreamEquivalenceTest : public testing::TestWithParam<EquivalenceCase> {};

TEST_P(StreamEquivalenceTest, ConcurrentStreamsGetTheOfflineScoresChunkByChunkInOrder) {
  std::vector<std::pair<std::string, SyntheticModelSpec>> models;
  for (int m = 0; m < 4; ++m) {
    models.push_back({absl::StrCat("spk", m),
                      {.num_states = 48, .min_gaussians = 2, .max_gaussians = 8, .dim = 39,
                       .seed = static_cast<uint64_t>(10 + m)}});
  }
  models.push_back(
      {"other", {.num_states = 33, .min_gaussians = 1, .max_gaussians = 5, .dim = 39, .seed = 20}});
  // A short queue delay keeps the test fast; batching still happens because
  // chunks arrive while the backend is busy.
  DaemonOptions options;
  options.scheduler.max_queue_delay = absl::Microseconds(500);
  options.stream_api = GetParam().api;
  options.stream_threads = 3;  // streams share queues (kStreams of them)
  std::unique_ptr<TestDaemon> daemon =
      TestDaemon::Start(models, options, {.count = GetParam().devices});
  ASSERT_NE(daemon, nullptr);

  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 4; ++c) clients.push_back(daemon->NewClient());
  std::vector<std::string> errors(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] { errors[i] = RunStream(i, *clients[i % 4], *daemon); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) EXPECT_EQ(errors[i], "") << "stream " << i;

  const BatchSchedulerStats stats = daemon->daemon().scheduler_stats();
  EXPECT_GT(stats.max_group_jobs, 1) << "no Score call served chunks of several streams";
  EXPECT_LT(stats.group_calls, stats.jobs) << "every chunk was scored alone";
  // Every device scored a share (streams are placed least-loaded first).
  const DeviceRouter& devices = daemon->daemon().devices();
  ASSERT_EQ(devices.num_devices(), GetParam().devices);
  for (int d = 0; d < devices.num_devices(); ++d) {
    EXPECT_GT(devices.scheduler(d)->stats().frames, stats.frames / (4 * devices.num_devices()))
        << "device " << d << " scored too little of " << stats.frames << " frames";
  }
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
}

INSTANTIATE_TEST_SUITE_P(Apis, StreamEquivalenceTest,
                         testing::Values(EquivalenceCase{StreamApi::kCompletionQueue, 1},
                                         EquivalenceCase{StreamApi::kCallback, 1},
                                         EquivalenceCase{StreamApi::kCompletionQueue, 2}),
                         [](const testing::TestParamInfo<EquivalenceCase>& info) {
                           const std::string api =
                               info.param.api == StreamApi::kCallback ? "Callback" : "CompletionQueue";
                           return info.param.devices == 1 ? api : absl::StrCat(api, "TwoDevices");
                         });

}  // namespace
}  // namespace gmmscore
