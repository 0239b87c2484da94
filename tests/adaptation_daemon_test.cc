// Live adaptation through the daemon (StreamConfig.adaptation): a stream
// adapted from frames [0, N) scores the chunks after the switch with what
// the offline path (est-fmllr's and adapt-map's library calls) makes from
// the same frames and posteriors; bad adaptation input gets a clear status
// while another stream carries on. Fresh random features each run.
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/train/fmllr_estimate.h"
#include "kernels/train/fmllr_stats.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/map_update.h"
#include "kernels/train/natural_gmm.h"
#include "kernels/train/state_posteriors.h"
#include "kernels/train/stats_reference.h"
#include "proto/wire_convert.h"
#include "client/client.h"
#include "tests/adaptation_test_util.h"
#include "tests/host_gather_backend.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

constexpr int kDim = 13;

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

FloatMatrix Rows(ConstMatrixView m, int64_t begin, int64_t end) {
  FloatMatrix out(end - begin, m.cols);
  for (int64_t t = begin; t < end; ++t) std::copy_n(m.row(t), m.cols, out.row(t - begin));
  return out;
}

// The model's own features, scaled and shifted per dimension: a speaker
// the model does not fit.
FloatMatrix SpeakerFeatures(const DiagGmmModel& model, int64_t frames, uint64_t seed) {
  FloatMatrix x = TestFeatures(model, frames, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.85, 1.15), shift(-1.5, 1.5);
  for (int d = 0; d < model.dim(); ++d) {
    const double a = scale(rng), b = shift(rng);
    for (int64_t t = 0; t < frames; ++t) x.row(t)[d] = static_cast<float>(a * x.row(t)[d] + b);
  }
  return x;
}

using Answer = AdaptedAnswer;

// Each test runs twice: fMLLR statistics gathered by the adaptation
// workers from the answered chunks (gather_on_device off), and gathered by
// the backend while it scores (CUDA's kernels on a GPU; HostGatherBackend
// over the CPU backend in CI), read by the workers at each update.
class AdaptationDaemonTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    for (const bool on_device : {false, true}) {
      DaemonOptions options;
      options.adaptation.max_saved = 4;
      options.adaptation.gather_on_device = on_device;
      TestDevices devices;
      if (on_device) devices.wrap = HostGatherOnCpu;
      daemons_[on_device] =
          TestDaemon::Start(
              {{"ubm", {.num_states = 1, .min_gaussians = 12, .max_gaussians = 12, .dim = kDim,
                        .seed = 5}},
               {"am", {.num_states = 24, .min_gaussians = 1, .max_gaussians = 4, .dim = kDim,
                       .seed = 6}},
               {"am2", {.num_states = 24, .min_gaussians = 1, .max_gaussians = 4, .dim = kDim,
                        .seed = 7}}},
              options, devices)
              .release();
    }
  }
  static void TearDownTestSuite() {
    for (TestDaemon*& daemon : daemons_) {
      delete daemon;
      daemon = nullptr;
    }
  }
  void SetUp() override {
    daemon_ = daemons_[GetParam()];
    ASSERT_NE(daemon_, nullptr);
    stub_ = v1::AcousticScorer::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }

  absl::StatusOr<v1::GetAdaptationResponse> Fetch(const std::string& name) {
    return FetchAdaptation(stub_.get(), name);
  }

  // Chunks of 40 to 100 frames, one at a time (adaptation_test_util.h).
  std::vector<Answer> RunLockstep(
      const v1::StreamConfig& config, const FloatMatrix& x, std::mt19937_64& rng,
      const std::function<v1::ChunkPosteriors(int64_t, int64_t)>& posteriors = nullptr) {
    return gmmscore::RunLockstep(
               stub_.get(), config, x.view(), [&rng] { return static_cast<int64_t>(40 + rng() % 61); },
               posteriors)
        .answers;
  }

  static TestDaemon* daemons_[2];  // [gather_on_device]
  TestDaemon* daemon_ = nullptr;
  std::unique_ptr<v1::AcousticScorer::Stub> stub_;
};

TestDaemon* AdaptationDaemonTest::daemons_[2] = {nullptr, nullptr};

v1::StreamConfig AdaptingConfig(const std::string& model, v1::AdaptationConfig::Method method,
                                const std::string& save_as) {
  v1::StreamConfig config;
  config.add_models(model);
  config.set_stream_id(save_as);
  v1::AdaptationConfig* a = config.mutable_adaptation();
  a->set_method(method);
  a->set_start_after_frames(300);
  a->set_update_every_frames(400);
  a->set_save_as(save_as);
  return config;
}


