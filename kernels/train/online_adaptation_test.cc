// OnlineAdapter against the offline path on the same frames and posteriors:
// the float64 fMLLR reference (statistics and row-by-row update) and the
// float64 statistics reference with MapUpdate. Fresh random inputs each run
// (GMMSCORE_TEST_SEED fixes them), chunks of awkward sizes.
#include "kernels/train/online_adaptation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/fmllr_reference.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/host_frame_block.h"
#include "kernels/train/map_update.h"
#include "kernels/train/natural_gmm.h"
#include "kernels/train/stats_reference.h"

namespace gmmscore {
namespace {

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

std::shared_ptr<const DiagGmmModel> Model(int states, int gaussians, int dim, uint64_t seed) {
  SyntheticModelSpec spec{.num_states = states, .min_gaussians = 1, .max_gaussians = gaussians,
                          .dim = dim, .seed = seed};
  return std::make_shared<const DiagGmmModel>(*GenerateSyntheticModel(spec));
}

// log p(x | s) of every frame and state in float64 from natural parameters.
FloatMatrix StateLoglikes(const DiagGmmModel& model, const FloatMatrix& x) {
  FloatMatrix out(x.rows(), model.num_states());
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int s = 0; s < model.num_states(); ++s) {
      std::vector<double> terms;
      for (int64_t g = model.state_offsets()[s]; g < model.state_offsets()[s + 1]; ++g) {
        const NaturalGaussian n = model.Natural(g);
        double l = std::log(n.weight);
        for (int d = 0; d < model.dim(); ++d) {
          const double diff = x.row(t)[d] - n.mean[d];
          l -= 0.5 * (std::log(2 * M_PI * n.variance[d]) + diff * diff / n.variance[d]);
        }
        terms.push_back(l);
      }
      const double best = *std::max_element(terms.begin(), terms.end());
      double sum = 0.0;
      for (double l : terms) sum += std::exp(l - best);
      out.row(t)[s] = static_cast<float>(best + std::log(sum));
    }
  }
  return out;
}

// Rows [begin, end) of m.
FloatMatrix Rows(const FloatMatrix& m, int64_t begin, int64_t end) {
  FloatMatrix out(end - begin, m.cols());
  for (int64_t t = begin; t < end; ++t) std::copy_n(m.row(t), m.cols(), out.row(t - begin));
  return out;
}

// Frames from the model, shifted and scaled per dimension (a "speaker").
FloatMatrix SpeakerFrames(const DiagGmmModel& model, int64_t frames, uint64_t seed) {
  FloatMatrix x = GenerateSyntheticFeatures(model, frames, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.8, 1.2), shift(-2.0, 2.0);
  for (int d = 0; d < model.dim(); ++d) {
    const double a = scale(rng), b = shift(rng);
    for (int64_t t = 0; t < frames; ++t) x.row(t)[d] = static_cast<float>(a * x.row(t)[d] + b);
  }
  return x;
}

struct Fed {
  std::vector<AdaptationUpdate> updates;
  std::vector<StatsPair> pairs;  // every pair fed, in stream frame numbers
};

// Feeds `x` in chunks of random sizes 1..max_chunk with posteriors from the
// float64 state log-likelihoods; collects every update when due.
Fed FeedStream(OnlineAdapter* adapter, const DiagGmmModel& model, const FloatMatrix& x,
               std::mt19937_64& rng, int max_chunk) {
  Fed fed;
  const FloatMatrix scores = StateLoglikes(model, x);
  int64_t t = 0;
  while (t < x.rows()) {
    const int64_t n = std::min<int64_t>(x.rows() - t, 1 + rng() % max_chunk);
    const FloatMatrix chunk = Rows(x, t, t + n);
    const FloatMatrix chunk_scores = Rows(scores, t, t + n);
    const std::vector<StatsPair> pairs =
        PairsFromScores(chunk_scores.view(), adapter->options().posteriors);
    EXPECT_TRUE(adapter->AddChunk(chunk.view(), pairs).ok());
    for (StatsPair p : pairs) {
      p.frame += static_cast<int32_t>(t);
      fed.pairs.push_back(p);
    }
    t += n;
    if (adapter->UpdateDue()) {
      absl::StatusOr<AdaptationUpdate> update = adapter->Update();
      EXPECT_TRUE(update.ok()) << update.status();
      if (update.ok()) fed.updates.push_back(*std::move(update));
    }
  }
  return fed;
}

std::vector<StatsPair> PairsBefore(const std::vector<StatsPair>& pairs, int64_t frames) {
  std::vector<StatsPair> out;
  for (const StatsPair& p : pairs) {
    if (p.frame < frames) out.push_back(p);
  }
  return out;
}

