// Sphinx model and feature readers: on the models Debian ships
// (pocketsphinx-testdata: an4_ci_cont continuous, tidigits semi-continuous;
// pocketsphinx-en-us: the en-us PTM model), on crafted files, and on damaged
// ones. The en-us check recomputes senone scores in float64 straight from the
// parameter files with a reader written independently here.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tied_mixture_reference.h"
#include "kernels/cpu/tied_mixture_scorer.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/io/model_loader.h"
#include "kernels/io/sphinx_features.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using io_testing::ReadFile;
using io_testing::TempPath;
using io_testing::WriteFile;

const std::string kTestData = "/usr/share/pocketsphinx/test/data";
const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

#define REQUIRE_PATH(path) \
  if (!Exists(path)) GTEST_SKIP() << path << " is missing: run tools/install_deps.sh"

FloatMatrix SphinxFeatures(const std::string& mfc, const std::string& type) {
  absl::StatusOr<FloatMatrix> cep = ReadSphinxMfc(mfc);
  EXPECT_TRUE(cep.ok()) << cep.status();
  ApplyBatchCmn(&*cep);
  absl::StatusOr<FloatMatrix> feats = ComputeSphinxFeatures(*cep, type);
  EXPECT_TRUE(feats.ok()) << feats.status();
  return *std::move(feats);
}

double MaxAbsDiff(const FloatMatrix& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (int64_t i = 0; i < a.rows() * a.cols(); ++i) worst = std::max(worst, std::abs(a.data()[i] - b[i]));
  return worst;
}

// --- real models -------------------------------------------------------------

TEST(SphinxModelTest, An4ContinuousBecomesDiagGmmAndScores) {
  const std::string dir = kTestData + "/an4_ci_cont";
  REQUIRE_PATH(dir);
  absl::StatusOr<SphinxModel> sphinx = ReadSphinxModel(dir);
  ASSERT_TRUE(sphinx.ok()) << sphinx.status();
  EXPECT_EQ(sphinx->kind, SphinxModelKind::kContinuous);
  EXPECT_EQ(sphinx->model.num_states(), 102);
  EXPECT_EQ(sphinx->model.num_streams(), 1);
  EXPECT_EQ(sphinx->model.dim(), 39);
  EXPECT_EQ(sphinx->mdef.base_phones.size(), 34u);
  EXPECT_EQ(sphinx->state_names[0], "AA_0");
  EXPECT_EQ(sphinx->weights_source, "mixture_weights");
  EXPECT_EQ(sphinx->feat_params.Get("feat"), "1s_c_d_dd");

  // Through the engine's loader and CPU backend unchanged.
  absl::StatusOr<ModelFormat> format = DetectModelFormat(dir);
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(*format, ModelFormat::kSphinx);
  absl::StatusOr<DiagGmmModel> diag = LoadModel(dir);
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_EQ(diag->num_states(), 102);
  auto shared = std::make_shared<const DiagGmmModel>(*std::move(diag));
  const FloatMatrix feats = SphinxFeatures(kTestData + "/goforward.mfc", "1s_c_d_dd");
  ASSERT_EQ(feats.rows(), 264);
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({.num_threads = 2});
  auto prepared = cpu->Prepare(shared);
  ASSERT_TRUE(prepared.ok());
  ScoreResult result;
  ASSERT_TRUE(cpu->Score(**prepared, feats.view(), {}, &result).ok());
  EXPECT_LT(MaxNormalizedError(result.loglikes, ReferenceLogLikelihoods(*shared, feats.view())), 1e-3);
  // The tied-mixture path gives the same scores.
  TiedMixtureCpuScorer scorer(std::make_shared<const TiedMixtureModel>(std::move(sphinx->model)), {.num_threads = 2});
  FloatMatrix tied;
  ASSERT_TRUE(scorer.Score(feats.view(), &tied).ok());
  EXPECT_LT(MaxNormalizedError(tied, ReferenceLogLikelihoods(*shared, feats.view())), 1e-3);
}

