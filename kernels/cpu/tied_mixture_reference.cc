#include "kernels/cpu/tied_mixture_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gmmscore {

std::vector<double> TiedMixtureReferenceLogLikelihoods(const TiedMixtureModel& model,
                                                       ConstMatrixView features) {
  const int num_states = model.num_states();
  std::vector<double> out(static_cast<size_t>(features.rows) * num_states, 0.0);
  std::vector<double> terms;
  for (int64_t t = 0; t < features.rows; ++t) {
    const float* x = features.row(t);
    for (int s = 0; s < num_states; ++s) {
      const int c = model.codebook_of_state(s);
      double total = 0.0;
      for (int f = 0; f < model.num_streams(); ++f) {
        const FeatureStream& stream = model.stream(f);
        const ConstMatrixView params = model.params(f);
        const auto center = model.center(f);
        const auto log_w = model.log_weights(s, f);
        terms.clear();
        for (int g = 0; g < model.codebook_size(c, f); ++g) {
          if (std::isinf(log_w[g])) continue;
          const float* row = params.row(model.codebook_begin(c, f) + g);
          double value = static_cast<double>(log_w[g]) + row[0];
          for (int d = 0; d < stream.dim; ++d) {
            const double y = static_cast<double>(x[stream.offset + d]) - center[d];
            value += row[1 + d] * y + static_cast<double>(row[1 + stream.dim + d]) * y * y;
          }
          terms.push_back(value);
        }
        const double best = *std::max_element(terms.begin(), terms.end());
        double sum = 0.0;
        for (const double term : terms) sum += std::exp(term - best);
        total += model.stream_weight(f) * (best + std::log(sum));
      }
      out[static_cast<size_t>(t) * num_states + s] = total;
    }
  }
  return out;
}

}  // namespace gmmscore
