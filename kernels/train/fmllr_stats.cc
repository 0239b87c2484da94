#include "kernels/train/fmllr_stats.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/score/fmllr_gather.h"

namespace gmmscore {
namespace {

// Frames whose per-frame terms are held at once: pairs are sorted into
// windows of this many frames, so memory does not grow with the utterance.
constexpr int64_t kFrameWindow = 1024;
// Pairs of one state scored by one DGEMM.
constexpr int64_t kPairBlock = 128;
// Frames per weighted-Gram DGEMM: a (D+1) x D(D+1) operand per frame is 3 MB
// per block at D = 39.
constexpr int64_t kGramBlock = 256;

}  // namespace

FmllrStats FmllrStats::ForDim(int dim) {
  FmllrStats stats;
  stats.dim = dim;
  if (dim < 1) return stats;  // CheckShape refuses it
  const size_t ext = static_cast<size_t>(dim) + 1;
  stats.k.assign(dim * ext, 0.0);
  stats.g.assign(dim * ext * ext, 0.0);
  return stats;
}

absl::Status FmllrStats::CheckShape() const {
  const size_t ext = static_cast<size_t>(dim) + 1;
  if (dim < 1 || k.size() != dim * ext || g.size() != dim * ext * ext) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fMLLR statistics are malformed: dimension ", dim, " with ", k.size(), " K values and ",
        g.size(), " G values (use FmllrStats::ForDim)"));
  }
  return absl::OkStatus();
}

absl::Status FmllrStats::Add(const FmllrStats& other) {
  GMM_RETURN_IF_ERROR(CheckShape());
  GMM_RETURN_IF_ERROR(other.CheckShape());
  if (other.dim != dim) {
    return absl::InvalidArgumentError(absl::StrCat("cannot add fMLLR statistics of dimension ",
                                                   other.dim, " to statistics of dimension ", dim));
  }
  beta += other.beta;
  for (size_t i = 0; i < k.size(); ++i) k[i] += other.k[i];
  for (size_t i = 0; i < g.size(); ++i) g[i] += other.g[i];
  return absl::OkStatus();
}

absl::StatusOr<FmllrStats> FmllrStatsFromGathered(int dim, absl::Span<const double> sums) {
  if (dim < 1 || static_cast<int64_t>(sums.size()) != FmllrGatherValues(dim)) {
    return absl::InvalidArgumentError(absl::StrCat("gathered fMLLR sums: ", sums.size(),
                                                   " values for dimension ", dim));
  }
  FmllrStats stats = FmllrStats::ForDim(dim);
  const int ext = dim + 1;
  stats.beta = sums[0];
  std::copy(sums.begin() + 1, sums.begin() + 1 + dim * ext, stats.k.begin());
  const double* packed = sums.data() + 1 + dim * ext;
  const int64_t per_dim = ext * (ext + 1) / 2;
  for (int i = 0; i < dim; ++i) {
    double* g = stats.g_matrix(i);
    for (int p = 0; p < ext; ++p) {
      for (int q = p; q < ext; ++q) {
        const double v = packed[i * per_dim + FmllrPackedIndex(p, q, ext)];
        g[p * ext + q] = v;
        g[q * ext + p] = v;
      }
    }
  }
  return stats;
}

absl::Status ValidateFmllrRequest(const ModelShape& model, ConstMatrixView frames,
                                  absl::Span<const StatsPair> pairs, const FmllrStats& stats) {
  GMM_RETURN_IF_ERROR(stats.CheckShape());
  if (stats.dim != model.dim) {
    return absl::InvalidArgumentError(absl::StrCat("fMLLR statistics have dimension ", stats.dim,
                                                   ", the model has dimension ", model.dim));
  }
  if (frames.rows > 0 && frames.cols != model.dim) {
    return absl::InvalidArgumentError(absl::StrCat("frames have dimension ", frames.cols,
                                                   ", the model has dimension ", model.dim));
  }
  GMM_RETURN_IF_ERROR(ValidateFrames(frames));
  if (pairs.empty() && model.num_states() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a model of ", model.num_states(),
        " states needs a frame-to-state alignment or state posteriors for fMLLR statistics"));
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    const StatsPair& pair = pairs[i];
    if (pair.frame < 0 || pair.frame >= frames.rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pair ", i, ": frame ", pair.frame, " is outside the ", frames.rows, " frames"));
    }
    if (pair.target < 0 || pair.target >= model.num_states()) {
      return absl::InvalidArgumentError(absl::StrCat("pair ", i, " (frame ", pair.frame, "): state ",
                                                     pair.target, " is out of range: the model has ",
                                                     model.num_states(), " states"));
    }
    if (!std::isfinite(pair.weight)) {
      return absl::InvalidArgumentError(absl::StrCat("pair ", i, " (frame ", pair.frame,
                                                     "): weight ", pair.weight, " is not finite"));
    }
  }
  return absl::OkStatus();
}

