#include "server/model_repository.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/io/native_model_file.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

namespace fs = std::filesystem;

class ModelRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("repo_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteModel(const std::string& file, uint64_t seed, int states = 4) {
    auto model = GenerateSyntheticModel(
        {.num_states = states, .min_gaussians = 2, .max_gaussians = 3, .dim = 5, .seed = seed});
    ASSERT_TRUE(model.ok());
    ASSERT_TRUE(WriteNativeModel(*model, (dir_ / file).string()).ok());
  }

  fs::path dir_;
  // Writes models "a" and "b" (seeds 1 and 2, the same shape); the bytes
  // one of them holds on a device, or -1 if it would not load.
  int64_t WriteAAndBAndMeasureOne() {
    WriteModel("a.gmm", 1);
    WriteModel("b.gmm", 2);
    auto probe = ModelRepository::LoadDirectory(dir_.string(), backend_.get(), {.skip_at_start = {"b"}});
    return probe.ok() ? (*probe)->memory().served_bytes : -1;
  }

  std::unique_ptr<ScoringBackend> backend_ = CreateCpuBackend({.num_threads = 1});
};

TEST_F(ModelRepositoryTest, LoadsEveryFileNamedByItsStem) {
  WriteModel("spk1.gmm", 1);
  WriteModel("spk2", 2, 6);
  WriteModel(".hidden.gmm", 3);
  fs::create_directories(dir_ / "subdir");
  auto repo = ModelRepository::LoadDirectory(dir_.string(), backend_.get());
  ASSERT_TRUE(repo.ok()) << repo.status();
  ASSERT_EQ((*repo)->models().size(), 2u);
  EXPECT_EQ((*repo)->models()[0].name, "spk1");
  EXPECT_EQ((*repo)->models()[0].format, "native");
  EXPECT_EQ((*repo)->models()[1].name, "spk2");
  EXPECT_EQ((*repo)->models()[1].model().num_states(), 6);
  EXPECT_EQ((*repo)->device(), "cpu");
  auto found = (*repo)->Find("spk2");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->name, "spk2");
}

// The config file's per-model settings reach every version served: the
// one loaded at start and one loaded again through Load.
TEST_F(ModelRepositoryTest, PerModelPrecisionAndBatchCapReachEveryVersion) {
  WriteModel("fast.gmm", 1);
  WriteModel("plain.gmm", 2);
  RepositoryOptions options;
  options.precision["fast"] = Precision::kFast;
  options.max_batch_frames["fast"] = 64;
  auto repo = ModelRepository::LoadDirectory(dir_.string(), backend_.get(), options);
  ASSERT_TRUE(repo.ok()) << repo.status();
  auto fast = (*repo)->Find("fast");
  auto plain = (*repo)->Find("plain");
  ASSERT_TRUE(fast.ok() && plain.ok());
  EXPECT_EQ((*fast)->precision, Precision::kFast);
  EXPECT_EQ((*fast)->max_batch_frames, 64);
  EXPECT_EQ((*plain)->precision, Precision::kExact);
  EXPECT_EQ((*plain)->max_batch_frames, 0);
  ASSERT_TRUE((*repo)->Load("fast").ok());
  auto reloaded = (*repo)->Find("fast");
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ((*reloaded)->version, 2u);
  EXPECT_EQ((*reloaded)->precision, Precision::kFast);
}

TEST_F(ModelRepositoryTest, SphinxModelDirectoriesAreModelsToo) {
  const fs::path sphinx = "/usr/share/pocketsphinx/test/data/an4_ci_cont";
  if (!fs::is_directory(sphinx)) GTEST_SKIP() << "pocketsphinx-testdata is not installed";
  fs::copy(sphinx, dir_ / "an4_ci_cont");
  WriteModel("spk1.gmm", 1);
  auto repo = ModelRepository::LoadDirectory(dir_.string(), backend_.get());
  ASSERT_TRUE(repo.ok()) << repo.status();
  ASSERT_EQ((*repo)->models().size(), 2u);
  EXPECT_EQ((*repo)->models()[0].name, "an4_ci_cont");
  EXPECT_EQ((*repo)->models()[0].format, "sphinx");
  EXPECT_GT((*repo)->models()[0].model().num_states(), 0);
}

