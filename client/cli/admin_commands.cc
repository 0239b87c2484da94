#include "client/cli/admin_commands.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/cli/connection_flags.h"
#include "client/client.h"
#include "gmmscore/v1/admin.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "kernels/core/status_macros.h"
#include "proto/rpc_status.h"

// Defined with the other remote commands (remote_commands.cc).
ABSL_DECLARE_FLAG(std::string, server);

ABSL_FLAG(std::string, name, "",
          "model name: a file in the server's model repository without its extension (or a "
          "Sphinx model directory); for `adaptation`, the name an update was published under");

ABSL_FLAG(std::string, service, "",
          "health: the service to ask about (a model name, or gmmscore.v1.AcousticScorer); empty: the "
          "whole server");
ABSL_FLAG(int, health_timeout_s, 3, "health: seconds to connect and answer, each");

namespace gmmscore::cli {
namespace {

// A ModelAdmin stub on a connected channel, and the token to send.
struct AdminConnection {
  std::unique_ptr<Client> client;  // owns the channel
  std::unique_ptr<v1::ModelAdmin::Stub> stub;
  ClientOptions options;

  // A context with the deadline and the bearer token.
  std::unique_ptr<grpc::ClientContext> Context() const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(absl::ToChronoTime(absl::Now() + options.call_timeout));
    if (!options.bearer_token.empty()) {
      context->AddMetadata("authorization", "Bearer " + options.bearer_token);
    }
    return context;
  }
};

absl::StatusOr<AdminConnection> ConnectAdmin() {
  AdminConnection admin;
  GMM_ASSIGN_OR_RETURN(admin.options, ClientOptionsFromFlags());
  // Loading a large model reads and prepares it before answering.
  admin.options.call_timeout = absl::Minutes(10);
  GMM_ASSIGN_OR_RETURN(admin.client, Client::Connect(absl::GetFlag(FLAGS_server), admin.options));
  admin.stub = v1::ModelAdmin::NewStub(admin.client->channel());
  return admin;
}

absl::StatusOr<std::string> NameFromFlags(const SpecifiedFlags& specified,
                                          const std::string& command) {
  GMM_RETURN_IF_ERROR(RequireFlags(specified, {"name"}, command));
  const std::string name = absl::GetFlag(FLAGS_name);
  if (name.empty()) return UsageError(absl::StrCat(command, ": --name is empty"));
  return name;
}

absl::StatusOr<v1::GetModelStatusResponse> Status(const AdminConnection& admin) {
  v1::GetModelStatusResponse response;
  GMM_RETURN_IF_ERROR(
      ToAbslStatus(admin.stub->GetModelStatus(admin.Context().get(), {}, &response)));
  return response;
}

std::string Describe(const v1::ModelVersionStatus& model) {
  return absl::StrFormat("%s version %d from %s (%s, %.1f MiB, loaded in %.2f s)", model.name(),
                         model.version(), model.source(), model.format(),
                         model.resident_bytes() / 1048576.0, model.load_seconds());
}

absl::Status RunList(const SpecifiedFlags&) {
  GMM_ASSIGN_OR_RETURN(AdminConnection admin, ConnectAdmin());
  GMM_ASSIGN_OR_RETURN(v1::GetModelStatusResponse status, Status(admin));
  std::string out = absl::StrFormat("%-24s %8s %-10s %12s %8s  %s\n", "NAME", "VERSION", "FORMAT",
                                    "RESIDENT_MIB", "LOAD_S", "SOURCE");
  for (const v1::ModelVersionStatus& m : status.models()) {
    absl::StrAppendFormat(&out, "%-24s %8d %-10s %12.1f %8.2f  %s\n", m.name(), m.version(),
                          m.format(), m.resident_bytes() / 1048576.0, m.load_seconds(),
                          m.source());
  }
  absl::StrAppendFormat(&out, "retired versions still in use: %d (%.1f MiB); budget: %s\n",
                        status.retired_versions(), status.retired_bytes() / 1048576.0,
                        status.memory_budget_bytes() == 0
                            ? std::string("none")
                            : absl::StrFormat("%.1f MiB", status.memory_budget_bytes() / 1048576.0));
  std::fputs(out.c_str(), stdout);
  return absl::OkStatus();
}

// load and replace: the same RPC; replace first checks the name is served.
absl::Status Load(const SpecifiedFlags& specified, bool must_be_served) {
  const std::string command = must_be_served ? "admin replace" : "admin load";
  GMM_ASSIGN_OR_RETURN(std::string name, NameFromFlags(specified, command));
  GMM_ASSIGN_OR_RETURN(AdminConnection admin, ConnectAdmin());
  if (must_be_served) {
    GMM_ASSIGN_OR_RETURN(v1::GetModelStatusResponse status, Status(admin));
    bool served = false;
    for (const v1::ModelVersionStatus& m : status.models()) served = served || m.name() == name;
    if (!served) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "'%s' is not served, so there is nothing to replace (use: gmmscore admin load)", name));
    }
  }
  v1::LoadModelRequest request;
  request.set_name(name);
  v1::LoadModelResponse response;
  GMM_RETURN_IF_ERROR(
      ToAbslStatus(admin.stub->LoadModel(admin.Context().get(), request, &response)));
  std::printf("%s %s\n", response.replaced() ? "replaced:" : "loaded:",
              Describe(response.model()).c_str());
  return absl::OkStatus();
}

