// An in-process gmmscored for integration tests: synthetic models served on
// 127.0.0.1:<free port> by the backend named in $GMMSCORE_TEST_BACKEND
// ("auto" when unset: CUDA on a GPU machine, else CPU), plus the offline
// engine (a second backend of the same kind) to compare against.
//
//   auto daemon = TestDaemon::Start({{"spk1", {.num_states = 40, .seed = 1}}});
//   std::unique_ptr<Client> client = daemon->NewClient();
//   FloatMatrix offline = daemon->ScoreOffline("spk1", frames.view());
#ifndef GMMSCORE_TESTS_TEST_DAEMON_H_
#define GMMSCORE_TESTS_TEST_DAEMON_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/client.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/scoring_backend.h"
#include "server/daemon.h"

namespace gmmscore {

// "auto" unless $GMMSCORE_TEST_BACKEND says otherwise.
std::string TestBackendName();

// The daemon's devices: `count` backends of the test kind (on a GPU, all
// over the same GPU: several schedulers), and where models are placed
// (RepositoryOptions::placement; absent: everywhere).
struct TestDevices {
  int count = 1;
  std::map<std::string, std::vector<int>> placement;
  // Replaces device d's backend by what it returns (e.g. a FaultyBackend
  // over it); empty: the test backend as made.
  std::function<std::unique_ptr<ScoringBackend>(int d, std::unique_ptr<ScoringBackend>)> wrap;
};

// `devices.count` backends of the test kind, each through devices.wrap.
// Fails the current test (and returns none) if one cannot be made.
std::vector<std::unique_ptr<ScoringBackend>> MakeTestBackends(const TestDevices& devices);

class TestDaemon {
 public:
  // Fails the current test (and returns null) if anything does not start.
  static std::unique_ptr<TestDaemon> Start(
      const std::vector<std::pair<std::string, SyntheticModelSpec>>& models,
      DaemonOptions options = {}, const TestDevices& devices = {});

  Daemon& daemon() { return *daemon_; }
  const std::string& address() const { return daemon_->address(); }
  std::unique_ptr<Client> NewClient();

  const DiagGmmModel& model(const std::string& name) const;
  // The offline engine's scores of `frames` (T x S), on a backend of the same
  // kind as the daemon's.
  FloatMatrix ScoreOffline(const std::string& model, ConstMatrixView frames);

  // Waits (up to `timeout`) until no stream, stream reactor or queued job is
  // left; false if some are.
  bool WaitUntilIdle(absl::Duration timeout);

 private:
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<ScoringBackend> offline_backend_;
  std::vector<std::pair<std::string, std::shared_ptr<const PreparedModel>>> offline_models_;
};

// The float32 error model of the engine's own tests (kernels/cpu/
// cpu_backend_test.cc): 1e-4 nats absolute cannot be had in float32 where a
// Gaussian's terms K, u_d y_d, v_d y_d^2 are large (outlier frames, far-off
// states; one ulp at -2000 is 2.4e-4), so an element (t, s) is allowed
//   1e-4 + 32 * 2^-24 * max over the state's Gaussians of sum |terms|.
// Returns that allowance, T x S, for `frames` (already transformed).
FloatMatrix ScoreAllowance(const DiagGmmModel& model, ConstMatrixView frames);

// Features at MFCC scale drawn from `model`, `frames` x dim.
FloatMatrix TestFeatures(const DiagGmmModel& model, int64_t frames, uint64_t seed);

// A near-identity D x (D+1) fMLLR-like transform.
std::vector<float> TestTransform(int dim, uint64_t seed);

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_TEST_DAEMON_H_
