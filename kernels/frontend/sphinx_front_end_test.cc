// The front end against the cepstra pocketsphinx-testdata ships
// (goforward.mfc, computed by sphinxbase from goforward.raw with the en-us
// model's feat.params), scoring the en-us PTM model through it, and the
// option checks.
#include "kernels/frontend/sphinx_front_end.h"

#include <sys/stat.h>

#include <cmath>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/tied_mixture_scorer.h"
#include "kernels/io/sphinx_features.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/io/wav_reader.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kTestData = "/usr/share/pocketsphinx/test/data";
const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

#define REQUIRE_PATH(path) \
  if (!Exists(path)) GTEST_SKIP() << path << " is missing: run tools/install_deps.sh"

// goforward.mfc and our cepstra come from the same sphinxbase code on the
// same samples, so they agree exactly on this machine (measured: 0). The
// tolerance leaves room for a sphinxbase built with another compiler or libm
// (float32 FFT and log on values of magnitude <= ~60: a few ulps, ~1e-5) while
// still failing on any wrong option: the smallest option change tried
// (-lowerf 133.33 instead of 130) moves cepstra by more than 0.05.
constexpr double kCepstrumTolerance = 1e-3;

double MaxAbsDiff(const FloatMatrix& a, const FloatMatrix& b, int64_t rows) {
  double worst = 0.0;
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t d = 0; d < a.cols(); ++d) worst = std::max(worst, std::abs(double{a.at(t, d)} - b.at(t, d)));
  }
  return worst;
}

PcmAudio GoForward() {
  absl::StatusOr<PcmAudio> audio = ReadSpeechFile(kTestData + "/goforward.raw", 16000);
  EXPECT_TRUE(audio.ok()) << audio.status();
  return *std::move(audio);
}

TEST(SphinxFrontEndTest, EnUsFeatParamsParsed) {
  REQUIRE_PATH(kEnUs);
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kEnUs);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  EXPECT_EQ(pipeline->front_end.num_filters, 25);
  EXPECT_EQ(pipeline->front_end.lower_freq, 130.0);
  EXPECT_EQ(pipeline->front_end.upper_freq, 6800.0);
  EXPECT_EQ(pipeline->front_end.transform, "dct");
  EXPECT_EQ(pipeline->front_end.lifter, 22);
  EXPECT_EQ(pipeline->front_end.sample_rate, 16000.0);  // sphinxbase default
  EXPECT_EQ(pipeline->cmn, CmnMode::kBatch);
  EXPECT_EQ(pipeline->feature_type, "1s_c_d_dd");
}

TEST(SphinxFrontEndTest, GoForwardRawGivesTestdataCepstra) {
  REQUIRE_PATH(kTestData + "/goforward.raw");
  REQUIRE_PATH(kEnUs);
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kEnUs);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  absl::StatusOr<FloatMatrix> reference = ReadSphinxMfc(kTestData + "/goforward.mfc");
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(reference->rows(), 264);
  const PcmAudio audio = GoForward();
  ASSERT_EQ(audio.samples.size(), 44580u);

  // Every frame kept (our default): 277 whole frames + the zero-padded last
  // one; the testdata file was written with silence removal on, which only
  // dropped trailing frames, so its 264 frames are our first 264.
  absl::StatusOr<FloatMatrix> all = ComputeCepstra(audio.samples, pipeline->front_end);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->rows(), 278);
  EXPECT_EQ(all->cols(), 13);
  const double all_diff = MaxAbsDiff(*reference, *all, 264);
  std::printf("goforward.raw vs goforward.mfc: max |diff| %.3g over 264 x 13 cepstra\n", all_diff);
  EXPECT_LE(all_diff, kCepstrumTolerance);

  // With sphinxbase's VAD on, exactly the testdata file.
  pipeline->front_end.remove_silence = true;
  absl::StatusOr<FloatMatrix> voiced = ComputeCepstra(audio.samples, pipeline->front_end);
  ASSERT_TRUE(voiced.ok()) << voiced.status();
  ASSERT_EQ(voiced->rows(), 264);
  EXPECT_LE(MaxAbsDiff(*reference, *voiced, 264), kCepstrumTolerance);

  // The options do reach sphinxbase: sphinx_fe's default band edges differ.
  pipeline->front_end.lower_freq = 133.33334;
  absl::StatusOr<FloatMatrix> other = ComputeCepstra(audio.samples, pipeline->front_end);
  ASSERT_TRUE(other.ok());
  EXPECT_GT(MaxAbsDiff(*reference, *other, 264), 0.05);
}

