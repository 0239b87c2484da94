// Speaker data for the fMLLR tests: frames sampled from a model, random
// speaker transforms in the units of the data, and how far an estimate is
// from the transform that made the data.
//
//   std::vector<StatsPair> alignment;
//   const FloatMatrix x = SampleModel(model, 40000, rng, &alignment);
//   const std::vector<double> truth = RandomAffine(x, rng);
//   const FloatMatrix observed = Transformed(InverseAffine(truth, dim), x);
//   ... estimate w from observed ...; MaxMappedError(w, truth, observed) is in sd.
#ifndef GMMSCORE_KERNELS_TRAIN_FMLLR_TEST_UTIL_H_
#define GMMSCORE_KERNELS_TRAIN_FMLLR_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/fmllr_estimate.h"
#include "kernels/train/fmllr_linalg.h"
#include "kernels/train/fmllr_stats.h"

namespace gmmscore {

// y_t = A x_t + b for W = [A b] (D x (D+1)).
inline FloatMatrix Transformed(const std::vector<double>& w, const FloatMatrix& x) {
  const int64_t dim = x.cols(), ext = dim + 1;
  FloatMatrix y(x.rows(), dim);
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int64_t i = 0; i < dim; ++i) {
      double sum = w[i * ext + dim];
      for (int64_t j = 0; j < dim; ++j) sum += w[i * ext + j] * x.row(t)[j];
      y.row(t)[i] = static_cast<float>(sum);
    }
  }
  return y;
}

// Frames drawn from the model: a state uniformly, then one of its Gaussians
// by weight (no outliers); *alignment (optional) gets {frame, state, 1}.
inline FloatMatrix SampleModel(const DiagGmmModel& model, int64_t frames, std::mt19937_64& rng,
                        std::vector<StatsPair>* alignment = nullptr) {
  std::normal_distribution<double> normal;
  FloatMatrix out(frames, model.dim());
  for (int64_t t = 0; t < frames; ++t) {
    const int state = static_cast<int>(rng() % model.num_states());
    std::vector<double> weights;
    for (int64_t g = model.state_offsets()[state]; g < model.state_offsets()[state + 1]; ++g) {
      weights.push_back(model.Natural(g).weight);
    }
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    const NaturalGaussian g = model.Natural(model.state_offsets()[state] + pick(rng));
    for (int d = 0; d < model.dim(); ++d) {
      out.row(t)[d] = static_cast<float>(g.mean[d] + std::sqrt(g.variance[d]) * normal(rng));
    }
    if (alignment != nullptr) alignment->push_back({static_cast<int32_t>(t), state, 1.0f});
  }
  return out;
}

// Per-dimension mean and standard deviation of `x`.
inline void Moments(const FloatMatrix& x, std::vector<double>* mean, std::vector<double>* sd) {
  const int64_t dim = x.cols();
  mean->assign(dim, 0.0);
  sd->assign(dim, 0.0);
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int64_t d = 0; d < dim; ++d) (*mean)[d] += x.row(t)[d] / x.rows();
  }
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int64_t d = 0; d < dim; ++d) (*sd)[d] += std::pow(x.row(t)[d] - (*mean)[d], 2) / x.rows();
  }
  for (double& v : *sd) v = std::sqrt(v);
}

// A speaker transform of the kind fMLLR finds, in the units of the data `x`
// it applies to: about the data mean, scales in [0.85, 1.15], the other
// dimensions mixed in at 0.1 standard deviations, shifts of 0.5 (each
// times `strength`).
inline std::vector<double> RandomAffine(const FloatMatrix& x, std::mt19937_64& rng, double strength = 1.0) {
  const int dim = static_cast<int>(x.cols()), ext = dim + 1;
  std::vector<double> mean, sd;
  Moments(x, &mean, &sd);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> scale(1.0 - 0.15 * strength, 1.0 + 0.15 * strength);
  std::vector<double> w(dim * ext);
  for (int i = 0; i < dim; ++i) {
    double offset = mean[i] + 0.5 * strength * sd[i] * normal(rng);
    for (int j = 0; j < dim; ++j) {
      const double a = i == j ? scale(rng) : 0.1 * strength * normal(rng) * sd[i] / (sd[j] * std::sqrt(dim));
      w[i * ext + j] = a;
      offset -= a * mean[j];
    }
    w[i * ext + dim] = offset;
  }
  return w;
}

