// The Align RPC on real speech (pocketsphinx's en-us model, cmudict and the
// librivox recordings), through the C++ client against an in-process
// gmmscored on the test backend: answers equal the offline SphinxAligner's
// alignment of the same features, segment for segment; audio equals
// features; concurrent requests are aligned in batches, each getting its
// own answer; every bad input gets its code and message while a good
// request beside it succeeds; the queue bound, deadlines, tokens; models
// unloaded, replaced and the daemon drained while aligning.
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/barrier.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "server/server_config.h"
#include "tests/align_test_util.h"
#include "tests/faulty_backend.h"
#include "tests/ops_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

class AlignDaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveAlignData()) return;
    speech_ = new std::vector<Utterance>(LoadLibrivox());
    offline_ = new std::vector<absl::StatusOr<Alignment>>(AlignOffline(*speech_));
  }
  static void TearDownTestSuite() {
    delete speech_;
    delete offline_;
    speech_ = nullptr;
    offline_ = nullptr;
  }
  void SetUp() override {
    if (!HaveAlignData()) GTEST_SKIP() << "pocketsphinx en-us or its test data is missing: run tools/install_deps.sh";
    ASSERT_EQ(speech_->size(), 5u);
    for (const auto& alignment : *offline_) ASSERT_TRUE(alignment.ok()) << alignment.status();
  }

  std::unique_ptr<Client> Connect(const Daemon& daemon, ClientOptions options = {}) {
    auto client = Client::Connect(daemon.address(), options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  static const Utterance& Speech(size_t u) { return (*speech_)[u]; }
  static const Alignment& Offline(size_t u) { return *(*offline_)[u]; }

  AlignRepository repository_;
  static std::vector<Utterance>* speech_;
  static std::vector<absl::StatusOr<Alignment>>* offline_;
};

std::vector<Utterance>* AlignDaemonTest::speech_ = nullptr;
std::vector<absl::StatusOr<Alignment>>* AlignDaemonTest::offline_ = nullptr;

TEST_F(AlignDaemonTest, FeaturesAnswerEqualsTheOfflineAligner) {
  auto daemon = repository_.StartDaemon({});
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(*daemon);
  ASSERT_NE(client, nullptr);
  for (size_t u = 0; u < speech_->size(); ++u) {
    SCOPED_TRACE(Speech(u).id);
    for (bool phones : {false, true}) {
      auto answer = client->Align(FeaturesRequest("en-us", Speech(u), phones));
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(CompareAlignment(*answer, Offline(u), phones), "");
      EXPECT_EQ(answer->utterance_id(), Speech(u).id);
      EXPECT_EQ(answer->timing().batch_utterances(), 1u);
      EXPECT_GT(answer->timing().batch_align_seconds(), 0.0);
      // The transcript's words, in order, between fillers.
      std::vector<std::string> words;
      for (const v1::AlignSegment& s : answer->words()) {
        if (!s.filler()) words.push_back(s.label());
      }
      EXPECT_EQ(words, Speech(u).words);
    }
  }
  const AlignSchedulerStats stats = daemon->align_stats();
  EXPECT_EQ(stats.aligned, 10);
  EXPECT_GT(stats.frames_aligned, 2000);
}

// On two devices each holds the model's aligner, and Align goes where the
// router sends it. With device 0's backend failing (FaultyBackend), a
// request placed there is aligned again on device 1: every answer equals
// the offline aligner's, and each move is counted. Align outcomes judge
// device health as scoring does: after kFailuresToMarkFailing faults in a
// row device 0 is failing, and the next requests go to device 1 at once.
// (The first ones go to device 0: the lower index of two idle devices.) A
// model placed only on the failing device gets the device's error: there
// is no peer to move to.
TEST_F(AlignDaemonTest, RequestsMoveOffADeviceThatFailsThem) {
  auto broken = std::make_shared<std::atomic<bool>>(true);
  auto wrap = [broken](int d, std::unique_ptr<ScoringBackend> inner) -> std::unique_ptr<ScoringBackend> {
    if (d == 1) return inner;
    return std::make_unique<FaultyBackend>(std::move(inner), broken);
  };
  {
    auto daemon = repository_.StartDaemon({}, {.count = 2, .wrap = wrap});
    ASSERT_NE(daemon, nullptr);
    auto client = Connect(*daemon);
    ASSERT_NE(client, nullptr);
    for (size_t u = 0; u < speech_->size(); ++u) {
      auto answer = client->Align(FeaturesRequest("en-us", Speech(u), /*phones=*/true));
      ASSERT_TRUE(answer.ok()) << Speech(u).id << ": " << answer.status();
      EXPECT_EQ(CompareAlignment(*answer, Offline(u), true), "") << Speech(u).id;
    }
    ASSERT_GT(speech_->size(), static_cast<size_t>(DeviceRouter::kFailuresToMarkFailing));
    EXPECT_EQ(daemon->devices().moves_from(0), DeviceRouter::kFailuresToMarkFailing);
    EXPECT_EQ(daemon->devices().moves_from(1), 0);
    EXPECT_TRUE(daemon->devices().failing(0));
    EXPECT_FALSE(daemon->devices().failing(1));
    broken->store(false);
    auto answer = client->Align(AudioRequest("en-us", Speech(0)));
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(daemon->devices().moves_from(0), DeviceRouter::kFailuresToMarkFailing);
    broken->store(true);
  }
  auto daemon = repository_.StartDaemon({}, {.count = 2, .placement = {{"en-us", {0}}}, .wrap = wrap});
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(*daemon);
  ASSERT_NE(client, nullptr);
  auto answer = client->Align(FeaturesRequest("en-us", Speech(1)));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInternal) << answer.status();
  EXPECT_THAT(answer.status().message(), HasSubstr(FaultyBackend::kError));
  EXPECT_EQ(daemon->devices().moves_from(0), 0);
}

