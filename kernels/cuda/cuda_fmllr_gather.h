// CudaFmllrGather: the CUDA backend's FmllrGatherTarget (fmllr_gather.h): a
// stream's kSegments segments of float64 sums and its silence flags, on the
// device of the model it gathers for. The lanes add to a segment in the
// calls that score the stream's windows (fmllr_gather_launch.h); Take reads
// one back on the backend's take stream (a stream of its own, so a read
// never waits behind the lanes' scoring) and zeroes it.
//
// Memory: kSegments x FmllrGatherValues(D) doubles (0.54 MB at D = 39) and
// one byte a state, per adapting stream, in one buffer that goes back to the
// backend's pool when the target goes.
#ifndef GMMSCORE_KERNELS_CUDA_CUDA_FMLLR_GATHER_H_
#define GMMSCORE_KERNELS_CUDA_CUDA_FMLLR_GATHER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/fmllr_gather_launch.h"
#include "kernels/score/fmllr_gather.h"
#include "kernels/score/posterior_policy.h"

namespace gmmscore {

// What every target of one backend shares: the stream their sums are read
// and zeroed on, and the sums buffers of targets gone, by size, for the next
// ones (streams come and go; cudaFree would wait for the whole device).
struct FmllrTakeChannel {
  int device = 0;
  CudaStream stream;
  std::mutex mu;  // one read at a time; guards free_sums
  std::map<size_t, std::vector<DeviceBuffer<double>>> free_sums;
};

class CudaFmllrGather final : public FmllrGatherTarget {
 public:
  // For windows of `model` (resident on channel->device, `num_states`
  // states), with `policy`'s posteriors. INVALID_ARGUMENT for a silence
  // state out of range; UNIMPLEMENTED past kMaxGatherDim or
  // kMaxGatherGaussians; RESOURCE_EXHAUSTED where the device is full.
  static absl::StatusOr<std::unique_ptr<CudaFmllrGather>> Create(
      const DeviceModel& model, int max_gaussians_per_state, const PosteriorPolicy& policy,
      std::shared_ptr<FmllrTakeChannel> channel);

  // Gives its sums buffer back to the channel.
  ~CudaFmllrGather() override;

  int dim() const override { return dim_; }
  absl::Status Take(int segment, absl::Span<double> sums) override;

  // For the lanes.
  const DeviceModel* model() const { return model_; }
  int device() const { return channel_->device; }
  double* segment(int k) const { return sums_.data() + k * values_; }
  uint8_t* silence() const { return reinterpret_cast<uint8_t*>(segment(kSegments)); }
  // A window's descriptor, but for its frames, scores, terms and rows.
  FmllrGatherWindow Window(int segment) const;

 private:
  CudaFmllrGather(const DeviceModel& model, const PosteriorPolicy& policy,
                  std::shared_ptr<FmllrTakeChannel> channel);

  const DeviceModel* const model_;
  const int dim_;
  const int64_t values_;
  const double silence_threshold_;
  const double min_posterior_;
  const std::shared_ptr<FmllrTakeChannel> channel_;
  DeviceBuffer<double> sums_;  // kSegments x values_, then the silence flags
  bool has_silence_ = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_CUDA_FMLLR_GATHER_H_