TEST(OnlineAdapterTest, FmllrUpdatesEqualTheReferenceOnTheSameFrames) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const auto model = Model(/*states=*/7, /*gaussians=*/6, /*dim=*/13, seed);
  const FloatMatrix x = SpeakerFrames(*model, 3000, seed + 1);
  OnlineAdaptationOptions options;
  options.start_after_frames = 700;
  options.update_every_frames = 900;
  options.posteriors.silence_states = {2};
  options.fmllr.min_count_full = 100;  // full from the first update
  auto adapter = OnlineAdapter::Create(model, options);
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  const Fed fed = FeedStream(adapter->get(), *model, x, rng, 97);
  ASSERT_GE(fed.updates.size(), 3u);
  for (size_t k = 0; k < fed.updates.size(); ++k) {
    const AdaptationUpdate& u = fed.updates[k];
    EXPECT_EQ(u.version, k + 1);
    EXPECT_GE(u.frames, k == 0 ? 700 : fed.updates[k - 1].frames + 900);
    for (const StatsPair& p : fed.pairs) EXPECT_NE(p.target, 2);  // silence left out
    // Offline: the reference statistics of frames [0, u.frames) under the
    // same pairs, and the reference row-by-row update.
    const std::vector<StatsPair> pairs = PairsBefore(fed.pairs, u.frames);
    FmllrStats want = FmllrStats::ForDim(model->dim());
    const FloatMatrix prefix = Rows(x, 0, u.frames);
    ASSERT_TRUE(AccumulateFmllrStatsReference(*model, prefix.view(), pairs, &want).ok());
    EXPECT_NEAR(u.count, want.beta, 1e-6 * want.beta);
    ASSERT_EQ(u.mode, "full");
    std::vector<double> objective;
    const std::vector<double> w = FmllrFullReference(want, IdentityFmllr(model->dim()), 10, &objective);
    ASSERT_EQ(u.transform_values.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(u.transform_values[i], w[i], 1e-4) << i;
    EXPECT_GT(u.gain_per_frame, 0.0);
    EXPECT_NEAR(u.gain_per_frame * u.count, objective.back() - objective.front(),
                1e-4 * std::abs(objective.back() - objective.front()) + 1e-6);
    ASSERT_NE(u.transform, nullptr);
  }
}

TEST(OnlineAdapterTest, MapMeansEqualMapUpdateOfTheReferenceStatistics) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const auto model = Model(5, 8, 11, seed);
  const FloatMatrix x = SpeakerFrames(*model, 1500, seed + 1);
  OnlineAdaptationOptions options;
  options.method = AdaptationMethod::kMapMeans;
  options.start_after_frames = 400;
  options.update_every_frames = 0;  // one update only
  options.map_tau = 7.0;
  auto adapter = OnlineAdapter::Create(model, options);
  ASSERT_TRUE(adapter.ok()) << adapter.status();
  const Fed fed = FeedStream(adapter->get(), *model, x, rng, 64);
  ASSERT_EQ(fed.updates.size(), 1u);
  const AdaptationUpdate& u = fed.updates[0];
  EXPECT_EQ(u.mode, "map-means");
  ASSERT_NE(u.model, nullptr);

  const std::vector<StatsPair> pairs = PairsBefore(fed.pairs, u.frames);
  std::unique_ptr<StatsBackend> reference = CreateReferenceStatsBackend();
  ASSERT_TRUE(reference->SetModel(*model).ok());
  auto block = reference->LoadFrames(Rows(x, 0, u.frames).view());
  ASSERT_TRUE(block.ok());
  GmmStats stats = GmmStats::ForModel(*model);
  ASSERT_TRUE(reference->Accumulate(**block, pairs, &stats).ok());
  MapOptions map;
  map.mean_tau = 7.0;
  map.update = kGmmMeans;
  absl::StatusOr<NaturalGmm> want = MapUpdate(NaturalGmm::FromModel(*model), stats, map);
  ASSERT_TRUE(want.ok()) << want.status();
  const NaturalGmm got = NaturalGmm::FromModel(*u.model);
  const NaturalGmm original = NaturalGmm::FromModel(*model);
  double gain = 0.0, count = 0.0;
  for (int s = 0; s < got.num_states(); ++s) {
    const NaturalState& before = original.states[s];
    for (size_t k = 0; k < got.states[s].means.size(); ++k) {
      // The adapted model is stored in float32, scoring form.
      const double scale = std::sqrt(want->states[s].variances[k]);
      EXPECT_NEAR(got.states[s].means[k], want->states[s].means[k], 1e-4 * scale) << s << " " << k;
    }
    for (int i = 0; i < before.num_gaussians(); ++i) {
      const int64_t g = model->state_offsets()[s] + i;
      const double occ = stats.occupancy[g];
      count += occ;
      for (int d = 0; d < model->dim(); ++d) {
        const size_t k = static_cast<size_t>(i) * model->dim() + d;
        const double m0 = before.means[k], m1 = want->states[s].means[k], v = before.variances[k];
        gain += ((m1 - m0) * stats.mean_acc[g * model->dim() + d] - 0.5 * occ * (m1 * m1 - m0 * m0)) / v;
      }
    }
  }
  EXPECT_NEAR(u.count, count, 1e-6 * count);
  EXPECT_GT(u.gain_per_frame, 0.0);
  EXPECT_NEAR(u.gain_per_frame, gain / count, 1e-4 * std::abs(gain / count));
}

