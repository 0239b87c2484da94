#include "kernels/cpu/tied_mixture_scorer.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "kernels/core/feature_values.h"
#include "kernels/core/thread_pool.h"

namespace gmmscore {
namespace {

// Below this a linear mix may have lost its terms to underflow; such entries
// are recomputed in the log domain.
constexpr float kSmallestTrustedMix = kTiedSmallestTrustedMix;

struct BlockScratch {
  std::vector<float> expanded;   // frames x (1 + 2 d_f)
  std::vector<float> densities;  // N_f x frames
  std::vector<float> exps;       // N_f x frames, exp(density - codebook max)
  std::vector<float> maxes;      // C x frames
  std::vector<float> mix;        // S_c x frames
};

BlockScratch& ThreadScratch() {
  thread_local BlockScratch scratch;
  return scratch;
}

template <typename T>
void Grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
}

// log sum_g exp(log_w[g] + densities[g * stride]), in float64.
float ExactStreamLogLikelihood(absl::Span<const float> log_w, const float* densities, int64_t stride) {
  double best = -std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < log_w.size(); ++g) {
    best = std::max(best, static_cast<double>(log_w[g]) + densities[g * stride]);
  }
  double sum = 0.0;
  for (size_t g = 0; g < log_w.size(); ++g) {
    sum += std::exp(static_cast<double>(log_w[g]) + densities[g * stride] - best);
  }
  return static_cast<float>(best + std::log(sum));
}

}  // namespace

struct TiedMixtureCpuScorer::CodebookStates {
  std::vector<int> states;
  std::vector<std::vector<float>> weights;  // [f]: states.size() x codebook_size(c, f)
};

TiedMixtureCpuScorer::TiedMixtureCpuScorer(std::shared_ptr<const TiedMixtureModel> model,
                                           const TiedMixtureScorerOptions& options)
    : model_(std::move(model)), options_(options) {
  static std::once_flag single_threaded_blas;
  std::call_once(single_threaded_blas, [] { openblas_set_num_threads(1); });
  const TiedMixtureModel& m = *model_;
  codebooks_.resize(m.num_codebooks());
  for (int s = 0; s < m.num_states(); ++s) codebooks_[m.codebook_of_state(s)].states.push_back(s);
  for (int c = 0; c < m.num_codebooks(); ++c) {
    CodebookStates& cb = codebooks_[c];
    cb.weights.resize(m.num_streams());
    for (int f = 0; f < m.num_streams(); ++f) {
      const int size = m.codebook_size(c, f);
      std::vector<float>& w = cb.weights[f];
      w.resize(cb.states.size() * size);
      for (size_t i = 0; i < cb.states.size(); ++i) {
        const auto log_w = m.log_weights(cb.states[i], f);
        for (int g = 0; g < size; ++g) w[i * size + g] = std::exp(log_w[g]);
      }
    }
  }
  int threads = options_.num_threads;
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  pool_ = std::make_unique<ThreadPool>(std::max(threads, 1) - 1, "gs-tied");
}

TiedMixtureCpuScorer::~TiedMixtureCpuScorer() = default;

absl::Status TiedMixtureCpuScorer::Score(ConstMatrixView features, FloatMatrix* loglikes) const {
  return Score(features, loglikes, pool_.get());
}

absl::Status TiedMixtureCpuScorer::Score(ConstMatrixView features, FloatMatrix* loglikes,
                                         ThreadPool* pool) const {
  if (pool == nullptr) return absl::InvalidArgumentError("null thread pool");
  if (loglikes == nullptr) return absl::InvalidArgumentError("null output matrix");
  const TiedMixtureModel& m = *model_;
  if (features.rows > 0 && features.cols != m.dim()) {
    return absl::InvalidArgumentError(absl::StrCat("features have dimension ", features.cols,
                                                   ", the model has dimension ", m.dim()));
  }
  for (int64_t t = 0; t < features.rows; ++t) {
    for (int64_t d = 0; d < features.cols; ++d) {
      if (!IsUsableFeatureValue(features.at(t, d))) {
        return absl::InvalidArgumentError(absl::StrCat("feature value at frame ", t, ", dimension ",
                                                       d, " is ", features.at(t, d), "; ",
                                                       kFeatureValueRule));
      }
    }
  }
  loglikes->Resize(features.rows, m.num_states());
  loglikes->Fill(0.0f);
  const int64_t block = std::max(1, options_.frames_per_block);
  const int64_t blocks = (features.rows + block - 1) / block;
  pool->ParallelFor(blocks, [&](int64_t b) {
    const int64_t first = b * block;
    ScoreBlock(features, first, std::min(block, features.rows - first), *loglikes);
  });
  return absl::OkStatus();
}

