// Audio streams (StreamConfig.audio) against an in-process gmmscored on the
// test backend: the server's front end on real speech gives the scores of
// `gmmscore features --cmn live` features (ComputeFeatures, CmnMode::kLive)
// scored offline, for chunks of 1 sample, 160 samples, 1 s and random sizes,
// in PCM16 and FLOAT32; frames are answered once their lookahead arrived and
// split at --max_chunk_frames; a Sphinx model directory's feat.params and a
// config front_end section both work; bad audio gets its status while a good
// stream beside it goes on.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/model_loader.h"
#include "kernels/io/native_model_file.h"
#include "kernels/io/wav_reader.h"
#include "kernels/model/synthetic_model.h"
#include "server/daemon.h"
#include "server/log.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";
const std::string kGoForward = "/usr/share/pocketsphinx/test/data/goforward.raw";

bool HaveSpeech() {
  struct stat info;
  return ::stat(kEnUs.c_str(), &info) == 0 && ::stat(kGoForward.c_str(), &info) == 0;
}

// A repository of three models: "en-us" (the Sphinx directory, its own
// feat.params), "synth" (a native 39-dim model given en-us's front end by a
// config section) and "plain" (native, no front end); plus the offline
// engine over the same files.
class AudioStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveSpeech()) GTEST_SKIP() << "pocketsphinx en-us or its test data is missing: run tools/install_deps.sh";
    SetInfoLogging(false);
    dir_ = (std::filesystem::temp_directory_path() / absl::StrCat("gmmscore_audio_", ::getpid())).string();
    std::filesystem::create_directories(dir_);
    std::filesystem::create_directory_symlink(kEnUs, dir_ + "/en-us");
    std::random_device seed;
    for (const char* name : {"synth", "plain"}) {
      absl::StatusOr<DiagGmmModel> model =
          GenerateSyntheticModel({.num_states = 60, .min_gaussians = 1, .max_gaussians = 8, .dim = 39, .seed = seed()});
      ASSERT_TRUE(model.ok());
      ASSERT_TRUE(WriteNativeModel(*model, absl::StrCat(dir_, "/", name, ".gmm")).ok());
    }
    options_.front_ends["synth"] = {.feat_params = kEnUs + "/feat.params", .options = "-cmninit 40,3,-1"};
    absl::StatusOr<PcmAudio> audio = ReadSpeechFile(kGoForward, 16000);
    ASSERT_TRUE(audio.ok()) << audio.status();
    speech_ = audio->samples;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::unique_ptr<Daemon> StartDaemon(DaemonOptions options = {}) {
    auto backend = CreateBackend(TestBackendName());
    EXPECT_TRUE(backend.ok()) << backend.status();
    auto repository = ModelRepository::LoadDirectory(dir_, backend->get(), options_);
    EXPECT_TRUE(repository.ok()) << repository.status();
    if (!repository.ok()) return nullptr;
    options.listen_address = "127.0.0.1:0";
    auto daemon = Daemon::Start(*std::move(backend), *std::move(repository), options);
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return daemon.ok() ? *std::move(daemon) : nullptr;
  }

  // The model's features of `samples` (the en-us pipeline, live CMN, with
  // `cmn_init`) scored by the offline engine.
  FloatMatrix OfflineScores(const std::string& model, const std::vector<int16_t>& samples,
                            const std::vector<float>& cmn_init) {
    absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kEnUs);
    EXPECT_TRUE(pipeline.ok());
    pipeline->cmn = CmnMode::kLive;
    pipeline->cmn_init = cmn_init;
    absl::StatusOr<FloatMatrix> features = ComputeFeatures(PcmAudio{16000, samples}, *pipeline, "speech");
    EXPECT_TRUE(features.ok()) << features.status();
    auto backend = CreateBackend(TestBackendName());
    absl::StatusOr<LoadedModel> loaded = LoadAnyModel(model == "en-us" ? kEnUs : absl::StrCat(dir_, "/", model, ".gmm"));
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    auto prepared = loaded->tied != nullptr ? (*backend)->PrepareTied(loaded->tied) : (*backend)->Prepare(loaded->untied);
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    ScoreResult result;
    EXPECT_TRUE((*backend)->Score(**prepared, features->view(), {}, &result).ok());
    return result.loglikes;
  }

  std::string dir_;
  RepositoryOptions options_;
  std::vector<int16_t> speech_;
};

const std::vector<float> kEnUsCmnInit = {41.00f, -5.29f, -0.12f, 5.09f, 2.48f, -4.07f, -1.37f,
                                         -1.78f, -5.08f, -2.05f, -6.45f, -1.42f, 1.17f};

