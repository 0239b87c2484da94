#include "kernels/cuda/cuda_backend.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/loglik_launch.h"

namespace gmmscore {
namespace {

// Concurrent Score calls per device: enough for copies in, a kernel and
// copies out of different batches to overlap.
constexpr int kLanes = 4;

class CudaPreparedModel : public PreparedModel {
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

// One stream's worth of everything a Score call needs.
struct Lane {
  CudaStream stream;
  CublasHandle cublas;
  LoglikWorkspace gemm;
  PinnedBuffer<float> host_in;
  PinnedBuffer<float> host_out;
  DeviceBuffer<float> features;
  DeviceBuffer<float> loglikes;  // T x S, then T frame totals
};

class CudaBackend : public ScoringBackend {
 public:
  explicit CudaBackend(int device) : device_(device) {}

  absl::Status Init() {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), absl::StrCat("select CUDA device ", device_));
    lanes_.resize(kLanes);
    for (Lane& lane : lanes_) {
      GMM_ASSIGN_OR_RETURN(lane.stream, CudaStream::Create());
      GMM_ASSIGN_OR_RETURN(lane.cublas, CublasHandle::Create());
      // FP32 arithmetic as written: no TF32 tensor-core shortcut in SGEMM.
      GMM_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(lane.cublas.get(), CUBLAS_DEFAULT_MATH),
                                 "set cuBLAS math mode");
      lane.gemm.cublas = lane.cublas.get();
      free_lanes_.push_back(&lane);
    }
    return absl::OkStatus();
  }

  ~CudaBackend() override {
    cudaSetDevice(device_);
    for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream.get());
  }

  std::string name() const override { return absl::StrCat("cuda:", device_); }

  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) override {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    GMM_ASSIGN_OR_RETURN(DeviceModel resident, DeviceModel::Upload(*model));
    return std::make_shared<CudaPreparedModel>(std::move(model), std::move(resident), device_);
  }

  absl::Status Score(const PreparedModel& prepared, ConstMatrixView features,
                     const ScoreOptions& options, ScoreResult* result) override {
    const auto* cuda_model = dynamic_cast<const CudaPreparedModel*>(&prepared);
    if (cuda_model == nullptr || cuda_model->device() != device_) {
      return absl::InvalidArgumentError("model was not prepared by this CUDA backend");
    }
    const DiagGmmModel& model = prepared.model();
    GMM_RETURN_IF_ERROR(ValidateFeatures(model, features));
    const int64_t frames = features.rows;
    const int states = model.num_states();
    result->loglikes.Resize(frames, states);
    result->frame_totals.clear();
    if (frames == 0) return absl::OkStatus();

    Lane* lane = AcquireLane();
    absl::Status status = ScoreOnLane(*lane, cuda_model->resident(), features, options, result);
    ReleaseLane(lane);
    return status;
  }

 private:
  absl::Status ScoreOnLane(Lane& lane, const DeviceModel& resident, ConstMatrixView features,
                           const ScoreOptions& options, ScoreResult* result) {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    const int64_t frames = features.rows;
    const int64_t dim = features.cols;
    const int states = resident.num_states;
    const int64_t out_count = frames * states + (options.frame_totals ? frames : 0);
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_in, frames * dim));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_out, out_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.features, frames * dim));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.loglikes, out_count));

    for (int64_t t = 0; t < frames; ++t) {
      std::memcpy(lane.host_in.data() + t * dim, features.row(t), dim * sizeof(float));
    }
    cudaStream_t stream = lane.stream.get();
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.features.data(), lane.host_in.data(),
                                             frames * dim * sizeof(float), cudaMemcpyHostToDevice, stream),
                             "copy features to device");
    GMM_RETURN_IF_ERROR(LaunchLoglik(resident, options.algorithm, lane.features.data(), frames,
                                     lane.loglikes.data(), lane.gemm, stream));
    if (options.frame_totals) {
      GMM_RETURN_IF_ERROR(LaunchFrameTotals(lane.loglikes.data(), frames, states,
                                            lane.loglikes.data() + frames * states, stream));
    }
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.host_out.data(), lane.loglikes.data(),
                                             out_count * sizeof(float), cudaMemcpyDeviceToHost, stream),
                             "copy scores to host");
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "run likelihood kernels");
    std::memcpy(result->loglikes.data(), lane.host_out.data(), frames * states * sizeof(float));
    if (options.frame_totals) {
      const float* totals = lane.host_out.data() + frames * states;
      result->frame_totals.assign(totals, totals + frames);
    }
    return absl::OkStatus();
  }

  Lane* AcquireLane() {
    std::unique_lock<std::mutex> lock(mu_);
    lane_free_.wait(lock, [&] { return !free_lanes_.empty(); });
    Lane* lane = free_lanes_.back();
    free_lanes_.pop_back();
    return lane;
  }

  void ReleaseLane(Lane* lane) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_lanes_.push_back(lane);
    }
    lane_free_.notify_one();
  }

  const int device_;
  std::vector<Lane> lanes_;  // fixed after Init()
  std::mutex mu_;
  std::condition_variable lane_free_;
  std::vector<Lane*> free_lanes_;  // guarded by mu_
};

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateCudaBackend(int device) {
  const int count = CudaDeviceCount();
  if (device < 0 || device >= count) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " is not available (", count, " device(s) found)"));
  }
  auto backend = std::make_unique<CudaBackend>(device);
  GMM_RETURN_IF_ERROR(backend->Init());
  return backend;
}

}  // namespace gmmscore
