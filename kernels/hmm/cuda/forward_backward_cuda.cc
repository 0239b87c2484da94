#include "kernels/hmm/cuda/forward_backward_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/hmm/cuda/hmm_kernels.h"
#include "kernels/hmm/length_batch.h"
#include "kernels/hmm/hmm_reference.h"

namespace gmmscore {
namespace {

// ValidateUtterances, and one log-likelihood row width for the whole batch
// (the kernels take one stride).
absl::Status Validate(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances) {
  GMM_RETURN_IF_ERROR(ValidateUtterances(hmm, utterances));
  for (size_t u = 0; u < utterances.size(); ++u) {
    if (utterances[u].cols != utterances[0].cols) {
      return absl::InvalidArgumentError(absl::StrCat("utterance ", u, " has ", utterances[u].cols,
                                                     " log-likelihood columns, utterance 0 has ", utterances[0].cols));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<DeviceBuffer<T>> Upload(const std::vector<T>& host) {
  return DeviceBuffer<T>::FromHost(host.data(), host.size());
}

// Everything on the device for one batch.
struct DeviceBatch {
  DeviceBuffer<float> loglikes;
  DeviceBuffer<int64_t> row_base, gamma_base;
  DeviceBuffer<int> emissions, no_path;
  DeviceBuffer<double> transitions, initial, alpha, log_scale, b, offset, beta, weighted, counts, loglike, gamma;
  std::vector<int64_t> alpha_at, scale_at;  // per frame: where its rows start
  int stride = 0;                           // log-likelihood columns per frame
};

absl::StatusOr<DeviceBatch> Prepare(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances,
                                    const LengthOrderedBatch& batch, bool want_gamma) {
  const int n = hmm.num_states, rows = static_cast<int>(utterances.size());
  const int64_t stride = utterances[0].cols;
  DeviceBatch d;
  d.stride = static_cast<int>(stride);
  std::vector<int64_t> row_base, gamma_base;
  int64_t gamma_size = 0, packed_size = 0;
  for (int r = 0; r < rows; ++r) {
    row_base.push_back(packed_size);
    packed_size += utterances[batch.order[r]].rows * stride;
    gamma_base.push_back(gamma_size);
    gamma_size += utterances[batch.order[r]].rows * n;
  }
  std::vector<float> packed(packed_size);
  for (int r = 0; r < rows; ++r) {
    const ConstMatrixView& u = utterances[batch.order[r]];
    for (int64_t t = 0; t < u.rows; ++t) std::copy_n(u.row(t), stride, packed.data() + row_base[r] + t * stride);
  }
  int64_t alpha_size = 0, scale_size = 0;
  for (int64_t t = 0; t < batch.frames(); ++t) {
    d.alpha_at.push_back(alpha_size);
    d.scale_at.push_back(scale_size);
    alpha_size += int64_t{batch.Active(t)} * n;
    scale_size += batch.Active(t);
  }
  std::vector<double> transitions(int64_t{n} * n), initial(n);
  for (size_t k = 0; k < transitions.size(); ++k) transitions[k] = std::exp(hmm.log_transitions[k]);
  for (int j = 0; j < n; ++j) initial[j] = std::exp(hmm.log_initial[j]);
  GMM_ASSIGN_OR_RETURN(d.loglikes, Upload(packed));
  GMM_ASSIGN_OR_RETURN(d.row_base, Upload(row_base));
  GMM_ASSIGN_OR_RETURN(d.gamma_base, Upload(gamma_base));
  GMM_ASSIGN_OR_RETURN(d.emissions, Upload(std::vector<int>(hmm.emissions.begin(), hmm.emissions.end())));
  GMM_ASSIGN_OR_RETURN(d.no_path, Upload(std::vector<int>{INT_MAX}));
  GMM_ASSIGN_OR_RETURN(d.transitions, Upload(transitions));
  GMM_ASSIGN_OR_RETURN(d.initial, Upload(initial));
  GMM_ASSIGN_OR_RETURN(d.counts, Upload(std::vector<double>(transitions.size(), 0.0)));
  GMM_ASSIGN_OR_RETURN(d.loglike, Upload(std::vector<double>(rows, 0.0)));
  GMM_ASSIGN_OR_RETURN(d.alpha, DeviceBuffer<double>::Allocate(alpha_size));
  GMM_ASSIGN_OR_RETURN(d.log_scale, DeviceBuffer<double>::Allocate(scale_size));
  for (DeviceBuffer<double>* buffer : {&d.b, &d.beta, &d.weighted}) {
    GMM_ASSIGN_OR_RETURN(*buffer, DeviceBuffer<double>::Allocate(int64_t{rows} * n));
  }
  GMM_ASSIGN_OR_RETURN(d.offset, DeviceBuffer<double>::Allocate(rows));
  if (want_gamma) {
    GMM_ASSIGN_OR_RETURN(d.gamma, DeviceBuffer<double>::Allocate(gamma_size));
  }
  return d;
}

// Row-major C (m x n) = op(A) (m x k) * op(B) (k x n) + beta C, through
// cuBLAS's column-major view (C^T = op(B)^T op(A)^T).
absl::Status Gemm(cublasHandle_t handle, bool trans_a, bool trans_b, int m, int n, int k, const double* a, int lda,
                  const double* b, int ldb, double beta, double* c) {
  const double one = 1.0;
  GMM_CUBLAS_RETURN_IF_ERROR(cublasDgemm(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         n, m, k, &one, b, ldb, a, lda, &beta, c, n),
                             "HMM DGEMM");
  return absl::OkStatus();
}

absl::Status Forward(cublasHandle_t handle, cudaStream_t stream, int n, const LengthOrderedBatch& batch, DeviceBatch& d) {
  for (int64_t t = 0; t < batch.frames(); ++t) {
    const int active = batch.Active(t);
    double* alpha = d.alpha.data() + d.alpha_at[t];
    hmm_cuda::LaunchEmissions(d.loglikes.data(), d.row_base.data(), t, d.stride, d.emissions.data(), n,
                              active, d.b.data(), d.offset.data(), stream);
    if (t == 0) {
      hmm_cuda::LaunchInitialAlpha(d.initial.data(), n, active, alpha, stream);
    } else {  // alpha_t = alpha_{t-1}[:active] A
      GMM_RETURN_IF_ERROR(Gemm(handle, false, false, active, n, n, d.alpha.data() + d.alpha_at[t - 1], n,
                               d.transitions.data(), n, 0.0, alpha));
    }
    hmm_cuda::LaunchScaleForward(alpha, d.b.data(), d.offset.data(), n, active, d.log_scale.data() + d.scale_at[t],
                                 d.loglike.data(), d.no_path.data(), stream);
  }
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch HMM forward kernels");
  return absl::OkStatus();
}

absl::Status Backward(cublasHandle_t handle, cudaStream_t stream, int n, const LengthOrderedBatch& batch, bool want_gamma,
                      DeviceBatch& d) {
  for (int64_t t = batch.frames() - 1; t >= 0; --t) {
    const int active = batch.Active(t);
    const int next = t + 1 < batch.frames() ? batch.Active(t + 1) : 0;
    const double* alpha = d.alpha.data() + d.alpha_at[t];
    if (next > 0) {
      hmm_cuda::LaunchEmissions(d.loglikes.data(), d.row_base.data(), t + 1, d.stride, d.emissions.data(), n, next,
                                d.b.data(), d.offset.data(), stream);
      hmm_cuda::LaunchWeighted(d.b.data(), d.beta.data(), d.log_scale.data() + d.scale_at[t + 1], n, next,
                               d.weighted.data(), stream);
      // counts += alpha_t[:next]^T weighted; beta_t = weighted A^T.
      GMM_RETURN_IF_ERROR(Gemm(handle, true, false, n, n, next, alpha, n, d.weighted.data(), n, 1.0, d.counts.data()));
      GMM_RETURN_IF_ERROR(Gemm(handle, false, true, next, n, n, d.weighted.data(), n, d.transitions.data(), n, 0.0,
                               d.beta.data()));
    }
    hmm_cuda::LaunchOnes(d.beta.data(), n, next, active, stream);
    if (want_gamma) {
      hmm_cuda::LaunchGamma(alpha, d.beta.data(), d.gamma_base.data(), t, n, active, d.gamma.data(), stream);
    }
  }
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch HMM backward kernels");
  return absl::OkStatus();
}

template <typename T>
absl::Status Download(const DeviceBuffer<T>& buffer, std::vector<T>* host) {
  host->resize(buffer.size());
  if (buffer.size() == 0) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpy(host->data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost),
                           "copy HMM results to host");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BatchPosteriors> ForwardBackwardCuda(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances,
                                                    int device, bool want_gamma) {
  GMM_RETURN_IF_ERROR(Validate(hmm, utterances));
  BatchPosteriors out;
  const int n = hmm.num_states;
  if (utterances.empty()) {
    out.transition_counts.assign(int64_t{n} * n, 0.0);
    return out;
  }
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(absl::StrCat("no CUDA device ", device));
  }
  const LengthOrderedBatch batch = LengthOrderedBatch::Of(utterances);
  GMM_ASSIGN_OR_RETURN(DeviceBatch d, Prepare(hmm, utterances, batch, want_gamma));
  GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  GMM_ASSIGN_OR_RETURN(CublasHandle cublas, CublasHandle::Create());
  GMM_CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas.get(), stream.get()), "set cuBLAS stream");
  GMM_ASSIGN_OR_RETURN(CudaEvent started, CudaEvent::Create());
  GMM_ASSIGN_OR_RETURN(CudaEvent finished, CudaEvent::Create());
  GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(started.get(), stream.get()), "record HMM start");
  GMM_RETURN_IF_ERROR(Forward(cublas.get(), stream.get(), n, batch, d));
  std::vector<int> no_path;
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()), "HMM forward");
  GMM_RETURN_IF_ERROR(Download(d.no_path, &no_path));
  if (no_path[0] != INT_MAX) {
    return absl::FailedPreconditionError(absl::StrCat("utterance ", batch.order[no_path[0]],
                                                      ": no state sequence of the HMM can produce its frames"));
  }
  GMM_RETURN_IF_ERROR(Backward(cublas.get(), stream.get(), n, batch, want_gamma, d));
  GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(finished.get(), stream.get()), "record HMM end");
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()), "HMM backward");
  float milliseconds = 0.0f;
  GMM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&milliseconds, started.get(), finished.get()), "time HMM passes");
  out.device_seconds = milliseconds / 1e3;
  std::vector<double> loglike, gamma;
  GMM_RETURN_IF_ERROR(Download(d.loglike, &loglike));
  GMM_RETURN_IF_ERROR(Download(d.counts, &out.transition_counts));
  if (want_gamma) GMM_RETURN_IF_ERROR(Download(d.gamma, &gamma));
  for (size_t k = 0; k < out.transition_counts.size(); ++k) out.transition_counts[k] *= std::exp(hmm.log_transitions[k]);
  out.log_likelihoods.resize(utterances.size());
  if (want_gamma) out.gamma.resize(utterances.size());
  int64_t at = 0;
  for (size_t r = 0; r < utterances.size(); ++r) {
    const int u = batch.order[r];
    out.log_likelihoods[u] = loglike[r];
    if (want_gamma) out.gamma[u].assign(gamma.begin() + at, gamma.begin() + at + batch.lengths[r] * n);
    at += batch.lengths[r] * n;
  }
  return out;
}

}  // namespace gmmscore
