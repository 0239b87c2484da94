// The sharded backend against one backend on the same requests: float64
// reference shards agree to float64 rounding, CPU shards to float32's, and
// bad requests or a failing shard add nothing.
#include "kernels/train/sharded_stats_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cpu_stats_backend.h"
#include "kernels/train/stats_reference.h"
#include "kernels/train/stats_test_util.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

uint64_t Seed() {
  const uint64_t seed = (uint64_t{std::random_device()()} << 32) | std::random_device()();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

DiagGmmModel Model(int states, int min_g, int max_g, int dim, uint64_t seed) {
  return *GenerateSyntheticModel(
      {.num_states = states, .min_gaussians = min_g, .max_gaussians = max_g, .dim = dim, .seed = seed});
}

FloatMatrix Frames(int64_t rows, int dim, std::mt19937_64& random) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  FloatMatrix frames(rows, dim);
  for (int64_t t = 0; t < rows; ++t) {
    for (int d = 0; d < dim; ++d) frames.at(t, d) = normal(random);
  }
  return frames;
}

std::vector<std::unique_ptr<StatsBackend>> References(int count) {
  std::vector<std::unique_ptr<StatsBackend>> backends;
  for (int k = 0; k < count; ++k) backends.push_back(CreateReferenceStatsBackend());
  return backends;
}

// Largest |a - b| / max(|b|, 1) over every accumulator.
double MaxError(const GmmStats& a, const GmmStats& b) {
  double worst = std::fabs(a.total_loglike - b.total_loglike) / std::max(std::fabs(b.total_loglike), 1.0);
  auto over = [&](const std::vector<double>& x, const std::vector<double>& y) {
    EXPECT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      worst = std::max(worst, std::fabs(x[i] - y[i]) / std::max(std::fabs(y[i]), 1.0));
    }
  };
  over(a.occupancy, b.occupancy);
  over(a.mean_acc, b.mean_acc);
  over(a.var_acc, b.var_acc);
  return worst;
}

TEST(ShardedStatsBackendTest, GlobalGmmEqualsOneBackend) {
  std::mt19937_64 random(Seed());
  const DiagGmmModel model = Model(1, 37, 37, 13, random());
  for (int64_t rows : {1, 2, 3, 7, 1000, 1001}) {
    const FloatMatrix frames = Frames(rows, 13, random);
    auto one = CreateReferenceStatsBackend();
    const GmmStats want = Accumulated(*one, model, frames, {}, 1);
    for (int shards : {1, 2, 3, 4}) {
      auto sharded = CreateShardedStatsBackend(References(shards));
      ASSERT_TRUE(sharded.ok());
      const GmmStats got = Accumulated(**sharded, model, frames, {}, 1);
      EXPECT_LE(MaxError(got, want), 1e-12) << rows << " frames, " << shards << " shards";
      EXPECT_EQ(got.total_weight, want.total_weight);
    }
  }
}

TEST(ShardedStatsBackendTest, AlignmentsPosteriorsAndSetsEqualOneBackend) {
  std::mt19937_64 random(Seed());
  const DiagGmmModel model = Model(6, 1, 20, 5, random());
  const int64_t rows = 300;
  const FloatMatrix frames = Frames(rows, 5, random);
  std::vector<StatsPair> pairs;
  for (int32_t t = 0; t < rows; ++t) {
    if (t % 7 == 0 || (t >= 200 && t < 260)) continue;  // frames in no pair; a shard-sized gap
    for (int k = 0; k < 1 + static_cast<int>(random() % 3); ++k) {
      const int set = random() % 3 == 0 ? 1 : 0;
      const float weight = random() % 5 == 0 ? 0.0f : static_cast<float>(random() % 1000) / 1000.0f;
      pairs.push_back({t, static_cast<int32_t>(set * 6 + random() % 6), weight});
    }
  }
  std::shuffle(pairs.begin(), pairs.end(), random);
  auto one = CreateReferenceStatsBackend();
  const GmmStats want = Accumulated(*one, model, frames, pairs, 2);
  for (int shards : {2, 5}) {  // with 5 shards of 60 frames, shard 3 (200-259) gets no pair
    auto sharded = CreateShardedStatsBackend(References(shards));
    ASSERT_TRUE(sharded.ok());
    const GmmStats got = Accumulated(**sharded, model, frames, pairs, 2);
    EXPECT_LE(MaxError(got, want), 1e-12) << shards << " shards";
    EXPECT_DOUBLE_EQ(got.total_weight, want.total_weight);
  }
}

