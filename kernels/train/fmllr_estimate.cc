#include "kernels/train/fmllr_estimate.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/train/fmllr_linalg.h"

namespace gmmscore {
namespace {

// One mode's answer: the transform and the objective trace.
struct Estimate {
  std::vector<double> transform;
  std::vector<double> objective;
};

double Dot(int n, const double* a, const double* b) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// F(W), or -inf when A is singular.
double Objective(const FmllrStats& stats, const std::vector<double>& w) {
  const int dim = stats.dim, ext = dim + 1;
  std::vector<double> a(static_cast<size_t>(dim) * dim);
  for (int i = 0; i < dim; ++i) std::copy_n(&w[i * ext], dim, &a[i * dim]);
  LuFactors lu;
  if (!LuFactorize(dim, a.data(), &lu)) return -std::numeric_limits<double>::infinity();
  double objective = stats.beta * lu.log_abs_det;
  std::vector<double> gw(ext);
  for (int i = 0; i < dim; ++i) {
    const double* row = &w[i * ext];
    const double* g = stats.g_matrix(i);
    for (int r = 0; r < ext; ++r) gw[r] = Dot(ext, g + r * ext, row);
    objective += Dot(ext, row, stats.k_row(i)) - 0.5 * Dot(ext, row, gw.data());
  }
  return objective;
}

absl::Status CheckTransform(int dim, absl::Span<const double> w, const char* what) {
  const size_t ext = static_cast<size_t>(dim) + 1;
  if (w.size() != dim * ext) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", w.size(), " values, not ", dim,
                                                   " x ", ext));
  }
  std::vector<double> a(static_cast<size_t>(dim) * dim);
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j < dim; ++j) a[i * dim + j] = w[i * ext + j];
    for (size_t j = 0; j < ext; ++j) {
      if (!std::isfinite(w[i * ext + j])) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": value (", i, ", ", j, ") is not finite"));
      }
    }
  }
  LuFactors lu;
  if (!LuFactorize(dim, a.data(), &lu)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": its square part A is singular"));
  }
  return absl::OkStatus();
}

absl::Status CheckStats(const FmllrStats& stats) {
  GMM_RETURN_IF_ERROR(stats.CheckShape());
  bool finite = std::isfinite(stats.beta);
  for (double v : stats.k) finite = finite && std::isfinite(v);
  for (double v : stats.g) finite = finite && std::isfinite(v);
  if (!finite) return absl::InvalidArgumentError("fMLLR statistics hold non-finite values");
  return absl::OkStatus();
}

absl::Status CheckOptions(const FmllrOptions& o) {
  if (o.num_iterations < 0 || !(o.min_count >= 0.0) || !(o.min_count_full >= o.min_count) ||
      !std::isfinite(o.min_count_full) || o.fallback == FmllrMode::kFull ||
      !(o.singular_ratio >= 0.0 && o.singular_ratio < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad fMLLR options: iterations ", o.num_iterations, ", min_count ", o.min_count,
        ", min_count_full ", o.min_count_full, ", fallback ", FmllrModeName(o.fallback),
        ", singular_ratio ", o.singular_ratio,
        " (need iterations >= 0, 0 <= min_count <= min_count_full, a fallback other than full, "
        "0 <= singular_ratio < 1)"));
  }
  return absl::OkStatus();
}

// The root alpha of e1 a^2 + e2 a - beta = 0 with the larger row objective
// beta log|a e1 + e2| - a^2 e1 / 2, the roots formed without cancellation.
double ChooseAlpha(double e1, double e2, double beta) {
  const double root = std::sqrt(e2 * e2 + 4.0 * e1 * beta);
  const double q = -0.5 * (e2 + std::copysign(root, e2));
  const double alpha1 = q / e1, alpha2 = -beta / q;
  auto row_objective = [&](double a) { return beta * std::log(std::fabs(a * e1 + e2)) - 0.5 * a * a * e1; };
  return row_objective(alpha1) >= row_objective(alpha2) ? alpha1 : alpha2;
}

