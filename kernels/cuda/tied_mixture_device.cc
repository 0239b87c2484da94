#include "kernels/cuda/tied_mixture_device.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/tied_mixture_kernels.h"

namespace gmmscore {
namespace {

// Scratch of one Launch slice at most (the slice shrinks to fit).
constexpr int64_t kScratchBytes = int64_t{128} << 20;

}  // namespace

int64_t TiedMixtureDevice::bytes() const {
  size_t total = d_state_begin_.bytes() + grouped_codebook_.bytes() + grouped_state_.bytes() + small_states_.bytes();
  for (const Stream& s : streams_) {
    total += s.params.bytes() + s.center.bytes() + s.d_codebook_begin.bytes() + s.d_weight_offset.bytes() +
             s.weights.bytes() + s.log_weights.bytes();
  }
  return static_cast<int64_t>(total);
}

absl::StatusOr<TiedMixtureDevice> TiedMixtureDevice::Upload(const TiedMixtureModel& model) {
  const int num_codebooks = model.num_codebooks();
  const int num_states = model.num_states();
  // Grouped states: codebook by codebook, model order within a codebook.
  std::vector<int32_t> state_begin(num_codebooks + 1, 0);
  for (int s = 0; s < num_states; ++s) ++state_begin[model.codebook_of_state(s) + 1];
  for (int c = 0; c < num_codebooks; ++c) state_begin[c + 1] += state_begin[c];
  std::vector<int32_t> grouped_state(num_states), grouped_codebook(num_states);
  {
    std::vector<int32_t> next(state_begin.begin(), state_begin.end() - 1);
    for (int s = 0; s < num_states; ++s) {
      const int c = model.codebook_of_state(s);
      grouped_state[next[c]] = s;
      grouped_codebook[next[c]] = c;
      ++next[c];
    }
  }
  std::vector<int32_t> small_states;
  for (int c = 0; c < num_codebooks; ++c) {
    if (state_begin[c + 1] - state_begin[c] >= kSgemmMinStates) continue;
    for (int i = state_begin[c]; i < state_begin[c + 1]; ++i) small_states.push_back(i);
  }

  // Room check before anything is allocated.
  int64_t needed = 0;
  for (int f = 0; f < model.num_streams(); ++f) {
    needed += model.params(f).rows * model.params(f).cols * sizeof(float);
    for (int s = 0; s < num_states; ++s) needed += 2 * model.log_weights(s, f).size() * sizeof(float);
  }
  size_t free_bytes = 0, total_bytes = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes), "query device memory");
  if (needed > static_cast<int64_t>(free_bytes)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "tied model needs %d MiB on the device, %d MiB of %d MiB are free", needed >> 20, free_bytes >> 20,
        total_bytes >> 20));
  }

  TiedMixtureDevice out;
  out.dim_ = model.dim();
  out.num_states_ = num_states;
  out.num_codebooks_ = num_codebooks;
  out.state_begin_ = state_begin;
  out.num_small_states_ = static_cast<int>(small_states.size());
  GMM_ASSIGN_OR_RETURN(out.d_state_begin_, DeviceBuffer<int32_t>::FromHost(state_begin.data(), state_begin.size()));
  GMM_ASSIGN_OR_RETURN(out.grouped_codebook_,
                       DeviceBuffer<int32_t>::FromHost(grouped_codebook.data(), grouped_codebook.size()));
  GMM_ASSIGN_OR_RETURN(out.grouped_state_, DeviceBuffer<int32_t>::FromHost(grouped_state.data(), grouped_state.size()));
  GMM_ASSIGN_OR_RETURN(out.small_states_, DeviceBuffer<int32_t>::FromHost(small_states.data(), small_states.size()));

  out.streams_.resize(model.num_streams());
  for (int f = 0; f < model.num_streams(); ++f) {
    Stream& stream = out.streams_[f];
    stream.offset = model.stream(f).offset;
    stream.dim = model.stream(f).dim;
    stream.weight = model.stream_weight(f);
    stream.num_gaussians = model.num_gaussians(f);
    out.max_stream_gaussians_ = std::max(out.max_stream_gaussians_, stream.num_gaussians);
    out.max_cols_ = std::max(out.max_cols_, 1 + 2 * stream.dim);
    stream.codebook_begin.resize(num_codebooks + 1);
    stream.weight_offset.resize(num_codebooks);
    for (int c = 0; c <= num_codebooks; ++c) {
      stream.codebook_begin[c] = c < num_codebooks ? model.codebook_begin(c, f) : model.num_gaussians(f);
    }
    std::vector<float> weights, log_weights;
    for (int c = 0; c < num_codebooks; ++c) {
      const int size = model.codebook_size(c, f);
      const int states_c = state_begin[c + 1] - state_begin[c];
      const int64_t base = static_cast<int64_t>(weights.size());
      stream.weight_offset[c] = base;
      weights.resize(base + static_cast<int64_t>(states_c) * size);
      log_weights.resize(weights.size());
      for (int r = 0; r < states_c; ++r) {
        const auto log_w = model.log_weights(grouped_state[state_begin[c] + r], f);
        for (int g = 0; g < size; ++g) {
          weights[base + r + static_cast<int64_t>(g) * states_c] = std::exp(log_w[g]);  // column-major
          log_weights[base + static_cast<int64_t>(r) * size + g] = log_w[g];            // row-major
        }
      }
    }
    const ConstMatrixView params = model.params(f);
    GMM_ASSIGN_OR_RETURN(stream.params, DeviceBuffer<float>::FromHost(params.data, params.rows * params.cols));
    GMM_ASSIGN_OR_RETURN(stream.center, DeviceBuffer<float>::FromHost(model.center(f).data(), model.center(f).size()));
    GMM_ASSIGN_OR_RETURN(stream.d_codebook_begin, DeviceBuffer<int64_t>::FromHost(stream.codebook_begin.data(),
                                                                                  stream.codebook_begin.size()));
    GMM_ASSIGN_OR_RETURN(stream.d_weight_offset,
                         DeviceBuffer<int64_t>::FromHost(stream.weight_offset.data(), stream.weight_offset.size()));
    GMM_ASSIGN_OR_RETURN(stream.weights, DeviceBuffer<float>::FromHost(weights.data(), weights.size()));
    GMM_ASSIGN_OR_RETURN(stream.log_weights, DeviceBuffer<float>::FromHost(log_weights.data(), log_weights.size()));
  }
  return out;
}