TEST(OnlineAdapterTest, ScheduleCountsEveryFrameAndUpdatesAtChunkEnds) {
  const auto model = Model(1, 4, 3, 11);
  OnlineAdaptationOptions options;
  options.start_after_frames = 250;
  options.update_every_frames = 300;
  auto adapter = OnlineAdapter::Create(model, options);
  ASSERT_TRUE(adapter.ok());
  const FloatMatrix x = GenerateSyntheticFeatures(*model, 100, 3);
  std::vector<int64_t> update_frames;
  for (int chunk = 0; chunk < 10; ++chunk) {
    ASSERT_TRUE((*adapter)->AddChunk(x.view(), PairsFromScores(FloatMatrix(100, 1).view(), {})).ok());
    if ((*adapter)->UpdateDue()) update_frames.push_back((*adapter)->Update()->frames);
  }
  // Due at 250 -> first chunk end 300; next due 600; then 900.
  EXPECT_EQ(update_frames, (std::vector<int64_t>{300, 600, 900}));
}

TEST(OnlineAdapterTest, FewFramesGiveTheFallbackNeverNaN) {
  const auto model = Model(1, 4, 5, 12);
  OnlineAdaptationOptions options;
  options.start_after_frames = 1;
  options.update_every_frames = 1;
  auto adapter = OnlineAdapter::Create(model, options);
  ASSERT_TRUE(adapter.ok());
  const FloatMatrix x = GenerateSyntheticFeatures(*model, 1, 5);
  ASSERT_TRUE((*adapter)->AddChunk(x.view(), PairsFromScores(FloatMatrix(1, 1).view(), {})).ok());
  absl::StatusOr<AdaptationUpdate> u = (*adapter)->Update();
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->mode, "none");
  for (double v : u->transform_values) EXPECT_TRUE(std::isfinite(v));
  // A chunk whose frames are all silence adds nothing and stays finite.
  ASSERT_TRUE((*adapter)->AddChunk(x.view(), {}).ok());
  EXPECT_EQ((*adapter)->frames(), 2);
}

TEST(OnlineAdapterTest, RefusesBadOptionsAndPairs) {
  const auto model = Model(3, 2, 4, 13);
  OnlineAdaptationOptions options;
  options.posteriors.silence_states = {3};
  EXPECT_EQ(OnlineAdapter::Create(model, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.posteriors.silence_states = {};
  options.map_tau = -1;
  EXPECT_EQ(OnlineAdapter::Create(model, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.map_tau = 10;
  options.start_after_frames = 0;
  EXPECT_EQ(OnlineAdapter::Create(model, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.start_after_frames = 10;
  EXPECT_EQ(OnlineAdapter::Create(nullptr, options).status().code(), absl::StatusCode::kInvalidArgument);
  auto adapter = OnlineAdapter::Create(model, options);
  ASSERT_TRUE(adapter.ok());
  const FloatMatrix x = GenerateSyntheticFeatures(*model, 4, 5);
  const StatsPair bad_state[] = {{0, 3, 1.0f}};
  EXPECT_EQ((*adapter)->AddChunk(x.view(), bad_state).code(), absl::StatusCode::kInvalidArgument);
  const StatsPair bad_frame[] = {{4, 0, 1.0f}};
  EXPECT_EQ((*adapter)->AddChunk(x.view(), bad_frame).code(), absl::StatusCode::kInvalidArgument);
  const FloatMatrix wide(2, 5);
  const StatsPair ok[] = {{0, 0, 1.0f}};
  EXPECT_EQ((*adapter)->AddChunk(wide.view(), ok).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*adapter)->frames(), 0);  // nothing counted from refused chunks
}

}  // namespace
}  // namespace gmmscore