// Per row i: the Cholesky factor of G_i and G_i^{-1} k_i^T.
struct RowSystems {
  std::vector<std::vector<double>> factors;
  std::vector<std::vector<double>> solved_k;
};

// One sweep of the row-by-row update over W. False when A turns singular or
// a step is not finite (then W is unspecified).
bool Sweep(const FmllrStats& stats, const RowSystems& systems, std::vector<double>* w) {
  const int dim = stats.dim, ext = dim + 1;
  std::vector<double> inverse(static_cast<size_t>(dim) * dim);
  for (int i = 0; i < dim; ++i) std::copy_n(&(*w)[i * ext], dim, &inverse[i * dim]);
  LuFactors lu;
  if (!LuFactorize(dim, inverse.data(), &lu)) return false;
  LuInverse(lu, &inverse);
  std::vector<double> cofactor(ext, 0.0), solved_c(ext), change(dim);
  for (int i = 0; i < dim; ++i) {
    // Column i of A^{-1} is the cofactor row of A over det A; the scale is
    // absorbed by alpha.
    for (int r = 0; r < dim; ++r) cofactor[r] = inverse[r * dim + i];
    CholeskySolve(ext, systems.factors[i], cofactor.data(), solved_c.data());
    const std::vector<double>& solved_k = systems.solved_k[i];
    const double e1 = Dot(ext, cofactor.data(), solved_c.data());
    const double e2 = Dot(ext, cofactor.data(), solved_k.data());
    const double alpha = ChooseAlpha(e1, e2, stats.beta);
    double* row = &(*w)[i * ext];
    for (int r = 0; r < ext; ++r) {
      const double updated = alpha * solved_c[r] + solved_k[r];
      if (r < dim) change[r] = updated - row[r];
      row[r] = updated;
    }
    // A gains e_i change^T: Sherman-Morrison, with 1 + change . A^{-1} e_i = w_i . c.
    const double denominator = alpha * e1 + e2;
    if (!std::isfinite(denominator) || denominator == 0.0) return false;
    for (int col = 0; col < dim; ++col) {
      double v = 0.0;
      for (int r = 0; r < dim; ++r) v += change[r] * inverse[r * dim + col];
      const double scaled = v / denominator;
      for (int r = 0; r < dim; ++r) inverse[r * dim + col] -= cofactor[r] * scaled;
    }
  }
  return true;
}

absl::StatusOr<Estimate> FullUpdate(const FmllrStats& stats, const FmllrOptions& options,
                                    absl::Span<const double> initial) {
  const int dim = stats.dim, ext = dim + 1;
  RowSystems systems;
  systems.factors.resize(dim);
  systems.solved_k.assign(dim, std::vector<double>(ext));
  for (int i = 0; i < dim; ++i) {
    if (!CholeskyFactor(ext, stats.g_matrix(i), options.singular_ratio, &systems.factors[i])) {
      return absl::FailedPreconditionError(absl::StrCat("G_", i, " is singular"));
    }
    CholeskySolve(ext, systems.factors[i], stats.k_row(i), systems.solved_k[i].data());
  }
  Estimate estimate;
  estimate.transform = initial.empty() ? IdentityFmllr(dim)
                                       : std::vector<double>(initial.begin(), initial.end());
  estimate.objective.push_back(Objective(stats, estimate.transform));
  for (int iteration = 0; iteration < options.num_iterations; ++iteration) {
    if (!Sweep(stats, systems, &estimate.transform)) {
      return absl::FailedPreconditionError(absl::StrCat("full update sweep ", iteration, " failed"));
    }
    estimate.objective.push_back(Objective(stats, estimate.transform));
  }
  const double start = estimate.objective.front(), end = estimate.objective.back();
  if (!std::isfinite(end) || end < start - 1e-9 * std::fabs(start)) {
    return absl::FailedPreconditionError(
        absl::StrCat("full update objective went from ", start, " to ", end));
  }
  return estimate;
}