TEST_F(AlignDaemonTest, AudioAnswerEqualsFeaturesAnswer) {
  auto daemon = repository_.StartDaemon({});
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(*daemon);
  ASSERT_NE(client, nullptr);
  for (size_t u = 0; u < speech_->size(); ++u) {
    SCOPED_TRACE(Speech(u).id);
    auto answer = client->Align(AudioRequest("en-us", Speech(u), /*phones=*/true));
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(CompareAlignment(*answer, Offline(u), true), "") << "the server's front end makes the same features";
    EXPECT_GT(answer->timing().features_seconds(), 0.0);
  }
}

TEST_F(AlignDaemonTest, ConcurrentRequestsAreAlignedInBatchesEachWithItsOwnAnswer) {
  // A long gathering window, so that eight requests sent at once are
  // certainly aligned together (a busy aligner gathers them anyway).
  DaemonOptions options;
  options.align.max_queue_delay = absl::Milliseconds(300);
  options.ops.metrics_listen = "127.0.0.1:0";
  auto daemon = repository_.StartDaemon(options);
  ASSERT_NE(daemon, nullptr);
  constexpr int kThreads = 8;
  absl::Barrier* start = new absl::Barrier(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<uint32_t> batch_sizes(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto client = Client::Connect(daemon->address());
      if (start->Block()) delete start;
      if (!client.ok()) {
        errors[i] = client.status().ToString();
        return;
      }
      const size_t u = i % speech_->size();
      // Half send audio, half features: both kinds share a batch.
      auto answer = (*client)->Align(i % 2 == 0 ? FeaturesRequest("en-us", Speech(u), true)
                                                : AudioRequest("en-us", Speech(u), true));
      if (!answer.ok()) {
        errors[i] = answer.status().ToString();
        return;
      }
      errors[i] = CompareAlignment(*answer, Offline(u), true);
      batch_sizes[i] = answer->timing().batch_utterances();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(errors[i], "") << "request " << i;
  const AlignSchedulerStats stats = daemon->align_stats();
  EXPECT_EQ(stats.aligned, kThreads);
  EXPECT_GT(stats.max_batch_utterances, 1);
  EXPECT_LT(stats.batches, kThreads);
  EXPECT_GT(*std::max_element(batch_sizes.begin(), batch_sizes.end()), 1u);

  const std::string metrics = HttpGet(daemon->ops().metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(metrics, "gmmscore_align_utterances_total"), kThreads);
  EXPECT_EQ(MetricValue(metrics, "gmmscore_align_batches_total"), stats.batches);
  EXPECT_EQ(MetricValue(metrics, "gmmscore_align_frames_total"), stats.frames_aligned);
  EXPECT_EQ(MetricValue(metrics, "gmmscore_align_batch_utterances_count"), stats.batches);
  EXPECT_EQ(MetricValue(metrics, "gmmscore_align_batch_utterances_sum"), kThreads);
  EXPECT_EQ(MetricValue(metrics,
                        "gmmscore_requests_total{grpc_service=\"gmmscore.v1.AcousticScorer\",grpc_method=\"Align\","
                        "grpc_code=\"OK\"}"),
            kThreads);
}

TEST_F(AlignDaemonTest, EachBadInputGetsItsCodeAndMessageWhileAGoodRequestSucceeds) {
  DaemonOptions options;
  options.limits.max_request_frames = 5000;
  auto daemon = repository_.StartDaemon(options);
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(*daemon);
  ASSERT_NE(client, nullptr);
  const Utterance& good = Speech(1);  // "he was not an ill disposed young man", 298 frames

  struct Case {
    std::string name;
    v1::AlignRequest request;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  auto add = [&](std::string name, v1::AlignRequest request, absl::StatusCode code, std::string message) {
    cases.push_back({std::move(name), std::move(request), code, std::move(message)});
  };
  add("unknown model", FeaturesRequest("no-such-model", good), absl::StatusCode::kNotFound, "no model named 'no-such-model'");
  add("no dictionary", FeaturesRequest("en-us-nodict", good), absl::StatusCode::kFailedPrecondition,
      "model 'en-us-nodict' cannot align");
  v1::AlignRequest oov = FeaturesRequest("en-us", good);
  oov.set_words(2, "notawordzz");
  add("out of vocabulary", oov, absl::StatusCode::kInvalidArgument, "\"notawordzz\" (word 3) is not in the model's dictionary");
  v1::AlignRequest empty = FeaturesRequest("en-us", good);
  empty.clear_words();
  add("empty transcript", empty, absl::StatusCode::kInvalidArgument, "the transcript has no words");
  v1::AlignRequest no_input = FeaturesRequest("en-us", good);
  no_input.clear_features();
  add("no input", no_input, absl::StatusCode::kInvalidArgument, "set features or audio");
  v1::AlignRequest wrong_dim = FeaturesRequest("en-us", good);
  FloatMatrix thirteen(good.features.rows(), 13);
  FeaturesToProto(thirteen.view(), wrong_dim.mutable_features());
  add("wrong dimension", wrong_dim, absl::StatusCode::kInvalidArgument, "dimension 13 but the model's features have 39");
  v1::AlignRequest not_finite = FeaturesRequest("en-us", good);
  not_finite.mutable_features()->set_values(39 * 7 + 5, std::nanf(""));
  add("NaN feature", not_finite, absl::StatusCode::kInvalidArgument, "frame 7, dimension 5 is nan");
  v1::AlignRequest wrong_rate = AudioRequest("en-us", good);
  wrong_rate.mutable_audio()->set_sample_rate(8000);
  add("wrong sample rate", wrong_rate, absl::StatusCode::kInvalidArgument, "8000 Hz but the model's features are made from 16000 Hz");
  v1::AlignRequest odd_bytes = AudioRequest("en-us", good);
  odd_bytes.mutable_audio()->mutable_pcm16()->push_back('\0');
  add("odd PCM bytes", odd_bytes, absl::StatusCode::kInvalidArgument, "odd number of bytes");
  v1::AlignRequest too_long = FeaturesRequest("en-us", good);
  FloatMatrix long_features(5001, 39);
  FeaturesToProto(long_features.view(), too_long.mutable_features());
  add("too many frames", too_long, absl::StatusCode::kInvalidArgument, "at most 5000 frames per utterance");
  v1::AlignRequest long_audio = AudioRequest("en-us", good);
  long_audio.mutable_audio()->mutable_pcm16()->resize(2 * 16000 * 51);
  add("too much audio", long_audio, absl::StatusCode::kInvalidArgument, "holds 51.0 s");
  v1::AlignRequest short_audio = FeaturesRequest("en-us", good);
  FeaturesToProto(good.features.view().Rows(0, 12), short_audio.mutable_features());
  add("too short", short_audio, absl::StatusCode::kOutOfRange, "12 frames, but the transcript's 8 words need at least");
  v1::AlignRequest more_words = FeaturesRequest("en-us", good);
  FeaturesToProto(good.features.view().Rows(0, 5), more_words.mutable_features());
  add("more words than frames", more_words, absl::StatusCode::kOutOfRange, "8 words cannot be aligned to 5 frames");

  // The good request runs while the bad ones are refused or fail.
  std::string good_error = "not run";
  std::thread good_request([&] {
    auto good_client = Client::Connect(daemon->address());
    if (!good_client.ok()) {
      good_error = good_client.status().ToString();
      return;
    }
    for (int k = 0; k < 3; ++k) {
      auto answer = (*good_client)->Align(AudioRequest("en-us", good, true));
      good_error = answer.ok() ? CompareAlignment(*answer, Offline(1), true) : answer.status().ToString();
      if (!good_error.empty()) return;
    }
  });
  for (const Case& c : cases) {
    auto answer = client->Align(c.request);
    EXPECT_EQ(answer.status().code(), c.code) << c.name << ": " << answer.status();
    EXPECT_THAT(answer.status().message(), HasSubstr(c.message)) << c.name;
  }
  good_request.join();
  EXPECT_EQ(good_error, "");
}

TEST_F(AlignDaemonTest, AFullQueueRefusesWithResourceExhausted) {
  DaemonOptions options;
  options.align.max_queued_frames = 1000;                 // one librivox utterance
  options.align.max_queue_delay = absl::Milliseconds(500);  // it waits there meanwhile
  auto daemon = repository_.StartDaemon(options);
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(*daemon);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<v1::AlignResponse> first = absl::InternalError("not run");
  std::thread waiting([&] { first = client->Align(FeaturesRequest("en-us", Speech(0))); });
  while (daemon->align_stats().queued == 0) absl::SleepFor(absl::Milliseconds(1));
  auto refused = client->Align(FeaturesRequest("en-us", Speech(3)));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("--max_align_queued_frames"));
  waiting.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(CompareAlignment(*first, Offline(0), false), "");
  EXPECT_EQ(daemon->align_stats().rejected, 1);
}

TEST_F(AlignDaemonTest, ARequestPastItsDeadlineIsDroppedUnaligned) {
  DaemonOptions options;
  options.align.max_queue_delay = absl::Seconds(2);
  auto daemon = repository_.StartDaemon(options);
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(*daemon, {.call_timeout = absl::Milliseconds(200)});
  ASSERT_NE(client, nullptr);
  auto answer = client->Align(FeaturesRequest("en-us", Speech(1)));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kDeadlineExceeded) << answer.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (daemon->align_stats().completed == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  const AlignSchedulerStats stats = daemon->align_stats();
  EXPECT_EQ(stats.expired + stats.cancelled, 1);
  EXPECT_EQ(stats.batches, 0) << "dropped from the queue, never aligned";
  EXPECT_EQ(stats.queued, 0);
}

TEST_F(AlignDaemonTest, ScoringTokenIsRequired) {
  DaemonOptions options;
  options.limits.required_token = "a-scoring-token-of-enough-length";
  auto daemon = repository_.StartDaemon(options);
  ASSERT_NE(daemon, nullptr);
  auto anonymous = Connect(*daemon);
  ASSERT_NE(anonymous, nullptr);
  EXPECT_EQ(anonymous->Align(FeaturesRequest("en-us", Speech(1))).status().code(),
            absl::StatusCode::kUnauthenticated);
  auto authorized = Connect(*daemon, {.bearer_token = "a-scoring-token-of-enough-length"});
  ASSERT_NE(authorized, nullptr);
  EXPECT_TRUE(authorized->Align(FeaturesRequest("en-us", Speech(1))).ok());
}

TEST_F(AlignDaemonTest, UnloadAndReplaceWhileAligningNeverCrashOrGiveWrongAnswers) {
  auto daemon = repository_.StartDaemon({});
  ASSERT_NE(daemon, nullptr);
  const std::weak_ptr<ModelAligner> first_version = (*daemon->repository().Find("en-us"))->aligner;
  ASSERT_FALSE(first_version.expired());
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, gone{0};
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto client = Client::Connect(daemon->address());
      if (!client.ok()) {
        errors[i] = client.status().ToString();
        return;
      }
      for (size_t k = i; !stop.load(); ++k) {
        const size_t u = k % speech_->size();
        auto answer = (*client)->Align(k % 2 == 0 ? FeaturesRequest("en-us", Speech(u)) : AudioRequest("en-us", Speech(u)));
        if (answer.ok()) {
          ++ok;
          if (std::string diff = CompareAlignment(*answer, Offline(u), false); !diff.empty()) {
            errors[i] = diff;
            return;
          }
        } else if (absl::IsNotFound(answer.status()) || absl::IsUnavailable(answer.status())) {
          ++gone;
          absl::SleepFor(absl::Milliseconds(5));  // until it is loaded again
        } else {
          errors[i] = answer.status().ToString();
          return;
        }
      }
    });
  }
  auto channel = grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials());
  for (int round = 0; round < 3; ++round) {
    absl::SleepFor(absl::Milliseconds(150));
    v1::LoadModelResponse loaded;
    grpc::Status status = AdminLoad(channel, "en-us", "", &loaded);  // replace
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(loaded.replaced());
    absl::SleepFor(absl::Milliseconds(150));
    status = AdminUnload(channel, "en-us");
    ASSERT_TRUE(status.ok()) << status.error_message();
    absl::SleepFor(absl::Milliseconds(100));
    status = AdminLoad(channel, "en-us", "", &loaded);  // back, with its dictionary again
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  absl::SleepFor(absl::Milliseconds(150));
  stop = true;
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(errors[i], "") << "thread " << i;
  EXPECT_GT(ok.load(), 8);
  std::printf("during 3 replace/unload/load rounds: %d aligned, %d NOT_FOUND/UNAVAILABLE\n", ok.load(), gone.load());
  // A replaced version's aligner goes with its last request.
  EXPECT_TRUE(first_version.expired());
  EXPECT_EQ(daemon->align_stats().queued, 0);
}

