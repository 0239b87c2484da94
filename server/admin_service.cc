#include "server/admin_service.h"

#include <utility>

#include "proto/rpc_status.h"
#include "server/auth_token.h"
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

HealthReporter* ModelAdminService::Health() {
  static HealthReporter nowhere(nullptr);
  HealthReporter* health = health_.load();
  return health != nullptr ? health : &nowhere;
}

ModelAdminService::ModelAdminService(ModelRepository* repository, HealthReporter* health,
                                     std::string token)
    : repository_(repository), health_(health), token_(std::move(token)) {}

grpc::ServerUnaryReactor* ModelAdminService::LoadModel(grpc::CallbackServerContext* context,
                                                       const v1::LoadModelRequest* request,
                                                       v1::LoadModelResponse* response) {
  if (absl::Status auth = CheckBearerToken(context->client_metadata(), token_); !auth.ok()) {
    LogInfo("admin: LoadModel from %s refused: %s", context->peer(), auth.message());
    return Answer(context, auth);
  }
  const std::string& name = request->name();
  // A new name is NOT_SERVING while it loads; a served one keeps serving its
  // old version until the new one replaces it.
  const bool served_before = repository_->Find(name).ok();
  if (!served_before) Health()->SetModel(name, false);
  // Reading and preparing a model takes a while; it runs on this gRPC
  // thread, which is acceptable for a rare admin call.
  absl::StatusOr<ModelRepository::LoadResult> loaded = repository_->Load(name);
  if (!loaded.ok()) {
    LogError("admin: loading '%s' failed: %s", name, loaded.status().ToString());
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
  if (absl::Status auth = CheckBearerToken(context->client_metadata(), token_); !auth.ok()) {
    LogInfo("admin: UnloadModel from %s refused: %s", context->peer(), auth.message());
    return Answer(context, auth);
  }
  absl::Status status = repository_->Unload(request->name());
  if (status.ok()) {
    Health()->SetModel(request->name(), false);
    LogInfo("admin: model '%s' unloaded (live streams finish on it)", request->name());
  }
  return Answer(context, status);
}

grpc::ServerUnaryReactor* ModelAdminService::GetModelStatus(grpc::CallbackServerContext* context,
                                                            const v1::GetModelStatusRequest*,
                                                            v1::GetModelStatusResponse* response) {
  if (absl::Status auth = CheckBearerToken(context->client_metadata(), token_); !auth.ok()) {
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
