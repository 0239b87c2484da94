// Live adaptation on real speech: the two speakers of pocketsphinx-testdata
// with several utterances (librivox: one reader, 5 utterances; cards: one
// talker, 5 utterances), scored by an4_ci_cont, a continuous model trained
// on other speakers (CMU's AN4 census), served by gmmscored. Each speaker is
// one stream, their utterances in order, in chunks of 0.25 s; the first
// update after 3 s of speech, then one every 3 s. The log-likelihood per
// frame of every utterance, unadapted and with fMLLR or MAP means adapted
// live, is printed (the closing note and docs/TRAINING.md quote it). What
// must hold: each speaker's speech after the first update scores better
// with either method; with MAP so does every utterance after the first;
// with fMLLR every utterance that starts after the second update (a
// diagonal transform from 3-5 s of speech may cost a few hundredths of a
// nat on a short utterance, as it does on cards' fourth).
//
// Per frame: log (1/S sum_s p(x|s)), plus log|det A| of the transform
// that scored it (fMLLR's Jacobian), averaged over the utterance.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/wav_reader.h"
#include "server/daemon.h"
#include "tests/adaptation_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

namespace fs = std::filesystem;

const std::string kData = "/usr/share/pocketsphinx/test/data";
const std::string kModel = kData + "/an4_ci_cont";

struct Speaker {
  std::string name;
  std::vector<std::string> wavs;
};

std::vector<Speaker> Speakers() {
  Speaker librivox{.name = "librivox"}, cards{.name = "cards"};
  for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
    librivox.wavs.push_back(
        absl::StrCat(kData, "/librivox/sense_and_sensibility_01_austen_64kb-", id, ".wav"));
  }
  for (const char* id : {"001", "002", "003", "004", "005"}) {
    cards.wavs.push_back(absl::StrCat(kData, "/cards/", id, ".wav"));
  }
  return {librivox, cards};
}

// log |det A| of a D x (D+1) [A | b], by Gaussian elimination with pivoting.
double LogAbsDet(const v1::AffineTransform& w) {
  const int d = static_cast<int>(w.rows());
  std::vector<double> a(d * d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) a[i * d + j] = w.values(i * w.cols() + j);
  double log_det = 0.0;
  for (int k = 0; k < d; ++k) {
    int p = k;
    for (int i = k + 1; i < d; ++i)
      if (std::abs(a[i * d + k]) > std::abs(a[p * d + k])) p = i;
    if (p != k)
      for (int j = 0; j < d; ++j) std::swap(a[k * d + j], a[p * d + j]);
    log_det += std::log(std::abs(a[k * d + k]));
    for (int i = k + 1; i < d; ++i) {
      const double f = a[i * d + k] / a[k * d + k];
      for (int j = k; j < d; ++j) a[i * d + j] -= f * a[k * d + j];
    }
  }
  return log_det;
}

// log (1/S sum_s exp(row_s)).
double MeanLikelihood(const float* row, int64_t states) {
  double best = -INFINITY;
  for (int64_t s = 0; s < states; ++s) best = std::max<double>(best, row[s]);
  double sum = 0.0;
  for (int64_t s = 0; s < states; ++s) sum += std::exp(row[s] - best);
  return best + std::log(sum / static_cast<double>(states));
}

class AdaptationSpeechTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kModel + "/means") || !fs::exists(kData + "/cards/001.wav") ||
        !fs::exists(kData + "/librivox/fileids")) {
      GTEST_SKIP() << "pocketsphinx-testdata not installed";
    }
    dir_ = fs::temp_directory_path() / absl::StrCat("gmmscore_adapt_repo_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::create_directory_symlink(kModel, dir_ / "an4");
    absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend(TestBackendName());
    ASSERT_TRUE(backend.ok()) << backend.status();
    absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
        ModelRepository::LoadDirectory(dir_.string(), backend->get());
    ASSERT_TRUE(repository.ok()) << repository.status();
    DaemonOptions options;
    options.listen_address = "127.0.0.1:0";
    options.scheduler.max_queue_delay = absl::Microseconds(200);
    absl::StatusOr<std::unique_ptr<Daemon>> daemon =
        Daemon::Start(*std::move(backend), *std::move(repository), options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    stub_ = v1::AcousticScorer::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    daemon_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  fs::path dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<v1::AcousticScorer::Stub> stub_;
};

constexpr int64_t kFirstUpdate = 300, kEvery = 300;

// Per utterance of the speaker's stream, the mean log-likelihood per frame;
// the last entry: over every frame from kFirstUpdate on.
std::vector<double> UtteranceLikelihoods(const LockstepStream& run,
                                         const std::vector<int64_t>& utterance_ends) {
  std::vector<double> sum(utterance_ends.size() + 1, 0.0);
  std::vector<int64_t> frames(utterance_ends.size() + 1, 0);
  for (const AdaptedAnswer& a : run.answers) {
    double jacobian = 0.0;
    auto it = run.published.find(a.report.version());
    if (a.report.version() > 0 && it != run.published.end() && it->second.has_transform()) {
      jacobian = LogAbsDet(it->second.transform());
    }
    for (int64_t t = 0; t < a.scores.rows(); ++t) {
      const int64_t frame = a.first_frame + t;
      const size_t u = std::upper_bound(utterance_ends.begin(), utterance_ends.end(), frame) -
                       utterance_ends.begin();
      const double like = MeanLikelihood(a.scores.row(t), a.scores.cols()) + jacobian;
      sum[u] += like;
      ++frames[u];
      if (frame >= kFirstUpdate) {
        sum.back() += like;
        ++frames.back();
      }
    }
  }
  for (size_t u = 0; u < sum.size(); ++u) sum[u] /= std::max<int64_t>(1, frames[u]);
  return sum;
}

TEST_F(AdaptationSpeechTest, LaterUtterancesScoreBetterAdaptedLive) {
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kModel);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  std::printf("speaker   utt  starts(s) secs   unadapted  fMLLR (gain)      MAP means (gain)\n");
  for (const Speaker& speaker : Speakers()) {
    // The speaker's utterances one after another, as one stream.
    std::vector<FloatMatrix> utterances;
    std::vector<int64_t> ends;
    int64_t total = 0;
    for (const std::string& wav : speaker.wavs) {
      absl::StatusOr<PcmAudio> audio = ReadSpeechFile(wav, 16000);
      ASSERT_TRUE(audio.ok()) << audio.status();
      absl::StatusOr<FloatMatrix> features = ComputeFeatures(*audio, *pipeline, wav);
      ASSERT_TRUE(features.ok()) << features.status();
      total += features->rows();
      ends.push_back(total);
      utterances.push_back(*std::move(features));
    }
    FloatMatrix stream(total, utterances[0].cols());
    for (size_t u = 0, row = 0; u < utterances.size(); ++u) {
      for (int64_t t = 0; t < utterances[u].rows(); ++t, ++row) {
        std::copy_n(utterances[u].row(t), stream.cols(), stream.row(row));
      }
    }
    auto run = [&](v1::AdaptationConfig::Method method) {
      v1::StreamConfig config;
      config.add_models("an4");
      if (method != v1::AdaptationConfig::METHOD_UNSPECIFIED) {
        v1::AdaptationConfig* a = config.mutable_adaptation();
        a->set_method(method);
        a->set_start_after_frames(kFirstUpdate);
        a->set_update_every_frames(kEvery);
        a->set_save_as(absl::StrCat(speaker.name, "-", method));
      }
      const LockstepStream result = RunLockstep(stub_.get(), config, stream.view(), [] { return int64_t{25}; });
      return UtteranceLikelihoods(result, ends);
    };
    const std::vector<double> none = run(v1::AdaptationConfig::METHOD_UNSPECIFIED);
    const std::vector<double> fmllr = run(v1::AdaptationConfig::FMLLR);
    const std::vector<double> map = run(v1::AdaptationConfig::MAP_MEANS);
    for (size_t u = 0; u < ends.size(); ++u) {
      const int64_t start = u == 0 ? 0 : ends[u - 1];
      std::printf("%-9s %3zu  %8.2f %5.2f   %9.3f  %8.3f (%+.3f)  %8.3f (%+.3f)\n", speaker.name.c_str(),
                  u + 1, start / 100.0, (ends[u] - start) / 100.0, none[u], fmllr[u], fmllr[u] - none[u],
                  map[u], map[u] - none[u]);
      if (u == 0) continue;
      if (start >= kFirstUpdate + kEvery) {
        EXPECT_GT(fmllr[u], none[u]) << speaker.name << " utterance " << u + 1;
      }
      EXPECT_GT(map[u], none[u]) << speaker.name << " utterance " << u + 1;
    }
    const size_t after = ends.size();
    std::printf("%-9s after %.0f s: unadapted %.3f, fMLLR %.3f (%+.3f), MAP means %.3f (%+.3f)\n",
                speaker.name.c_str(), kFirstUpdate / 100.0, none[after], fmllr[after],
                fmllr[after] - none[after], map[after], map[after] - none[after]);
    EXPECT_GT(fmllr[after], none[after] + 0.1) << speaker.name;
    EXPECT_GT(map[after], none[after] + 0.1) << speaker.name;
  }
}

}  // namespace
}  // namespace gmmscore