TEST_F(AlignDaemonTest, DrainWhileAligningAnswersOrRefusesEveryRequest) {
  auto daemon = repository_.StartDaemon({});
  ASSERT_NE(daemon, nullptr);
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto client = Client::Connect(daemon->address(), {.connect_timeout = absl::Seconds(2)});
      if (!client.ok()) return;
      for (int k = 0; k < 20; ++k) {
        auto answer = (*client)->Align(AudioRequest("en-us", Speech((i + k) % 5)));
        if (answer.ok()) {
          ++ok;
        } else if (absl::IsUnavailable(answer.status()) || absl::IsCancelled(answer.status())) {
          ++refused;
        } else {
          ++other;
          ADD_FAILURE() << answer.status();
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(300));
  daemon->Drain(absl::Seconds(5));
  for (std::thread& thread : threads) thread.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(daemon->align_stats().queued, 0);
  EXPECT_EQ(daemon->align_stats().running_batches, 0);
}

// The repository and config side: which models get an aligner.
TEST_F(AlignDaemonTest, DictionariesComeFromTheConfigAndBadOnesFailTheLoad) {
  v1::ServerConfig config;
  config.add_models()->set_name("en-us");
  config.mutable_models(0)->set_dictionary(kEnUsDict);
  RepositoryOptions options;
  ASSERT_TRUE(ApplyModelConfigs(config, "cpu", 4096, &options).ok());
  EXPECT_EQ(options.align.per_model["en-us"], kEnUsDict);

  auto backend = CreateBackend("cpu");
  ASSERT_TRUE(backend.ok());
  // The default dictionary: every Sphinx directory aligns.
  RepositoryOptions all;
  all.align.default_dictionary = kEnUsDict;
  auto repository = ModelRepository::LoadDirectory(repository_.directory(), backend->get(), all);
  ASSERT_TRUE(repository.ok()) << repository.status();
  EXPECT_NE((*(*repository)->Find("en-us"))->aligner, nullptr);
  EXPECT_NE((*(*repository)->Find("en-us-nodict"))->aligner, nullptr);
  // A missing dictionary fails the load, naming it.
  RepositoryOptions missing;
  missing.align.per_model["en-us"] = "/no/such/dictionary.dict";
  auto failed = ModelRepository::LoadDirectory(repository_.directory(), backend->get(), missing);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("/no/such/dictionary.dict"));
}