void TiedMixtureCpuScorer::ScoreBlock(ConstMatrixView features, int64_t first_frame, int64_t frames,
                                      FloatMatrix& loglikes) const {
  const TiedMixtureModel& m = *model_;
  BlockScratch& scratch = ThreadScratch();
  for (int f = 0; f < m.num_streams(); ++f) {
    const FeatureStream& stream = m.stream(f);
    const int cols = 1 + 2 * stream.dim;
    const int64_t gaussians = m.num_gaussians(f);
    Grow(scratch.expanded, frames * cols);
    Grow(scratch.densities, gaussians * frames);
    Grow(scratch.exps, gaussians * frames);
    Grow(scratch.maxes, static_cast<int64_t>(m.num_codebooks()) * frames);
    const auto center = m.center(f);
    for (int64_t t = 0; t < frames; ++t) {
      const float* x = features.row(first_frame + t) + stream.offset;
      float* e = &scratch.expanded[t * cols];
      e[0] = 1.0f;
      for (int d = 0; d < stream.dim; ++d) {
        const float y = x[d] - center[d];
        e[1 + d] = y;
        e[1 + stream.dim + d] = y * y;
      }
    }
    float* densities = scratch.densities.data();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(gaussians),
                static_cast<int>(frames), cols, 1.0f, m.params(f).data, cols, scratch.expanded.data(),
                cols, 0.0f, densities, static_cast<int>(frames));
    // Normalise each codebook by its best Gaussian per frame.
    float* exps = scratch.exps.data();
    for (int c = 0; c < m.num_codebooks(); ++c) {
      float* maxes = &scratch.maxes[c * frames];
      std::fill(maxes, maxes + frames, -std::numeric_limits<float>::infinity());
      for (int64_t g = m.codebook_begin(c, f); g < m.codebook_end(c, f); ++g) {
        for (int64_t t = 0; t < frames; ++t) maxes[t] = std::max(maxes[t], densities[g * frames + t]);
      }
      for (int64_t g = m.codebook_begin(c, f); g < m.codebook_end(c, f); ++g) {
        for (int64_t t = 0; t < frames; ++t) {
          exps[g * frames + t] = std::exp(densities[g * frames + t] - maxes[t]);
        }
      }
    }
    // Mix: one SGEMM per codebook over the states that use it.
    const float stream_weight = m.stream_weight(f);
    for (int c = 0; c < m.num_codebooks(); ++c) {
      const CodebookStates& cb = codebooks_[c];
      if (cb.states.empty()) continue;
      const int size = m.codebook_size(c, f);
      const int64_t begin = m.codebook_begin(c, f);
      const int num_states = static_cast<int>(cb.states.size());
      Grow(scratch.mix, static_cast<int64_t>(num_states) * frames);
      float* mix = scratch.mix.data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, num_states, static_cast<int>(frames), size,
                  1.0f, cb.weights[f].data(), size, exps + begin * frames, static_cast<int>(frames), 0.0f,
                  mix, static_cast<int>(frames));
      const float* maxes = &scratch.maxes[c * frames];
      for (int i = 0; i < num_states; ++i) {
        const int s = cb.states[i];
        for (int64_t t = 0; t < frames; ++t) {
          const float value = mix[i * frames + t];
          const float ll = value > kSmallestTrustedMix
                               ? std::log(value) + maxes[t]
                               : ExactStreamLogLikelihood(m.log_weights(s, f),
                                                          densities + begin * frames + t, frames);
          loglikes.row(first_frame + t)[s] += stream_weight * ll;
        }
      }
    }
  }
}

}  // namespace gmmscore
