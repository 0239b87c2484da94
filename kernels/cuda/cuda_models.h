// The CUDA backend's prepared models: an untied DiagGmmModel resident as a
// DeviceModel, a tied-mixture model as a TiedMixtureDevice, each bound to
// the device it was uploaded to. CudaModelOf is the one place a
// PreparedModel is told apart; the backend switches on its kind.
//
//   const CudaModel cuda = CudaModelOf(*window.model);
//   switch (cuda.kind) { case CudaModel::Kind::kUntied: ... cuda.untied ... }
#ifndef GMMSCORE_KERNELS_CUDA_CUDA_MODELS_H_
#define GMMSCORE_KERNELS_CUDA_CUDA_MODELS_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/cuda/device_model.h"
#include "kernels/cuda/tied_mixture_device.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

class CudaPreparedModel final : public PreparedModel {
 public:
  CudaPreparedModel(std::shared_ptr<const DiagGmmModel> model, DeviceModel resident, int device)
      : PreparedModel(std::move(model)), resident_(std::move(resident)), device_(device) {}
  int64_t device_bytes() const override { return resident_.bytes(); }
  const DeviceModel& resident() const { return resident_; }
  int device() const { return device_; }

 private:
  DeviceModel resident_;
  const int device_;
};

class CudaTiedPreparedModel final : public PreparedModel {
 public:
  CudaTiedPreparedModel(std::shared_ptr<const TiedMixtureModel> model, TiedMixtureDevice resident,
                        int device)
      : PreparedModel(std::move(model)), resident_(std::move(resident)), device_(device) {}
  int64_t device_bytes() const override { return resident_.bytes(); }
  const TiedMixtureDevice& resident() const { return resident_; }
  int device() const { return device_; }

 private:
  TiedMixtureDevice resident_;
  const int device_;
};

// What a PreparedModel is to the CUDA backend.
struct CudaModel {
  enum class Kind {
    kForeign,  // prepared by another backend
    kUntied,
    kTied,
  };
  Kind kind = Kind::kForeign;
  int device = -1;
  const DeviceModel* untied = nullptr;       // kUntied's
  const TiedMixtureDevice* tied = nullptr;   // kTied's
};

inline CudaModel CudaModelOf(const PreparedModel& model) {
  if (const auto* untied = dynamic_cast<const CudaPreparedModel*>(&model)) {
    return {.kind = CudaModel::Kind::kUntied, .device = untied->device(), .untied = &untied->resident()};
  }
  if (const auto* tied = dynamic_cast<const CudaTiedPreparedModel*>(&model)) {
    return {.kind = CudaModel::Kind::kTied, .device = tied->device(), .tied = &tied->resident()};
  }
  return {};
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_CUDA_MODELS_H_
