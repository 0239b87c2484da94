// Small dense float64 linear algebra for the fMLLR update (fmllr_estimate.h),
// on LAPACK (OpenBLAS's): matrices of order D + 1, row-major.
//
//   std::vector<double> chol;
//   if (!CholeskyFactor(n, g, /*min_pivot_ratio=*/1e-10, &chol)) ... singular
//   CholeskySolve(n, chol, rhs, x);          // x = G^{-1} rhs
//   LuFactors lu;
//   if (!LuFactorize(n, a, &lu)) ... singular
//   LuInverse(lu, &inverse);                 // lu.log_abs_det = log|det a|
//
// Thread safety: pure functions.
#ifndef GMMSCORE_KERNELS_TRAIN_FMLLR_LINALG_H_
#define GMMSCORE_KERNELS_TRAIN_FMLLR_LINALG_H_

#include <vector>

namespace gmmscore {

// Cholesky factor L (n x n, lower, row-major) of the symmetric n x n matrix
// `a` (only its lower triangle is read). False, leaving *factor unspecified,
// when `a` is not numerically positive definite: a pivot (the part of a_kk
// that the earlier rows do not explain) is not finite or at most
// min_pivot_ratio * a_kk. The ratio does not depend on the scale of each
// variable, so it separates rank-deficient statistics (ratios near 1e-16)
// from merely badly scaled ones.
bool CholeskyFactor(int n, const double* a, double min_pivot_ratio, std::vector<double>* factor);

// x = (L L^T)^{-1} b for a factor from CholeskyFactor; x may alias b.
void CholeskySolve(int n, const std::vector<double>& factor, const double* b, double* x);

// LAPACK's LU factors (dgetrf, of the row-major matrix read as column-major,
// i.e. of a^T: the same |det|), for the determinant and the inverse.
struct LuFactors {
  int n = 0;
  std::vector<double> lu;  // n x n, dgetrf's packed L and U
  std::vector<int> perm;   // dgetrf's pivots (1-based)
  double log_abs_det = 0.0;
};

// Factors the n x n matrix `a`. False when a pivot is zero or not finite
// (a singular or non-finite matrix).
bool LuFactorize(int n, const double* a, LuFactors* factors);

// The inverse (n x n, row-major) from a successful LuFactorize.
void LuInverse(const LuFactors& factors, std::vector<double>* inverse);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_FMLLR_LINALG_H_