TEST_P(AdaptationDaemonTest, FmllrStreamScoresWithTheOfflineTransformOfItsFirstFrames) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (const std::string model : {"ubm", "am"}) {
    SCOPED_TRACE(model);
    const DiagGmmModel& gmm = daemon_->model(model);
    const FloatMatrix x = SpeakerFeatures(gmm, 1500, seed + 1);
    const std::string name = absl::StrCat("fmllr-", model);
    std::vector<Answer> answers =
        RunLockstep(AdaptingConfig(model, v1::AdaptationConfig::FMLLR, name), x, rng);
    ASSERT_FALSE(answers.empty());
    uint64_t last_version = 0;
    std::vector<double> last_transform;
    int adapted = 0;
    for (const Answer& a : answers) {
      ASSERT_GE(a.report.version(), last_version);
      if (a.report.version() == 0) continue;
      ++adapted;
      if (a.report.version() != last_version) {
        // Offline, from frames [0, N) and the posteriors of their answers.
        const int64_t n = static_cast<int64_t>(a.report.frames());
        absl::StatusOr<FmllrResult> offline =
            OfflineFmllr(gmm, x.view().Rows(0, n), PairsOfAnswers(answers, n, {}));
        ASSERT_TRUE(offline.ok()) << offline.status();
        EXPECT_EQ(a.report.mode(), FmllrModeName(offline->report.mode));
        EXPECT_NEAR(a.report.count(), offline->report.count, 1e-6 * offline->report.count);
        EXPECT_NEAR(a.report.gain_per_frame(), offline->report.gain_per_frame, 1e-4);
        last_transform = offline->transform;
        last_version = a.report.version();
      }
      // Its scores: the offline engine's on the frames under that transform.
      const FloatMatrix chunk = Rows(x.view(), a.first_frame, a.first_frame + a.scores.rows());
      std::vector<float> w(last_transform.begin(), last_transform.end());
      absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(kDim, kDim + 1, w);
      ASSERT_TRUE(transform.ok());
      FloatMatrix y;
      ASSERT_TRUE(transform->Apply(chunk.view(), &y).ok());
      const FloatMatrix want = daemon_->ScoreOffline(model, y.view());
      const FloatMatrix allow = ScoreAllowance(gmm, y.view());
      for (int64_t t = 0; t < want.rows(); ++t) {
        for (int64_t s = 0; s < want.cols(); ++s) {
          ASSERT_NEAR(a.scores.row(t)[s], want.row(t)[s], allow.row(t)[s] + 1e-4)
              << "frame " << a.first_frame + t << " state " << s;
        }
      }
    }
    EXPECT_GE(last_version, 3u);
    EXPECT_GT(adapted, 0);
    // After the stream: the closing update, from every frame, published
    // (float32 of what est-fmllr makes from them).
    absl::StatusOr<v1::GetAdaptationResponse> got = AwaitPublished(stub_.get(), name, x.rows());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->method(), v1::AdaptationConfig::FMLLR);
    absl::StatusOr<FmllrResult> all =
        OfflineFmllr(gmm, x.view(), PairsOfAnswers(answers, x.rows(), {}));
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(got->transform().values_size(), static_cast<int>(all->transform.size()));
    for (size_t i = 0; i < all->transform.size(); ++i) {
      EXPECT_NEAR(got->transform().values(i), all->transform[i], 1e-4) << i;
    }
    // The adapted streams raise the likelihood (mode full at these counts).
    EXPECT_EQ(got->report().mode(), "full");
    EXPECT_GT(got->report().gain_per_frame(), 0.0);
  }
  const AdaptationCounters counters = daemon_->daemon().adaptation_counters();
  EXPECT_GE(counters.updates, 6);
  EXPECT_EQ(counters.failed_updates, 0);
  EXPECT_EQ(counters.skipped_frames, 0);
  if (GetParam()) {
    EXPECT_GT(counters.device_gathered_frames, 0);
  } else {
    EXPECT_EQ(counters.device_gathered_frames, 0);
  }
}

