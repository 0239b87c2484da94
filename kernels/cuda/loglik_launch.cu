#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/blocked_loglik_kernel.cuh"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fused_loglik_kernel.cuh"
#include "kernels/cuda/gemm_loglik_kernels.cuh"
#include "kernels/cuda/internal/dispatch_steps.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/split_loglik_kernel.cuh"
#include "kernels/cuda/tc_loglik_kernel.cuh"
#include "kernels/cuda/wgmma_loglik_launch.h"

namespace gmmscore {
namespace {

// The fused layouts put state blocks (64 states each) along gridDim.y.
absl::Status CheckFusedBlocks(const DeviceModel& model) {
  if (model.num_fused_blocks <= kMaxGridDimYZ) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("model has more than ", kMaxGridDimYZ, " x ", kFusedStatesPerBlock, " states"));
}

FusedKernelArgs MakeFusedArgs(const DeviceModel& model, const float* features, int64_t num_frames,
                              float* loglikes) {
  FusedKernelArgs args{};
  args.ab = model.ab.data();
  args.gconsts = model.fused_gconsts.data();
  args.block_gaussians = model.block_gaussians.data();
  args.block_ab_offset = model.block_ab_offset.data();
  args.block_gconst_offset = model.block_gconst_offset.data();
  args.slot_state = model.slot_state.data();
  args.center = model.center.data();
  args.features = features;
  args.num_frames = num_frames;
  args.dim = model.dim;
  args.dim4 = model.dim4;
  args.num_states = model.num_states;
  args.loglikes = loglikes;
  return args;
}

template <typename Policy>
absl::Status LaunchFused(const DeviceModel& model, const float* features, int64_t num_frames,
                         float* loglikes, cudaStream_t stream) {
  const size_t shared_bytes = 1ull * Policy::kFramesPerBlock * model.dim4 * sizeof(float4);
  GMM_RETURN_IF_ERROR(CheckFusedBlocks(model));
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    const FusedKernelArgs args =
        MakeFusedArgs(model, features + first * model.dim, frames, loglikes + first * model.num_states);
    const dim3 grid(static_cast<unsigned>((frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock),
                    model.num_fused_blocks);
    FusedLoglikKernel<Policy><<<grid, Policy::kThreads, shared_bytes, stream>>>(args);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch fused likelihood kernel");
  }
  return absl::OkStatus();
}

// Every read of the register-blocked kernel lies below gaussians * stride of
// its block (the kernel's prefetch re-reads in-bounds quads rather than
// running past the end); two Gaussians of margin keep the 32-bit offset sums
// clear of 2^32 too.
template <typename Policy>
bool FitsBlocked(const DeviceModel& model) {
  const int64_t block_float4s =
      (static_cast<int64_t>(model.max_block_gaussians) + Policy::kGaussiansPerThread) * model.dim4 * 2 *
      Policy::kStatesPerBlock;
  return block_float4s <= int64_t{0xffffffff};
}

// The slices LaunchBlocked cuts one launch of `frames` frames into on a
// device of `sms` SMs, where that fills the last wave (ChooseBlockedSlices).
template <typename Policy>
int BlockedSlices(const DeviceModel& model, int64_t frames, int sms) {
  const int64_t tiles = (frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock;
  const int groups = static_cast<int>((model.max_block_gaussians + Policy::kGaussiansPerThread - 1) /
                                      Policy::kGaussiansPerThread);
  return ChooseBlockedSlices(tiles * model.num_fused_blocks, int64_t{sms} * Policy::kMinBlocksPerSm, groups,
                             frames * model.num_states);
}

// The slices of LaunchSplit: enough to give every SM kBlocksPerSm blocks, no
// more than the Gaussians allow (each thread group keeps at least one per
// slice).
int SplitSlices(const DeviceModel& model, int64_t frames, int sms) {
  using Policy = SplitPolicy;
  const int64_t tiles = (frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock;
  const int64_t blocks = tiles * model.num_fused_blocks;
  const int64_t wanted = (static_cast<int64_t>(sms) * Policy::kBlocksPerSm + blocks - 1) / blocks;
  const int64_t most = std::max<int64_t>(1, model.max_block_gaussians / Policy::kSplits);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::min<int64_t>(most, Policy::kMaxSlices)));
}

// The register-blocked kernel: the fused kernel's grid and shared memory,
// its model offsets within a block 32-bit, and its states' Gaussians in
// ChooseBlockedSlices slices (merged after) where that fills the last wave.
template <typename Policy>
absl::Status LaunchBlocked(const DeviceModel& model, const float* features, int64_t num_frames,
                           float* loglikes, LoglikWorkspace& workspace, cudaStream_t stream) {
  const size_t shared_bytes = 1ull * Policy::kFramesPerBlock * model.dim4 * sizeof(float4);
  GMM_RETURN_IF_ERROR(CheckFusedBlocks(model));
  if (!FitsBlocked<Policy>(model)) {
    return absl::InvalidArgumentError(absl::StrCat(AlgorithmName(Policy::kAlgorithm), " supports up to ",
                                                   int64_t{0xffffffff} / (2 * Policy::kStatesPerBlock * model.dim4) -
                                                       Policy::kGaussiansPerThread,
                                                   " Gaussians per state at dimension ", model.dim));
  }
  GMM_ASSIGN_OR_RETURN(const DeviceInfo device, CurrentDeviceInfo());
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    const int64_t tiles = (frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock;
    const int64_t count = frames * model.num_states;
    const int slices = BlockedSlices<Policy>(model, frames, device.sms);
    float* out = loglikes + first * model.num_states;
    float* partials = nullptr;
    if (slices > 1) {
      GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.slice_partials, 2 * slices * count));
      partials = workspace.slice_partials.data();
    }
    const FusedKernelArgs args = MakeFusedArgs(model, features + first * model.dim, frames, out);
    const dim3 grid(static_cast<unsigned>(tiles), model.num_fused_blocks, slices);
    BlockedLoglikKernel<Policy><<<grid, Policy::kThreads, shared_bytes, stream>>>(args, partials);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch register-blocked likelihood kernel");
    if (slices > 1) {
      MergeSlicesKernel<<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(partials, slices, count, out);
      GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch slice merge");
    }
  }
  return absl::OkStatus();
}

