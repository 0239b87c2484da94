// gmmscored serving a tied-mixture model: Debian's pocketsphinx-en-us PTM
// model (42 codebooks x 3 streams x 128 Gaussians shared by 5126 senones)
// loaded from a model repository, prepared tied on the test backend
// ($GMMSCORE_TEST_BACKEND), and streamed goforward.mfc's features in uneven
// chunks, with and without a speaker transform: every answer matches the
// offline CPU tied-mixture scorer on the same frames. Skips without the
// Debian packages (tools/install_deps.sh installs them).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/tied_mixture_scorer.h"
#include "kernels/io/sphinx_features.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/score/feature_transform.h"
#include "server/log.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";
const std::string kMfc = "/usr/share/pocketsphinx/test/data/goforward.mfc";

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// Largest |a - b| / max(1, |b| / 256) over rows [first, first + a.rows) of b.
double WorstError(const FloatMatrix& a, const FloatMatrix& b, int64_t first) {
  if (a.cols() != b.cols()) return INFINITY;
  double worst = 0.0;
  for (int64_t t = 0; t < a.rows(); ++t) {
    for (int64_t s = 0; s < a.cols(); ++s) {
      const double expected = b.at(first + t, s);
      const double error = std::abs(static_cast<double>(a.at(t, s)) - expected);
      worst = std::max(worst, std::isnan(error) ? INFINITY : error / std::max(1.0, std::abs(expected) / 256.0));
    }
  }
  return worst;
}

class TiedModelDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Exists(kEnUs) || !Exists(kMfc)) GTEST_SKIP() << kEnUs << " or " << kMfc << " is missing";
    SetInfoLogging(false);
    dir_ = std::filesystem::temp_directory_path() / absl::StrCat("gmmscore_tied_repo_", ::getpid());
    std::filesystem::create_directories(dir_);
    std::filesystem::create_directory_symlink(kEnUs, dir_ / "en-us");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
};

