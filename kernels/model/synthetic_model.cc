#include "kernels/model/synthetic_model.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

// Portable uniform and normal draws: std::*_distribution differ between
// standard libraries, mt19937_64 itself does not.
class PortableRandom {
 public:
  explicit PortableRandom(uint64_t seed) : engine_(seed) {}
  double Uniform() { return (engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  int UniformInt(int lo, int hi) {  // [lo, hi]
    return lo + static_cast<int>(Uniform() * (hi - lo + 1));
  }

 private:
  std::mt19937_64 engine_;
};

// Cepstrum-like global mean and spread of dimension d.
void DimensionScale(int d, int dim, double* mean, double* spread) {
  const int block = dim >= 26 ? dim / 3 : dim;  // statics, deltas, accelerations
  const int coefficient = d % block;
  const int order = d / block;  // 0 static, 1 delta, 2 acceleration
  const double base = coefficient == 0 ? 15.0 : 12.0 / (1.0 + 0.4 * coefficient);
  *spread = base / (1.0 + 2.0 * order);
  *mean = (order == 0) ? (coefficient == 0 ? 50.0 : 4.0 * std::cos(coefficient)) : 0.0;
}

}  // namespace

absl::StatusOr<DiagGmmModel> GenerateSyntheticModel(const SyntheticModelSpec& spec) {
  if (spec.num_states <= 0 || spec.dim <= 0 || spec.min_gaussians <= 0 ||
      spec.max_gaussians < spec.min_gaussians) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad synthetic model spec: states ", spec.num_states, ", Gaussians ", spec.min_gaussians,
        "..", spec.max_gaussians, ", dim ", spec.dim));
  }
  PortableRandom random(spec.seed);
  std::vector<double> global_mean(spec.dim), global_spread(spec.dim);
  for (int d = 0; d < spec.dim; ++d) DimensionScale(d, spec.dim, &global_mean[d], &global_spread[d]);

  DiagGmmModelBuilder builder(spec.dim);
  std::vector<double> weights, means, variances;
  for (int s = 0; s < spec.num_states; ++s) {
    const int count = random.UniformInt(spec.min_gaussians, spec.max_gaussians);
    weights.resize(count);
    means.resize(static_cast<size_t>(count) * spec.dim);
    variances.resize(static_cast<size_t>(count) * spec.dim);
    double weight_sum = 0.0;
    for (int g = 0; g < count; ++g) {
      weights[g] = 0.05 + random.Uniform();
      weight_sum += weights[g];
      for (int d = 0; d < spec.dim; ++d) {
        means[g * spec.dim + d] = global_mean[d] + 0.8 * global_spread[d] * random.Normal();
        const double sd = global_spread[d] * (0.15 + 0.6 * random.Uniform());
        variances[g * spec.dim + d] = sd * sd;
      }
    }
    for (double& w : weights) w /= weight_sum;
    GMM_RETURN_IF_ERROR(builder.AddState(weights, means, variances));
  }
  return std::move(builder).Build();
}

FloatMatrix GenerateSyntheticFeatures(const DiagGmmModel& model, int64_t frames, uint64_t seed) {
  PortableRandom random(seed ^ 0x9e3779b97f4a7c15ull);
  FloatMatrix features(frames, model.dim());
  for (int64_t t = 0; t < frames; ++t) {
    const int64_t g = static_cast<int64_t>(random.Uniform() * model.num_gaussians());
    const NaturalGaussian gaussian = model.Natural(g);
    // One frame in 20 is an outlier, as noise and unseen speakers give.
    const double stretch = random.Uniform() < 0.05 ? 4.0 : 1.0;
    for (int d = 0; d < model.dim(); ++d) {
      features.at(t, d) = static_cast<float>(
          gaussian.mean[d] + stretch * std::sqrt(gaussian.variance[d]) * random.Normal());
    }
  }
  return features;
}

std::vector<float> GenerateSyntheticTransform(int dim, bool with_offset, uint64_t seed) {
  PortableRandom random(seed ^ 0x2545f4914f6cdd1dull);
  const int cols = with_offset ? dim + 1 : dim;
  std::vector<float> values(static_cast<size_t>(dim) * cols);
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j < dim; ++j) {
      values[static_cast<size_t>(i) * cols + j] =
          static_cast<float>((i == j ? 1.0 : 0.0) + 0.005 * random.Normal());
    }
    if (with_offset) values[static_cast<size_t>(i) * cols + dim] = static_cast<float>(0.3 * random.Normal());
  }
  return values;
}

}  // namespace gmmscore