// A pair with its sort key: window, then state, then frame.
struct FmllrAccumulator::SortedPair {
  int64_t window;
  int32_t state;
  int32_t frame;
  float weight;
};

// One window's frames: per frame [sum gamma, a (D), b (D)] and whether any
// pair named it; scratch of the posterior DGEMMs.
struct FmllrAccumulator::FrameTerms {
  int64_t first_frame = 0;
  int64_t num_frames = 0;
  std::vector<double> values;  // num_frames x (1 + 2D)
  std::vector<char> used;
  double loglike = 0.0;
  std::vector<double> features;  // kPairBlock x 2D: [y, y^2]
  std::vector<double> scores;    // kPairBlock x G, then posteriors
  std::vector<double> sums;      // kPairBlock x 2D: [a, b] of each pair

  void Reset(int64_t first, int64_t count, int dim) {
    first_frame = first;
    num_frames = count;
    values.assign(count * (1 + 2 * dim), 0.0);
    used.assign(count, 0);
  }
};

// Sums over frames before they are folded into FmllrStats: beta, K and the
// weighted Grams side by side, cross[j][i (D+1) + k] = sum_t a_ti x~_tj x~_tk.
struct FmllrAccumulator::GramSums {
  int dim;
  double beta = 0.0;
  std::vector<double> k, cross;
  std::vector<double> extended, terms, scaled;  // one block: x~, [count, a, b], a_i x~

  explicit GramSums(int d) : dim(d) {
    const int64_t ext = dim + 1;
    k.assign(dim * ext, 0.0);
    cross.assign(ext * dim * ext, 0.0);
    extended.resize(kGramBlock * ext);
    terms.resize(kGramBlock * (1 + 2 * dim));
    scaled.resize(kGramBlock * dim * ext);
  }

  // Adds the first `n` gathered frames.
  void AddBlock(int n) {
    const int ext = dim + 1, stride = 1 + 2 * dim, wide = dim * ext;
    for (int r = 0; r < n; ++r) beta += terms[r * stride];
    // K (D x D+1) += b^T x~
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dim, ext, n, 1.0, &terms[1 + dim], stride,
                extended.data(), ext, 1.0, k.data(), ext);
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < dim; ++i) {
        const double a = terms[r * stride + 1 + i];
        for (int j = 0; j < ext; ++j) scaled[r * wide + i * ext + j] = a * extended[r * ext + j];
      }
    }
    // cross (D+1 x D(D+1)) += x~^T [a_1 x~, ..., a_D x~]
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ext, wide, n, 1.0, extended.data(), ext,
                scaled.data(), wide, 1.0, cross.data(), wide);
  }

  void AddTo(FmllrStats* stats) const {
    const int ext = dim + 1, wide = dim * ext;
    stats->beta += beta;
    for (size_t i = 0; i < k.size(); ++i) stats->k[i] += k[i];
    for (int i = 0; i < dim; ++i) {
      double* g = stats->g_matrix(i);
      for (int j = 0; j < ext; ++j) {
        for (int c = 0; c < ext; ++c) {
          g[j * ext + c] += 0.5 * (cross[j * wide + i * ext + c] + cross[c * wide + i * ext + j]);
        }
      }
    }
  }
};

FmllrAccumulator::FmllrAccumulator(const DiagGmmModel& model)
    : shape_(ModelShape::Of(model)), center_(model.center().begin(), model.center().end()) {
  const int dim = model.dim();
  const int64_t gaussians = model.num_gaussians();
  const int stride = model.param_cols();
  scoring_.resize(gaussians * stride);
  terms_.resize(gaussians * 2 * dim);
  for (int64_t g = 0; g < gaussians; ++g) {
    std::copy_n(model.params().row(g), stride, &scoring_[g * stride]);
    const float* u = model.means_invvars(g);
    const float* v = model.half_neg_inv_vars(g);
    for (int d = 0; d < dim; ++d) {
      // var = -1 / (2v) and mu = u var + c, so 1/var = -2v and mu/var = u - 2v c.
      const double inv_var = -2.0 * static_cast<double>(v[d]);
      terms_[g * 2 * dim + d] = inv_var;
      terms_[g * 2 * dim + dim + d] = static_cast<double>(u[d]) + inv_var * center_[d];
    }
  }
}

std::vector<FmllrAccumulator::SortedPair> FmllrAccumulator::SortPairs(
    int64_t num_frames, absl::Span<const StatsPair> pairs) {
  std::vector<SortedPair> sorted;
  if (pairs.empty()) {  // a global GMM: frames are in order already
    sorted.reserve(num_frames);
    for (int64_t t = 0; t < num_frames; ++t) {
      sorted.push_back({t / kFrameWindow, 0, static_cast<int32_t>(t), 1.0f});
    }
    return sorted;
  }
  sorted.reserve(pairs.size());
  for (const StatsPair& p : pairs) sorted.push_back({p.frame / kFrameWindow, p.target, p.frame, p.weight});
  std::stable_sort(sorted.begin(), sorted.end(), [](const SortedPair& a, const SortedPair& b) {
    return std::tie(a.window, a.state, a.frame) < std::tie(b.window, b.state, b.frame);
  });
  return sorted;
}

