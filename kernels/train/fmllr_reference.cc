#include "kernels/train/fmllr_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

using Matrix = std::vector<std::vector<double>>;

// Gauss-Jordan elimination with partial pivoting.
Matrix Inverse(Matrix a) {
  const int n = static_cast<int>(a.size());
  Matrix inv(n, std::vector<double>(n, 0.0));
  for (int i = 0; i < n; ++i) inv[i][i] = 1.0;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    }
    std::swap(a[col], a[pivot]);
    std::swap(inv[col], inv[pivot]);
    const double p = a[col][col];
    for (int j = 0; j < n; ++j) {
      a[col][j] /= p;
      inv[col][j] /= p;
    }
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col];
      for (int j = 0; j < n; ++j) {
        a[r][j] -= f * a[col][j];
        inv[r][j] -= f * inv[col][j];
      }
    }
  }
  return inv;
}

// Gaussian elimination with partial pivoting.
double Determinant(Matrix a) {
  const int n = static_cast<int>(a.size());
  double det = 1.0;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    }
    if (pivot != col) {
      std::swap(a[col], a[pivot]);
      det = -det;
    }
    det *= a[col][col];
    if (a[col][col] == 0.0) return 0.0;
    for (int r = col + 1; r < n; ++r) {
      const double f = a[r][col] / a[col][col];
      for (int j = col; j < n; ++j) a[r][j] -= f * a[col][j];
    }
  }
  return det;
}

Matrix SquarePart(const std::vector<double>& w, int dim) {
  Matrix a(dim, std::vector<double>(dim));
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j < dim; ++j) a[i][j] = w[i * (dim + 1) + j];
  }
  return a;
}

Matrix GMatrix(const FmllrStats& stats, int i) {
  const int ext = stats.dim + 1;
  Matrix g(ext, std::vector<double>(ext));
  for (int r = 0; r < ext; ++r) {
    for (int c = 0; c < ext; ++c) g[r][c] = stats.g_matrix(i)[r * ext + c];
  }
  return g;
}

std::vector<double> Times(const Matrix& m, const std::vector<double>& v) {
  std::vector<double> out(m.size(), 0.0);
  for (size_t r = 0; r < m.size(); ++r) {
    for (size_t c = 0; c < v.size(); ++c) out[r] += m[r][c] * v[c];
  }
  return out;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// Adds one pair: every Gaussian of `state`, its posterior times `weight`, to
// beta, K and each G_i by the definition. Returns weight * log p(x | state).
double AddPair(const std::vector<NaturalGaussian>& gaussians, int64_t first, int64_t last,
               const float* x, double weight, FmllrStats* stats) {
  const int dim = stats->dim, ext = dim + 1;
  std::vector<double> loglik;
  for (int64_t g = first; g < last; ++g) {
    const NaturalGaussian& gauss = gaussians[g];
    double l = std::log(gauss.weight) - 0.5 * dim * std::log(2.0 * M_PI);
    for (int d = 0; d < dim; ++d) {
      const double diff = x[d] - gauss.mean[d];
      l -= 0.5 * (std::log(gauss.variance[d]) + diff * diff / gauss.variance[d]);
    }
    loglik.push_back(l);
  }
  const double best = *std::max_element(loglik.begin(), loglik.end());
  double sum = 0.0;
  for (double l : loglik) sum += std::exp(l - best);
  const double total = best + std::log(sum);
  std::vector<double> extended(x, x + dim);
  extended.push_back(1.0);
  for (int64_t g = first; g < last; ++g) {
    const NaturalGaussian& gauss = gaussians[g];
    const double gamma = weight * std::exp(loglik[g - first] - total);
    stats->beta += gamma;
    for (int i = 0; i < dim; ++i) {
      for (int j = 0; j < ext; ++j) {
        stats->k_row(i)[j] += gamma * gauss.mean[i] / gauss.variance[i] * extended[j];
        for (int c = 0; c < ext; ++c) {
          stats->g_matrix(i)[j * ext + c] += gamma / gauss.variance[i] * extended[j] * extended[c];
        }
      }
    }
  }
  return weight * total;
}

}  // namespace