// An aligning model has an aligner per device memory it is placed on:
// schedulers over one GPU (memory_of 0, 0) share one, separate memories
// each have their own, and a device it is not placed on has none.
TEST_F(AlignDaemonTest, AlignersArePerDeviceMemory) {
  std::vector<std::unique_ptr<ScoringBackend>> backends = MakeTestBackends({.count = 3});
  ASSERT_EQ(backends.size(), 3u);
  const std::vector<ScoringBackend*> devices = {backends[0].get(), backends[1].get(), backends[2].get()};
  RepositoryOptions options = repository_.Options();
  options.memory_of = {0, 0, 1};
  options.placement["en-us-nodict"] = {2};
  auto repository = ModelRepository::LoadDirectory(repository_.directory(), devices, options);
  ASSERT_TRUE(repository.ok()) << repository.status();
  const std::shared_ptr<const ServedModel> model = *(*repository)->Find("en-us");
  ASSERT_NE(model->aligner_on(0), nullptr);
  EXPECT_EQ(model->aligner_on(1), model->aligner_on(0));
  ASSERT_NE(model->aligner_on(2), nullptr);
  EXPECT_NE(model->aligner_on(2), model->aligner_on(0));
  EXPECT_EQ(model->aligner, model->aligner_on(0));
  EXPECT_EQ(model->aligner_on(3), nullptr);
  options.placement["en-us"] = {1, 2};
  auto placed = ModelRepository::LoadDirectory(repository_.directory(), devices, options);
  ASSERT_TRUE(placed.ok()) << placed.status();
  const std::shared_ptr<const ServedModel> on_two = *(*placed)->Find("en-us");
  EXPECT_EQ(on_two->aligner_on(0), nullptr);
  EXPECT_EQ(on_two->aligner, on_two->aligner_on(1));
  EXPECT_NE(on_two->aligner_on(2), nullptr);
}