absl::Status TiedMixtureDevice::Launch(const float* features, int64_t num_frames, float* loglikes,
                                       TiedMixtureWorkspace& workspace, cudaStream_t stream) const {
  if (num_frames == 0) return absl::OkStatus();
  if (workspace.cublas == nullptr) return absl::FailedPreconditionError("tied-mixture path needs a cuBLAS handle");
  const int64_t per_frame_floats = max_cols_ + 2 * max_stream_gaussians_ + num_codebooks_ + num_states_;
  const int64_t slice = std::max<int64_t>(
      1, std::min<int64_t>(num_frames, kScratchBytes / (per_frame_floats * static_cast<int64_t>(sizeof(float)))));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.expanded, slice * max_cols_));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.densities, slice * max_stream_gaussians_));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.exps, slice * max_stream_gaussians_));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.maxes, slice * num_codebooks_));
  GMM_RETURN_IF_ERROR(EnsureCapacity(workspace.mix, slice * num_states_));
  GMM_CUBLAS_RETURN_IF_ERROR(cublasSetStream(workspace.cublas, stream), "bind cuBLAS to stream");

  const TiedStateTables state_tables{d_state_begin_.data(), grouped_codebook_.data(), grouped_state_.data()};
  const float one = 1.0f, zero = 0.0f;
  for (int64_t first = 0; first < num_frames; first += slice) {
    const int frames = static_cast<int>(std::min(slice, num_frames - first));
    float* out = loglikes + first * num_states_;
    for (size_t f = 0; f < streams_.size(); ++f) {
      const Stream& s = streams_[f];
      const int cols = 1 + 2 * s.dim;
      const int gaussians = static_cast<int>(s.num_gaussians);
      const TiedStreamTables tables{s.d_codebook_begin.data(), s.d_weight_offset.data(), s.weights.data(),
                                    s.log_weights.data()};
      // (a) every codebook Gaussian of the stream on every frame.
      GMM_RETURN_IF_ERROR(LaunchTiedExpand(features + first * dim_ + s.offset, dim_, s.center.data(), frames,
                                           s.dim, workspace.expanded.data(), stream));
      // Row-major densities (frames x N_f) are column-major N_f x frames.
      GMM_CUBLAS_RETURN_IF_ERROR(
          cublasSgemm(workspace.cublas, CUBLAS_OP_T, CUBLAS_OP_N, gaussians, frames, cols, &one, s.params.data(),
                      cols, workspace.expanded.data(), cols, &zero, workspace.densities.data(), gaussians),
          "tied densities SGEMM");
      // (b)
      GMM_RETURN_IF_ERROR(LaunchCodebookMaxExp(workspace.densities.data(), s.d_codebook_begin.data(),
                                               num_codebooks_, s.num_gaussians, frames, workspace.exps.data(),
                                               workspace.maxes.data(), stream));
      // (c) mix (column-major S x frames, grouped) = W_c p_c per codebook.
      for (int c = 0; c < num_codebooks_; ++c) {
        const int states_c = state_begin_[c + 1] - state_begin_[c];
        if (states_c < kSgemmMinStates) continue;
        const int size = static_cast<int>(s.codebook_begin[c + 1] - s.codebook_begin[c]);
        GMM_CUBLAS_RETURN_IF_ERROR(
            cublasSgemm(workspace.cublas, CUBLAS_OP_N, CUBLAS_OP_N, states_c, frames, size, &one,
                        s.weights.data() + s.weight_offset[c], states_c, workspace.exps.data() + s.codebook_begin[c],
                        gaussians, &zero, workspace.mix.data() + state_begin_[c], num_states_),
            "tied codebook mix SGEMM");
      }
      GMM_RETURN_IF_ERROR(LaunchSmallCodebookMix(tables, state_tables, small_states_.data(), num_small_states_,
                                                 workspace.exps.data(), s.num_gaussians, num_states_, frames,
                                                 workspace.mix.data(), stream));
      // (d)
      GMM_RETURN_IF_ERROR(LaunchTiedStreamAccumulate(tables, state_tables, workspace.mix.data(),
                                                     workspace.maxes.data(), workspace.densities.data(),
                                                     num_codebooks_, s.num_gaussians, num_states_, frames, s.weight,
                                                     /*accumulate=*/f > 0, out, stream));
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