v1::StreamScoreRequest AudioConfig(const std::string& model, v1::AudioStreamConfig::Encoding encoding,
                                   int sample_rate = 16000) {
  v1::StreamScoreRequest request;
  request.mutable_config()->add_models(model);
  request.mutable_config()->mutable_audio()->set_encoding(encoding);
  request.mutable_config()->mutable_audio()->set_sample_rate(sample_rate);
  return request;
}

v1::StreamScoreRequest AudioChunk(std::string bytes) {
  v1::StreamScoreRequest request;
  request.mutable_audio()->set_samples(std::move(bytes));
  return request;
}

std::string Pcm16Bytes(absl::Span<const int16_t> samples) {
  std::string bytes(samples.size() * 2, '\0');
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto s = static_cast<uint16_t>(samples[i]);
    bytes[2 * i] = static_cast<char>(s & 0xff);
    bytes[2 * i + 1] = static_cast<char>(s >> 8);
  }
  return bytes;
}

std::string Float32Bytes(absl::Span<const float> samples) {
  std::string bytes(samples.size() * 4, '\0');
  std::memcpy(bytes.data(), samples.data(), bytes.size());  // x86 and ARM hosts are little-endian
  return bytes;
}

struct StreamOutcome {
  grpc::Status status;
  FloatMatrix scores;               // the answers' rows, in order
  std::vector<int64_t> answer_frames;
};

// Sends `requests` on one StreamScore stream, half-closes, reads every answer.
StreamOutcome RunStream(const std::string& address, const std::vector<v1::StreamScoreRequest>& requests) {
  auto stub = v1::AcousticScorer::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto stream = stub->StreamScore(&context);
  std::thread writer([&] {
    for (const auto& request : requests) {
      if (!stream->Write(request)) break;
    }
    stream->WritesDone();
  });
  StreamOutcome out;
  std::vector<float> values;
  int64_t next = 0, states = 0;
  v1::StreamScoreResponse response;
  while (stream->Read(&response)) {
    EXPECT_EQ(response.first_frame(), static_cast<uint64_t>(next));
    const v1::StateScores& scores = response.scores(0);
    states = scores.num_states();
    values.insert(values.end(), scores.loglikes().begin(), scores.loglikes().end());
    out.answer_frames.push_back(scores.num_frames());
    next += scores.num_frames();
  }
  writer.join();
  out.status = stream->Finish();
  out.scores = FloatMatrix(next, states);
  std::copy(values.begin(), values.end(), out.scores.data());
  return out;
}

// Requests of `samples` cut into pieces of the sizes `next_size` gives.
template <typename NextSize>
std::vector<v1::StreamScoreRequest> Pieces(v1::StreamScoreRequest config, const std::vector<int16_t>& samples,
                                           bool as_float, NextSize next_size) {
  std::vector<v1::StreamScoreRequest> requests = {std::move(config)};
  for (size_t at = 0; at < samples.size();) {
    const size_t size = std::min(samples.size() - at, static_cast<size_t>(next_size()));
    const auto piece = absl::MakeConstSpan(samples).subspan(at, size);
    if (as_float) {
      std::vector<float> floats(piece.begin(), piece.end());
      for (float& f : floats) f /= 32768.0f;
      requests.push_back(AudioChunk(Float32Bytes(floats)));
    } else {
      requests.push_back(AudioChunk(Pcm16Bytes(piece)));
    }
    at += size;
  }
  return requests;
}

// The largest difference relative to the float32 rounding of the values
// compared: the same features through the same engine, but in other batches
// (a synthetic model far from speech gives log-likelihoods near -1e5, where
// one ulp is 0.008). Below 1: equal within rounding.
double WorstError(const FloatMatrix& got, const FloatMatrix& expected) {
  double worst = 0;
  for (int64_t i = 0; i < got.rows() * got.cols(); ++i) {
    const double allowed = 1e-4 + 64 * 0x1p-24 * std::abs(double{expected.data()[i]});
    worst = std::max(worst, std::abs(double{got.data()[i]} - expected.data()[i]) / allowed);
  }
  return worst;
}

TEST_F(AudioStreamTest, ScoresEqualTheOfflineScoresOfLiveCmnFeaturesForAnyChunking) {
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> random_size(1, 6000);
  for (const auto& [model, cmn_init] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"en-us", kEnUsCmnInit}, {"synth", FeaturePipeline::DefaultCmnInit()}}) {
    SCOPED_TRACE(model);
    const FloatMatrix offline = OfflineScores(model, speech_, cmn_init);
    ASSERT_EQ(offline.rows(), 1 + (static_cast<int64_t>(speech_.size()) - 410 + 159) / 160);
    for (int size : {1, 160, 16000, 0}) {
      for (bool as_float : {false, true}) {
        if (size == 1 && (as_float || model != "en-us")) continue;  // 44580 requests: once is enough
        SCOPED_TRACE(absl::StrCat(size == 0 ? "random" : absl::StrCat(size), " samples a chunk, ",
                                  as_float ? "FLOAT32" : "PCM16"));
        const StreamOutcome got =
            RunStream(daemon->address(),
                      Pieces(AudioConfig(model, as_float ? v1::AudioStreamConfig::FLOAT32 : v1::AudioStreamConfig::PCM16),
                             speech_, as_float, [&] { return size == 0 ? random_size(random) : size; }));
        ASSERT_TRUE(got.status.ok()) << got.status.error_message();
        ASSERT_EQ(got.scores.rows(), offline.rows());
        // The same features through the same engine (float32 samples are
        // the int16 ones / 32768: exact).
        EXPECT_LT(WorstError(got.scores, offline), 1.0);
      }
    }
  }
}