TEST_F(TiedModelDaemonTest, ServesEnUsPtmTiedAndMatchesOfflineScorer) {
  // The offline side: the Sphinx reader and the CPU tied scorer.
  absl::StatusOr<SphinxModel> sphinx = ReadSphinxModel(kEnUs);
  ASSERT_TRUE(sphinx.ok()) << sphinx.status();
  ASSERT_EQ(sphinx->kind, SphinxModelKind::kPhoneticallyTied);
  const auto model = std::make_shared<const TiedMixtureModel>(std::move(sphinx->model));
  absl::StatusOr<FloatMatrix> cepstra = ReadSphinxMfc(kMfc);
  ASSERT_TRUE(cepstra.ok()) << cepstra.status();
  ApplyBatchCmn(&*cepstra);
  absl::StatusOr<FloatMatrix> features = ComputeSphinxFeatures(*cepstra, "1s_c_d_dd");
  ASSERT_TRUE(features.ok()) << features.status();
  ASSERT_EQ(features->cols(), model->dim());
  const int64_t frames = features->rows();
  TiedMixtureCpuScorer scorer(model, {.num_threads = 2});
  FloatMatrix offline;
  ASSERT_TRUE(scorer.Score(features->view(), &offline).ok());
  // With a speaker transform: scored on the transformed frames.
  const int dim = model->dim();
  std::vector<float> values(dim * (dim + 1), 0.0f);
  for (int i = 0; i < dim; ++i) {
    values[i * (dim + 1) + i] = 1.0f - 0.01f * (i % 4);
    values[i * (dim + 1) + (i + 3) % dim] += 0.02f;
    values[i * (dim + 1) + dim] = 0.05f * (i % 7) - 0.1f;
  }
  absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(dim, dim + 1, values);
  ASSERT_TRUE(transform.ok()) << transform.status();
  FloatMatrix transformed;
  ASSERT_TRUE(transform->Apply(features->view(), &transformed).ok());
  FloatMatrix offline_transformed;
  ASSERT_TRUE(scorer.Score(transformed.view(), &offline_transformed).ok());

  // The daemon: the repository directory holds the model directory.
  absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend(TestBackendName());
  ASSERT_TRUE(backend.ok()) << backend.status();
  absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
      ModelRepository::LoadDirectory(dir_.string(), backend->get());
  ASSERT_TRUE(repository.ok()) << repository.status();
  absl::StatusOr<std::shared_ptr<const ServedModel>> served = (*repository)->Find("en-us");
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_TRUE((*served)->prepared->tied()) << "a PTM model must be served tied";
  EXPECT_EQ((*served)->format, "sphinx");
  DaemonOptions options;
  options.listen_address = "127.0.0.1:0";
  options.scheduler.max_queue_delay = absl::Microseconds(500);
  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Start(*std::move(backend), *std::move(repository), options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect((*daemon)->address());
  ASSERT_TRUE(client.ok()) << client.status();

  absl::StatusOr<std::vector<v1::ModelInfo>> listed = (*client)->ListModels();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  const v1::ModelInfo& info = listed->front();
  EXPECT_EQ(info.name(), "en-us");
  EXPECT_EQ(info.dim(), 39);
  EXPECT_EQ(info.num_states(), model->num_states());
  EXPECT_EQ(info.num_gaussians(), model->total_gaussians());  // codebook Gaussians per frame
  EXPECT_EQ(info.bytes(), model->ByteSize());
  EXPECT_LT(info.bytes(), model->UntiedByteSize() / 10);

  for (bool with_transform : {false, true}) {
    SCOPED_TRACE(with_transform ? "with a transform" : "plain");
    v1::StreamConfig config;
    config.add_models("en-us");
    config.set_stream_id(with_transform ? "goforward-fmllr" : "goforward");
    if (with_transform) {
      config.mutable_transform()->set_rows(dim);
      config.mutable_transform()->set_cols(dim + 1);
      config.mutable_transform()->mutable_values()->Add(values.begin(), values.end());
    }
    absl::StatusOr<std::unique_ptr<StreamSession>> session = (*client)->StartStream(config);
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<int64_t> sizes;
    for (int64_t pushed = 0, k = 0; pushed < frames; ++k) {
      const int64_t size = std::min<int64_t>(frames - pushed, 1 + (k * 13) % 37);
      ASSERT_TRUE((*session)->Push(features->view().Rows(pushed, size)).ok());
      sizes.push_back(size);
      pushed += size;
    }
    ASSERT_TRUE((*session)->CloseSend().ok());
    const FloatMatrix& expected = with_transform ? offline_transformed : offline;
    int64_t first = 0;
    double worst = 0.0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      absl::StatusOr<StreamAnswer> answer = (*session)->Next();
      ASSERT_TRUE(answer.ok()) << "answer " << k << ": " << answer.status();
      ASSERT_EQ(answer->first_frame, first);
      ASSERT_EQ(answer->scores.rows(), sizes[k]);
      worst = std::max(worst, WorstError(answer->scores, expected, first));
      first += sizes[k];
    }
    std::printf("en-us PTM through gmmscored (%s): %lld frames x %d senones, max normalized diff %.3g nats\n",
                with_transform ? "transform" : "plain", static_cast<long long>(frames), model->num_states(), worst);
    EXPECT_LT(worst, 2e-3);
    EXPECT_TRUE(absl::IsOutOfRange((*session)->Next().status()));
    EXPECT_TRUE((*session)->Finish().ok());
  }

  // Live adaptation needs Gaussians of each state's own: refused for the
  // tied model with a status that says so.
  v1::StreamConfig adapting;
  adapting.add_models("en-us");
  adapting.mutable_adaptation()->set_method(v1::AdaptationConfig::FMLLR);
  absl::StatusOr<std::unique_ptr<StreamSession>> refused = (*client)->StartStream(adapting);
  absl::Status ended = refused.ok() ? (*refused)->Push(features->view().Rows(0, 10)) : refused.status();
  if (ended.ok() && refused.ok()) {
    ASSERT_TRUE((*refused)->CloseSend().ok());
    ended = (*refused)->Next().status();
  }
  EXPECT_EQ(ended.code(), absl::StatusCode::kFailedPrecondition) << ended;
  EXPECT_THAT(std::string(ended.message()), ::testing::HasSubstr("tied-mixture"));
}

}  // namespace
}  // namespace gmmscore