absl::Status RunUnload(const SpecifiedFlags& specified) {
  GMM_ASSIGN_OR_RETURN(std::string name, NameFromFlags(specified, "admin unload"));
  GMM_ASSIGN_OR_RETURN(AdminConnection admin, ConnectAdmin());
  v1::UnloadModelRequest request;
  request.set_name(name);
  v1::UnloadModelResponse response;
  GMM_RETURN_IF_ERROR(
      ToAbslStatus(admin.stub->UnloadModel(admin.Context().get(), request, &response)));
  std::printf("unloaded: %s (streams using it finish on it)\n", name.c_str());
  return absl::OkStatus();
}

// grpc.health.v1 Check: prints the status; OK only for SERVING, so that a
// container's HEALTHCHECK or a script can use the exit code.
absl::Status RunHealth(const SpecifiedFlags&) {
  GMM_ASSIGN_OR_RETURN(ClientOptions options, ClientOptionsFromFlags());
  options.connect_timeout = absl::Seconds(absl::GetFlag(FLAGS_health_timeout_s));
  options.call_timeout = options.connect_timeout;
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(absl::GetFlag(FLAGS_server), options));
  auto stub = grpc::health::v1::Health::NewStub(client->channel());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options.call_timeout));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status checked = stub->Check(&context, request, &response);
  const std::string what = request.service().empty() ? "the server" : absl::StrCat("'", request.service(), "'");
  if (checked.error_code() == grpc::StatusCode::NOT_FOUND) {
    return absl::NotFoundError(absl::StrCat(what, ": SERVICE_UNKNOWN (not a model this server serves, nor "
                                                  "gmmscore.v1.AcousticScorer)"));
  }
  GMM_RETURN_IF_ERROR(ToAbslStatus(checked));
  const std::string status = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
  std::printf("%s: %s\n", what.c_str(), status.c_str());
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(absl::StrCat(what, " is ", status));
  }
  return absl::OkStatus();
}

std::vector<std::string> FlagsWith(std::vector<std::string> names) {
  names.push_back("server");
  for (std::string& name : ConnectionFlagNames()) names.push_back(std::move(name));
  return names;
}

constexpr char kConnection[] =
    "\n\nWith --admin_token_file on the server, give --token_file; with TLS, --tls_ca (and\n"
    "--tls_cert/--tls_key for mutual TLS).";

}  // namespace

std::vector<Command> AdminCommands() {
  return {
      {"health", "ask a gmmscored whether it serves (grpc.health.v1); exit 0 only if SERVING",
       absl::StrCat("gmmscore health --server HOST:PORT [--service NAME] [--health_timeout_s 3]\n\n"
                    "Prints SERVING, NOT_SERVING (e.g. draining, or a model that cannot serve) or the\n"
                    "error; exits 0 only for SERVING, 1 otherwise. --service names a model (or\n"
                    "gmmscore.v1.AcousticScorer); empty asks about the whole server. For a container's\n"
                    "HEALTHCHECK or a load balancer's probe script.",
                    kConnection),
       FlagsWith({"service", "health_timeout_s"}), RunHealth},
      {"admin list", "list the model versions a gmmscored serves, memory and budget",
       absl::StrCat("gmmscore admin list --server HOST:PORT\n\n"
                    "One line per served model: version, format, resident MiB, load time, "
                    "source; then the\nretired versions still used by live streams and the "
                    "memory budget.",
                    kConnection),
       FlagsWith({}), RunList},
      {"admin load", "load a model from the server's repository (or a new version of it)",
       absl::StrCat("gmmscore admin load --server HOST:PORT --name NAME\n\n"
                    "Reads NAME from the server's model repository and serves it; if NAME is "
                    "served already,\nthe new version replaces it for new streams (running "
                    "streams finish on the old one).\nRefused (RESOURCE_EXHAUSTED) beyond the "
                    "server's memory budget.",
                    kConnection),
       FlagsWith({"name"}), [](const SpecifiedFlags& s) { return Load(s, false); }},
      {"admin replace", "load a new version of a served model",
       absl::StrCat("gmmscore admin replace --server HOST:PORT --name NAME\n\n"
                    "Like `admin load`, but only for a model served now (fails otherwise): "
                    "re-reads its file\nafter it changed on disk.",
                    kConnection),
       FlagsWith({"name"}), [](const SpecifiedFlags& s) { return Load(s, true); }},
      {"admin unload", "stop serving a model to new streams",
       absl::StrCat("gmmscore admin unload --server HOST:PORT --name NAME\n\n"
                    "New streams and requests naming NAME get NOT_FOUND; running ones finish "
                    "on it. The last\nserved model cannot be unloaded.",
                    kConnection),
       FlagsWith({"name"}), RunUnload},
  };
}

}  // namespace gmmscore::cli