TEST(AlignRepositoryTest, ADictionaryForAModelThatIsNotSphinxFailsItsLoad) {
  auto served = DirectoryDaemon::Start({{"synthetic", {.num_states = 10, .dim = 39, .seed = 1}}}, {});
  ASSERT_NE(served, nullptr);
  auto backend = CreateBackend("cpu");
  ASSERT_TRUE(backend.ok());
  RepositoryOptions options;
  options.align.per_model["synthetic"] = "/any.dict";
  auto repository = ModelRepository::LoadDirectory(served->directory, backend->get(), options);
  EXPECT_EQ(repository.status().code(), absl::StatusCode::kInvalidArgument) << repository.status();
  EXPECT_THAT(repository.status().message(), HasSubstr("only a CMU Sphinx model directory can align"));
  // The default dictionary leaves it alone, and Align says why it cannot.
  options.align.per_model.clear();
  options.align.default_dictionary = kEnUsDict;
  auto plain = ModelRepository::LoadDirectory(served->directory, backend->get(), options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*(*plain)->Find("synthetic"))->aligner, nullptr);
  auto client = Client::Connect(served->daemon->address());
  ASSERT_TRUE(client.ok());
  v1::AlignRequest request;
  request.set_model("synthetic");
  request.add_words("hello");
  auto answer = (*client)->Align(request);
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kFailedPrecondition) << answer.status();
  EXPECT_THAT(answer.status().message(), HasSubstr("this one is native"));
}

}  // namespace
}  // namespace gmmscore
