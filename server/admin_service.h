// ModelAdminService: gmmscore.v1.ModelAdmin (proto/gmmscore/v1/admin.proto)
// over the ModelRepository: load, replace and unload models while streams
// run, guarded by a bearer token when one is configured (AdminAccess). Keeps
// the health service's per-model entries in step: an entry is made or
// changed only by a load or unload that succeeded.
//
//   ModelAdminService admin(repository.get(), &health,
//                           DecideAdminAccess(admin_token, scoring_token_set, admin_open));
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

// Who may call ModelAdmin.
struct AdminAccess {
  enum class Mode {
    kOpen,    // anyone who reaches the port
    kToken,   // "authorization: Bearer <token>"
    kClosed,  // nobody: PERMISSION_DENIED
  };
  Mode mode = Mode::kOpen;
  std::string token;  // kToken's; never logged
  // For the start-up log: a warning when the service is open, else empty.
  std::string warning;
};

// The admin token if there is one. Without one, ModelAdmin is closed as soon
// as the scoring service wants a token (an operator who protects scoring
// would not expect loading and unloading models to stay open: issue 16),
// unless `admin_open` says so explicitly; with neither token it is open, with
// a warning.
AdminAccess DecideAdminAccess(std::string admin_token, bool scoring_token_set, bool admin_open);

class ModelAdminService final : public v1::ModelAdmin::CallbackService {
 public:
  // `repository` and `health` must outlive the service.
  ModelAdminService(ModelRepository* repository, HealthReporter* health, AdminAccess access);

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
  // OK if `context` may call ModelAdmin; logs refusals of changes.
  absl::Status CheckAccess(const grpc::CallbackServerContext& context,
                           absl::string_view method) const;

  ModelRepository* const repository_;
  std::atomic<HealthReporter*> health_;
  const AdminAccess access_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ADMIN_SERVICE_H_