// A stream that does not wait for its answers, with an update due after
// every chunk: chunks of updates two ahead of the last one read are gathered
// by the workers (the backend's two segments are both taken), the others by
// the backend, and the closing update from all the frames still equals the
// offline estimate from them and their answers' posteriors.
TEST_P(AdaptationDaemonTest, PipelinedUpdatesMixBothGatheringsAndStayExact) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const DiagGmmModel& am = daemon_->model("am");
  const FloatMatrix x = SpeakerFeatures(am, 400, seed);
  const std::string name = absl::StrCat("pipelined-", GetParam());
  const AdaptationCounters before = daemon_->daemon().adaptation_counters();
  v1::StreamConfig config = AdaptingConfig("am", v1::AdaptationConfig::FMLLR, name);
  config.mutable_adaptation()->set_start_after_frames(20);
  config.mutable_adaptation()->set_update_every_frames(10);
  std::unique_ptr<Client> client = daemon_->NewClient();
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client->StartStream(config);
  ASSERT_TRUE(stream.ok()) << stream.status();
  constexpr int64_t kChunk = 10;
  for (int64_t first = 0; first < x.rows(); first += kChunk) {
    ASSERT_TRUE((*stream)->Push(x.view().Rows(first, kChunk)).ok());
  }
  ASSERT_TRUE((*stream)->CloseSend().ok());
  std::vector<Answer> answers;
  for (int64_t first = 0; first < x.rows(); first += kChunk) {
    absl::StatusOr<StreamAnswer> answer = (*stream)->Next();
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_EQ(answer->first_frame, first);
    answers.push_back({.first_frame = answer->first_frame, .scores = std::move(answer->scores)});
  }
  EXPECT_TRUE(absl::IsOutOfRange((*stream)->Next().status()));
  ASSERT_TRUE((*stream)->Finish().ok());
  absl::StatusOr<v1::GetAdaptationResponse> got = AwaitPublished(stub_.get(), name, x.rows());
  ASSERT_TRUE(got.ok()) << got.status();
  const AdaptationCounters after = daemon_->daemon().adaptation_counters();
  EXPECT_GE(after.gathered_frames - before.gathered_frames, x.rows());  // others may finish meanwhile
  // Updates 0 and 1 (frames [0, 30)) always fit the two segments; what
  // follows depends on how fast the workers read them.
  EXPECT_GE(after.device_gathered_frames - before.device_gathered_frames, GetParam() ? 30 : 0);
  absl::StatusOr<FmllrResult> all = OfflineFmllr(am, x.view(), PairsOfAnswers(answers, x.rows(), {}));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_NEAR(got->report().count(), all->report.count, 1e-6 * all->report.count);
  ASSERT_EQ(got->transform().values_size(), static_cast<int>(all->transform.size()));
  for (size_t i = 0; i < all->transform.size(); ++i) {
    ASSERT_NEAR(got->transform().values(i), all->transform[i], 1e-4) << i;
  }
}

// A stream of two models fused (max): the transform estimated from the
// first model's posteriors scores both after the switch, and the fused
// matrix follows.
TEST_P(AdaptationDaemonTest, FusedStreamAppliesTheTransformToEveryModel) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const DiagGmmModel& am = daemon_->model("am");
  const FloatMatrix x = SpeakerFeatures(am, 900, seed + 1);
  v1::StreamConfig config = AdaptingConfig("am", v1::AdaptationConfig::FMLLR, "fused");
  config.add_models("am2");
  config.mutable_fusion()->set_method(v1::FUSION_METHOD_MAX);
  const LockstepStream run = gmmscore::RunLockstep(
      stub_.get(), config, x.view(), [&rng] { return static_cast<int64_t>(40 + rng() % 61); });
  int adapted = 0;
  for (const Answer& a : run.answers) {
    ASSERT_EQ(a.other_scores.size(), 1u);
    ASSERT_EQ(a.fused.rows(), a.scores.rows());
    if (a.report.version() == 0) continue;
    auto published = run.published.find(a.report.version());
    ASSERT_NE(published, run.published.end());
    const v1::AffineTransform& w = published->second.transform();
    absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(
        kDim, kDim + 1, std::vector<float>(w.values().begin(), w.values().end()));
    ASSERT_TRUE(transform.ok());
    FloatMatrix y;
    ASSERT_TRUE(transform->Apply(Rows(x.view(), a.first_frame, a.first_frame + a.scores.rows()).view(), &y).ok());
    for (const auto& [name, got] : {std::pair<std::string, const FloatMatrix*>{"am", &a.scores},
                                   {"am2", &a.other_scores[0]}}) {
      const FloatMatrix want = daemon_->ScoreOffline(name, y.view());
      const FloatMatrix allow = ScoreAllowance(daemon_->model(name), y.view());
      for (int64_t t = 0; t < want.rows(); ++t) {
        for (int64_t s = 0; s < want.cols(); ++s) {
          ASSERT_NEAR(got->row(t)[s], want.row(t)[s], allow.row(t)[s] + 1e-4) << name;
        }
      }
    }
    for (int64_t t = 0; t < a.fused.rows(); ++t) {
      for (int64_t s = 0; s < a.fused.cols(); ++s) {
        ASSERT_EQ(a.fused.row(t)[s], std::max(a.scores.row(t)[s], a.other_scores[0].row(t)[s]));
      }
    }
    ++adapted;
  }
  EXPECT_GT(adapted, 0);
}