absl::StatusOr<double> FmllrAccumulator::Accumulate(ConstMatrixView frames,
                                                    absl::Span<const StatsPair> pairs,
                                                    FmllrStats* stats) const {
  if (stats == nullptr) return absl::InvalidArgumentError("no fMLLR statistics to add to");
  GMM_RETURN_IF_ERROR(ValidateFmllrRequest(shape_, frames, pairs, *stats));
  const std::vector<SortedPair> sorted = SortPairs(frames.rows, pairs);
  FrameTerms terms;
  GramSums sums(shape_.dim);
  double loglike = 0.0;
  for (size_t begin = 0, end = 0; begin < sorted.size(); begin = end) {
    const int64_t window = sorted[begin].window;
    while (end < sorted.size() && sorted[end].window == window) ++end;
    terms.Reset(window * kFrameWindow, std::min(kFrameWindow, frames.rows - window * kFrameWindow),
                shape_.dim);
    for (size_t first = begin, last = begin; first < end; first = last) {
      while (last < end && sorted[last].state == sorted[first].state &&
             static_cast<int64_t>(last - first) < kPairBlock) {
        ++last;
      }
      AddStateBlock(frames, &sorted[first], static_cast<int64_t>(last - first), &terms);
    }
    AddWindow(frames, terms, &sums);
    loglike += terms.loglike;
    terms.loglike = 0.0;
  }
  sums.AddTo(stats);
  return loglike;
}

// Posteriors of `count` pairs of one state (scores = [y, y^2] [u, v]^T + K in
// float64), then each pair's [a, b] = gamma^T [1/var, mu/var], added to its
// frame's terms.
void FmllrAccumulator::AddStateBlock(ConstMatrixView frames, const SortedPair* pairs,
                                     int64_t count, FrameTerms* terms) const {
  const int dim = shape_.dim, wide = 2 * dim, stride = 1 + 2 * dim;
  const int64_t g0 = shape_.state_offsets[pairs[0].state];
  const int gaussians = static_cast<int>(shape_.state_offsets[pairs[0].state + 1] - g0);
  terms->features.resize(count * wide);
  terms->scores.resize(count * gaussians);
  terms->sums.resize(count * wide);
  for (int64_t i = 0; i < count; ++i) {
    const float* x = frames.row(pairs[i].frame);
    for (int d = 0; d < dim; ++d) {
      const double y = x[d] - center_[d];
      terms->features[i * wide + d] = y;
      terms->features[i * wide + dim + d] = y * y;
    }
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(count), gaussians, wide,
              1.0, terms->features.data(), wide, &scoring_[g0 * stride + 1], stride, 0.0,
              terms->scores.data(), gaussians);
  for (int64_t i = 0; i < count; ++i) {
    double* row = &terms->scores[i * gaussians];
    double best = -std::numeric_limits<double>::infinity();
    for (int g = 0; g < gaussians; ++g) {
      row[g] += scoring_[(g0 + g) * stride];
      best = std::max(best, row[g]);
    }
    double sum = 0.0;
    for (int g = 0; g < gaussians; ++g) sum += std::exp(row[g] - best);
    const double total = best + std::log(sum), weight = pairs[i].weight;
    terms->loglike += weight * total;
    for (int g = 0; g < gaussians; ++g) row[g] = weight * std::exp(row[g] - total);
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(count), wide, gaussians,
              1.0, terms->scores.data(), gaussians, &terms_[g0 * wide], wide, 0.0,
              terms->sums.data(), wide);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t local = pairs[i].frame - terms->first_frame;
    double* values = &terms->values[local * stride];
    values[0] += pairs[i].weight;
    for (int k = 0; k < wide; ++k) values[1 + k] += terms->sums[i * wide + k];
    terms->used[local] = 1;
  }
}

// Gathers the window's used frames, kGramBlock at a time, into the Grams.
void FmllrAccumulator::AddWindow(ConstMatrixView frames, const FrameTerms& terms, GramSums* sums) {
  const int dim = sums->dim, ext = dim + 1, stride = 1 + 2 * dim;
  int n = 0;
  for (int64_t t = 0; t < terms.num_frames; ++t) {
    if (!terms.used[t]) continue;
    const float* x = frames.row(terms.first_frame + t);
    for (int d = 0; d < dim; ++d) sums->extended[n * ext + d] = x[d];
    sums->extended[n * ext + dim] = 1.0;
    std::copy_n(&terms.values[t * stride], stride, &sums->terms[n * stride]);
    if (++n == kGramBlock) {
      sums->AddBlock(n);
      n = 0;
    }
  }
  if (n > 0) sums->AddBlock(n);
}

}  // namespace gmmscore
