#include "kernels/cuda/cuda_fmllr_gather.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"

namespace gmmscore {

CudaFmllrGather::CudaFmllrGather(const DeviceModel& model, const PosteriorPolicy& policy,
                                 std::shared_ptr<FmllrTakeChannel> channel)
    : model_(&model),
      dim_(model.dim),
      values_(FmllrGatherValues(model.dim)),
      silence_threshold_(policy.silence_threshold),
      min_posterior_(policy.min_posterior),
      channel_(std::move(channel)) {}

absl::StatusOr<std::unique_ptr<CudaFmllrGather>> CudaFmllrGather::Create(
    const DeviceModel& model, int max_gaussians_per_state, const PosteriorPolicy& policy,
    std::shared_ptr<FmllrTakeChannel> channel) {
  if (model.dim > kMaxGatherDim || max_gaussians_per_state > kMaxGatherGaussians) {
    return absl::UnimplementedError(absl::StrCat(
        "fMLLR statistics are gathered on the device for up to ", kMaxGatherDim,
        " dimensions and ", kMaxGatherGaussians, " Gaussians a state; the model has ", model.dim,
        " and ", max_gaussians_per_state));
  }
  std::vector<uint8_t> flags;
  for (int32_t s : policy.silence_states) {
    if (s < 0 || s >= model.num_states) {
      return absl::InvalidArgumentError(absl::StrCat("silence state ", s, " is not one of the ",
                                                     model.num_states, " states"));
    }
    if (flags.empty()) flags.assign(model.num_states, 0);
    flags[s] = 1;
  }
  std::unique_ptr<CudaFmllrGather> target(new CudaFmllrGather(model, policy, std::move(channel)));
  FmllrTakeChannel& shared = *target->channel_;
  // The segments, then the silence flags (a byte a state) in the same
  // pooled buffer.
  const size_t count = kSegments * target->values_ + (model.num_states + 7) / 8;
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(shared.device), "select CUDA device");
    std::vector<DeviceBuffer<double>>& pool = shared.free_sums[count];
    if (!pool.empty()) {
      target->sums_ = std::move(pool.back());
      pool.pop_back();
    } else {
      GMM_ASSIGN_OR_RETURN(target->sums_, DeviceBuffer<double>::Allocate(count));
    }
    GMM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(target->sums_.data(), 0, target->sums_.bytes(), shared.stream.get()),
        "zero fMLLR statistics");
    if (!flags.empty()) {
      target->has_silence_ = true;
      GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(target->silence(), flags.data(), flags.size(),
                                               cudaMemcpyHostToDevice, shared.stream.get()),
                               "copy silence states to device");
    }
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(shared.stream.get()), "zero fMLLR statistics");
  }
  return target;
}

CudaFmllrGather::~CudaFmllrGather() {
  if (sums_.size() == 0) return;
  std::lock_guard<std::mutex> lock(channel_->mu);
  channel_->free_sums[sums_.size()].push_back(std::move(sums_));
}

FmllrGatherWindow CudaFmllrGather::Window(int segment) const {
  return {.sums = this->segment(segment),
          .params = model_->params.data(),
          .state_offsets = model_->state_offsets.data(),
          .center = model_->center.data(),
          .silence = has_silence_ ? silence() : nullptr,
          .num_states = model_->num_states,
          .silence_threshold = silence_threshold_,
          .min_posterior = min_posterior_};
}

absl::Status CudaFmllrGather::Take(int segment, absl::Span<double> sums) {
  if (segment < 0 || segment >= kSegments || static_cast<int64_t>(sums.size()) != values_) {
    return absl::InvalidArgumentError(absl::StrCat("take segment ", segment, " of ", kSegments,
                                                   " into ", sums.size(), " values (", values_,
                                                   " wanted)"));
  }
  if (poisoned()) {
    return absl::FailedPreconditionError(
        "a scoring call that gathered this stream's fMLLR statistics failed part-way; its "
        "sums are unknown");
  }
  std::vector<double> read(values_);
  {
    std::lock_guard<std::mutex> lock(channel_->mu);
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(channel_->device), "select CUDA device");
    cudaStream_t stream = channel_->stream.get();
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(read.data(), this->segment(segment),
                                             values_ * sizeof(double), cudaMemcpyDeviceToHost,
                                             stream),
                             "read fMLLR statistics");
    GMM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(this->segment(segment), 0, values_ * sizeof(double), stream),
        "zero fMLLR statistics");
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "read fMLLR statistics");
  }
  for (int64_t i = 0; i < values_; ++i) sums[i] += read[i];
  return absl::OkStatus();
}

}  // namespace gmmscore