TEST_P(AdaptationDaemonTest, MapStreamScoresWithTheOfflineMapModelAndPublishesIt) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const DiagGmmModel& am = daemon_->model("am");
  const FloatMatrix x = SpeakerFeatures(am, 1000, seed + 1);
  v1::StreamConfig config = AdaptingConfig("am", v1::AdaptationConfig::MAP_MEANS, "spk-map");
  config.mutable_adaptation()->set_map_tau(5.0);
  config.mutable_adaptation()->add_silence_states(0);
  const std::vector<Answer> answers = RunLockstep(config, x, rng);
  ASSERT_FALSE(answers.empty());
  const Answer& last = answers.back();
  ASSERT_GE(last.report.version(), 1u);
  EXPECT_EQ(last.report.mode(), "map-means");
  // The closing update (from every frame) is the one published last.
  absl::StatusOr<v1::GetAdaptationResponse> got = AwaitPublished(stub_.get(), "spk-map", x.rows());
  ASSERT_TRUE(got.ok()) << got.status();
  const int64_t n = x.rows();

  // Offline: reference statistics of frames [0, N) under the answers'
  // posteriors (silence state 0 left out), MapUpdate of the means.
  PosteriorPolicy policy{.silence_states = {0}};
  const std::vector<StatsPair> pairs = PairsOfAnswers(answers, n, policy);
  std::unique_ptr<StatsBackend> reference = CreateReferenceStatsBackend();
  ASSERT_TRUE(reference->SetModel(am).ok());
  auto block = reference->LoadFrames(Rows(x.view(), 0, n).view());
  ASSERT_TRUE(block.ok());
  GmmStats stats = GmmStats::ForModel(am);
  ASSERT_TRUE(reference->Accumulate(**block, pairs, &stats).ok());
  MapOptions map;
  map.mean_tau = 5.0;
  map.update = kGmmMeans;
  absl::StatusOr<NaturalGmm> want = MapUpdate(NaturalGmm::FromModel(am), stats, map);
  ASSERT_TRUE(want.ok());

  // Published and served under the name, with those means.
  EXPECT_EQ(got->model(), "spk-map");
  absl::StatusOr<std::shared_ptr<const ServedModel>> served =
      daemon_->daemon().repository().Find("spk-map");
  ASSERT_TRUE(served.ok()) << served.status();
  const NaturalGmm adapted = NaturalGmm::FromModel((*served)->model());
  for (int s = 0; s < adapted.num_states(); ++s) {
    for (size_t k = 0; k < adapted.states[s].means.size(); ++k) {
      EXPECT_NEAR(adapted.states[s].means[k], want->states[s].means[k],
                  1e-4 * std::sqrt(want->states[s].variances[k]))
          << s << " " << k;
    }
  }
  // A later stream of the speaker names the published model: its scores
  // are the adapted stream's when both come from the same update.
  v1::StreamConfig later;
  later.add_models("spk-map");
  const FloatMatrix chunk = Rows(x.view(), last.first_frame, last.first_frame + last.scores.rows());
  grpc::ClientContext context;
  auto stream = stub_->StreamScore(&context);
  v1::StreamScoreRequest request;
  *request.mutable_config() = later;
  ASSERT_TRUE(stream->Write(request));
  request.Clear();
  FeaturesToProto(chunk.view(), request.mutable_chunk());
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  v1::StreamScoreResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_FALSE(response.has_adaptation());
  ASSERT_TRUE(stream->Finish().ok());
  absl::StatusOr<FloatMatrix> scores = ScoresFromProto(response.scores(0));
  ASSERT_TRUE(scores.ok());
  // Scored by the published model: the CPU engine's scores of it.
  absl::StatusOr<std::unique_ptr<ScoringBackend>> cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  auto prepared = (*cpu)->Prepare((*served)->prepared->shared_model());
  ASSERT_TRUE(prepared.ok());
  ScoreResult published_scores;
  ASSERT_TRUE((*cpu)->Score(**prepared, chunk.view(), {}, &published_scores).ok());
  const FloatMatrix allow = ScoreAllowance((*served)->model(), chunk.view());
  for (int64_t t = 0; t < scores->rows(); ++t) {
    for (int64_t s = 0; s < scores->cols(); ++s) {
      ASSERT_NEAR(scores->row(t)[s], published_scores.loglikes.row(t)[s], allow.row(t)[s] + 1e-4);
    }
  }
  // ... which is not the unadapted model.
  const FloatMatrix unadapted = daemon_->ScoreOffline("am", chunk.view());
  double differ = 0.0;
  for (int64_t i = 0; i < scores->rows() * scores->cols(); ++i) {
    differ = std::max<double>(differ, std::abs(scores->data()[i] - unadapted.data()[i]));
  }
  EXPECT_GT(differ, 0.1);
}