// Row i's scale s and offset o maximise
//   s k_ii + o k_iD - s^2 g_ii / 2 - o^2 g_DD / 2 - s o g_Di + beta log|s|;
// o = (k_iD - s g_Di) / g_DD leaves a s^2 + b s + c = 0 with a < 0, c = beta
// > 0, and the positive root is the maximum.
absl::StatusOr<Estimate> DiagonalUpdate(const FmllrStats& stats, const FmllrOptions& options) {
  const int dim = stats.dim, ext = dim + 1;
  Estimate estimate{IdentityFmllr(dim), {}};
  estimate.objective.push_back(Objective(stats, estimate.transform));
  for (int i = 0; i < dim; ++i) {
    const double* g = stats.g_matrix(i);
    const double g_ii = g[i * ext + i], g_dd = g[dim * ext + dim], g_di = g[dim * ext + i];
    const double k_ii = stats.k_row(i)[i], k_id = stats.k_row(i)[dim];
    const double det = g_ii * g_dd - g_di * g_di;
    if (!(g_ii > 0.0 && g_dd > 0.0 && det > options.singular_ratio * g_ii * g_dd)) {
      return absl::FailedPreconditionError(absl::StrCat("G_", i, "'s scale-offset block is singular"));
    }
    const double a = -det / g_dd, b = k_ii - g_di * k_id / g_dd, c = stats.beta;
    const double q = -0.5 * (b + std::copysign(std::sqrt(b * b - 4.0 * a * c), b));
    const double s = std::signbit(b) ? c / q : q / a;
    estimate.transform[i * ext + i] = s;
    estimate.transform[i * ext + dim] = (k_id - s * g_di) / g_dd;
  }
  estimate.objective.push_back(Objective(stats, estimate.transform));
  return estimate;
}

// With A = I, row i's offset o maximises o k_iD - o g_iD - o^2 g_DD / 2.
absl::StatusOr<Estimate> OffsetUpdate(const FmllrStats& stats) {
  const int dim = stats.dim, ext = dim + 1;
  Estimate estimate{IdentityFmllr(dim), {}};
  estimate.objective.push_back(Objective(stats, estimate.transform));
  for (int i = 0; i < dim; ++i) {
    const double* g = stats.g_matrix(i);
    const double g_dd = g[dim * ext + dim];
    if (!(g_dd > 0.0)) {
      return absl::FailedPreconditionError(absl::StrCat("G_", i, " has no offset term"));
    }
    estimate.transform[i * ext + dim] = (stats.k_row(i)[dim] - g[i * ext + dim]) / g_dd;
  }
  estimate.objective.push_back(Objective(stats, estimate.transform));
  return estimate;
}

absl::StatusOr<Estimate> RunMode(FmllrMode mode, const FmllrStats& stats,
                                 const FmllrOptions& options, absl::Span<const double> initial) {
  absl::StatusOr<Estimate> estimate;
  switch (mode) {
    case FmllrMode::kFull: estimate = FullUpdate(stats, options, initial); break;
    case FmllrMode::kDiagonal: estimate = DiagonalUpdate(stats, options); break;
    case FmllrMode::kOffset: estimate = OffsetUpdate(stats); break;
    case FmllrMode::kIdentity:
      return Estimate{IdentityFmllr(stats.dim), {Objective(stats, IdentityFmllr(stats.dim))}};
  }
  if (!estimate.ok()) return estimate;
  for (double v : estimate->transform) {
    if (!std::isfinite(v)) return absl::FailedPreconditionError("the transform is not finite");
  }
  for (double v : estimate->objective) {
    if (!std::isfinite(v)) return absl::FailedPreconditionError("the objective is not finite");
  }
  return estimate;
}