TEST(SphinxFrontEndTest, EnUsScoresFromAudioMatchScoresFromTestdataCepstra) {
  REQUIRE_PATH(kTestData + "/goforward.raw");
  REQUIRE_PATH(kEnUs);
  absl::StatusOr<SphinxModel> sphinx = ReadSphinxModel(kEnUs);
  ASSERT_TRUE(sphinx.ok()) << sphinx.status();
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kEnUs);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  pipeline->front_end.remove_silence = true;  // the frames goforward.mfc has
  absl::StatusOr<FloatMatrix> from_audio = ComputeFeatures(GoForward(), *pipeline, "goforward.raw");
  ASSERT_TRUE(from_audio.ok()) << from_audio.status();
  ASSERT_EQ(from_audio->cols(), 39);

  absl::StatusOr<FloatMatrix> cep = ReadSphinxMfc(kTestData + "/goforward.mfc");
  ASSERT_TRUE(cep.ok());
  ApplyBatchCmn(&*cep);
  absl::StatusOr<FloatMatrix> from_mfc = ComputeSphinxFeatures(*cep, "1s_c_d_dd");
  ASSERT_TRUE(from_mfc.ok());
  ASSERT_EQ(from_audio->rows(), from_mfc->rows());

  const auto model = std::make_shared<const TiedMixtureModel>(std::move(sphinx->model));
  TiedMixtureCpuScorer scorer(model, {.num_threads = 2});
  FloatMatrix audio_scores, mfc_scores;
  ASSERT_TRUE(scorer.Score(from_audio->view(), &audio_scores).ok());
  ASSERT_TRUE(scorer.Score(from_mfc->view(), &mfc_scores).ok());
  ASSERT_EQ(audio_scores.cols(), 5126);
  double worst = 0.0;
  for (int64_t i = 0; i < audio_scores.rows() * audio_scores.cols(); ++i) {
    ASSERT_TRUE(std::isfinite(audio_scores.data()[i])) << i;
    worst = std::max(worst, std::abs(double{audio_scores.data()[i]} - mfc_scores.data()[i]));
  }
  std::printf("en-us senone scores, audio vs testdata cepstra: max |diff| %.3g nats\n", worst);
  EXPECT_LE(worst, 1e-3);

  // Every frame kept: more frames, same width, the speech scored the same way.
  pipeline->front_end.remove_silence = false;
  absl::StatusOr<FloatMatrix> all = ComputeFeatures(GoForward(), *pipeline, "goforward.raw");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->rows(), 278);
  FloatMatrix all_scores;
  ASSERT_TRUE(scorer.Score(all->view(), &all_scores).ok());
  EXPECT_EQ(all_scores.rows(), 278);
}

TEST(SphinxFrontEndTest, DeterministicShortAndEmptyAudio) {
  FrontEndOptions options;
  std::vector<int16_t> samples(4000);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<int16_t>(3000 * std::sin(0.05 * i * i / 100.0));
  absl::StatusOr<FloatMatrix> a = ComputeCepstra(samples, options);
  absl::StatusOr<FloatMatrix> b = ComputeCepstra(samples, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);  // no dither, no hidden state
  // 1 + (4000 - 410) / 160 = 23 whole frames, + 1 for the 70 left over.
  EXPECT_EQ(a->rows(), 24);

  absl::StatusOr<FloatMatrix> empty = ComputeCepstra({}, options);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->rows(), 0);
  absl::StatusOr<FloatMatrix> features = ComputeFeatures(PcmAudio{16000, {}}, FeaturePipeline{}, "empty.wav");
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_EQ(features->rows(), 0);
  EXPECT_EQ(features->cols(), 39);
  // Less than one frame: the padded one. One frame and a bit: two (none
  // unless the VAD's start-of-speech delay is taken out).
  absl::StatusOr<FloatMatrix> one = ComputeCepstra(absl::MakeConstSpan(samples.data(), 100), options);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->rows(), 1);
  absl::StatusOr<FloatMatrix> two = ComputeCepstra(absl::MakeConstSpan(samples.data(), 500), options);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->rows(), 2);
}