TEST(SphinxModelTest, TidigitsSemiContinuousFourStreams) {
  const std::string dir = kTestData + "/tidigits/hmm";
  REQUIRE_PATH(dir);
  absl::StatusOr<SphinxModel> sphinx = ReadSphinxModel(dir);
  ASSERT_TRUE(sphinx.ok()) << sphinx.status();
  EXPECT_EQ(sphinx->kind, SphinxModelKind::kSemiContinuous);
  EXPECT_EQ(sphinx->model.num_codebooks(), 1);
  EXPECT_EQ(sphinx->model.num_streams(), 4);
  EXPECT_EQ(sphinx->model.dim(), 51);
  EXPECT_EQ(sphinx->model.codebook_size(0, 0), 256);
  EXPECT_EQ(sphinx->weights_source, "sendump");  // 4-bit ids into a 16-entry table
  EXPECT_EQ(sphinx->mdef.binary, true);
  EXPECT_EQ(sphinx->model.ToDiagGmmModel().status().code(), absl::StatusCode::kUnimplemented);
  const FloatMatrix feats = SphinxFeatures(kTestData + "/tidigits/man.ah.111a.mfc", "s2_4x");
  const auto model = std::make_shared<const TiedMixtureModel>(std::move(sphinx->model));
  TiedMixtureCpuScorer scorer(model, {.num_threads = 2});
  FloatMatrix loglikes;
  ASSERT_TRUE(scorer.Score(feats.view(), &loglikes).ok());
  FloatMatrix head(16, 51);
  std::memcpy(head.data(), feats.data(), sizeof(float) * 16 * 51);
  FloatMatrix head_scores(16, model->num_states());
  std::memcpy(head_scores.data(), loglikes.data(), sizeof(float) * 16 * model->num_states());
  EXPECT_LT(MaxNormalizedError(head_scores, TiedMixtureReferenceLogLikelihoods(*model, head.view())), 1e-3);
  // The default model loader explains why it cannot flatten this model.
  EXPECT_EQ(LoadModel(dir).status().code(), absl::StatusCode::kUnimplemented);
}

// --- the en-us PTM model against an independent float64 computation --------

// Minimal independent readers (no code shared with sphinx_model.cc).
struct RawGaussians {
  int codebooks = 0, streams = 0, densities = 0;
  std::vector<int> dims;
  std::vector<float> values;
};

RawGaussians ReadRaw(const std::string& path) {
  const std::string bytes = ReadFile(path);
  size_t at = bytes.find("endhdr\n") + 7 + 4;  // past the (little-endian) magic
  auto next = [&] {
    int32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    at += 4;
    return v;
  };
  RawGaussians g;
  g.codebooks = next();
  g.streams = next();
  g.densities = next();
  for (int f = 0; f < g.streams; ++f) g.dims.push_back(next());
  g.values.resize(next());
  std::memcpy(g.values.data(), bytes.data() + at, g.values.size() * 4);
  return g;
}

