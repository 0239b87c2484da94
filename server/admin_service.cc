#include "server/admin_service.h"

#include <utility>

#include "absl/strings/str_format.h"

#include "proto/rpc_status.h"
#include "server/auth_token.h"
#include "server/client_text.h"
#include "server/log.h"

namespace gmmscore {
namespace {

void ToProto(const ServedModel& model, v1::ModelVersionStatus* out) {
  out->set_name(model.name);
  out->set_version(model.version);
  out->set_source(model.source);
  out->set_format(model.format);
  out->set_resident_bytes(model.resident_bytes());
  out->set_load_seconds(absl::ToDoubleSeconds(model.load_time));
}

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

AdminAccess DecideAdminAccess(std::string admin_token, bool scoring_token_set, bool admin_open) {
  using Mode = AdminAccess::Mode;
  if (!admin_token.empty()) return {.mode = Mode::kToken, .token = std::move(admin_token)};
  if (scoring_token_set && !admin_open) return {.mode = Mode::kClosed};
  return {.mode = Mode::kOpen,
          .warning = scoring_token_set
                         ? "ModelAdmin is open to anyone who reaches the port (--admin_open) while "
                           "scoring needs a token; give it --admin_token_file instead"
                         : "ModelAdmin is open to anyone who reaches the port (no "
                           "--admin_token_file): bind it to a trusted network only"};
}

HealthReporter* ModelAdminService::Health() {
  static HealthReporter nowhere(nullptr);
  HealthReporter* health = health_.load();
  return health != nullptr ? health : &nowhere;
}

ModelAdminService::ModelAdminService(ModelRepository* repository, HealthReporter* health,
                                     AdminAccess access)
    : repository_(repository), health_(health), access_(std::move(access)) {}

absl::Status ModelAdminService::CheckAccess(const grpc::CallbackServerContext& context,
                                            absl::string_view method) const {
  absl::Status status;
  switch (access_.mode) {
    case AdminAccess::Mode::kOpen:
      return absl::OkStatus();
    case AdminAccess::Mode::kToken:
      status = CheckBearerToken(context.client_metadata(), access_.token);
      break;
    case AdminAccess::Mode::kClosed:
      status = absl::PermissionDeniedError(
          "ModelAdmin is closed: this server requires a scoring token but was given no "
          "--admin_token_file; restart it with one (or with --admin_open to leave ModelAdmin "
          "open)");
      break;
  }
  if (!status.ok() && method != "GetModelStatus") {
    LogInfo("admin: %s from %s refused: %s", method, context.peer(), status.message());
  }
  return status;
}

grpc::ServerUnaryReactor* ModelAdminService::LoadModel(grpc::CallbackServerContext* context,
                                                       const v1::LoadModelRequest* request,
                                                       v1::LoadModelResponse* response) {
  if (absl::Status auth = CheckAccess(*context, "LoadModel"); !auth.ok()) {
    return Answer(context, auth);
  }
  const std::string& name = request->name();
  if (HealthReporter::IsReservedName(name)) {
    return Answer(context, absl::InvalidArgumentError(absl::StrFormat(
                               "'%s' names a service on grpc.health.v1, not a model",
                               ClientText(name))));
  }
  // Health changes only once the load succeeded: a new name has no entry
  // while it loads (NOT_FOUND), a served one keeps serving its old version
  // until the new one replaces it, and a failed load leaves nothing behind.
  // Reading and preparing a model takes a while; it runs on this gRPC
  // thread, which is acceptable for a rare admin call.
  absl::StatusOr<ModelRepository::LoadResult> loaded = repository_->Load(name);
  if (!loaded.ok()) {
    LogError("admin: loading '%s' failed: %s", ClientText(name), loaded.status().ToString());
    return Answer(context, loaded.status());
  }
  Health()->SetModel(name, true);
  const ServedModel& model = *loaded->model;
  LogInfo("admin: model '%s' version %d %s from %s (%.1f MiB resident, %s)", name, model.version,
          loaded->replaced ? "replaced the served version" : "loaded", model.source,
          model.resident_bytes() / 1048576.0, absl::FormatDuration(model.load_time));
  ToProto(model, response->mutable_model());
  response->set_replaced(loaded->replaced);
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ModelAdminService::UnloadModel(grpc::CallbackServerContext* context,
                                                         const v1::UnloadModelRequest* request,
                                                         v1::UnloadModelResponse*) {
  if (absl::Status auth = CheckAccess(*context, "UnloadModel"); !auth.ok()) {
    return Answer(context, auth);
  }
  absl::Status status = repository_->Unload(request->name());
  if (status.ok()) {
    Health()->SetModel(request->name(), false);
    LogInfo("admin: model '%s' unloaded (live streams finish on it)", ClientText(request->name()));
  }
  return Answer(context, status);
}

grpc::ServerUnaryReactor* ModelAdminService::GetModelStatus(grpc::CallbackServerContext* context,
                                                            const v1::GetModelStatusRequest*,
                                                            v1::GetModelStatusResponse* response) {
  if (absl::Status auth = CheckAccess(*context, "GetModelStatus"); !auth.ok()) {
    return Answer(context, auth);
  }
  for (const ServedModel& model : repository_->models()) ToProto(model, response->add_models());
  const ModelRepository::MemoryUsage memory = repository_->memory();
  response->set_retired_bytes(memory.retired_bytes);
  response->set_retired_versions(memory.retired_versions);
  response->set_memory_budget_bytes(memory.budget_bytes);
  return Answer(context, absl::OkStatus());
}

}  // namespace gmmscore