TEST_F(ModelRepositoryTest, UnknownNameListsTheServedModels) {
  WriteModel("a.gmm", 1);
  auto repo = ModelRepository::LoadDirectory(dir_.string(), backend_.get());
  ASSERT_TRUE(repo.ok());
  absl::Status status = (*repo)->Find("b").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("no model named 'b' (this server serves: a)"),
            std::string::npos)
      << status;
}

TEST_F(ModelRepositoryTest, DuplicateStemsAreRejected) {
  WriteModel("a.gmm", 1);
  WriteModel("a.bin", 2);
  absl::Status status = ModelRepository::LoadDirectory(dir_.string(), backend_.get()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("two models are named 'a'"), std::string::npos) << status;
}

TEST_F(ModelRepositoryTest, BadFilesAndDirectoriesAreNamed) {
  EXPECT_EQ(ModelRepository::LoadDirectory((dir_ / "missing").string(), backend_.get())
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ModelRepository::LoadDirectory(dir_.string(), backend_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);  // empty
  std::ofstream(dir_ / "junk.txt") << "not a model\n";
  absl::Status status = ModelRepository::LoadDirectory(dir_.string(), backend_.get()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("holds no models (skipped, not a model format: junk.txt)"), std::string::npos)
      << status;
  // A file that is a model format but does not load still stops the load.
  std::ofstream(dir_ / "broken.txt") << "<DIMENSION> 3 <NUMPDFS> 1 <DiagGMM> <GCONSTS> [ 1.0\n";
  status = ModelRepository::LoadDirectory(dir_.string(), backend_.get()).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("broken.txt"), std::string::npos) << status;
}

TEST_F(ModelRepositoryTest, StrayFilesBesideTheModelsAreSkipped) {
  // One README in the repository used to make gmmscored exit.
  WriteModel("am.gmm", 1);
  std::ofstream(dir_ / "README.md") << "# our models\n";
  std::ofstream(dir_ / "notes") << "trained 2026-11-20\n";
  absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
      ModelRepository::LoadDirectory(dir_.string(), backend_.get());
  ASSERT_TRUE(repository.ok()) << repository.status();
  ASSERT_EQ((*repository)->models().size(), 1u);
  EXPECT_EQ((*repository)->models()[0].name, "am");
  // An empty file (a model cut short mid-copy) is not a stray: it stops the load.
  std::ofstream(dir_ / "spk2.gmm").close();
  absl::Status status = ModelRepository::LoadDirectory(dir_.string(), backend_.get()).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("spk2.gmm"), std::string::npos) << status;
}

TEST_F(ModelRepositoryTest, FromModelsChecksNames) {
  auto model = GenerateSyntheticModel({.num_states = 2, .dim = 3});
  ASSERT_TRUE(model.ok());
  auto shared = std::make_shared<const DiagGmmModel>(*std::move(model));
  EXPECT_TRUE(ModelRepository::FromModels({{"x", shared}}, backend_.get()).ok());
  EXPECT_FALSE(ModelRepository::FromModels({{"x", shared}, {"x", shared}}, backend_.get()).ok());
  EXPECT_FALSE(ModelRepository::FromModels({{"", shared}}, backend_.get()).ok());
  EXPECT_FALSE(ModelRepository::FromModels({}, backend_.get()).ok());
}

}  // namespace
}  // namespace gmmscore