TEST(SphinxModelTest, EnUsPtmMatchesIndependentFloat64FromParameterFiles) {
  REQUIRE_PATH(kEnUs);
  absl::StatusOr<SphinxModel> sphinx = ReadSphinxModel(kEnUs);
  ASSERT_TRUE(sphinx.ok()) << sphinx.status();
  EXPECT_EQ(sphinx->kind, SphinxModelKind::kPhoneticallyTied);
  EXPECT_EQ(sphinx->model.num_codebooks(), 42);
  EXPECT_EQ(sphinx->model.num_states(), 5126);
  EXPECT_EQ(sphinx->model.num_streams(), 3);
  EXPECT_EQ(sphinx->weights_source, "sendump");
  EXPECT_NEAR(sphinx->quantisation_step, 1024 * std::log(1.0001), 1e-9);
  const SphinxMdef& mdef = sphinx->mdef;

  // What the quantised weights imply: each stream's decoded weights sum to
  // less than 1, by at most one quantisation step (10.8%).
  double min_sum = 2.0, max_sum = 0.0;
  for (int s = 0; s < sphinx->model.num_states(); ++s) {
    for (int f = 0; f < 3; ++f) {
      double sum = 0.0;
      for (const float w : sphinx->model.log_weights(s, f)) sum += std::exp(static_cast<double>(w));
      min_sum = std::min(min_sum, sum);
      max_sum = std::max(max_sum, sum);
    }
  }
  std::printf("en-us sendump: decoded per-stream weight sums in [%.4f, %.4f]\n", min_sum, max_sum);
  EXPECT_GT(min_sum, std::exp(-sphinx->quantisation_step) - 1e-3);
  EXPECT_LE(max_sum, 1.0 + 1e-3);

  const FloatMatrix feats = SphinxFeatures(kTestData + "/goforward.mfc", "1s_c_d_dd");
  const auto model = std::make_shared<const TiedMixtureModel>(std::move(sphinx->model));
  TiedMixtureCpuScorer scorer(model, {.num_threads = 2});
  FloatMatrix loglikes;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(scorer.Score(feats.view(), &loglikes).ok());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("en-us PTM: %lld frames x %d senones in %.1f ms (%.0f frames/s, 2 threads)\n",
              static_cast<long long>(feats.rows()), model->num_states(), 1e3 * seconds, feats.rows() / seconds);

  // Independent float64: raw means/variances (floored at 1e-4 like
  // pocketsphinx), raw sendump bytes, mdef's senone -> base phone.
  const RawGaussians means = ReadRaw(kEnUs + "/means");
  const RawGaussians vars = ReadRaw(kEnUs + "/variances");
  const std::string dump = ReadFile(kEnUs + "/sendump");
  size_t at = 0;
  auto next = [&] {
    int32_t v;
    std::memcpy(&v, dump.data() + at, 4);
    at += 4;
    return v;
  };
  for (int32_t n = next(); n != 0; n = next()) at += n;
  const int rows = next(), cols = next();
  ASSERT_EQ(rows, 128);
  ASSERT_EQ(cols, 5126);
  const unsigned char* q = reinterpret_cast<const unsigned char*>(dump.data() + at);
  const double step = 1024.0 * std::log(1.0001);
  double worst = 0.0;
  int checked = 0;
  for (int64_t t = 0; t < feats.rows(); t += 11) {
    for (int s = 0; s < 5126; s += 7) {
      const int cb = mdef.senone_base_phone[s];
      double total = 0.0;
      int offset = 0;
      for (int f = 0; f < 3; ++f) {
        const int dim = means.dims[f];
        std::vector<double> terms;
        for (int g = 0; g < 128; ++g) {
          const size_t base = ((static_cast<size_t>(cb) * 3 + f) * 128 + g) * dim;  // dims are equal here
          double ll = -q[(static_cast<size_t>(f) * rows + g) * cols + s] * step;
          for (int d = 0; d < dim; ++d) {
            const double var = std::max(static_cast<double>(vars.values[base + d]), 1e-4);
            const double diff = feats.at(t, offset + d) - static_cast<double>(means.values[base + d]);
            ll -= 0.5 * (std::log(2 * M_PI * var) + diff * diff / var);
          }
          terms.push_back(ll);
        }
        const double best = *std::max_element(terms.begin(), terms.end());
        double sum = 0.0;
        for (const double v : terms) sum += std::exp(v - best);
        total += best + std::log(sum);
        offset += dim;
      }
      worst = std::max(worst, std::abs(loglikes.at(t, s) - total));
      ++checked;
    }
  }
  std::printf("en-us PTM vs independent float64: %d scores, max |diff| %.2e nats\n", checked, worst);
  EXPECT_LE(worst, 1e-3);
}

// --- crafted and damaged files ---------------------------------------------

SphinxGaussianFile TinyGaussians() {
  SphinxGaussianFile file;
  file.num_codebooks = 2;
  file.num_streams = 1;
  file.num_densities = 2;
  file.stream_dims = {3};
  for (int i = 0; i < 12; ++i) file.values.push_back(0.25f * (i + 1));
  return file;
}