absl::Status LaunchSplit(const DeviceModel& model, const float* features, int64_t num_frames,
                         float* loglikes, LoglikWorkspace& workspace, cudaStream_t stream) {
  using Policy = SplitPolicy;
  GMM_RETURN_IF_ERROR(CheckFusedBlocks(model));
  GMM_ASSIGN_OR_RETURN(const DeviceInfo device, CurrentDeviceInfo());
  const int sms = device.sms;
  const size_t shared_bytes = 1ull * Policy::kFramesPerBlock * model.dim4 * sizeof(float4) +
                              2ull * Policy::kSplits * Policy::kFramesPerBlock * Policy::kStatesPerBlock * sizeof(float);
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    const int64_t tiles = (frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock;
    const int slices = SplitSlices(model, frames, sms);
    float* out = loglikes + first * model.num_states;
    float* partials = nullptr;
    const int64_t count = frames * model.num_states;
    if (slices > 1) {
      GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.slice_partials, 2 * slices * count));
      partials = workspace.slice_partials.data();
    }
    const dim3 grid(static_cast<unsigned>(tiles), model.num_fused_blocks, slices);
    SplitLoglikKernel<Policy><<<grid, Policy::kThreads, shared_bytes, stream>>>(
        MakeFusedArgs(model, features + first * model.dim, frames, out), partials);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch split likelihood kernel");
    if (slices > 1) {
      MergeSlicesKernel<<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(partials, slices, count, out);
      GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch slice merge");
    }
  }
  return absl::OkStatus();
}