namespace gmmscore {
namespace {

// Adapted models (live MAP) count against the budget while held, are served
// once published (counted once), and never replace a model from a file.
TEST_F(ModelRepositoryTest, AdaptedModelsCountWhileHeldAndPublishUnderTheirOwnNames) {
  WriteModel("base.gmm", 1);
  auto probe = ModelRepository::LoadDirectory(dir_.string(), backend_.get());
  ASSERT_TRUE(probe.ok());
  const int64_t one = (*probe)->memory().served_bytes;
  auto repo = ModelRepository::LoadDirectory(dir_.string(), backend_.get(),
                                             {.memory_budget_bytes = 2 * one + one / 2});
  ASSERT_TRUE(repo.ok());
  auto base = (*repo)->Find("base");
  ASSERT_TRUE(base.ok());
  auto copy = [&] {
    return std::make_shared<const DiagGmmModel>(*GenerateSyntheticModel(
        {.num_states = 4, .min_gaussians = 2, .max_gaussians = 3, .dim = 5, .seed = 1}));
  };
  auto adapted = (*repo)->PrepareAdapted(**base, copy(), "base (adapted)");
  ASSERT_TRUE(adapted.ok()) << adapted.status();
  EXPECT_EQ((*adapted)->source, "adaptation");
  EXPECT_EQ((*repo)->memory().retired_bytes, one);
  // A second fits the budget only while the first is not held.
  EXPECT_EQ((*repo)->PrepareAdapted(**base, copy(), "x").status().code(),
            absl::StatusCode::kResourceExhausted);
  // Published: served under its name, counted once.
  ASSERT_TRUE((*repo)->Publish("spk9", *adapted).ok());
  EXPECT_EQ((*repo)->memory().served_bytes, 2 * one);
  EXPECT_EQ((*repo)->memory().retired_bytes, 0);
  auto served = (*repo)->Find("spk9");
  ASSERT_TRUE(served.ok());
  EXPECT_EQ((*served)->prepared, (*adapted)->prepared);
  // Refused: a file's model, a bad name, a model not adapted.
  EXPECT_EQ((*repo)->Publish("base", *adapted).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*repo)->Publish("a/b", *adapted).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*repo)->Publish("spk10", *base).code(), absl::StatusCode::kInvalidArgument);
  // Released when nobody holds it any more (unloaded, last holder gone).
  ASSERT_TRUE((*repo)->Unload("spk9").ok());
  served->reset();
  adapted->reset();
  EXPECT_EQ((*repo)->memory().retired_bytes, 0);
  EXPECT_TRUE((*repo)->PrepareAdapted(**base, copy(), "y").ok());
}

// Several devices: every model has a replica on each device it is placed
// on; a load, replace or unload acts on all of them at once, and the budget
// holds per device.
TEST_F(ModelRepositoryTest, ReplicasFollowThePlacementAndChangeTogether) {
  WriteModel("everywhere.gmm", 1);
  WriteModel("second.gmm", 2);
  std::unique_ptr<ScoringBackend> other = CreateCpuBackend({.num_threads = 1});
  const std::vector<ScoringBackend*> devices = {backend_.get(), other.get()};
  auto repo = ModelRepository::LoadDirectory(dir_.string(), devices, {.placement = {{"second", {1}}}});
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_EQ((*repo)->num_devices(), 2);
  EXPECT_EQ((*repo)->device(), "cpu,cpu");
  auto everywhere = (*repo)->Find("everywhere");
  auto second = (*repo)->Find("second");
  ASSERT_TRUE(everywhere.ok() && second.ok());
  EXPECT_EQ((*everywhere)->devices(), (std::vector<int>{0, 1}));
  EXPECT_NE((*everywhere)->replica(0), nullptr);
  EXPECT_NE((*everywhere)->replica(0), (*everywhere)->replica(1));  // one per device
  EXPECT_EQ((*second)->devices(), (std::vector<int>{1}));
  EXPECT_EQ((*second)->replica(0), nullptr);
  EXPECT_EQ((*second)->prepared, (*second)->replica(1));
  const int64_t one = (*everywhere)->resident_bytes_on(0);
  EXPECT_EQ((*repo)->memory_on(0).served_bytes, one);
  EXPECT_EQ((*repo)->memory_on(1).served_bytes, one + (*second)->resident_bytes_on(1));
  EXPECT_EQ((*repo)->memory().served_bytes, 2 * one + (*second)->resident_bytes_on(1));

  // Replaced: a new version on both devices; the old replicas stay with
  // their holders and count as retired on each device.
  auto replaced = (*repo)->Load("everywhere");
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_TRUE(replaced->replaced);
  EXPECT_EQ(replaced->model->version, 2u);
  EXPECT_EQ(replaced->model->devices(), (std::vector<int>{0, 1}));
  EXPECT_NE(replaced->model->replica(1), (*everywhere)->replica(1));
  EXPECT_EQ((*repo)->memory_on(0).retired_bytes, one);
  EXPECT_EQ((*repo)->memory_on(1).retired_bytes, one);
  EXPECT_EQ((*repo)->memory().retired_versions, 2);
  everywhere->reset();
  EXPECT_EQ((*repo)->memory().retired_bytes, 0);
  // A placed model loads again on its device only.
  auto reloaded = (*repo)->Load("second");
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->model->devices(), (std::vector<int>{1}));
  // An adaptation is prepared where its stream scores, only there.
  auto base = (*repo)->Find("second");
  ASSERT_TRUE(base.ok());
  const int held_on_1 = (*repo)->memory_on(1).retired_versions;
  const int held_on_0 = (*repo)->memory_on(0).retired_versions;
  auto adapted = (*repo)->PrepareAdapted(**base, (*base)->prepared->shared_model(), "x", 1);
  ASSERT_TRUE(adapted.ok()) << adapted.status();
  EXPECT_EQ((*adapted)->devices(), (std::vector<int>{1}));
  EXPECT_EQ((*repo)->memory_on(1).retired_versions, held_on_1 + 1);
  EXPECT_EQ((*repo)->memory_on(0).retired_versions, held_on_0);
  EXPECT_EQ((*repo)->PrepareAdapted(**base, (*base)->prepared->shared_model(), "y", 0).status().code(),
            absl::StatusCode::kInvalidArgument);  // second has no replica on device 0
  adapted->reset();
  // Unloaded from every device at once.
  ASSERT_TRUE((*repo)->Unload("everywhere").ok());
  EXPECT_FALSE((*repo)->Find("everywhere").ok());
  EXPECT_EQ((*repo)->memory_on(0).served_bytes, 0);
}

