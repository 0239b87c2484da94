#include "kernels/hmm/forward_backward_cpu.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/length_batch.h"

namespace gmmscore {
namespace {

// Emission probabilities of frame t for the active rows, scaled by each
// row's max: b[r][j] = exp(loglik - max_r); the max goes to `offset`.
void Emissions(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances, const LengthOrderedBatch& batch,
               int64_t t, int active, double* b, double* offset) {
  const int n = hmm.num_states;
  for (int r = 0; r < active; ++r) {
    const float* row = utterances[batch.order[r]].row(t);
    float best = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < n; ++j) best = std::max(best, row[hmm.emissions[j]]);
    if (best == -std::numeric_limits<float>::infinity()) best = 0.0f;  // all impossible: stays 0
    offset[r] = best;
    for (int j = 0; j < n; ++j) b[int64_t{r} * n + j] = std::exp(double{row[hmm.emissions[j]]} - best);
  }
}

}  // namespace

absl::StatusOr<std::vector<HmmPosteriors>> ForwardBackwardCpu(const DenseHmm& hmm,
                                                              absl::Span<const ConstMatrixView> utterances) {
  const int n = hmm.num_states;
  GMM_RETURN_IF_ERROR(ValidateUtterances(hmm, utterances));
  const LengthOrderedBatch batch = LengthOrderedBatch::Of(utterances);
  const int rows = static_cast<int>(utterances.size());

  std::vector<double> transitions(int64_t{n} * n), initial(n);
  for (int64_t k = 0; k < int64_t{n} * n; ++k) transitions[k] = std::exp(hmm.log_transitions[k]);
  for (int j = 0; j < n; ++j) initial[j] = std::exp(hmm.log_initial[j]);

  // alpha[t] (rows x N, scaled to sum 1 per row) kept for every frame;
  // log_scale[t][r] = log of what row r of frame t was divided by.
  std::vector<std::vector<double>> alpha(batch.frames()), emissions(batch.frames());
  std::vector<std::vector<double>> log_scale(batch.frames(), std::vector<double>(rows, 0.0));
  std::vector<double> offset(rows);
  std::vector<double> log_likelihood(rows, 0.0);
  for (int64_t t = 0; t < batch.frames(); ++t) {
    const int active = batch.Active(t);
    emissions[t].resize(int64_t{active} * n);
    Emissions(hmm, utterances, batch, t, active, emissions[t].data(), offset.data());
    alpha[t].resize(int64_t{active} * n);
    double* a = alpha[t].data();
    if (t == 0) {
      for (int r = 0; r < active; ++r) std::copy(initial.begin(), initial.end(), a + int64_t{r} * n);
    } else {  // a = alpha[t-1][:active] * A
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, active, n, n, 1.0, alpha[t - 1].data(), n,
                  transitions.data(), n, 0.0, a, n);
    }
    for (int r = 0; r < active; ++r) {
      double sum = 0.0;
      for (int j = 0; j < n; ++j) sum += (a[int64_t{r} * n + j] *= emissions[t][int64_t{r} * n + j]);
      if (!(sum > 0.0)) {
        return absl::FailedPreconditionError(absl::StrCat("utterance ", batch.order[r], ": no state sequence of the HMM can produce frame ", t));
      }
      const double inverse = 1.0 / sum;
      for (int j = 0; j < n; ++j) a[int64_t{r} * n + j] *= inverse;
      log_scale[t][r] = std::log(sum);
      log_likelihood[r] += std::log(sum) + offset[r];
    }
  }

  std::vector<HmmPosteriors> out(utterances.size());
  for (int r = 0; r < rows; ++r) {
    HmmPosteriors& post = out[batch.order[r]];
    post.log_likelihood = log_likelihood[r];
    post.gamma.resize(batch.lengths[r] * n);
    post.transition_counts.assign(int64_t{n} * n, 0.0);
  }
  // Backward with the forward's scales: beta_t = A (b_{t+1} beta_{t+1}) /
  // scale_{t+1}; gamma_t = alpha_t beta_t (both scaled, product sums to 1).
  std::vector<double> beta(int64_t{rows} * n, 1.0), weighted(int64_t{rows} * n), counts(int64_t{n} * n);
  for (int64_t t = batch.frames() - 1; t >= 0; --t) {
    const int active = batch.Active(t);
    const int next_active = t + 1 < batch.frames() ? batch.Active(t + 1) : 0;
    if (next_active > 0) {
      // weighted = b_{t+1} beta_{t+1} / scale_{t+1}, rows that go on.
      for (int r = 0; r < next_active; ++r) {
        const double inverse = std::exp(-log_scale[t + 1][r]);
        for (int j = 0; j < n; ++j) {
          weighted[int64_t{r} * n + j] = emissions[t + 1][int64_t{r} * n + j] * beta[int64_t{r} * n + j] * inverse;
        }
      }
      // counts_ij = sum_r alpha_t(r, i) weighted(r, j), times a_ij below;
      // per utterance, so one row at a time (rank-1 updates).
      for (int r = 0; r < next_active; ++r) {
        cblas_dger(CblasRowMajor, n, n, 1.0, alpha[t].data() + int64_t{r} * n, 1, weighted.data() + int64_t{r} * n,
                   1, counts.data(), n);
        std::vector<double>& total = out[batch.order[r]].transition_counts;
        for (int64_t k = 0; k < int64_t{n} * n; ++k) {
          total[k] += counts[k] * transitions[k];
          counts[k] = 0.0;
        }
      }
      // beta_t = weighted * A^T for the rows that go on; rows ending at t
      // keep beta = 1.
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, next_active, n, n, 1.0, weighted.data(), n,
                  transitions.data(), n, 0.0, beta.data(), n);
    }
    for (int r = next_active; r < active; ++r) std::fill_n(beta.data() + int64_t{r} * n, n, 1.0);
    for (int r = 0; r < active; ++r) {
      double* gamma = out[batch.order[r]].gamma.data() + t * n;
      double sum = 0.0;
      for (int j = 0; j < n; ++j) sum += gamma[j] = alpha[t][int64_t{r} * n + j] * beta[int64_t{r} * n + j];
      for (int j = 0; j < n; ++j) gamma[j] /= sum;
    }
  }
  return out;
}

}  // namespace gmmscore
