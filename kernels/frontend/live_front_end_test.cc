// The live front end: chunking never changes its features, live CMN against
// a float64 reimplementation of sphinxbase's rule on the batch path's
// cepstra, when frames come out, and its errors. Real speech:
// pocketsphinx-testdata's goforward.raw with the en-us model's feat.params.
#include "kernels/frontend/live_front_end.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/frontend/live_cmn.h"
#include "kernels/io/sphinx_features.h"
#include "kernels/io/wav_reader.h"

namespace gmmscore {
namespace {

const std::string kTestData = "/usr/share/pocketsphinx/test/data";
const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

#define REQUIRE_PATH(path) \
  if (!Exists(path)) GTEST_SKIP() << path << " is missing: run tools/install_deps.sh"

FeaturePipeline LivePipeline(const std::string& feature_type = "1s_c_d_dd") {
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kEnUs);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  pipeline->cmn = CmnMode::kLive;
  pipeline->feature_type = feature_type;
  return *pipeline;
}

std::vector<int16_t> GoForward() {
  absl::StatusOr<PcmAudio> audio = ReadSpeechFile(kTestData + "/goforward.raw", 16000);
  EXPECT_TRUE(audio.ok()) << audio.status();
  return audio->samples;
}

// The features of `samples` pushed in pieces of the sizes `next_size` gives.
template <typename NextSize>
FloatMatrix PushInPieces(const FeaturePipeline& pipeline, const std::vector<int16_t>& samples, NextSize next_size) {
  absl::StatusOr<std::unique_ptr<LiveFrontEnd>> live = LiveFrontEnd::Create(pipeline);
  EXPECT_TRUE(live.ok()) << live.status();
  std::vector<float> values;
  auto keep = [&](const absl::StatusOr<FloatMatrix>& m) {
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->cols(), (*live)->dim());
    values.insert(values.end(), m->span().begin(), m->span().end());
  };
  for (size_t at = 0; at < samples.size();) {
    const size_t size = std::min(samples.size() - at, static_cast<size_t>(next_size()));
    keep((*live)->Push(absl::MakeConstSpan(samples).subspan(at, size)));
    at += size;
  }
  keep((*live)->Finish());
  FloatMatrix out(static_cast<int64_t>(values.size()) / (*live)->dim(), (*live)->dim());
  std::copy(values.begin(), values.end(), out.data());
  return out;
}

TEST(LiveFrontEndTest, AnyChunkingGivesTheWholeRecordingsFeatures) {
  REQUIRE_PATH(kEnUs);
  REQUIRE_PATH(kTestData);
  const std::vector<int16_t> samples = GoForward();
  for (const std::string type : {"1s_c_d_dd", "s2_4x", "1s_c"}) {
    SCOPED_TRACE(type);
    const FeaturePipeline pipeline = LivePipeline(type);
    absl::StatusOr<FloatMatrix> whole = ComputeFeatures(PcmAudio{16000, samples}, pipeline, "goforward.raw");
    ASSERT_TRUE(whole.ok()) << whole.status();
    ASSERT_EQ(whole->rows(), 1 + (static_cast<int64_t>(samples.size()) - 410 + 159) / 160);
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937 random(seed);
    std::uniform_int_distribution<int> size(1, 5000);
    for (auto next : std::vector<std::function<int()>>{
             [] { return 160; }, [] { return 16000; }, [&] { return size(random); }, [] { return 1 << 30; }}) {
      EXPECT_EQ(PushInPieces(pipeline, samples, next), *whole);
    }
  }
  // One sample at a time (2.9 s of audio: 46000 pushes), for the main type.
  const FeaturePipeline pipeline = LivePipeline();
  EXPECT_EQ(PushInPieces(pipeline, samples, [] { return 1; }),
            *ComputeFeatures(PcmAudio{16000, samples}, pipeline, "goforward.raw"));
}

// sphinxbase's live CMN, one frame at a time, in float64.
void ReferenceLiveCmn(const std::vector<float>& init, FloatMatrix* cepstra) {
  std::vector<double> mean(init.begin(), init.end()), sum(init.size());
  for (size_t i = 0; i < init.size(); ++i) sum[i] = mean[i] * 500;
  int frames = 500;
  for (int64_t t = 0; t < cepstra->rows(); ++t) {
    float* c = cepstra->row(t);
    if (c[0] < 0) continue;
    for (size_t i = 0; i < mean.size(); ++i) {
      sum[i] += c[i];
      c[i] = static_cast<float>(c[i] - mean[i]);
    }
    if (++frames > 800) {
      for (size_t i = 0; i < mean.size(); ++i) mean[i] = sum[i] / frames, sum[i] = mean[i] * 500;
      frames = 500;
    }
  }
}