TEST_F(ModelRepositoryTest, TheBudgetHoldsPerDeviceAndAFailedLoadChangesNothing) {
  const int64_t one = WriteAAndBAndMeasureOne();
  ASSERT_GT(one, 0);
  std::unique_ptr<ScoringBackend> other = CreateCpuBackend({.num_threads = 1});
  const std::vector<ScoringBackend*> devices = {backend_.get(), other.get()};
  // One model a device fits: a on 0, b on 1.
  auto repo = ModelRepository::LoadDirectory(
      dir_.string(), devices,
      {.memory_budget_bytes = one + one / 2, .placement = {{"a", {0}}, {"b", {1}}}});
  ASSERT_TRUE(repo.ok()) << repo.status();
  // Replacing a needs room for both versions on device 0: refused, with
  // the device named, and a keeps its version.
  const absl::Status refused = (*repo)->Load("a").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("of cpu"), std::string::npos) << refused;
  EXPECT_EQ((*(*repo)->Find("a"))->version, 1u);
  // Everything on both devices does not fit at start.
  auto crowded = ModelRepository::LoadDirectory(dir_.string(), devices, {.memory_budget_bytes = one + one / 2});
  EXPECT_EQ(crowded.status().code(), absl::StatusCode::kResourceExhausted) << crowded.status();
}