TEST(SphinxModelTest, GaussianFileRoundTripsAndReadsBothByteOrders) {
  const std::string bytes = EncodeSphinxGaussianFile(TinyGaussians());
  absl::StatusOr<SphinxGaussianFile> read = DecodeSphinxGaussianFile(bytes, "means");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->values, TinyGaussians().values);
  EXPECT_TRUE(read->had_checksum);
  // Big-endian: swap every 32-bit word after the header.
  std::string swapped = bytes;
  for (size_t i = bytes.find("endhdr\n") + 7; i + 4 <= swapped.size(); i += 4) {
    std::swap(swapped[i], swapped[i + 3]);
    std::swap(swapped[i + 1], swapped[i + 2]);
  }
  absl::StatusOr<SphinxGaussianFile> big = DecodeSphinxGaussianFile(swapped, "means");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_TRUE(big->byte_swapped);
  EXPECT_EQ(big->values, TinyGaussians().values);
}

TEST(SphinxModelTest, DamagedFilesGiveClearErrors) {
  const std::string good = EncodeSphinxGaussianFile(TinyGaussians());
  const size_t data = good.find("endhdr\n") + 7;

  absl::Status truncated = DecodeSphinxGaussianFile(good.substr(0, good.size() - 10), "F").status();
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.message(), HasSubstr("F ends at byte"));

  std::string corrupt = good;
  corrupt[data + 30] ^= 0x40;
  absl::Status checksum = DecodeSphinxGaussianFile(corrupt, "F").status();
  EXPECT_EQ(checksum.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(checksum.message(), HasSubstr("checksum mismatch"));

  std::string magic = good;
  magic[data] = 0x55;
  EXPECT_THAT(DecodeSphinxGaussianFile(magic, "F").status().message(), HasSubstr("bad byte-order magic"));

  std::string count = good;
  count[data + 4 + 16] = 99;  // the value count
  absl::Status counts = DecodeSphinxGaussianFile(count, "F").status();
  EXPECT_EQ(counts.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(counts.message(), HasSubstr("disagrees with the header"));

  EXPECT_THAT(DecodeSphinxGaussianFile(good + "xxxx", "F").status().message(), HasSubstr("unexpected bytes"));
  EXPECT_THAT(DecodeSphinxGaussianFile("s4\nendhdr\n", "F").status().message(), HasSubstr("not an s3"));

  EXPECT_THAT(DecodeSphinxMdef("0.3\n1 n_base\n0 n_tri\n4 n_state_map\n3 n_tied_state\n3 n_tied_ci_state\n"
                               "1 n_tied_tmat\nAA - - - n/a 0 0 1 7 N\n", "M").status().message(),
              HasSubstr("M, line 8: state id \"7\" is not a senone"));
  EXPECT_THAT(DecodeSphinxMdef("0.3\n1 n_base\n1 n_tri\n4 n_state_map\n3 n_tied_state\n3 n_tied_ci_state\n"
                               "1 n_tied_tmat\nAA - - - n/a 0 0 1 2 N\nZZ AA AA i n/a 0 0 1 2 N\n", "M").status().message(),
              HasSubstr("unknown base phone \"ZZ\""));
  EXPECT_EQ(DecodeSphinxMdef("0.3\n1 n_base\n1 n_tri\n4 n_state_map\n3 n_tied_state\n3 n_tied_ci_state\n"
                             "1 n_tied_tmat\nAA - - - n/a 0 0 1 2 N\n", "M").status().code(),
            absl::StatusCode::kDataLoss);

  REQUIRE_PATH(kEnUs);
  const std::string dump = ReadFile(kEnUs + "/sendump");
  EXPECT_EQ(DecodeSphinxSendump(dump.substr(0, dump.size() - 100), "S", 3, 128, 5126).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_THAT(DecodeSphinxSendump(dump, "S", 3, 128, 5000).status().message(), HasSubstr("expected 128 densities x 5000 senones"));
  const std::string mdef = ReadFile(kEnUs + "/mdef");
  EXPECT_EQ(DecodeSphinxMdef(mdef.substr(0, mdef.size() / 2), "M").status().code(), absl::StatusCode::kDataLoss);
}

// Found by fuzzing: count products overflowing int64, and a binary mdef
// whose phone count asked for gigabytes before any table was read.
TEST(SphinxModelTest, HugeCountsAreRefusedWithoutOverflowOrAllocation) {
  std::string weights = "s3\nendhdr\n";
  const uint32_t magic = 0x11223344, big = 0x7fffffff, small = 6;
  weights.append(reinterpret_cast<const char*>(&magic), 4);
  for (const uint32_t v : {big, big, big, small}) weights.append(reinterpret_cast<const char*>(&v), 4);
  absl::Status status = DecodeSphinxMixtureWeights(weights, "W").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("disagrees"));

  std::string gaussians = "s3\nendhdr\n";
  gaussians.append(reinterpret_cast<const char*>(&magic), 4);
  for (const uint32_t v : {big, 1u, big, big, small}) gaussians.append(reinterpret_cast<const char*>(&v), 4);
  status = DecodeSphinxGaussianFile(gaussians, "G").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("disagrees"));

  // BMDF, version 1, no description; n_ciphone 1, n_phone 2^31 - 1, ...
  std::string mdef = "BMDF";
  for (const uint32_t v : {1u, 0u, 1u, big, 3u, 1u, 1u, 1u, 1u, 0u, 0u, 0u}) mdef.append(reinterpret_cast<const char*>(&v), 4);
  mdef += std::string("A\0\0\0", 4);
  status = DecodeSphinxMdef(mdef, "M").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr("phone table"));
  // More senones than 16-bit ids can name.
  std::string many = "BMDF";
  for (const uint32_t v : {1u, 0u, 1u, 1u, 3u, 1u, 40000u, 1u, 1u, 1u, 0u, 0u}) many.append(reinterpret_cast<const char*>(&v), 4);
  EXPECT_THAT(DecodeSphinxMdef(many, "M").status().message(), HasSubstr("16-bit"));
}