// (1/T) sum_t log p(W o_t) + log|det A|: the likelihood of frames o under
// the model with transform W, as a global GMM gives it.
inline double LogLikelihoodPerFrame(const DiagGmmModel& model, const std::vector<double>& w,
                             const FloatMatrix& observed) {
  FmllrStats scratch = FmllrStats::ForDim(model.dim());
  const double loglike = *FmllrAccumulator(model).Accumulate(Transformed(w, observed).view(), {}, &scratch);
  FmllrStats log_det = FmllrStats::ForDim(model.dim());  // F(W) = log|det A| for beta 1, K = G = 0
  log_det.beta = 1.0;
  return loglike / observed.rows() + *FmllrObjective(log_det, w);
}

// A speaker's frames: model samples through a random speaker transform.
inline FloatMatrix SpeakerData(const DiagGmmModel& model, int64_t frames, std::mt19937_64& rng) {
  const FloatMatrix x = SampleModel(model, frames, rng);
  return Transformed(RandomAffine(x, rng), x);
}

// Largest |(W x)_i - (W0 x)_i| over the frames, in standard deviations of
// (W0 x)_i: how far from the true transform's the estimate puts the frames.
inline double MaxMappedError(const std::vector<double>& w, const std::vector<double>& truth,
                      const FloatMatrix& x) {
  const FloatMatrix got = Transformed(w, x), want = Transformed(truth, x);
  std::vector<double> mean, sd;
  Moments(want, &mean, &sd);
  double worst = 0.0;
  for (int64_t t = 0; t < x.rows(); ++t) {
    for (int64_t d = 0; d < x.cols(); ++d) {
      worst = std::max(worst, std::fabs(got.row(t)[d] - want.row(t)[d]) / sd[d]);
    }
  }
  return worst;
}

// The inverse of W = [A b]: [A^-1, -A^-1 b].
inline std::vector<double> InverseAffine(const std::vector<double>& w, int dim) {
  const int ext = dim + 1;
  std::vector<double> a(dim * dim), inverse;
  for (int i = 0; i < dim; ++i) std::copy_n(&w[i * ext], dim, &a[i * dim]);
  LuFactors lu;
  EXPECT_TRUE(LuFactorize(dim, a.data(), &lu));
  LuInverse(lu, &inverse);
  std::vector<double> out(dim * ext, 0.0);
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j < dim; ++j) {
      out[i * ext + j] = inverse[i * dim + j];
      out[i * ext + dim] -= inverse[i * dim + j] * w[j * ext + dim];
    }
  }
  return out;
}

// Largest error of `got` against `want`, each value at the scale of what it
// sums: G_i(j,k) relative to sqrt(G_i(j,j) G_i(k,k)) (its Cauchy-Schwarz
// bound), K(i,j) relative to the largest of row i, beta to max(beta, 1).
inline double MaxStatsError(const FmllrStats& got, const FmllrStats& want) {
  const int ext = want.ext_dim();
  double worst = std::fabs(got.beta - want.beta) / std::max(std::fabs(want.beta), 1.0);
  for (int i = 0; i < want.dim; ++i) {
    double row_scale = 1e-300;
    for (int j = 0; j < ext; ++j) row_scale = std::max(row_scale, std::fabs(want.k_row(i)[j]));
    const double* g = want.g_matrix(i);
    for (int j = 0; j < ext; ++j) {
      worst = std::max(worst, std::fabs(got.k_row(i)[j] - want.k_row(i)[j]) / row_scale);
      for (int k = 0; k < ext; ++k) {
        const double scale = std::sqrt(g[j * ext + j] * g[k * ext + k]) + 1e-300;
        worst = std::max(worst, std::fabs(got.g_matrix(i)[j * ext + k] - g[j * ext + k]) / scale);
      }
    }
  }
  return worst;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_FMLLR_TEST_UTIL_H_