TEST(LiveFrontEndTest, LiveCmnMatchesAFloat64ReferenceOnLongSpeech) {
  REQUIRE_PATH(kEnUs);
  REQUIRE_PATH(kTestData);
  // 29 s (goforward ten times, with a random gain each) so the mean moves
  // several times (every 301 frames with energy).
  std::vector<int16_t> samples;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> gain(0.3, 1.5);
  for (int i = 0; i < 10; ++i) {
    const double g = gain(random);
    for (int16_t s : GoForward()) samples.push_back(static_cast<int16_t>(std::clamp(s * g, -32768.0, 32767.0)));
  }
  const FeaturePipeline pipeline = LivePipeline();
  absl::StatusOr<FloatMatrix> cepstra = ComputeCepstra(samples, pipeline.front_end);
  ASSERT_TRUE(cepstra.ok()) << cepstra.status();
  const FloatMatrix raw = *cepstra;
  ReferenceLiveCmn(pipeline.cmn_init, &*cepstra);
  absl::StatusOr<FloatMatrix> expected = ComputeSphinxFeatures(*cepstra, pipeline.feature_type);
  ASSERT_TRUE(expected.ok());
  std::uniform_int_distribution<int> size(1, 8000);
  const FloatMatrix live = PushInPieces(pipeline, samples, [&] { return size(random); });
  ASSERT_EQ(live.rows(), expected->rows());
  double worst = 0;
  for (int64_t t = 0; t < live.rows(); ++t) {
    for (int64_t d = 0; d < live.cols(); ++d) worst = std::max(worst, std::abs(double{live.at(t, d)} - expected->at(t, d)));
  }
  // float32 sums of ~800 values of magnitude <= 60 against float64.
  EXPECT_LT(worst, 2e-3);
  // And the mean did move away from -cmninit by the end.
  const int64_t last = raw.rows() - 1;
  ASSERT_GE(raw.at(last, 0), 0);
  EXPECT_GT(std::abs(live.at(last, 0) - (raw.at(last, 0) - pipeline.cmn_init[0])), 0.1);
}

TEST(LiveCmnTest, FramesWithoutEnergyAreLeftAloneAndTheMeanMovesAfter800) {
  LiveCmn cmn({10, 1});
  std::vector<float> silent = {-1, 5};
  cmn.Apply(absl::MakeSpan(silent));
  EXPECT_EQ(silent, (std::vector<float>{-1, 5}));  // not normalised, not counted
  for (int t = 0; t < 300; ++t) {
    std::vector<float> frame = {20, 3};
    cmn.Apply(absl::MakeSpan(frame));
    EXPECT_EQ(frame, (std::vector<float>{10, 2}));  // the init until frame 301
  }
  std::vector<float> frame = {20, 3};
  cmn.Apply(absl::MakeSpan(frame));  // the 301st counted: 801 in the window
  // (10 * 500 + 20 * 301) / 801 and (1 * 500 + 3 * 301) / 801.
  EXPECT_NEAR(cmn.mean()[0], 11020.0 / 801, 1e-4);
  EXPECT_NEAR(cmn.mean()[1], 1403.0 / 801, 1e-5);
}

TEST(LiveFrontEndTest, FramesComeOutOnceTheirLookaheadHasArrived) {
  REQUIRE_PATH(kEnUs);
  absl::StatusOr<std::unique_ptr<LiveFrontEnd>> live = LiveFrontEnd::Create(LivePipeline());
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ((*live)->lookahead(), 3);
  std::vector<int16_t> samples(409, 100);
  EXPECT_EQ((*live)->Push(samples)->rows(), 0);  // not one window yet
  // Frames 0..3 complete at 410 + 3 * 160 samples; frame 0 needs frame 3.
  samples.assign(1 + 3 * 160 - 1, 100);
  EXPECT_EQ((*live)->Push(samples)->rows(), 0);
  samples.assign(1, 100);
  EXPECT_EQ((*live)->Push(samples)->rows(), 1);
  EXPECT_EQ((*live)->Push(std::vector<int16_t>(160 * 10, 7))->rows(), 10);
  // 2490 samples = 410 + 13 * 160: 14 whole frames; Finish gives the 3
  // held back and one zero-padded frame for the 250 samples past the 14th
  // shift (sphinx_fe pads what is left after the last whole shift).
  absl::StatusOr<FloatMatrix> rest = (*live)->Finish();
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->rows(), 4);
  EXPECT_EQ((*live)->frames_out(), 11 + rest->rows());
  EXPECT_EQ((*live)->Finish().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*live)->Push(samples).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LiveFrontEndTest, NoAudioGivesNoFramesAndBadPipelinesAreRefused) {
  REQUIRE_PATH(kEnUs);
  absl::StatusOr<std::unique_ptr<LiveFrontEnd>> live = LiveFrontEnd::Create(LivePipeline());
  ASSERT_TRUE(live.ok());
  absl::StatusOr<FloatMatrix> rest = (*live)->Finish();
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->rows(), 0);
  FeaturePipeline bad = LivePipeline("1s_c_wd");
  EXPECT_EQ(LiveFrontEnd::Create(bad).status().code(), absl::StatusCode::kUnimplemented);
  bad = LivePipeline();
  bad.cmn_init.resize(5);
  EXPECT_EQ(LiveFrontEnd::Create(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = LivePipeline();
  bad.front_end.fft_size = 500;
  EXPECT_EQ(LiveFrontEnd::Create(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