TEST(SphinxModelTest, DirectoryErrorsNameTheModel) {
  EXPECT_EQ(ReadSphinxModel("/nonexistent/model").status().code(), absl::StatusCode::kNotFound);
  const std::string dir = TempPath("model");
  ::mkdir(dir.c_str(), 0755);
  for (const char* name : {"/feat.params", "/mixture_weights", "/sendump"}) std::remove((dir + name).c_str());
  WriteFile(dir + "/mdef",
            "0.3\n2 n_base\n0 n_tri\n6 n_state_map\n2 n_tied_state\n2 n_tied_ci_state\n2 n_tied_tmat\n"
            "AA - - - n/a 0 0 N\nBB - - - n/a 1 1 N\n");
  WriteFile(dir + "/means", EncodeSphinxGaussianFile(TinyGaussians()));
  SphinxGaussianFile vars = TinyGaussians();
  WriteFile(dir + "/variances", EncodeSphinxGaussianFile(vars));
  EXPECT_EQ(ReadSphinxModel(dir).status().code(), absl::StatusCode::kNotFound);  // no weights
  WriteFile(dir + "/mixture_weights", EncodeSphinxMixtureWeights(2, 1, 2, {1, 3, 2, 2}));
  absl::StatusOr<SphinxModel> model = ReadSphinxModel(dir);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_NEAR(std::exp(model->model.log_weights(0, 0)[1]), 0.75, 1e-6);
  absl::StatusOr<DiagGmmModel> diag = model->model.ToDiagGmmModel();
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_NEAR(diag->Natural(1).mean[2], 1.5, 1e-5);
  EXPECT_NEAR(diag->Natural(1).variance[0], 1.0, 1e-5);

  vars.num_densities = 1;
  vars.values.resize(6);
  WriteFile(dir + "/variances", EncodeSphinxGaussianFile(vars));
  EXPECT_THAT(ReadSphinxModel(dir).status().message(), HasSubstr("have different shapes"));
  WriteFile(dir + "/variances", EncodeSphinxGaussianFile(TinyGaussians()));
  WriteFile(dir + "/feat.params", "-feat 1s_c_d_dd\n-svspec 0-1/2-2\n");
  EXPECT_EQ(ReadSphinxModel(dir).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(SphinxFeaturesTest, MfcRoundTripSwapAndDynamicFeatures) {
  FloatMatrix cep(6, 13);
  for (int t = 0; t < 6; ++t) {
    for (int d = 0; d < 13; ++d) cep.at(t, d) = static_cast<float>(t * t + d);
  }
  const std::string bytes = EncodeSphinxMfc(cep.view());
  absl::StatusOr<FloatMatrix> back = DecodeSphinxMfc(bytes, "X");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, cep);
  std::string swapped = bytes;
  for (size_t i = 0; i + 4 <= swapped.size(); i += 4) {
    std::swap(swapped[i], swapped[i + 3]);
    std::swap(swapped[i + 1], swapped[i + 2]);
  }
  absl::StatusOr<FloatMatrix> big = DecodeSphinxMfc(swapped, "X");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(*big, cep);
  EXPECT_EQ(DecodeSphinxMfc(bytes.substr(0, bytes.size() - 8), "X").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeSphinxMfc(bytes.substr(0, 4) + "abc", "X").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(DecodeSphinxMfc(std::string("\x01\0\0\0", 4) + "12345678", "X").status().message(),
              HasSubstr("not a Sphinx .mfc"));

  absl::StatusOr<FloatMatrix> f = ComputeSphinxFeatures(cep, "1s_c_d_dd");
  ASSERT_TRUE(f.ok());
  // t = 3: d = c(5) - c(1) = 25 - 1; dd = (c(5) - c(2)) - (c(4) - c(0)) (c(6) clamps to c(5)).
  EXPECT_FLOAT_EQ(f->at(3, 13), 24.0f);
  EXPECT_FLOAT_EQ(f->at(3, 26), (25 - 4) - (16 - 0));
  absl::StatusOr<FloatMatrix> s2 = ComputeSphinxFeatures(cep, "s2_4x");
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->cols(), 51);
  EXPECT_FLOAT_EQ(s2->at(2, 0), 4.0f + 1.0f);      // c1
  EXPECT_FLOAT_EQ(s2->at(2, 36), 4.0f);            // c0
  EXPECT_FLOAT_EQ(s2->at(2, 24), 25.0f - 0.0f);    // long delta c(6->5) - c(-2->0)
  EXPECT_EQ(ComputeSphinxFeatures(cep, "1s_c_wd_dd").status().code(), absl::StatusCode::kUnimplemented);
  FloatMatrix one = cep;
  ApplyBatchCmn(&one);
  EXPECT_NEAR(one.at(0, 0) + one.at(5, 0), (0 + 25) - 2 * (0 + 1 + 4 + 9 + 16 + 25) / 6.0, 1e-5);
}

}  // namespace
}  // namespace gmmscore