// Two schedulers over one GPU (--devices 0,0: memory_of {0, 0}) hold a
// replica each in the same memory, counted against its one budget: what
// fits two separate devices does not fit one shared.
TEST_F(ModelRepositoryTest, DevicesSharingAMemoryShareItsBudget) {
  const int64_t one = WriteAAndBAndMeasureOne();
  ASSERT_GT(one, 0);
  std::unique_ptr<ScoringBackend> other = CreateCpuBackend({.num_threads = 1});
  const std::vector<ScoringBackend*> devices = {backend_.get(), other.get()};
  const RepositoryOptions apart{.memory_budget_bytes = 2 * one + one / 2, .skip_at_start = {"b"}};
  RepositoryOptions shared = apart;
  shared.memory_of = {0, 0};
  // "a" on both: one replica per memory apart, two in the shared one.
  auto separate = ModelRepository::LoadDirectory(dir_.string(), devices, apart);
  ASSERT_TRUE(separate.ok()) << separate.status();
  auto together = ModelRepository::LoadDirectory(dir_.string(), devices, shared);
  ASSERT_TRUE(together.ok()) << together.status();
  // "b" on both: fits apart (two models a device), not shared (four).
  EXPECT_TRUE((*separate)->Load("b").ok());
  const absl::Status refused = (*together)->Load("b").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_FALSE((*together)->Find("b").ok());
  // At start too: both models on both schedulers of one memory.
  RepositoryOptions crowded = shared;
  crowded.skip_at_start.clear();
  EXPECT_EQ(ModelRepository::LoadDirectory(dir_.string(), devices, crowded).status().code(),
            absl::StatusCode::kResourceExhausted);
  crowded.memory_of.clear();
  EXPECT_TRUE(ModelRepository::LoadDirectory(dir_.string(), devices, crowded).ok());
  // An adaptation on either scheduler counts there as well.
  auto base = (*together)->Find("a");
  ASSERT_TRUE(base.ok());
  auto adapted = (*together)->PrepareAdapted(**base, (*base)->prepared->shared_model(), "x", 1);
  EXPECT_EQ(adapted.status().code(), absl::StatusCode::kResourceExhausted) << adapted.status();
  // A memory_of that does not cover the devices is refused.
  RepositoryOptions wrong = apart;
  wrong.memory_of = {0};
  EXPECT_EQ(ModelRepository::LoadDirectory(dir_.string(), devices, wrong).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ModelRepositoryTest, BadPlacementsAreRefused) {
  WriteModel("a.gmm", 1);
  std::unique_ptr<ScoringBackend> other = CreateCpuBackend({.num_threads = 1});
  const std::vector<ScoringBackend*> devices = {backend_.get(), other.get()};
  for (const std::vector<int>& placement : std::vector<std::vector<int>>{{}, {2}, {-1}, {1, 1}, {1, 0}}) {
    auto repo = ModelRepository::LoadDirectory(dir_.string(), devices, {.placement = {{"a", placement}}});
    EXPECT_EQ(repo.status().code(), absl::StatusCode::kInvalidArgument) << placement.size();
  }
  EXPECT_EQ(ModelRepository::LoadDirectory(dir_.string(), std::vector<ScoringBackend*>{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelRepository::LoadDirectory(dir_.string(), std::vector<ScoringBackend*>{nullptr}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The CPU backend, recording the warm-ups asked of it (states of the
// model, frames and precision) and failing them with `refuse` when set.
class WarmRecordingBackend : public ScoringBackend {
 public:
  struct Asked {
    int64_t states;
    int64_t frames;
    Precision precision;
  };
  std::string name() const override { return "warmable"; }
  bool warms_up() const override { return true; }
  absl::Status WarmUp(const PreparedModel& model, const WarmUpShape& shape) override {
    warm_ups.push_back({model.num_states(), shape.frames, shape.precision});
    return refuse;
  }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(std::shared_ptr<const DiagGmmModel> model) override {
    return cpu_->Prepare(std::move(model));
  }
  absl::Status Score(const PreparedModel& model, ConstMatrixView features, const ScoreOptions& options,
                     ScoreResult* result) override {
    return cpu_->Score(model, features, options, result);
  }

  std::vector<Asked> warm_ups;
  absl::Status refuse;

 private:
  std::unique_ptr<ScoringBackend> cpu_ = CreateCpuBackend({.num_threads = 1});
};

// Every model is warmed before it is served, at start and through Load,
// for its own batch cap or the daemon's, at its precision; a failed
// warm-up fails the load with the device and the flag named, and a
// backend that does not warm up (the CPU) is not asked.
TEST_F(ModelRepositoryTest, ModelsAreWarmedForTheirBatchesBeforeTheyAreServed) {
  WriteModel("capped.gmm", 1, /*states=*/4);
  WriteModel("plain.gmm", 2, /*states=*/6);
  WarmRecordingBackend backend;
  RepositoryOptions options{.warm_up_frames = 4096};
  options.precision["capped"] = Precision::kFast;
  options.max_batch_frames["capped"] = 64;
  auto repo = ModelRepository::LoadDirectory(dir_.string(), &backend, options);
  ASSERT_TRUE(repo.ok()) << repo.status();
  ASSERT_EQ(backend.warm_ups.size(), 2u);
  EXPECT_EQ(backend.warm_ups[0].states, 4);
  EXPECT_EQ(backend.warm_ups[0].frames, 64);
  EXPECT_EQ(backend.warm_ups[0].precision, Precision::kFast);
  EXPECT_EQ(backend.warm_ups[1].states, 6);
  EXPECT_EQ(backend.warm_ups[1].frames, 4096);
  EXPECT_EQ(backend.warm_ups[1].precision, Precision::kExact);

  WriteModel("plain.gmm", 3, /*states=*/9);
  backend.refuse = absl::ResourceExhaustedError("out of memory");
  absl::Status refused = (*repo)->Load("plain").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("warmable"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("--warm_up=false"), std::string::npos) << refused;
  auto plain = (*repo)->Find("plain");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->model().num_states(), 6) << "the served version stays";
  backend.refuse = absl::OkStatus();
  ASSERT_TRUE((*repo)->Load("plain").ok());
  ASSERT_EQ(backend.warm_ups.size(), 4u);
  EXPECT_EQ(backend.warm_ups[3].states, 9);

  auto cpu_only = ModelRepository::LoadDirectory(dir_.string(), backend_.get(), options);
  EXPECT_TRUE(cpu_only.ok()) << cpu_only.status();
  backend.refuse = absl::InternalError("lane broke");
  EXPECT_EQ(ModelRepository::LoadDirectory(dir_.string(), &backend, options).status().code(),
            absl::StatusCode::kInternal);
}

// Meets the other devices' warm-ups: each waits (up to 5 s) until every
// device's has begun, which only warm-ups running at once can all see.
class RendezvousBackend : public WarmRecordingBackend {
 public:
  struct Rendezvous {
    std::mutex mu;
    std::condition_variable arrived;
    int count = 0;
    int expected = 0;
  };
  explicit RendezvousBackend(Rendezvous* rendezvous) : rendezvous_(rendezvous) {}
  absl::Status WarmUp(const PreparedModel& model, const WarmUpShape& shape) override {
    std::unique_lock lock(rendezvous_->mu);
    ++rendezvous_->count;
    rendezvous_->arrived.notify_all();
    met_all = rendezvous_->arrived.wait_for(lock, std::chrono::seconds(5),
                                            [&] { return rendezvous_->count >= rendezvous_->expected; });
    lock.unlock();
    return WarmRecordingBackend::WarmUp(model, shape);
  }
  bool met_all = false;

 private:
  Rendezvous* rendezvous_;
};

TEST_F(ModelRepositoryTest, EachDeviceIsWarmedAtOnce) {
  WriteModel("one.gmm", 2, /*states=*/4);
  RendezvousBackend::Rendezvous rendezvous{.expected = 3};
  RendezvousBackend a(&rendezvous), b(&rendezvous), c(&rendezvous);
  RepositoryOptions options{.warm_up_frames = 512};
  auto repo = ModelRepository::LoadDirectory(dir_.string(), std::vector<ScoringBackend*>{&a, &b, &c}, options);
  ASSERT_TRUE(repo.ok()) << repo.status();
  for (RendezvousBackend* device : {&a, &b, &c}) {
    EXPECT_TRUE(device->met_all) << "a device's warm-up waited for another's";
    ASSERT_EQ(device->warm_ups.size(), 1u);
    EXPECT_EQ(device->warm_ups[0].frames, 512);
  }
  // One device failing fails the load, named.
  WriteModel("two.gmm", 3, /*states=*/5);
  rendezvous.count = 0;
  b.refuse = absl::UnavailableError("device lost");
  absl::Status refused = (*repo)->Load("two").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_NE(refused.message().find("device lost"), std::string::npos) << refused;
}

}  // namespace
}  // namespace gmmscore