template <int kSteps>
absl::Status LaunchTensorCoreSteps(const DeviceModel& model, const float* features, int64_t num_frames,
                                   float* loglikes, cudaStream_t stream) {
  using Policy = TensorCorePolicy<kSteps>;
  const size_t shared_bytes = Policy::SharedBytes(model.tc_cols);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(
      reinterpret_cast<const void*>(&TensorCoreLoglikKernel<Policy>), shared_bytes));
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    const TensorCoreArgs args = MakeTensorCoreArgs(model, features, first, frames, loglikes);
    const dim3 grid(static_cast<unsigned>((frames + Policy::kFrames - 1) / Policy::kFrames), model.tc_ranges);
    TensorCoreLoglikKernel<Policy><<<grid, Policy::kThreads, shared_bytes, stream>>>(args);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch tensor-core likelihood kernel");
  }
  return absl::OkStatus();
}

// The frames' A fragments live in registers, so the k extent is a template
// argument: the smallest instance that covers 1 + 2D.
absl::Status LaunchTensorCore(const DeviceModel& model, const float* features, int64_t num_frames,
                              float* loglikes, cudaStream_t stream) {
  // TF32 MMAs exist from sm_80 on; the sm_75 build of the kernel traps.
  int device = 0, major = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "current CUDA device");
  GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                           "compute capability");
  if (major < 8) {
    return absl::FailedPreconditionError(absl::StrCat(
        "tf32x3 needs TF32 tensor cores (compute capability 8.0 or newer); device ", device,
        " is ", major, ".x: use an exact algorithm"));
  }
  if (model.tc_ranges > kMaxGridDimYZ) {
    return absl::InvalidArgumentError(
        absl::StrCat("model has more than ", kMaxGridDimYZ, " state ranges"));
  }
  return DispatchBySteps(
      model.tc_cols / 8,
      [&](auto steps) {
        return LaunchTensorCoreSteps<decltype(steps)::value>(model, features, num_frames, loglikes,
                                                             stream);
      },
      absl::InvalidArgumentError(
          absl::StrCat("tf32x3 supports dimensions up to 47, the model has ", model.dim)));
}

absl::Status LaunchGemm(const DeviceModel& model, const float* features, int64_t num_frames,
                        float* loglikes, LoglikWorkspace& workspace, cudaStream_t stream) {
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

// kAuto as LaunchLoglik resolves it: ChooseAlgorithm, or fused16 where the
// blocked kernel it chose does not fit the model.
Algorithm Resolve(const DeviceModel& model, Algorithm algorithm, int64_t num_frames) {
  if (algorithm != Algorithm::kAuto) return algorithm;
  algorithm = ChooseAlgorithm(num_frames, model.num_gaussians);
  if ((algorithm == Algorithm::kFused8x4 && !FitsBlocked<Fused8x4Policy>(model)) ||
      (algorithm == Algorithm::kFused8x2 && !FitsBlocked<Fused8x2Policy>(model))) {
    return Algorithm::kFused16;
  }
  return algorithm;
}

}  // namespace

absl::StatusOr<int64_t> SlicePartialFloats(const DeviceModel& model, Algorithm algorithm, int64_t num_frames) {
  const int64_t frames = std::min(num_frames, kFramesPerLaunchLimit);
  if (frames <= 0) return 0;
  GMM_ASSIGN_OR_RETURN(const DeviceInfo device, CurrentDeviceInfo());
  int slices = 1;
  switch (Resolve(model, algorithm, frames)) {
    case Algorithm::kFused8x2:
      slices = BlockedSlices<Fused8x2Policy>(model, frames, device.sms);
      break;
    case Algorithm::kFused8x4:
      slices = BlockedSlices<Fused8x4Policy>(model, frames, device.sms);
      break;
    case Algorithm::kSplit8:
      slices = SplitSlices(model, frames, device.sms);
      break;
    default:
      break;
  }
  return slices > 1 ? 2 * slices * frames * model.num_states : 0;
}