TEST_P(AdaptationDaemonTest, DecoderPosteriorsDriveTheUpdate) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const DiagGmmModel& am = daemon_->model("am");
  const FloatMatrix x = SpeakerFeatures(am, 900, seed + 1);
  // A "first pass" alignment: one state per frame, silence state 3 often.
  std::vector<int32_t> alignment(x.rows());
  for (int32_t& s : alignment) s = static_cast<int32_t>(rng() % am.num_states());
  v1::StreamConfig config = AdaptingConfig("am", v1::AdaptationConfig::FMLLR, "decoded");
  config.mutable_adaptation()->add_silence_states(3);
  auto posteriors = [&](int64_t first, int64_t n) {
    v1::ChunkPosteriors p;
    for (int64_t t = 0; t < n; ++t) {
      p.add_frame(t);
      p.add_state(alignment[first + t]);
      p.add_weight(1.0f);
    }
    return p;
  };
  const std::vector<Answer> answers = RunLockstep(config, x, rng, posteriors);
  ASSERT_FALSE(answers.empty());
  absl::StatusOr<v1::GetAdaptationResponse> got = AwaitPublished(stub_.get(), "decoded", x.rows());
  ASSERT_TRUE(got.ok());
  const int64_t n = static_cast<int64_t>(got->report().frames());
  std::vector<StatsPair> pairs;
  for (int64_t t = 0; t < n; ++t) {
    if (alignment[t] != 3) pairs.push_back({static_cast<int32_t>(t), alignment[t], 1.0f});
  }
  absl::StatusOr<FmllrResult> offline = OfflineFmllr(am, x.view().Rows(0, n), pairs);
  ASSERT_TRUE(offline.ok()) << offline.status();
  EXPECT_DOUBLE_EQ(got->report().count(), static_cast<double>(pairs.size()));
  for (size_t i = 0; i < offline->transform.size(); ++i) {
    EXPECT_NEAR(got->transform().values(i), offline->transform[i], 1e-4) << i;
  }
}