TEST_F(AudioStreamTest, FramesAreAnsweredOnceTheirLookaheadArrivedAndSplitAtTheChunkLimit) {
  DaemonOptions options;
  options.limits.max_chunk_frames = 40;
  auto daemon = StartDaemon(options);
  ASSERT_NE(daemon, nullptr);
  auto client = Client::Connect(daemon->address());
  ASSERT_TRUE(client.ok());
  v1::StreamConfig config = AudioConfig("en-us", v1::AudioStreamConfig::PCM16).config();
  auto session = (*client)->StartStream(config);
  ASSERT_TRUE(session.ok()) << session.status();
  // A chunk may hold 40 frames of audio: 40 * 160 + 410 = 6810 samples.
  // The first completes 1 + (6810 - 410) / 160 = 41 frames, 38 answered (3
  // of lookahead); the second 83 in all, so 42 more, answered as 40 + 2.
  auto next_sizes = [&](int64_t until, std::vector<int64_t>* sizes, int64_t* frames) {
    while (*frames < until) {
      absl::StatusOr<StreamAnswer> answer = (*session)->Next();
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(answer->first_frame, *frames);
      sizes->push_back(answer->scores.rows());
      *frames += answer->scores.rows();
    }
  };
  std::vector<int64_t> sizes;
  int64_t frames = 0;
  ASSERT_TRUE((*session)->PushAudio(absl::MakeConstSpan(speech_).subspan(0, 6810)).ok());
  next_sizes(38, &sizes, &frames);
  ASSERT_TRUE((*session)->PushAudio(absl::MakeConstSpan(speech_).subspan(6810, 6810)).ok());
  next_sizes(80, &sizes, &frames);
  EXPECT_EQ(sizes, (std::vector<int64_t>{38, 40, 2}));
  EXPECT_EQ(frames, 80);
  // Nothing more comes until more audio or the half-close.
  absl::SleepFor(absl::Milliseconds(100));
  absl::StatusOr<std::optional<StreamAnswer>> early = (*session)->TryNext();
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early->has_value());
  ASSERT_TRUE((*session)->CloseSend().ok());
  absl::StatusOr<StreamAnswer> rest = (*session)->Next();
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->first_frame, 80);
  // The 3 held back, and one zero-padded frame for the 340 samples past the
  // 83rd shift (sphinx_fe pads what is left after the last whole shift).
  EXPECT_EQ(rest->scores.rows(), 4);
  EXPECT_TRUE(absl::IsOutOfRange((*session)->Next().status()));
  EXPECT_TRUE((*session)->Finish().ok());
  // One sample more than 40 frames of audio is refused.
  auto refused = (*client)->StartStream(config);
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE((*refused)->PushAudio(absl::MakeConstSpan(speech_).subspan(0, 6811)).ok());
  absl::StatusOr<StreamAnswer> too_long = (*refused)->Next();
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument) << too_long.status();
  EXPECT_THAT(too_long.status().message(), HasSubstr("holds 6811 samples, more than this server's 6810"));
  // The server counted them (GetServerStats; /metrics reads the same counters).
  auto stub = v1::AcousticScorer::NewStub(grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::GetServerStatsResponse stats;
  ASSERT_TRUE(stub->GetServerStats(&context, {}, &stats).ok());
  EXPECT_EQ(stats.audio_streams(), 2u);
  EXPECT_EQ(stats.audio_samples(), 13620u);
  EXPECT_EQ(stats.audio_frames(), 84u);
  EXPECT_GT(stats.audio_front_end_us(), 0u);
}