absl::Status LaunchLoglik(const DeviceModel& model, Algorithm algorithm, const float* features,
                          int64_t num_frames, float* loglikes, LoglikWorkspace& workspace,
                          cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  algorithm = Resolve(model, algorithm, num_frames);
  switch (algorithm) {
    case Algorithm::kFused8:
      return LaunchFused<Fused8Policy>(model, features, num_frames, loglikes, stream);
    case Algorithm::kFused16:
      return LaunchFused<Fused16Policy>(model, features, num_frames, loglikes, stream);
    case Algorithm::kFused32:
      return LaunchFused<Fused32Policy>(model, features, num_frames, loglikes, stream);
    case Algorithm::kFused8x2:
      return LaunchBlocked<Fused8x2Policy>(model, features, num_frames, loglikes, workspace, stream);
    case Algorithm::kFused8x4:
      return LaunchBlocked<Fused8x4Policy>(model, features, num_frames, loglikes, workspace, stream);
    case Algorithm::kSplit8:
      return LaunchSplit(model, features, num_frames, loglikes, workspace, stream);
    case Algorithm::kTf32x3:
      return LaunchTensorCore(model, features, num_frames, loglikes, stream);
    case Algorithm::kWgmma:
      return LaunchWgmmaLoglik(model, features, num_frames, loglikes, stream);
    case Algorithm::kWgmmaHalf:
      return LaunchWgmmaHalfLoglik(model, features, num_frames, loglikes, stream);
    case Algorithm::kGemm:
      return LaunchGemm(model, features, num_frames, loglikes, workspace, stream);
    case Algorithm::kAuto:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported algorithm ", AlgorithmName(algorithm)));
}

size_t MultiModelJobTableBytes(int64_t jobs) { return static_cast<size_t>(jobs) * sizeof(SplitJob); }

absl::Status LaunchMultiModelLoglik(absl::Span<const LoglikJob> jobs, LoglikWorkspace& workspace,
                                    cudaStream_t stream) {
  using Policy = SplitPolicy;
  std::vector<SplitJob> table;
  int max_dim4 = 0;
  int64_t blocks = 0;
  for (const LoglikJob& job : jobs) {
    if (job.num_frames == 0) continue;
    SplitJob entry{};
    entry.args = MakeFusedArgs(*job.model, job.features, job.num_frames, job.loglikes);
    entry.first_block = blocks;
    entry.tiles = static_cast<int>((job.num_frames + Policy::kFramesPerBlock - 1) / Policy::kFramesPerBlock);
    blocks += static_cast<int64_t>(entry.tiles) * job.model->num_fused_blocks;
    max_dim4 = std::max(max_dim4, job.model->dim4);
    table.push_back(entry);
  }
  if (table.empty()) return absl::OkStatus();
  if (blocks > 0x7fffffff) return absl::InvalidArgumentError("multi-model batch is too large for one launch");
  const size_t table_bytes = MultiModelJobTableBytes(static_cast<int64_t>(table.size()));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.job_table, table_bytes));
  GMM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(workspace.job_table.data(), table.data(), table_bytes, cudaMemcpyHostToDevice, stream),
      "copy job table");
  const size_t shared_bytes = 1ull * Policy::kFramesPerBlock * max_dim4 * sizeof(float4) +
                              2ull * Policy::kSplits * Policy::kFramesPerBlock * Policy::kStatesPerBlock * sizeof(float);
  MultiModelSplitKernel<Policy><<<static_cast<unsigned>(blocks), Policy::kThreads, shared_bytes, stream>>>(
      reinterpret_cast<const SplitJob*>(workspace.job_table.data()), static_cast<int>(table.size()));
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch multi-model likelihood kernel");
  return absl::OkStatus();
}

absl::Status LaunchFrameTotals(const float* loglikes, int64_t num_frames, int num_states,
                               float* totals, cudaStream_t stream) {
  constexpr int kThreads = 256;
  // One block per frame along gridDim.x, in launches of at most
  // kFramesPerLaunchLimit frames like every other kernel.
  for (int64_t first = 0; first < num_frames; first += kFramesPerLaunchLimit) {
    const int64_t frames = std::min<int64_t>(num_frames - first, kFramesPerLaunchLimit);
    FrameTotalsKernel<kThreads><<<static_cast<unsigned>(frames), kThreads, 0, stream>>>(
        loglikes + first * num_states, num_states, totals + first);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch frame totals");
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
