// Helpers for the operations tests (tests/ops_*_test.cc): a daemon serving a
// model repository directory (so ModelAdmin can load from it), health
// checks, admin calls with an optional token, and a plain HTTP GET for
// /metrics.
//
//   auto served = DirectoryDaemon::Start({{"a", {.num_states = 20, .seed = 1}}}, {});
//   EXPECT_EQ(CheckHealth(served->daemon->address(), ""), "SERVING");
#ifndef GMMSCORE_TESTS_OPS_TEST_UTIL_H_
#define GMMSCORE_TESTS_OPS_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmmscore/v1/admin.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/channel.h"
#include "kernels/model/synthetic_model.h"
#include "server/daemon.h"

namespace gmmscore {

struct DirectoryDaemon {
  std::string directory;  // removed by the destructor
  std::unique_ptr<Daemon> daemon;

  // Writes each model as DIR/<name>.gmm (native), serves DIR on the test
  // backend (on a free loopback port, or on options.listen_address where
  // that is a unix socket); `not_at_start` are written but not loaded. Fails the test and
  // returns null on error.
  static std::unique_ptr<DirectoryDaemon> Start(
      const std::vector<std::pair<std::string, SyntheticModelSpec>>& models,
      DaemonOptions options, RepositoryOptions repository_options = {});
  // (Re)writes DIR/<name>.gmm.
  void WriteModel(const std::string& name, const SyntheticModelSpec& spec) const;
  ~DirectoryDaemon();
};

// The status name ("SERVING", "NOT_SERVING", ...) of `service`, or the RPC
// error's code name prefixed with "rpc:" ("rpc:NOT_FOUND", "rpc:UNAVAILABLE").
std::string CheckHealth(const std::string& address, const std::string& service);

// Admin calls with "authorization: Bearer <token>" unless token is empty.
grpc::Status AdminLoad(const std::shared_ptr<grpc::Channel>& channel, const std::string& name,
                       const std::string& token = "", v1::LoadModelResponse* response = nullptr);
grpc::Status AdminUnload(const std::shared_ptr<grpc::Channel>& channel, const std::string& name,
                         const std::string& token = "");

// GET http://127.0.0.1:port/path; the body ("" on failure), *status_code set.
std::string HttpGet(int port, const std::string& path, int* status_code = nullptr);
// The same with any method (HEAD, POST, ...), no request body.
std::string HttpRequest(int port, const std::string& method, const std::string& path,
                        int* status_code = nullptr);
// The value of the sample line "name{labels} value" (exact prefix match of
// "name{labels}"), or -1 if absent.
double MetricValue(const std::string& text, const std::string& series);

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_OPS_TEST_UTIL_H_