TEST(ShardedStatsBackendTest, CpuShardsAreDeterministicAndMatchTheReference) {
  std::mt19937_64 random(Seed());
  const DiagGmmModel model = Model(1, 64, 64, 39, random());
  const FloatMatrix frames = Frames(5000, 39, random);
  auto reference = CreateReferenceStatsBackend();
  const GmmStats want = Accumulated(*reference, model, frames, {}, 1);
  auto make = [] {
    std::vector<std::unique_ptr<StatsBackend>> cpus;
    for (int k = 0; k < 3; ++k) cpus.push_back(CreateCpuStatsBackend({.num_threads = 1}));
    return cpus;
  };
  auto first = CreateShardedStatsBackend(make());
  auto second = CreateShardedStatsBackend(make());
  ASSERT_TRUE(first.ok() && second.ok());
  const GmmStats a = Accumulated(**first, model, frames, {}, 1);
  const GmmStats b = Accumulated(**second, model, frames, {}, 1);
  EXPECT_EQ(std::memcmp(a.occupancy.data(), b.occupancy.data(), a.occupancy.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(a.var_acc.data(), b.var_acc.data(), a.var_acc.size() * sizeof(double)), 0);
  EXPECT_EQ(a.total_loglike, b.total_loglike);
  // float32 scores (the CPU backend's), float64 sums: as one CPU backend is.
  auto single = CreateCpuStatsBackend({.num_threads = 1});
  const double error = MaxError(a, want), single_error = MaxError(Accumulated(*single, model, frames, {}, 1), want);
  std::printf("cpu against the reference: 3 shards %.3g, one backend %.3g\n", error, single_error);
  EXPECT_LE(error, 2e-5);
  EXPECT_LE(single_error, 2e-5);
  EXPECT_EQ((*first)->name(), "cpu");
}

// A backend whose Accumulate fails (a device error, say).
class FailingBackend : public StatsBackend {
 public:
  explicit FailingBackend(std::unique_ptr<StatsBackend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  absl::Status SetModel(const DiagGmmModel& model) override { return inner_->SetModel(model); }
  absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) override {
    return inner_->LoadFrames(frames);
  }
  absl::Status Accumulate(const FrameBlock&, absl::Span<const StatsPair>, GmmStats*) override {
    return absl::ResourceExhaustedError("out of device memory (test)");
  }
  int64_t frame_memory_budget() const override { return 1000; }

 private:
  std::unique_ptr<StatsBackend> inner_;
};

TEST(ShardedStatsBackendTest, BadRequestsAndFailingShardsAddNothing) {
  std::mt19937_64 random(Seed());
  const DiagGmmModel model = Model(3, 2, 4, 5, random());
  const FloatMatrix frames = Frames(40, 5, random);
  EXPECT_EQ(CreateShardedStatsBackend({}).status().code(), absl::StatusCode::kInvalidArgument);

  auto sharded = CreateShardedStatsBackend(References(3));
  ASSERT_TRUE(sharded.ok());
  auto early = (*sharded)->LoadFrames(frames.view());
  ASSERT_TRUE(early.ok());
  GmmStats stats = GmmStats::ForModel(model);
  EXPECT_EQ((*sharded)->Accumulate(**early, {{0, 0, 1.0f}}, &stats).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*sharded)->SetModel(model).ok());
  const GmmStats before = stats;
  for (const std::vector<StatsPair>& bad : std::vector<std::vector<StatsPair>>{
           {{40, 0, 1.0f}}, {{-1, 0, 1.0f}}, {{3, 3, 1.0f}}, {{3, 0, NAN}}, {}}) {
    EXPECT_EQ((*sharded)->Accumulate(**early, bad, &stats).code(), absl::StatusCode::kInvalidArgument);
  }
  auto other = CreateReferenceStatsBackend();
  auto foreign = other->LoadFrames(frames.view());
  ASSERT_TRUE(foreign.ok());
  const absl::Status not_ours = (*sharded)->Accumulate(**foreign, {{0, 0, 1.0f}}, &stats);
  EXPECT_EQ(not_ours.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(not_ours.message()), HasSubstr("sharded"));
  FloatMatrix poisoned = frames;
  poisoned.at(33, 2) = NAN;
  EXPECT_EQ((*sharded)->LoadFrames(poisoned.view()).status().code(), absl::StatusCode::kInvalidArgument);

  // Shard 1 of 3 fails: its error comes back, nothing is added.
  std::vector<std::unique_ptr<StatsBackend>> backends = References(3);
  backends[1] = std::make_unique<FailingBackend>(std::move(backends[1]));
  auto failing = CreateShardedStatsBackend(std::move(backends));
  ASSERT_TRUE(failing.ok());
  ASSERT_TRUE((*failing)->SetModel(model).ok());
  auto block = (*failing)->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok());
  std::vector<StatsPair> pairs;
  for (int32_t t = 0; t < 40; ++t) pairs.push_back({t, t % 3, 1.0f});
  EXPECT_EQ((*failing)->Accumulate(**block, pairs, &stats).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(stats.occupancy, before.occupancy);
  EXPECT_EQ(stats.total_weight, before.total_weight);
  EXPECT_EQ((*failing)->frame_memory_budget(), 3 * std::min<int64_t>(1000, References(1)[0]->frame_memory_budget()));
}

}  // namespace
}  // namespace gmmscore
