// DiagGmmModel: an acoustic model of S states, each a mixture of G_s
// diagonal-covariance Gaussians over D-dimensional features, held in the
// form it is scored in (Vanek et al. 2011, eqs. (1)-(3)).
//
//   DiagGmmModelBuilder builder(/*dim=*/39);
//   GMM_RETURN_IF_ERROR(builder.AddState(weights, means, variances));
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel model, std::move(builder).Build());
//
// Scoring form. Each Gaussian g is one row of `params()`, a Gtot x (1 + 2D)
// row-major matrix [K_g, u_g(1..D), v_g(1..D)] with
//   u = mu' / var,  v = -1 / (2 var),
//   K = log w - (D/2) log 2pi - 1/2 sum log var - 1/2 sum mu'^2 / var,
// where mu' = mu - c is the mean relative to the model's centre c (the
// average of all Gaussian means). Scoring a frame x uses y = x - c:
//   log N_g(x) + log w_g = K_g + u_g . y + v_g . y^2.
// Centring is exact (a Gaussian is translation invariant) and keeps the
// three terms small, so float32 accumulation does not lose the result to
// cancellation between large K and large u.y at MFCC scale.
//
// Gaussians of state s are rows [state_offsets()[s], state_offsets()[s+1]).
// The matrix is exactly the GEMM operand A of the two-kernel path and of the
// CPU backend, and the payload of the native file format.
//
// Thread safety: immutable after construction; safe to share across threads.
#ifndef GMMSCORE_KERNELS_MODEL_DIAG_GMM_MODEL_H_
#define GMMSCORE_KERNELS_MODEL_DIAG_GMM_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

// One Gaussian in natural parameters, recovered from the scoring form.
struct NaturalGaussian {
  double weight = 0.0;
  std::vector<double> mean;      // D
  std::vector<double> variance;  // D
};

class DiagGmmModel {
 public:
  // Weights of each state must sum to 1 within this tolerance.
  static constexpr double kWeightSumTolerance = 1e-3;

  // Takes scoring-form arrays as they are stored (the native file format) and
  // validates them: offsets start at 0, strictly increase and end at Gtot;
  // every value finite; every v < 0; each state's recovered weights in (0, 1]
  // and summing to 1. Errors are INVALID_ARGUMENT naming state and Gaussian.
  static absl::StatusOr<DiagGmmModel> FromScoringForm(int dim, std::vector<int64_t> state_offsets,
                                                      std::vector<float> center,
                                                      std::vector<float> params);

  DiagGmmModel(DiagGmmModel&&) = default;
  DiagGmmModel& operator=(DiagGmmModel&&) = default;
  DiagGmmModel(const DiagGmmModel&) = delete;
  DiagGmmModel& operator=(const DiagGmmModel&) = delete;

  int dim() const { return dim_; }
  int num_states() const { return static_cast<int>(state_offsets_.size()) - 1; }
  int64_t num_gaussians() const { return state_offsets_.back(); }
  int num_gaussians_in_state(int state) const {
    return static_cast<int>(state_offsets_[state + 1] - state_offsets_[state]);
  }
  int max_gaussians_per_state() const { return max_gaussians_per_state_; }
  // Columns of a params() row.
  int param_cols() const { return 1 + 2 * dim_; }

  absl::Span<const int64_t> state_offsets() const { return state_offsets_; }
  absl::Span<const float> center() const { return center_; }
  // Gtot x (1 + 2D): [K, u, v] per Gaussian.
  ConstMatrixView params() const {
    return ConstMatrixView(params_.data(), num_gaussians(), param_cols());
  }
  float gconst(int64_t g) const { return params_[g * param_cols()]; }
  const float* means_invvars(int64_t g) const { return &params_[g * param_cols() + 1]; }
  const float* half_neg_inv_vars(int64_t g) const {
    return &params_[g * param_cols() + 1 + dim_];
  }

  // Weight, mean and variance of Gaussian g, in float64 (for conversion to
  // other formats and for independent checks).
  NaturalGaussian Natural(int64_t g) const;

  // Host bytes held by the scoring form.
  int64_t ByteSize() const;

 private:
  friend class DiagGmmModelBuilder;
  DiagGmmModel(int dim, std::vector<int64_t> state_offsets, std::vector<float> center,
               std::vector<float> params);

  int dim_ = 0;
  int max_gaussians_per_state_ = 0;
  std::vector<int64_t> state_offsets_;
  std::vector<float> center_;
  std::vector<float> params_;
};

// Builds a DiagGmmModel from natural parameters, one state at a time.
// Not thread-safe.
class DiagGmmModelBuilder {
 public:
  explicit DiagGmmModelBuilder(int dim);

  // Adds the next state: G weights, G x D means and G x D variances,
  // row-major. Fails with INVALID_ARGUMENT (naming the state and Gaussian) on
  // wrong sizes, non-finite values, variances <= 0, weights <= 0 or weights
  // not summing to 1 within DiagGmmModel::kWeightSumTolerance.
  absl::Status AddState(absl::Span<const double> weights, absl::Span<const double> means,
                        absl::Span<const double> variances);

  int num_states() const { return static_cast<int>(offsets_.size()) - 1; }

  // Computes the centre and the scoring form in float64, rounds to float32.
  // Fails if no state was added.
  absl::StatusOr<DiagGmmModel> Build() &&;

 private:
  int dim_;
  std::vector<int64_t> offsets_{0};
  std::vector<double> log_weights_;
  std::vector<float> means_;
  std::vector<float> variances_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_MODEL_DIAG_GMM_MODEL_H_
