#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/fused_loglik_kernel.cuh"
#include "kernels/cuda/gemm_loglik_kernels.cuh"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/loglik_policy.h"

namespace gmmscore {
namespace {

template <typename Policy>
absl::Status LaunchFused(const DeviceModel& model, const float* features, int64_t num_frames,
                         float* loglikes, cudaStream_t stream) {
  const size_t shared_bytes = 1ull * Policy::kFramesPerBlock * model.dim4 * sizeof(float4);
  if (model.num_fused_blocks > 65535) {  // gridDim.y limit
    return absl::InvalidArgumentError("model has more than 65535 x 64 states");
  }
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    FusedKernelArgs args{};
    args.ab = model.ab.data();
    args.gconsts = model.fused_gconsts.data();
    args.block_gaussians = model.block_gaussians.data();
    args.block_ab_offset = model.block_ab_offset.data();
    args.block_gconst_offset = model.block_gconst_offset.data();
    args.slot_state = model.slot_state.data();
    args.center = model.center.data();
    args.features = features + first * model.dim;
    args.num_frames = frames;
    args.dim = model.dim;
    args.dim4 = model.dim4;
    args.num_states = model.num_states;
    args.loglikes = loglikes + first * model.num_states;
    const dim3 grid(static_cast<unsigned>((frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock),
                    model.num_fused_blocks);
    FusedLoglikKernel<Policy><<<grid, Policy::kThreads, shared_bytes, stream>>>(args);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch fused likelihood kernel");
  }
  return absl::OkStatus();
}

absl::Status LaunchGemm(const DeviceModel& model, const float* features, int64_t num_frames,
                        float* loglikes, GemmWorkspace& workspace, cudaStream_t stream) {
  if (workspace.cublas == nullptr) return absl::FailedPreconditionError("GEMM path needs a cuBLAS handle");
  const int cols = 1 + 2 * model.dim;
  const int64_t slice = std::max<int64_t>(
      1, std::min<int64_t>(num_frames, kGemmScratchBytes / (model.num_gaussians * sizeof(float))));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.expanded, slice * cols));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.gaussian_scores, slice * model.num_gaussians));
  GMM_CUBLAS_RETURN_IF_ERROR(cublasSetStream(workspace.cublas, stream), "bind cuBLAS to stream");
  for (int64_t first = 0; first < num_frames; first += slice) {
    const int64_t frames = std::min(slice, num_frames - first);
    const int64_t expanded_count = frames * cols;
    ExpandFeaturesKernel<<<static_cast<unsigned>((expanded_count + 255) / 256), 256, 0, stream>>>(
        features + first * model.dim, model.center.data(), frames, model.dim, workspace.expanded.data());
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch feature expansion");
    // Row-major scores (frames x Gtot) are column-major Gtot x frames:
    // scores = params^T(col-major cols x Gtot)^T * expanded(col-major cols x frames).
    const float one = 1.0f, zero = 0.0f;
    GMM_CUBLAS_RETURN_IF_ERROR(
        cublasSgemm(workspace.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(model.num_gaussians),
                    static_cast<int>(frames), cols, &one, model.params.data(), cols,
                    workspace.expanded.data(), cols, &zero, workspace.gaussian_scores.data(),
                    static_cast<int>(model.num_gaussians)),
        "Gaussian scores SGEMM");
    const int64_t warps = frames * model.num_states;
    SegmentedLogSumExpKernel<<<static_cast<unsigned>((warps * 32 + 255) / 256), 256, 0, stream>>>(
        workspace.gaussian_scores.data(), model.state_offsets.data(), frames, model.num_states,
        model.num_gaussians, loglikes + first * model.num_states);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch segmented log-sum-exp");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchLoglik(const DeviceModel& model, Algorithm algorithm, const float* features,
                          int64_t num_frames, float* loglikes, GemmWorkspace& workspace,
                          cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  if (algorithm == Algorithm::kAuto) algorithm = ChooseAlgorithm(num_frames, model.num_gaussians);
  switch (algorithm) {
    case Algorithm::kFused8:
      return LaunchFused<Fused8Policy>(model, features, num_frames, loglikes, stream);
    case Algorithm::kFused16:
      return LaunchFused<Fused16Policy>(model, features, num_frames, loglikes, stream);
    case Algorithm::kFused32:
      return LaunchFused<Fused32Policy>(model, features, num_frames, loglikes, stream);
    case Algorithm::kGemm:
      return LaunchGemm(model, features, num_frames, loglikes, workspace, stream);
    case Algorithm::kAuto:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported algorithm ", AlgorithmName(algorithm)));
}

absl::Status LaunchFrameTotals(const float* loglikes, int64_t num_frames, int num_states,
                               float* totals, cudaStream_t stream) {
  constexpr int kThreads = 256;
  for (int64_t first = 0; first < num_frames; first += 65535 * 1024LL) {
    const int64_t frames = std::min<int64_t>(num_frames - first, 65535 * 1024LL);
    FrameTotalsKernel<kThreads><<<static_cast<unsigned>(frames), kThreads, 0, stream>>>(
        loglikes + first * num_states, num_states, totals + first);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch frame totals");
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
