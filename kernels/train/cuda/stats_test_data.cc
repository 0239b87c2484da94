#include "kernels/train/cuda/stats_test_data.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "kernels/core/status_macros.h"
#include "kernels/train/stats_reference.h"

namespace gmmscore {
namespace {

// Frames per generator slice: the unit that makes the output independent of
// the thread count.
constexpr int64_t kSliceFrames = 16384;

int Threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Runs body(i) for i in [0, count) on every hardware thread.
template <typename Body>
void ParallelFor(int64_t count, Body body) {
  std::atomic<int64_t> next{0};
  std::vector<std::thread> threads;
  const int n = static_cast<int>(std::min<int64_t>(Threads(), std::max<int64_t>(count, 1)));
  for (int k = 0; k < n; ++k) {
    threads.emplace_back([&] {
      for (int64_t i = next++; i < count; i = next++) body(i);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace

FloatMatrix DrawModelFrames(const DiagGmmModel& model, int64_t frames, uint64_t seed) {
  const int dim = model.dim();
  const int64_t gaussians = model.num_gaussians();
  std::vector<double> mean(static_cast<size_t>(gaussians * dim)), sd(mean.size());
  for (int64_t g = 0; g < gaussians; ++g) {
    const NaturalGaussian natural = model.Natural(g);
    for (int d = 0; d < dim; ++d) {
      mean[g * dim + d] = natural.mean[d];
      sd[g * dim + d] = std::sqrt(natural.variance[d]);
    }
  }
  FloatMatrix out(frames, dim);
  const int64_t slices = (frames + kSliceFrames - 1) / kSliceFrames;
  ParallelFor(slices, [&](int64_t slice) {
    std::mt19937_64 engine(seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(slice));
    auto uniform = [&] { return (engine() >> 11) * 0x1.0p-53; };  // [0, 1)
    const int64_t end = std::min(frames, (slice + 1) * kSliceFrames);
    for (int64_t t = slice * kSliceFrames; t < end; ++t) {
      const int64_t g = std::min<int64_t>(gaussians - 1, static_cast<int64_t>(uniform() * gaussians));
      const double stretch = uniform() < 0.05 ? 4.0 : 1.0;
      float* row = out.row(t);
      for (int d = 0; d < dim; d += 2) {
        // Box-Muller: two normals per pair of uniforms.
        const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
        const double angle = 6.283185307179586 * uniform();
        row[d] = static_cast<float>(mean[g * dim + d] + stretch * sd[g * dim + d] * radius * std::cos(angle));
        if (d + 1 < dim) {
          row[d + 1] = static_cast<float>(mean[g * dim + d + 1] +
                                          stretch * sd[g * dim + d + 1] * radius * std::sin(angle));
        }
      }
    }
  });
  return out;
}

namespace {
// Whether Gaussian g (counted within its state of `count`) is a faint twin.
bool IsFaintTwin(int64_t g, int64_t count, int stride) { return g % stride == 0 && g + 1 < count; }
}  // namespace

DiagGmmModel WithFaintGaussians(const DiagGmmModel& model, int stride, double log_factor) {
  DiagGmmModelBuilder builder(model.dim());
  for (int s = 0; s < model.num_states(); ++s) {
    const int64_t first = model.state_offsets()[s], count = model.state_offsets()[s + 1] - first;
    std::vector<double> weights, means, variances;
    for (int64_t g = 0; g < count; ++g) {
      const bool faint = IsFaintTwin(g, count, stride);
      const NaturalGaussian natural = model.Natural(first + g + (faint ? 1 : 0));
      weights.push_back(natural.weight * (faint ? std::exp(log_factor) : 1.0));
      means.insert(means.end(), natural.mean.begin(), natural.mean.end());
      variances.insert(variances.end(), natural.variance.begin(), natural.variance.end());
    }
    double sum = 0.0;
    for (double w : weights) sum += w;
    for (double& w : weights) w /= sum;
    const absl::Status added = builder.AddState(weights, means, variances);
    if (!added.ok()) std::abort();  // a test helper's own model: cannot fail
  }
  absl::StatusOr<DiagGmmModel> built = std::move(builder).Build();
  if (!built.ok()) std::abort();
  return std::move(*built);
}

double FaintGaussianError(const GmmStats& got, const GmmStats& want, int stride) {
  const int dim = want.dim;
  auto row_error = [](const double* g, const double* w, int n) -> double {
    double scale = 0.0, worst = 0.0;
    for (int i = 0; i < n; ++i) {
      if (!std::isfinite(g[i])) return std::numeric_limits<double>::infinity();
      scale = std::max(scale, std::fabs(w[i]));
      worst = std::max(worst, std::fabs(g[i] - w[i]));
    }
    return scale > 0.0 ? worst / scale : worst;
  };
  double error = 0.0;
  for (int set = 0; set < want.num_sets; ++set) {
    for (int s = 0; s < want.num_states(); ++s) {
      const int64_t first = want.state_offsets[s], count = want.state_offsets[s + 1] - first;
      for (int64_t g = 0; g < count; ++g) {
        if (!IsFaintTwin(g, count, stride)) continue;
        const int64_t row = set * want.num_gaussians() + first + g;
        error = std::max({error, row_error(&got.occupancy[row], &want.occupancy[row], 1),
                          row_error(&got.mean_acc[row * dim], &want.mean_acc[row * dim], dim),
                          row_error(&got.var_acc[row * dim], &want.var_acc[row * dim], dim)});
      }
    }
  }
  return error;
}

absl::StatusOr<GmmStats> ParallelReferenceStats(const DiagGmmModel& model, const FloatMatrix& frames,
                                                absl::Span<const StatsPair> pairs, int num_sets) {
  const int64_t units = pairs.empty() ? frames.rows() : static_cast<int64_t>(pairs.size());
  const int64_t slices = std::max<int64_t>(1, std::min<int64_t>(units, 4 * Threads()));
  std::vector<GmmStats> parts(slices, GmmStats::ForModel(model, num_sets));
  std::vector<absl::Status> statuses(slices);
  ParallelFor(slices, [&](int64_t slice) {
    const int64_t begin = units * slice / slices, end = units * (slice + 1) / slices;
    std::unique_ptr<StatsBackend> reference = CreateReferenceStatsBackend();
    absl::Status status = reference->SetModel(model);
    if (status.ok()) {
      // A global GMM's slice is its frames; pairs keep every frame.
      ConstMatrixView view = pairs.empty() ? frames.view().Rows(begin, end - begin) : frames.view();
      absl::StatusOr<std::unique_ptr<FrameBlock>> block = reference->LoadFrames(view);
      status = block.status();
      if (status.ok()) {
        status = reference->Accumulate(**block, pairs.empty() ? pairs : pairs.subspan(begin, end - begin),
                                       &parts[slice]);
      }
    }
    statuses[slice] = status;
  });
  GmmStats total = GmmStats::ForModel(model, num_sets);
  for (int64_t slice = 0; slice < slices; ++slice) {
    GMM_RETURN_IF_ERROR(statuses[slice]);
    GMM_RETURN_IF_ERROR(total.Add(parts[slice]));
  }
  return total;
}

}  // namespace gmmscore