TEST_F(AudioStreamTest, BadAudioGetsItsStatusWhileAGoodStreamGoesOn) {
  auto daemon = StartDaemon();
  ASSERT_NE(daemon, nullptr);
  const FloatMatrix offline = OfflineScores("en-us", speech_, kEnUsCmnInit);
  // A good stream alongside, in 50 ms chunks sent as fast as they go.
  StreamOutcome good;
  std::thread beside([&] {
    good = RunStream(daemon->address(),
                     Pieces(AudioConfig("en-us", v1::AudioStreamConfig::PCM16), speech_, false, [] { return 800; }));
  });
  struct Case {
    std::string what;
    std::vector<v1::StreamScoreRequest> requests;
    grpc::StatusCode code;
    std::string message;
  };
  v1::StreamScoreRequest features;
  features.mutable_chunk()->set_num_frames(1);
  features.mutable_chunk()->set_dim(39);
  features.mutable_chunk()->mutable_values()->Resize(39, 0.0f);
  v1::StreamScoreRequest feature_config;
  feature_config.mutable_config()->add_models("en-us");
  const float nan = std::nanf("");
  const std::vector<Case> cases = {
      {"wrong sample rate", {AudioConfig("en-us", v1::AudioStreamConfig::PCM16, 8000)},
       grpc::StatusCode::INVALID_ARGUMENT, "8000 Hz"},
      {"no encoding", {AudioConfig("en-us", v1::AudioStreamConfig::ENCODING_UNSPECIFIED)},
       grpc::StatusCode::INVALID_ARGUMENT, "PCM16 or FLOAT32"},
      {"odd byte count", {AudioConfig("en-us", v1::AudioStreamConfig::PCM16), AudioChunk(std::string(3201, '\1'))},
       grpc::StatusCode::INVALID_ARGUMENT, "3201 bytes"},
      {"NaN float", {AudioConfig("en-us", v1::AudioStreamConfig::FLOAT32), AudioChunk(Float32Bytes({0.1f, 0.2f, nan}))},
       grpc::StatusCode::INVALID_ARGUMENT, "audio sample 2"},
      {"float bytes not whole", {AudioConfig("en-us", v1::AudioStreamConfig::FLOAT32), AudioChunk("abcdef")},
       grpc::StatusCode::INVALID_ARGUMENT, "6 bytes"},
      {"empty chunk", {AudioConfig("en-us", v1::AudioStreamConfig::PCM16), AudioChunk("")},
       grpc::StatusCode::INVALID_ARGUMENT, "no samples"},
      // --max_chunk_frames (1000) frames of audio: 1000 * 160 + 410 samples.
      {"chunk too long", {AudioConfig("en-us", v1::AudioStreamConfig::PCM16), AudioChunk(std::string(2 * 160411, '\0'))},
       grpc::StatusCode::INVALID_ARGUMENT, "holds 160411 samples, more than this server's 160410"},
      {"no front end", {AudioConfig("plain", v1::AudioStreamConfig::PCM16)},
       grpc::StatusCode::FAILED_PRECONDITION, "has no front end"},
      {"features on an audio stream", {AudioConfig("en-us", v1::AudioStreamConfig::PCM16), features},
       grpc::StatusCode::INVALID_ARGUMENT, "send StreamScoreRequest.audio"},
      {"audio on a feature stream", {feature_config, AudioChunk(Pcm16Bytes(speech_))},
       grpc::StatusCode::INVALID_ARGUMENT, "set StreamConfig.audio"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const StreamOutcome got = RunStream(daemon->address(), c.requests);
    EXPECT_EQ(got.status.error_code(), c.code) << got.status.error_message();
    EXPECT_THAT(got.status.error_message(), HasSubstr(c.message));
  }
  // Audio answered before a bad chunk is kept: 1 s, then an odd chunk.
  const StreamOutcome partial = RunStream(
      daemon->address(), {AudioConfig("en-us", v1::AudioStreamConfig::PCM16),
                          AudioChunk(Pcm16Bytes(absl::MakeConstSpan(speech_).subspan(0, 16000))), AudioChunk("x")});
  EXPECT_EQ(partial.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(partial.scores.rows(), 95);
  beside.join();
  ASSERT_TRUE(good.status.ok()) << good.status.error_message();
  ASSERT_EQ(good.scores.rows(), offline.rows());
  EXPECT_LT(WorstError(good.scores, offline), 1.0);
}

TEST_F(AudioStreamTest, ABadFrontEndSectionFailsTheLoad) {
  auto backend = CreateBackend("cpu");
  ASSERT_TRUE(backend.ok());
  for (const auto& [source, message] : std::vector<std::pair<FrontEndSource, std::string>>{
           {{.options = "-feat 1s_c_d"}, "26-dim features, but the model's are 39"},
           {{.options = "-nfft 500"}, "-nfft"},
           {{.options = "-samprate"}, "\"-name value\" pairs"},
           {{.feat_params = "/nonexistent/feat.params"}, "/nonexistent/feat.params"}}) {
    RepositoryOptions options;
    options.front_ends["plain"] = source;
    auto repository = ModelRepository::LoadDirectory(dir_, backend->get(), options);
    ASSERT_FALSE(repository.ok());
    EXPECT_THAT(repository.status().message(), HasSubstr(message));
    EXPECT_THAT(repository.status().message(), HasSubstr("plain.gmm"));
  }
}

}  // namespace
}  // namespace gmmscore