TEST(SphinxFrontEndTest, SampleRateMismatchNamesTheAudio) {
  absl::Status status = ComputeFeatures(PcmAudio{8000, std::vector<int16_t>(800)}, FeaturePipeline{}, "phone.wav").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("phone.wav"));
  EXPECT_THAT(status.message(), HasSubstr("8000 Hz"));
  EXPECT_THAT(status.message(), HasSubstr("16000 Hz"));
}

absl::Status FromParams(std::map<std::string, std::string> values) {
  SphinxFeatParams params;
  params.values = std::move(values);
  return FeaturePipelineFromFeatParams(params, "feat.params 'm/feat.params'").status();
}

TEST(SphinxFrontEndTest, FeatParamsValuesSphinxbaseCannotUseAreRefused) {
  // Each of these would make sphinxbase fail, assert or produce NaN.
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"nfft", "500"}}, "-nfft"},
      {{{"nfft", "65536"}}, "-nfft"},
      {{{"upperf", "9000"}}, "-upperf"},
      {{{"lowerf", "7000"}}, "-lowerf"},
      {{{"nfilt", "200"}}, "-nfilt"},   // filters narrower than a DFT bin
      {{{"nfilt", "0"}}, "-nfilt"},
      {{{"frate", "0"}}, "-frate"},
      {{{"frate", "16000"}}, "-frate"},  // a frame shift of 1 sample: sphinxbase asserts
      {{{"wlen", "0.1"}}, "-wlen"},      // 1600 samples > 512-point FFT
      {{{"samprate", "abc"}}, "-samprate"},
      {{{"transform", "fft"}}, "-transform"},
      {{{"lifter", "-1"}}, "-lifter"},
      {{{"alpha", "2"}}, "-alpha"},
      {{{"remove_noise", "maybe"}}, "-remove_noise"},
      {{{"frate", "40000"}, {"samprate", "384000"}}, "-frate"},  // sphinxbase keeps it as int16
      // Found by fuzzing: filters narrower than a DFT bin without rounding
      // made sphinxbase exit the process.
      {{{"lowerf", "1"}, {"upperf", "6.4976"}, {"nfilt", "20"}, {"round_filters", "no"}}, "-nfilt"},
      {{{"cmninit", "40,x"}}, "-cmninit"},
      {{{"cmninit", "1,2,3,4,5,6,7,8,9,10,11,12,13,14"}}, "-cmninit"},
  };
  for (const auto& [values, option] : cases) {
    absl::Status status = FromParams(values);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << option << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(option));
    EXPECT_THAT(status.message(), HasSubstr("m/feat.params"));
  }
  for (const auto& values : std::vector<std::map<std::string, std::string>>{
           {{"cmn", "median"}}, {{"agc", "max"}}, {{"varnorm", "yes"}}, {{"lda", "x"}},
           {{"feat", "1s_c_wd_dd"}}, {{"ncep", "20"}, {"nfilt", "40"}}, {{"warp_type", "affine"}}}) {
    absl::Status status = FromParams(values);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
    EXPECT_THAT(status.message(), HasSubstr("m/feat.params"));
  }
  // Decoder options and the ones fixed here are accepted.
  EXPECT_TRUE(FromParams({{"model", "ptm"}, {"svspec", "0-12/13-25/26-38"}, {"dither", "yes"},
                          {"cmninit", "41.00,-5.29"}, {"cmn", "current"}}).ok());
  EXPECT_TRUE(FromParams({{"cmn", "live"}}).ok());
  EXPECT_EQ(FeaturePipelineForModel("/nonexistent/model").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gmmscore