// --- LoadAnyModel: tied models stay tied -------------------------------------

namespace gmmscore {
namespace {

TEST(LoadAnyModelTest, TiedSphinxModelsComeBackTiedContinuousUntied) {
  const std::string tidigits = kTestData + "/tidigits/hmm";
  const std::string an4 = kTestData + "/an4_ci_cont";
  REQUIRE_PATH(tidigits);
  REQUIRE_PATH(an4);
  absl::StatusOr<LoadedModel> semi = LoadAnyModel(tidigits);
  ASSERT_TRUE(semi.ok()) << semi.status();
  EXPECT_EQ(semi->format, ModelFormat::kSphinx);
  ASSERT_NE(semi->tied, nullptr);
  EXPECT_EQ(semi->untied, nullptr);
  EXPECT_EQ(semi->dim(), 51);
  EXPECT_EQ(semi->tied->num_streams(), 4);
  absl::StatusOr<LoadedModel> continuous = LoadAnyModel(an4);
  ASSERT_TRUE(continuous.ok()) << continuous.status();
  ASSERT_NE(continuous->untied, nullptr);
  EXPECT_EQ(continuous->num_states(), 102);
  if (Exists(kEnUs)) {
    absl::StatusOr<LoadedModel> ptm = LoadAnyModel(kEnUs);
    ASSERT_TRUE(ptm.ok()) << ptm.status();
    ASSERT_NE(ptm->tied, nullptr);
    EXPECT_EQ(ptm->tied->num_streams(), 3);
    EXPECT_EQ(ptm->ByteSize(), ptm->tied->ByteSize());
  }
  // Non-Sphinx files go through LoadModel unchanged.
  EXPECT_EQ(LoadAnyModel(kTestData + "/no_such_model").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gmmscore
