#include "server/adaptation_hub.h"

#include <atomic>
#include <filesystem>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

std::unique_ptr<ModelRepository> Repository(ScoringBackend* backend) {
  auto model = std::make_shared<const DiagGmmModel>(*GenerateSyntheticModel(
      {.num_states = 3, .min_gaussians = 1, .max_gaussians = 2, .dim = 4, .seed = 1}));
  return *ModelRepository::FromModels({{"am", model}}, backend);
}

SavedAdaptation Fmllr(int version) {
  SavedAdaptation saved;
  saved.method = v1::AdaptationConfig::FMLLR;
  saved.report.set_version(version);
  saved.dim = 4;
  saved.transform.assign(20, 0.0f);
  return saved;
}

TEST(AdaptationHubTest, RemembersTheMostRecentNamesOnly) {
  auto backend = CreateCpuBackend({.num_threads = 1});
  auto repository = Repository(backend.get());
  AdaptationHub hub(repository.get(), {.workers = 1, .max_saved = 3});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(hub.Publish("spk" + std::to_string(i), Fmllr(1), nullptr).ok());
  EXPECT_EQ(hub.Find("spk0").status().code(), absl::StatusCode::kNotFound);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(hub.Find("spk" + std::to_string(i)).ok());
  // Republishing refreshes a name: spk1 is then newer than spk2.
  ASSERT_TRUE(hub.Publish("spk1", Fmllr(2), nullptr).ok());
  ASSERT_TRUE(hub.Publish("spk4", Fmllr(1), nullptr).ok());
  EXPECT_EQ(hub.Find("spk2").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(hub.Find("spk1")->report.version(), 2u);
}

TEST(AdaptationHubTest, MapPublicationFailureRemembersNothing) {
  auto backend = CreateCpuBackend({.num_threads = 1});
  auto repository = Repository(backend.get());
  AdaptationHub hub(repository.get(), {});
  SavedAdaptation saved;
  saved.method = v1::AdaptationConfig::MAP_MEANS;
  auto base = repository->Find("am");
  // "am" came from memory, not from an adaptation: never replaced.
  EXPECT_FALSE(hub.Publish("am", saved, *base).ok());
  EXPECT_EQ(hub.Find("am").status().code(), absl::StatusCode::kNotFound);
}

TEST(AdaptationHubTest, StopRunsEveryTaskQueuedAndLaterOnesInline) {
  auto backend = CreateCpuBackend({.num_threads = 1});
  auto repository = Repository(backend.get());
  std::atomic<int> ran{0};
  {
    AdaptationHub hub(repository.get(), {.workers = 2});
    for (int i = 0; i < 1000; ++i) hub.Post([&ran] { ran.fetch_add(1); });
    hub.Stop();
    EXPECT_EQ(ran.load(), 1000);
    hub.Post([&ran] { ran.fetch_add(1); });
    EXPECT_EQ(ran.load(), 1001);
    absl::AnyInvocable<void() &&> task = [&ran] { ran.fetch_add(1); };
    EXPECT_FALSE(hub.TryPost(task));  // stopped: the caller runs it, or not
    EXPECT_EQ(ran.load(), 1001);
  }
}

}  // namespace
}  // namespace gmmscore
