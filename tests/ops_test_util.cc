#include "tests/ops_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "kernels/io/native_model_file.h"
#include "kernels/backends/backend_factory.h"
#include "server/log.h"
#include "tests/test_daemon.h"

namespace gmmscore {

std::unique_ptr<DirectoryDaemon> DirectoryDaemon::Start(
    const std::vector<std::pair<std::string, SyntheticModelSpec>>& models, DaemonOptions options,
    RepositoryOptions repository_options) {
  SetInfoLogging(false);
  auto served = std::make_unique<DirectoryDaemon>();
  char pattern[] = "/tmp/gmmscore_ops_XXXXXX";
  served->directory = mkdtemp(pattern);
  for (const auto& [name, spec] : models) served->WriteModel(name, spec);
  absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend(TestBackendName());
  if (!backend.ok()) {
    ADD_FAILURE() << backend.status();
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
      ModelRepository::LoadDirectory(served->directory, backend->get(), repository_options);
  if (!repository.ok()) {
    ADD_FAILURE() << repository.status();
    return nullptr;
  }
  // A unix socket is kept (a test of local clients); anything else is a
  // free loopback port.
  if (!absl::StartsWith(options.listen_address, "unix:")) options.listen_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Daemon>> daemon =
      Daemon::Start(*std::move(backend), *std::move(repository), options);
  if (!daemon.ok()) {
    ADD_FAILURE() << daemon.status();
    return nullptr;
  }
  served->daemon = *std::move(daemon);
  return served;
}

void DirectoryDaemon::WriteModel(const std::string& name, const SyntheticModelSpec& spec) const {
  absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(spec);
  ASSERT_TRUE(model.ok()) << model.status();
  // Written aside and renamed, so that a concurrent load never reads half.
  const std::string path = absl::StrCat(directory, "/", name, ".gmm");
  const std::string temp = absl::StrCat(directory, "/.", name, ".tmp");
  ASSERT_TRUE(WriteNativeModel(*model, temp).ok());
  std::filesystem::rename(temp, path);
}

DirectoryDaemon::~DirectoryDaemon() {
  daemon.reset();
  std::error_code ignored;
  if (!directory.empty()) std::filesystem::remove_all(directory, ignored);
}

std::string CheckHealth(const std::string& address, const std::string& service) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    return absl::StrCat("rpc:", status.error_code() == grpc::StatusCode::NOT_FOUND ? "NOT_FOUND"
                                : status.error_code() == grpc::StatusCode::UNAVAILABLE
                                    ? "UNAVAILABLE"
                                    : std::to_string(status.error_code()));
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

grpc::Status AdminLoad(const std::shared_ptr<grpc::Channel>& channel, const std::string& name,
                       const std::string& token, v1::LoadModelResponse* response) {
  auto stub = v1::ModelAdmin::NewStub(channel);
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::LoadModelRequest request;
  request.set_name(name);
  v1::LoadModelResponse ignored;
  return stub->LoadModel(&context, request, response != nullptr ? response : &ignored);
}

grpc::Status AdminUnload(const std::shared_ptr<grpc::Channel>& channel, const std::string& name,
                         const std::string& token) {
  auto stub = v1::ModelAdmin::NewStub(channel);
  grpc::ClientContext context;
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::UnloadModelRequest request;
  request.set_name(name);
  v1::UnloadModelResponse response;
  return stub->UnloadModel(&context, request, &response);
}

std::string HttpGet(int port, const std::string& path, int* status_code) {
  return HttpRequest(port, "GET", path, status_code);
}

std::string HttpRequest(int port, const std::string& method, const std::string& path,
                        int* status_code) {
  if (status_code != nullptr) *status_code = 0;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string reply;
  char buffer[65536];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  close(fd);
  const size_t space = reply.find(' ');
  if (status_code != nullptr && space != std::string::npos) {
    *status_code = std::atoi(reply.c_str() + space + 1);
  }
  const size_t body = reply.find("\r\n\r\n");
  return body == std::string::npos ? "" : reply.substr(body + 4);
}

double MetricValue(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() > series.size() && line.substr(0, series.size()) == series &&
        line[series.size()] == ' ') {
      double value;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
    }
  }
  return -1;
}

}  // namespace gmmscore
