#include <algorithm>
#include <vector>

#include "kernels/core/status_macros.h"
#include "kernels/cuda/ceilings.h"
#include "kernels/cuda/device_buffer.h"

namespace gmmscore {
namespace {

constexpr int kChains = 8;
constexpr int kIterations = 4096;

// kChains independent FMA chains per thread, so the pipeline never waits.
__global__ void FmaLoopKernel(float* out, float seed) {
  float acc[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc[c] = seed + threadIdx.x + c;
  const float a = 0.999999f, b = 1e-7f;
  for (int i = 0; i < kIterations; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], a, b);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += acc[c];
  if (sum == 12345.678f) out[0] = sum;  // keeps the loop alive
}

template <typename Work>
absl::StatusOr<float> MedianMilliseconds(Work work, int repeats) {
  GMM_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create());
  GMM_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::Create());
  GMM_RETURN_IF_ERROR(work());  // warm-up
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get()), "record");
    GMM_RETURN_IF_ERROR(work());
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get()), "record");
    GMM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()), "sync");
    float ms = 0;
    GMM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()), "elapsed");
    times.push_back(ms);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace

absl::StatusOr<double> MeasureFmaPeakTflops() {
  int device = 0, sms = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "get device");
  GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  GMM_ASSIGN_OR_RETURN(auto out, DeviceBuffer<float>::Allocate(1));
  const int blocks = sms * 16, threads = 256;
  GMM_ASSIGN_OR_RETURN(float ms, MedianMilliseconds(
                                     [&]() -> absl::Status {
                                       FmaLoopKernel<<<blocks, threads>>>(out.data(), 1.0f);
                                       return CudaStatus(cudaGetLastError(), "launch FMA loop");
                                     },
                                     11));
  const double flops = 2.0 * kChains * kIterations * static_cast<double>(blocks) * threads;
  return flops / (ms * 1e-3) / 1e12;
}

absl::StatusOr<double> MeasureCopyBandwidthGBs() {
  const size_t bytes = 1ull << 30;
  GMM_ASSIGN_OR_RETURN(auto a, DeviceBuffer<char>::Allocate(bytes));
  GMM_ASSIGN_OR_RETURN(auto b, DeviceBuffer<char>::Allocate(bytes));
  GMM_CUDA_RETURN_IF_ERROR(cudaMemset(a.data(), 1, bytes), "fill");
  GMM_ASSIGN_OR_RETURN(float ms, MedianMilliseconds(
                                     [&]() -> absl::Status {
                                       return CudaStatus(cudaMemcpyAsync(b.data(), a.data(), bytes,
                                                                         cudaMemcpyDeviceToDevice),
                                                         "copy");
                                     },
                                     11));
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

}  // namespace gmmscore
