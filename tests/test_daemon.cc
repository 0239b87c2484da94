#include "tests/test_daemon.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "server/log.h"

namespace gmmscore {

std::string TestBackendName() {
  const char* name = std::getenv("GMMSCORE_TEST_BACKEND");
  return name != nullptr && *name != '\0' ? name : "auto";
}

std::vector<std::unique_ptr<ScoringBackend>> MakeTestBackends(const TestDevices& devices) {
  std::vector<std::unique_ptr<ScoringBackend>> backends;
  for (int d = 0; d < devices.count; ++d) {
    absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend(TestBackendName());
    if (!backend.ok()) {
      ADD_FAILURE() << "backend " << TestBackendName() << ": " << backend.status();
      return {};
    }
    if (devices.wrap) *backend = devices.wrap(d, *std::move(backend));
    backends.push_back(*std::move(backend));
  }
  return backends;
}

std::unique_ptr<TestDaemon> TestDaemon::Start(
    const std::vector<std::pair<std::string, SyntheticModelSpec>>& specs, DaemonOptions options,
    const TestDevices& devices) {
  SetInfoLogging(false);
  auto test = std::unique_ptr<TestDaemon>(new TestDaemon());
  std::vector<std::unique_ptr<ScoringBackend>> backends = MakeTestBackends(devices);
  if (backends.empty()) return nullptr;
  std::vector<ScoringBackend*> backend_pointers;
  for (const auto& backend : backends) backend_pointers.push_back(backend.get());
  absl::StatusOr<std::unique_ptr<ScoringBackend>> offline = CreateBackend(TestBackendName());
  if (!offline.ok()) {
    ADD_FAILURE() << "backend " << TestBackendName() << ": " << offline.status();
    return nullptr;
  }
  std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models;
  for (const auto& [name, spec] : specs) {
    absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(spec);
    if (!model.ok()) {
      ADD_FAILURE() << name << ": " << model.status();
      return nullptr;
    }
    auto shared = std::make_shared<const DiagGmmModel>(*std::move(model));
    auto prepared = (*offline)->Prepare(shared);
    if (!prepared.ok()) {
      ADD_FAILURE() << name << ": " << prepared.status();
      return nullptr;
    }
    test->offline_models_.emplace_back(name, *prepared);
    models.emplace_back(name, std::move(shared));
  }
  absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
      ModelRepository::FromModels(std::move(models), backend_pointers,
                                  RepositoryOptions{.placement = devices.placement});
  if (!repository.ok()) {
    ADD_FAILURE() << repository.status();
    return nullptr;
  }
  options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Start(std::move(backends), *std::move(repository), options);
  if (!daemon.ok()) {
    ADD_FAILURE() << daemon.status();
    return nullptr;
  }
  test->daemon_ = *std::move(daemon);
  test->offline_backend_ = *std::move(offline);
  return test;
}

std::unique_ptr<Client> TestDaemon::NewClient() {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(address());
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

const DiagGmmModel& TestDaemon::model(const std::string& name) const {
  for (const auto& [n, prepared] : offline_models_) {
    if (n == name) return prepared->model();
  }
  ADD_FAILURE() << "no test model " << name;
  std::abort();
}

FloatMatrix TestDaemon::ScoreOffline(const std::string& name, ConstMatrixView frames) {
  for (const auto& [n, prepared] : offline_models_) {
    if (n != name) continue;
    ScoreResult result;
    absl::Status status = offline_backend_->Score(*prepared, frames, {}, &result);
    EXPECT_TRUE(status.ok()) << status;
    return result.loglikes;
  }
  ADD_FAILURE() << "no test model " << name;
  return FloatMatrix();
}

bool TestDaemon::WaitUntilIdle(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    const BatchSchedulerStats stats = daemon_->scheduler_stats();
    if (daemon_->service().live_streams() == 0 && daemon_->service().sessions_alive() == 0 &&
        stats.queued_jobs == 0 && stats.running_groups == 0) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return false;
}

FloatMatrix ScoreAllowance(const DiagGmmModel& model, ConstMatrixView frames) {
  constexpr double kAbsTolerance = 1e-4;
  constexpr double kTermUlps = 32.0 * 0x1p-24;
  FloatMatrix out(frames.rows, model.num_states());
  std::vector<double> y(model.dim());
  for (int64_t t = 0; t < frames.rows; ++t) {
    for (int d = 0; d < model.dim(); ++d) y[d] = double{frames.at(t, d)} - model.center()[d];
    for (int s = 0; s < model.num_states(); ++s) {
      double largest = 0.0;
      for (int64_t g = model.state_offsets()[s]; g < model.state_offsets()[s + 1]; ++g) {
        double sum = std::abs(model.gconst(g));
        for (int d = 0; d < model.dim(); ++d) {
          sum += std::abs(model.means_invvars(g)[d] * y[d]) +
                 std::abs(model.half_neg_inv_vars(g)[d] * y[d] * y[d]);
        }
        largest = std::max(largest, sum);
      }
      out.at(t, s) = static_cast<float>(kAbsTolerance + kTermUlps * largest);
    }
  }
  return out;
}

FloatMatrix TestFeatures(const DiagGmmModel& model, int64_t frames, uint64_t seed) {
  return GenerateSyntheticFeatures(model, frames, seed);
}

std::vector<float> TestTransform(int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> small(0.0f, 0.02f);
  std::normal_distribution<float> shift(0.0f, 0.5f);
  std::vector<float> values(dim * (dim + 1));
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j <= dim; ++j) {
      values[i * (dim + 1) + j] = j == dim ? shift(rng) : (i == j ? 1.0f : 0.0f) + small(rng);
    }
  }
  return values;
}

}  // namespace gmmscore
