// ModelAdminService: gmmscore.v1.ModelAdmin (proto/gmmscore/v1/admin.proto)
// over the ModelRepository: load, replace and unload models while streams
// run, guarded by a bearer token when one is configured. Keeps the health
// service's per-model entries in step.
//
//   ModelAdminService admin(repository.get(), &health, token);
//   builder.RegisterService(&admin);
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_ADMIN_SERVICE_H_
#define GMMSCORE_SERVER_ADMIN_SERVICE_H_

#include <atomic>
#include <string>

#include "gmmscore/v1/admin.grpc.pb.h"
#include "server/health_reporter.h"
#include "server/model_repository.h"

namespace gmmscore {

class ModelAdminService final : public v1::ModelAdmin::CallbackService {
 public:
  // `repository` and `health` must outlive the service; `token` empty: no
  // token needed (then bind the server to a trusted network only).
  ModelAdminService(ModelRepository* repository, HealthReporter* health, std::string token);

  // The reporter, once the server exists (null: report nothing).
  void set_health(HealthReporter* health) { health_.store(health); }

  grpc::ServerUnaryReactor* LoadModel(grpc::CallbackServerContext* context,
                                      const v1::LoadModelRequest* request,
                                      v1::LoadModelResponse* response) override;
  grpc::ServerUnaryReactor* UnloadModel(grpc::CallbackServerContext* context,
                                        const v1::UnloadModelRequest* request,
                                        v1::UnloadModelResponse* response) override;
  grpc::ServerUnaryReactor* GetModelStatus(grpc::CallbackServerContext* context,
                                           const v1::GetModelStatusRequest* request,
                                           v1::GetModelStatusResponse* response) override;

 private:
  // health_, or a reporter that reports nowhere.
  HealthReporter* Health();

  ModelRepository* const repository_;
  std::atomic<HealthReporter*> health_;
  const std::string token_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ADMIN_SERVICE_H_
