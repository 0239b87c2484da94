#include "kernels/train/fmllr_linalg.h"

#include <cmath>
#include <utility>

namespace gmmscore {

bool CholeskyFactor(int n, const double* a, double min_pivot_ratio, std::vector<double>* factor) {
  std::vector<double>& l = *factor;
  l.assign(static_cast<size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j) {
    const double diagonal = a[j * n + j];
    double pivot = diagonal;
    for (int k = 0; k < j; ++k) pivot -= l[j * n + k] * l[j * n + k];
    if (!std::isfinite(pivot) || !(diagonal > 0.0) || pivot <= min_pivot_ratio * diagonal) return false;
    const double root = std::sqrt(pivot);
    l[j * n + j] = root;
    for (int i = j + 1; i < n; ++i) {
      double sum = a[i * n + j];
      for (int k = 0; k < j; ++k) sum -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = sum / root;
    }
  }
  return true;
}

void CholeskySolve(int n, const std::vector<double>& l, const double* b, double* x) {
  for (int i = 0; i < n; ++i) {  // L y = b
    double sum = b[i];
    for (int k = 0; k < i; ++k) sum -= l[i * n + k] * x[k];
    x[i] = sum / l[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {  // L^T x = y
    double sum = x[i];
    for (int k = i + 1; k < n; ++k) sum -= l[k * n + i] * x[k];
    x[i] = sum / l[i * n + i];
  }
}

bool LuFactorize(int n, const double* a, LuFactors* factors) {
  factors->n = n;
  std::vector<double>& lu = factors->lu;
  std::vector<int>& perm = factors->perm;
  lu.assign(a, a + static_cast<size_t>(n) * n);
  perm.resize(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  factors->log_abs_det = 0.0;
  for (int k = 0; k < n; ++k) {
    int best = k;
    for (int i = k + 1; i < n; ++i) {
      if (std::fabs(lu[i * n + k]) > std::fabs(lu[best * n + k])) best = i;
    }
    const double pivot = lu[best * n + k];
    if (pivot == 0.0 || !std::isfinite(pivot)) return false;
    if (best != k) {
      for (int j = 0; j < n; ++j) std::swap(lu[k * n + j], lu[best * n + j]);
      std::swap(perm[k], perm[best]);
    }
    factors->log_abs_det += std::log(std::fabs(pivot));
    for (int i = k + 1; i < n; ++i) {
      const double factor = lu[i * n + k] / pivot;
      lu[i * n + k] = factor;
      for (int j = k + 1; j < n; ++j) lu[i * n + j] -= factor * lu[k * n + j];
    }
  }
  return true;
}

void LuInverse(const LuFactors& factors, std::vector<double>* inverse) {
  const int n = factors.n;
  const std::vector<double>& lu = factors.lu;
  std::vector<double>& inv = *inverse;
  inv.assign(static_cast<size_t>(n) * n, 0.0);
  std::vector<double> x(n);
  for (int c = 0; c < n; ++c) {  // column c solves L U x = P e_c
    for (int i = 0; i < n; ++i) {
      double sum = factors.perm[i] == c ? 1.0 : 0.0;
      for (int k = 0; k < i; ++k) sum -= lu[i * n + k] * x[k];
      x[i] = sum;
    }
    for (int i = n - 1; i >= 0; --i) {
      double sum = x[i];
      for (int k = i + 1; k < n; ++k) sum -= lu[i * n + k] * x[k];
      x[i] = sum / lu[i * n + i];
    }
    for (int i = 0; i < n; ++i) inv[i * n + c] = x[i];
  }
}

}  // namespace gmmscore
