#include "kernels/train/fmllr_linalg.h"

#include <algorithm>
#include <cmath>

// LAPACK from OpenBLAS (Debian's libopenblas ships it), Fortran interface.
// Row-major n x n data read as column-major is the transpose: a symmetric
// matrix is itself, so Cholesky with uplo 'U' leaves the row-major lower L;
// LU factors A^T (same |det|) and its inverse read back row-major is A^-1.
extern "C" {
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b,
             const int* ldb, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work, const int* lwork, int* info);
}

namespace gmmscore {

bool CholeskyFactor(int n, const double* a, double min_pivot_ratio, std::vector<double>* factor) {
  std::vector<double>& l = *factor;
  l.assign(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) l[i * n + j] = a[i * n + j];  // the lower triangle, as promised
  }
  int info = 0;
  dpotrf_("U", &n, l.data(), &n, &info);
  if (info != 0) return false;
  // The pivot of row k is l_kk^2: the part of a_kk the earlier rows leave.
  for (int k = 0; k < n; ++k) {
    const double pivot = l[k * n + k] * l[k * n + k];
    if (!std::isfinite(pivot) || !(pivot > min_pivot_ratio * a[k * n + k])) return false;
  }
  return true;
}

void CholeskySolve(int n, const std::vector<double>& l, const double* b, double* x) {
  if (x != b) {
    for (int i = 0; i < n; ++i) x[i] = b[i];
  }
  const int one = 1;
  int info = 0;
  dpotrs_("U", &n, &one, l.data(), &n, x, &n, &info);
}

bool LuFactorize(int n, const double* a, LuFactors* factors) {
  factors->n = n;
  factors->lu.assign(a, a + static_cast<size_t>(n) * n);
  factors->perm.assign(n, 0);
  int info = 0;
  dgetrf_(&n, &n, factors->lu.data(), &n, factors->perm.data(), &info);
  if (info != 0) return false;
  factors->log_abs_det = 0.0;
  for (int k = 0; k < n; ++k) {
    const double pivot = factors->lu[k * n + k];
    if (pivot == 0.0 || !std::isfinite(pivot)) return false;
    factors->log_abs_det += std::log(std::fabs(pivot));
  }
  return true;
}

void LuInverse(const LuFactors& factors, std::vector<double>* inverse) {
  const int n = factors.n;
  *inverse = factors.lu;
  int lwork = std::max(1, 64 * n), info = 0;
  std::vector<double> work(lwork);
  dgetri_(&n, inverse->data(), &n, factors.perm.data(), work.data(), &lwork, &info);
}

}  // namespace gmmscore