absl::StatusOr<double> AccumulateFmllrStatsReference(const DiagGmmModel& model,
                                                     ConstMatrixView frames,
                                                     absl::Span<const StatsPair> pairs,
                                                     FmllrStats* stats) {
  if (stats == nullptr) return absl::InvalidArgumentError("no fMLLR statistics to add to");
  GMM_RETURN_IF_ERROR(ValidateFmllrRequest(ModelShape::Of(model), frames, pairs, *stats));
  std::vector<NaturalGaussian> gaussians;
  for (int64_t g = 0; g < model.num_gaussians(); ++g) gaussians.push_back(model.Natural(g));
  const absl::Span<const int64_t> offsets = model.state_offsets();
  double loglike = 0.0;
  if (pairs.empty()) {
    for (int64_t t = 0; t < frames.rows; ++t) {
      loglike += AddPair(gaussians, offsets[0], offsets[1], frames.row(t), 1.0, stats);
    }
    return loglike;
  }
  for (const StatsPair& pair : pairs) {
    loglike += AddPair(gaussians, offsets[pair.target], offsets[pair.target + 1],
                       frames.row(pair.frame), pair.weight, stats);
  }
  return loglike;
}

double FmllrObjectiveReference(const FmllrStats& stats, const std::vector<double>& w) {
  const int dim = stats.dim, ext = dim + 1;
  double objective = stats.beta * std::log(std::fabs(Determinant(SquarePart(w, dim))));
  for (int i = 0; i < dim; ++i) {
    const std::vector<double> row(w.begin() + i * ext, w.begin() + (i + 1) * ext);
    const std::vector<double> k(stats.k_row(i), stats.k_row(i) + ext);
    objective += Dot(row, k) - 0.5 * Dot(row, Times(GMatrix(stats, i), row));
  }
  return objective;
}

std::vector<double> FmllrFullReference(const FmllrStats& stats, std::vector<double> w,
                                       int iterations, std::vector<double>* objective) {
  const int dim = stats.dim, ext = dim + 1;
  const double beta = stats.beta;
  std::vector<Matrix> inverse_g;
  for (int i = 0; i < dim; ++i) inverse_g.push_back(Inverse(GMatrix(stats, i)));
  if (objective != nullptr) objective->assign(1, FmllrObjectiveReference(stats, w));
  for (int iteration = 0; iteration < iterations; ++iteration) {
    for (int i = 0; i < dim; ++i) {
      // Cofactors of A: det(A) times the transposed inverse.
      const Matrix a = SquarePart(w, dim);
      const Matrix a_inverse = Inverse(a);
      const double det = Determinant(a);
      std::vector<double> cofactor(ext, 0.0);
      for (int j = 0; j < dim; ++j) cofactor[j] = det * a_inverse[j][i];
      const std::vector<double> k(stats.k_row(i), stats.k_row(i) + ext);
      const std::vector<double> g_inv_c = Times(inverse_g[i], cofactor);
      const double e1 = Dot(g_inv_c, cofactor), e2 = Dot(g_inv_c, k);
      const double discriminant = std::sqrt(e2 * e2 + 4.0 * e1 * beta);
      const double alpha1 = (-e2 + discriminant) / (2.0 * e1);
      const double alpha2 = (-e2 - discriminant) / (2.0 * e1);
      auto row_objective = [&](double alpha) {
        return beta * std::log(std::fabs(alpha * e1 + e2)) - 0.5 * alpha * alpha * e1;
      };
      const double alpha = row_objective(alpha1) > row_objective(alpha2) ? alpha1 : alpha2;
      std::vector<double> target = k;
      for (int j = 0; j < ext; ++j) target[j] += alpha * cofactor[j];
      const std::vector<double> row = Times(inverse_g[i], target);
      std::copy(row.begin(), row.end(), w.begin() + i * ext);
    }
    if (objective != nullptr) objective->push_back(FmllrObjectiveReference(stats, w));
  }
  return w;
}

std::vector<double> FmllrDiagonalReference(const FmllrStats& stats) {
  const int dim = stats.dim, ext = dim + 1;
  std::vector<double> w(dim * ext, 0.0);
  for (int i = 0; i < dim; ++i) {
    const Matrix g = GMatrix(stats, i);
    const double k_ii = stats.k_row(i)[i], k_id = stats.k_row(i)[dim];
    const double a = g[dim][i] * g[dim][i] / g[dim][dim] - g[i][i];
    const double b = k_ii - g[dim][i] * k_id / g[dim][dim];
    const double c = stats.beta;
    const double s = (-b - std::sqrt(b * b - 4.0 * a * c)) / (2.0 * a);
    w[i * ext + i] = s;
    w[i * ext + dim] = (k_id - s * g[dim][i]) / g[dim][dim];
  }
  return w;
}

std::vector<double> FmllrOffsetReference(const FmllrStats& stats) {
  const int dim = stats.dim, ext = dim + 1;
  std::vector<double> w(dim * ext, 0.0);
  for (int i = 0; i < dim; ++i) {
    const Matrix g = GMatrix(stats, i);
    w[i * ext + i] = 1.0;
    w[i * ext + dim] = (stats.k_row(i)[dim] - g[i][dim]) / g[dim][dim];
  }
  return w;
}

}  // namespace gmmscore