// A refused config or chunk ends its own stream with a clear status; a
// stream beside it, adapting, finishes every chunk.
TEST_P(AdaptationDaemonTest, BadAdaptationInputIsRefusedAndOthersCarryOn) {
  const DiagGmmModel& am = daemon_->model("am");
  const FloatMatrix x = SpeakerFeatures(am, 600, 11);
  std::mt19937_64 rng(12);
  std::thread beside([&] {
    const std::vector<Answer> answers =
        RunLockstep(AdaptingConfig("am", v1::AdaptationConfig::FMLLR, "beside"), x, rng);
    int64_t frames = 0;
    for (const Answer& a : answers) frames += a.scores.rows();
    EXPECT_EQ(frames, x.rows());
  });

  auto run = [&](const v1::StreamConfig& config, std::vector<v1::StreamScoreRequest> chunks) {
    grpc::ClientContext context;
    auto stream = stub_->StreamScore(&context);
    v1::StreamScoreRequest first;
    *first.mutable_config() = config;
    stream->Write(first);
    for (const auto& c : chunks) stream->Write(c);
    stream->WritesDone();
    v1::StreamScoreResponse response;
    int answers = 0;
    while (stream->Read(&response)) ++answers;
    return std::make_pair(stream->Finish(), answers);
  };
  auto chunk = [&](int frames, const v1::ChunkPosteriors* posteriors) {
    v1::StreamScoreRequest request;
    FeaturesToProto(Rows(x.view(), 0, frames).view(), request.mutable_chunk());
    if (posteriors != nullptr) *request.mutable_posteriors() = *posteriors;
    return request;
  };
  struct ConfigCase {
    std::string what;
    std::function<void(v1::StreamConfig*)> spoil;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<ConfigCase> cases = {
      {"no method", [](v1::StreamConfig* c) { c->mutable_adaptation()->clear_method(); },
       grpc::INVALID_ARGUMENT, "adaptation.method"},
      {"silence state out of range",
       [](v1::StreamConfig* c) { c->mutable_adaptation()->add_silence_states(24); },
       grpc::INVALID_ARGUMENT, "silence_states[0] = 24"},
      {"threshold", [](v1::StreamConfig* c) { c->mutable_adaptation()->set_silence_threshold(2); },
       grpc::INVALID_ARGUMENT, "silence_threshold"},
      {"model not in stream", [](v1::StreamConfig* c) { c->mutable_adaptation()->set_model("am2"); },
       grpc::INVALID_ARGUMENT, "not one of the stream's models"},
      {"fmllr with a transform",
       [](v1::StreamConfig* c) {
         v1::AffineTransform* t = c->mutable_transform();
         t->set_rows(kDim);
         t->set_cols(kDim + 1);
         for (float v : TestTransform(kDim, 3)) t->add_values(v);
       },
       grpc::INVALID_ARGUMENT, "do not send StreamConfig.transform"},
      {"save_as a loaded model",
       [](v1::StreamConfig* c) {
         c->mutable_adaptation()->set_method(v1::AdaptationConfig::MAP_MEANS);
         c->mutable_adaptation()->set_save_as("am2");
       },
       grpc::FAILED_PRECONDITION, "names a model loaded from"},
      {"negative tau", [](v1::StreamConfig* c) { c->mutable_adaptation()->set_map_tau(-1); },
       grpc::INVALID_ARGUMENT, "map_tau"},
  };
  for (const ConfigCase& c : cases) {
    SCOPED_TRACE(c.what);
    v1::StreamConfig config = AdaptingConfig("am", v1::AdaptationConfig::FMLLR, "bad");
    c.spoil(&config);
    auto [status, answers] = run(config, {chunk(10, nullptr)});
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
    EXPECT_EQ(answers, 0);
  }
  // Chunks: posteriors whose frames do not match the chunk, a state out of
  // range, lists of different lengths, and posteriors on a stream that
  // does not adapt. The chunk before the bad one is answered.
  v1::ChunkPosteriors past_end;
  past_end.add_frame(10);
  past_end.add_state(0);
  past_end.add_weight(1);
  v1::ChunkPosteriors bad_state;
  bad_state.add_frame(0);
  bad_state.add_state(24);
  bad_state.add_weight(1);
  v1::ChunkPosteriors ragged = bad_state;
  ragged.add_frame(1);
  v1::ChunkPosteriors nan_weight;
  nan_weight.add_frame(0);
  nan_weight.add_state(1);
  nan_weight.add_weight(NAN);
  const v1::StreamConfig adapting = AdaptingConfig("am", v1::AdaptationConfig::FMLLR, "bad");
  for (const auto& [posteriors, message] :
       std::vector<std::pair<v1::ChunkPosteriors, std::string>>{
           {past_end, "entry 0 is for frame 10; the chunk has 10 frames"},
           {bad_state, "state 24"},
           {ragged, "lists of one length"},
           {nan_weight, "weight"}}) {
    auto [status, answers] = run(adapting, {chunk(10, nullptr), chunk(10, &posteriors)});
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << message;
    EXPECT_THAT(status.error_message(), HasSubstr(message));
    EXPECT_THAT(status.error_message(), HasSubstr("chunk at frame 10"));
    EXPECT_EQ(answers, 1);
  }
  v1::StreamConfig plain;
  plain.add_models("am");
  auto [status, answers] = run(plain, {chunk(10, &bad_state)});
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("does not adapt"));
  // Nothing was published by the refused streams.
  EXPECT_EQ(Fetch("bad").status().code(), absl::StatusCode::kNotFound);
  beside.join();
}

TEST_P(AdaptationDaemonTest, UnknownNamesAreNotFound) {
  absl::StatusOr<v1::GetAdaptationResponse> none = Fetch("never-published");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("never-published"));
}

INSTANTIATE_TEST_SUITE_P(Gathering, AdaptationDaemonTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "BackendGathers" : "WorkersGather";
                         });

}  // namespace
}  // namespace gmmscore