// The modes to try in order; *reason says why full is not among them.
std::vector<FmllrMode> ModeChain(double count, const FmllrOptions& options, std::string* reason) {
  std::vector<FmllrMode> chain;
  if (count > options.min_count_full) {
    chain.push_back(FmllrMode::kFull);
  } else if (count > options.min_count) {
    *reason = absl::StrCat("count ", count, " is at most min_count_full ", options.min_count_full);
  } else {
    *reason = absl::StrCat("count ", count, " is at most min_count ", options.min_count);
    return {FmllrMode::kIdentity};
  }
  chain.push_back(options.fallback);
  if (options.fallback == FmllrMode::kDiagonal) chain.push_back(FmllrMode::kOffset);
  if (chain.back() != FmllrMode::kIdentity) chain.push_back(FmllrMode::kIdentity);
  return chain;
}

}  // namespace

absl::StatusOr<FmllrResult> EstimateFmllr(const FmllrStats& stats, const FmllrOptions& options,
                                          absl::Span<const double> initial) {
  GMM_RETURN_IF_ERROR(CheckStats(stats));
  GMM_RETURN_IF_ERROR(CheckOptions(options));
  if (!initial.empty()) GMM_RETURN_IF_ERROR(CheckTransform(stats.dim, initial, "initial fMLLR transform"));
  FmllrResult result;
  FmllrReport& report = result.report;
  report.count = stats.beta;
  for (FmllrMode mode : ModeChain(stats.beta, options, &report.reason)) {
    absl::StatusOr<Estimate> estimate = RunMode(mode, stats, options, initial);
    if (!estimate.ok()) {
      absl::StrAppend(&report.reason, report.reason.empty() ? "" : "; ", FmllrModeName(mode),
                      ": ", estimate.status().message());
      continue;
    }
    report.mode = mode;
    result.transform = std::move(estimate->transform);
    report.objective = std::move(estimate->objective);
    break;
  }
  report.objective_gain = report.objective.back() - report.objective.front();
  report.gain_per_frame = report.count > 0.0 ? report.objective_gain / report.count : 0.0;
  return result;
}

absl::StatusOr<double> FmllrObjective(const FmllrStats& stats, absl::Span<const double> transform) {
  GMM_RETURN_IF_ERROR(stats.CheckShape());
  GMM_RETURN_IF_ERROR(CheckTransform(stats.dim, transform, "fMLLR transform"));
  return Objective(stats, std::vector<double>(transform.begin(), transform.end()));
}

absl::StatusOr<std::vector<double>> ComposeFmllr(int dim, absl::Span<const double> outer,
                                                 absl::Span<const double> inner) {
  const size_t ext = static_cast<size_t>(dim) + 1;
  if (dim < 1 || outer.size() != dim * ext || inner.size() != dim * ext) {
    return absl::InvalidArgumentError(absl::StrCat("cannot compose fMLLR transforms of ",
                                                   outer.size(), " and ", inner.size(),
                                                   " values as ", dim, " x ", ext));
  }
  std::vector<double> out(dim * ext, 0.0);
  for (int i = 0; i < dim; ++i) {
    out[i * ext + dim] = outer[i * ext + dim];
    for (int k = 0; k < dim; ++k) {
      const double a = outer[i * ext + k];
      for (size_t j = 0; j < ext; ++j) out[i * ext + j] += a * inner[k * ext + j];
    }
  }
  return out;
}

std::vector<double> IdentityFmllr(int dim) {
  std::vector<double> w(static_cast<size_t>(dim) * (dim + 1), 0.0);
  for (int i = 0; i < dim; ++i) w[i * (dim + 1) + i] = 1.0;
  return w;
}

absl::string_view FmllrModeName(FmllrMode mode) {
  switch (mode) {
    case FmllrMode::kIdentity: return "none";
    case FmllrMode::kOffset: return "offset";
    case FmllrMode::kDiagonal: return "diag";
    case FmllrMode::kFull: return "full";
  }
  return "unknown";
}

absl::StatusOr<FmllrMode> ParseFmllrMode(absl::string_view name) {
  for (FmllrMode mode : {FmllrMode::kIdentity, FmllrMode::kOffset, FmllrMode::kDiagonal, FmllrMode::kFull}) {
    if (name == FmllrModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fMLLR update type '", name, "' (none, offset, diag or full)"));
}

}  // namespace gmmscore
