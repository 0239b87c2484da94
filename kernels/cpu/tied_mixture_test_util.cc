#include "kernels/cpu/tied_mixture_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "absl/types/span.h"

namespace gmmscore {
namespace {

// Codebook of each state: round robin over the codebooks with states left.
std::vector<int> StateCodebooks(const RandomTiedSpec& spec) {
  std::vector<int> left = spec.states_per_codebook;
  std::vector<int> out;
  bool any = true;
  while (any) {
    any = false;
    for (size_t c = 0; c < left.size(); ++c) {
      if (left[c] == 0) continue;
      --left[c];
      out.push_back(static_cast<int>(c));
      any = true;
    }
  }
  return out;
}

}  // namespace

std::vector<int> StarvingTiedStates(const TiedMixtureModel& model, const RandomTiedSpec& spec) {
  const std::vector<int> codebooks = StateCodebooks(spec);
  std::vector<int> last(spec.states_per_codebook.size(), -1);
  for (int s = 0; s < static_cast<int>(codebooks.size()); ++s) last[codebooks[s]] = s;
  std::vector<int> out;
  for (int s : last) {
    if (s >= 0 && s < model.num_states()) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<const TiedMixtureModel> RandomTiedModel(const RandomTiedSpec& spec) {
  std::mt19937 rng(spec.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.05, 1.0);
  const size_t num_streams = spec.streams.size();
  TiedMixtureModelBuilder builder(spec.streams);
  if (spec.weighted_streams) {
    std::vector<float> weights;
    for (size_t f = 0; f < num_streams; ++f) weights.push_back(f == 0 ? 1.0f : f % 2 == 1 ? 0.5f : 1.5f);
    builder.SetStreamWeights(weights);
  }
  const int num_codebooks = static_cast<int>(spec.states_per_codebook.size());
  auto size_of = [&](int c, size_t f) { return spec.sizes[c % spec.sizes.size()] + static_cast<int>(f); };
  for (int c = 0; c < num_codebooks; ++c) {
    std::vector<std::vector<double>> means(num_streams), vars(num_streams);
    std::vector<CodebookStreamParams> params;
    for (size_t f = 0; f < num_streams; ++f) {
      const int dim = spec.streams[f].dim;
      for (int g = 0; g < size_of(c, f); ++g) {
        for (int d = 0; d < dim; ++d) {
          // Gaussian 0 is far from every frame (the starving states' choice).
          const double far = g == 0 ? 200.0 : 0.0;
          means[f].push_back(far + 5.0 * normal(rng) + (f == 0 && d == 0 ? 40.0 : 0.0));
          vars[f].push_back(0.2 + 3.0 * uniform(rng));
        }
      }
      params.push_back({means[f], vars[f]});
    }
    if (!builder.AddCodebook(params).ok()) std::abort();
  }
  const std::vector<int> codebooks = StateCodebooks(spec);
  std::vector<int> last(num_codebooks, -1);
  for (int s = 0; s < static_cast<int>(codebooks.size()); ++s) last[codebooks[s]] = s;
  for (int s = 0; s < static_cast<int>(codebooks.size()); ++s) {
    const int c = codebooks[s];
    const bool starving = last[c] == s;
    std::vector<std::vector<double>> w(num_streams);
    std::vector<absl::Span<const double>> spans;
    for (size_t f = 0; f < num_streams; ++f) {
      const int size = size_of(c, f);
      if (starving) {
        for (int g = 0; g < size; ++g) w[f].push_back(g == 0 ? 0.0 : std::log(1e-44));
      } else {
        double sum = 0.0;
        for (int g = 0; g < size; ++g) {
          const double v = (g > 0 && (s + g) % 7 == 0) ? 0.0 : std::pow(uniform(rng), 3.0);
          w[f].push_back(v);
          sum += v;
        }
        if (sum == 0.0) w[f][0] = sum = 1.0;
        for (double& v : w[f]) v = std::log(v / sum);
      }
      spans.push_back(w[f]);
    }
    if (!builder.AddState(c, spans).ok()) std::abort();
  }
  absl::StatusOr<TiedMixtureModel> model = std::move(builder).Build();
  if (!model.ok()) std::abort();
  return std::make_shared<const TiedMixtureModel>(*std::move(model));
}

FloatMatrix RandomTiedFeatures(int64_t frames, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  FloatMatrix features(frames, dim);
  for (int64_t t = 0; t < frames; ++t) {
    for (int d = 0; d < dim; ++d) features.at(t, d) = normal(rng) + (d == 0 ? 40.0f : 0.0f);
    if (t % 17 == 5) features.at(t, dim - 1) += 60.0f;
  }
  return features;
}

double MaxTiedError(const FloatMatrix& scores, const std::vector<double>& reference) {
  double worst = 0.0;
  for (int64_t i = 0; i < scores.rows() * scores.cols(); ++i) {
    const double error = std::abs(scores.data()[i] - reference[i]);
    worst = std::max(worst, std::isnan(error) ? INFINITY : error / std::max(1.0, std::abs(reference[i]) / 256.0));
  }
  return worst;
}

}  // namespace gmmscore
