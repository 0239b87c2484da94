#include "kernels/train/cpu_stats_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/core/fast_math.h"
#include "kernels/core/status_macros.h"
#include "kernels/train/host_frame_block.h"
#include "kernels/core/thread_pool.h"
#include "kernels/train/pair_segments.h"

namespace gmmscore {
namespace {

// Frames per SGEMM block: big enough for BLAS to run near its peak, small
// enough that the block's scores stay in L2 at 2048 Gaussians (1 MB).
constexpr int64_t kCpuStatsBlock = 128;
// A state's frames are split across threads only beyond this many.
constexpr int64_t kMinPairsPerRange = 4 * kCpuStatsBlock;

// A range of one segment's pairs, and the float64 sums it produced:
// per Gaussian [sum g, sum g x (D), sum g x^2 (D)].
struct Range {
  const PairSegment* segment = nullptr;
  int64_t begin = 0, end = 0;
  std::vector<double> sums;
  double loglike = 0.0;
};

// Scratch of one range's blocks (float32).
struct BlockScratch {
  std::vector<float> features;  // B x 2D: [y, y^2], y = x - centre
  std::vector<float> raw;       // B x 2D: [x, x^2]
  std::vector<float> scores;    // B x G, then posteriors
  std::vector<float> moments;   // G x 2D
  std::vector<double> refined;  // G: one frame's log-likelihoods
};

class CpuStatsBackend : public StatsBackend {
 public:
  explicit CpuStatsBackend(int num_threads) : num_threads_(num_threads), pool_(num_threads - 1, "gs-train") {}

  std::string name() const override { return "cpu"; }

  absl::Status SetModel(const DiagGmmModel& model) override {
    shape_ = ModelShape::Of(model);
    const int dim = model.dim();
    const int64_t gaussians = model.num_gaussians();
    gconsts_.resize(gaussians);
    linear_.resize(gaussians * 2 * dim);
    for (int64_t g = 0; g < gaussians; ++g) {
      gconsts_[g] = model.gconst(g);
      std::copy_n(model.means_invvars(g), 2 * dim, &linear_[g * 2 * dim]);
    }
    center_.assign(model.center().begin(), model.center().end());
    exact_.resize(gaussians * (1 + 2 * dim));
    for (int64_t g = 0; g < gaussians; ++g) {
      double* row = &exact_[g * (1 + 2 * dim)];
      const float* u = model.means_invvars(g);
      const float* v = model.half_neg_inv_vars(g);
      // K + u.y + v.y^2 = c0 + v (y - mu')^2 with mu' = u var = -u / (2v)
      // and c0 = K - v mu'^2; y - mu' = x - mu with mu = mu' + centre.
      double log_const = model.gconst(g);
      for (int d = 0; d < dim; ++d) {
        const double centred_mean = -static_cast<double>(u[d]) / (2.0 * v[d]);
        row[1 + d] = centred_mean + model.center()[d];
        row[1 + dim + d] = v[d];
        log_const -= static_cast<double>(v[d]) * centred_mean * centred_mean;
      }
      row[0] = log_const;
    }
    has_model_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) override {
    return LoadHostFrames(frames);
  }

  absl::Status Accumulate(const FrameBlock& block, absl::Span<const StatsPair> pairs,
                          GmmStats* stats) override {
    GMM_RETURN_IF_ERROR(ValidateStatsRequest(has_model_ ? &shape_ : nullptr, block.num_frames(),
                                             block.dim(), pairs, *stats));
    const FloatMatrix& frames = static_cast<const HostFrameBlock&>(block).frames();
    const PairSegments grouped = GroupPairsByTarget(pairs, block.num_frames());
    std::vector<Range> ranges = SplitIntoRanges(grouped);
    pool_.ParallelFor(static_cast<int64_t>(ranges.size()),
                      [&](int64_t i) { RunRange(frames, grouped, ranges[i]); });
    AddRanges(ranges, stats);
    stats->total_weight += grouped.total_weight;
    return absl::OkStatus();
  }

  int64_t frame_memory_budget() const override { return std::numeric_limits<int64_t>::max(); }

 private:
  int num_states() const { return shape_.num_states(); }
  int64_t StateSize(int state) const {
    return shape_.state_offsets[state + 1] - shape_.state_offsets[state];
  }

  std::vector<Range> SplitIntoRanges(const PairSegments& grouped) const {
    std::vector<Range> ranges;
    for (const PairSegment& segment : grouped.segments) {
      const int64_t count = segment.end - segment.begin;
      const int64_t pieces = std::clamp<int64_t>(count / kMinPairsPerRange, 1, num_threads_);
      for (int64_t p = 0; p < pieces; ++p) {
        Range range;
        range.segment = &segment;
        range.begin = segment.begin + count * p / pieces;
        range.end = segment.begin + count * (p + 1) / pieces;
        ranges.push_back(std::move(range));
      }
    }
    return ranges;
  }

  void RunRange(const FloatMatrix& frames, const PairSegments& grouped, Range& range) const {
    const int state = range.segment->target % num_states();
    const int64_t gaussians = StateSize(state);
    const int dim = shape_.dim;
    range.sums.assign(gaussians * (1 + 2 * dim), 0.0);
    BlockScratch scratch;
    scratch.features.resize(kCpuStatsBlock * 2 * dim);
    scratch.raw.resize(kCpuStatsBlock * 2 * dim);
    scratch.scores.resize(kCpuStatsBlock * gaussians);
    scratch.moments.resize(gaussians * 2 * dim);
    for (int64_t first = range.begin; first < range.end; first += kCpuStatsBlock) {
      const int64_t count = std::min(kCpuStatsBlock, range.end - first);
      RunBlock(frames, grouped, first, count, state, scratch, range);
    }
  }

  // One block of `count` pairs of `state`, starting at pair `first`.
  void RunBlock(const FloatMatrix& frames, const PairSegments& grouped, int64_t first,
                int64_t count, int state, BlockScratch& s, Range& range) const {
    const int dim = shape_.dim;
    const int64_t g0 = shape_.state_offsets[state];
    const int64_t gaussians = StateSize(state);
    for (int64_t i = 0; i < count; ++i) {
      const float* x = frames.row(grouped.frames[first + i]);
      float* row = &s.features[i * 2 * dim];
      float* raw = &s.raw[i * 2 * dim];
      for (int d = 0; d < dim; ++d) {
        const float y = x[d] - center_[d];
        row[d] = y;
        row[dim + d] = y * y;
        raw[d] = x[d];
        raw[dim + d] = x[d] * x[d];
      }
    }
    // scores (count x G) = [y, y^2] (count x 2D) * [u, v]^T (2D x G)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(count),
                static_cast<int>(gaussians), 2 * dim, 1.0f, s.features.data(), 2 * dim,
                &linear_[g0 * 2 * dim], 2 * dim, 0.0f, s.scores.data(), static_cast<int>(gaussians));
    const int64_t stride = 1 + 2 * dim;
    for (int64_t i = 0; i < count; ++i) {
      float* row = &s.scores[i * gaussians];
      for (int64_t g = 0; g < gaussians; ++g) row[g] += gconsts_[g0 + g];
      const double best = Refine(frames.row(grouped.frames[first + i]), g0, gaussians, row, s.refined);
      for (int64_t g = 0; g < gaussians; ++g) row[g] = static_cast<float>(s.refined[g] - best);
      for (int64_t g = 0; g < gaussians; ++g) row[g] = cpu_internal::FastExp(row[g]);  // vectorised
      double sum = 0.0;
      for (int64_t g = 0; g < gaussians; ++g) sum += row[g];
      const double weight = grouped.weights[first + i];
      range.loglike += weight * (best + std::log(sum));
      const float scale = static_cast<float>(weight / sum);
      for (int64_t g = 0; g < gaussians; ++g) {
        row[g] *= scale;
        range.sums[g * stride] += row[g];
      }
    }
    // moments (G x 2D) = posteriors^T (G x count) * [x, x^2] (count x 2D).
    // Raw, not centred: sum g x^2 is then a sum of positive terms, exact to
    // float32 rounding even where x is near 0 and the centre is not.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(gaussians), 2 * dim,
                static_cast<int>(count), 1.0f, s.scores.data(), static_cast<int>(gaussians),
                s.raw.data(), 2 * dim, 0.0f, s.moments.data(), 2 * dim);
    for (int64_t g = 0; g < gaussians; ++g) {
      double* sums = &range.sums[g * stride + 1];
      const float* moments = &s.moments[g * 2 * dim];
      for (int k = 0; k < 2 * dim; ++k) sums[k] += moments[k];
    }
  }

  // The expanded form K + u.y + v.y^2 loses to cancellation in float32 about
  // eps * (|K| + |u.y| + |v.y^2|), which is 1e-4 nats and more for frames
  // far from the centre. The Gaussians that matter for a frame are those
  // within kRefineMargin nats of its best; their log-likelihoods are
  // recomputed in float64 around each Gaussian's own mean (no cancellation),
  // so posteriors carry float32 error only where they are below e^-20.
  // Writes the log-likelihoods into `refined` (G) and returns the best.
  double Refine(const float* x, int64_t g0, int64_t gaussians, const float* scores,
                std::vector<double>& refined) const {
    constexpr float kRefineMargin = 20.0f;
    const int dim = shape_.dim;
    float rough_best = -std::numeric_limits<float>::infinity();
    for (int64_t g = 0; g < gaussians; ++g) rough_best = std::max(rough_best, scores[g]);
    refined.resize(gaussians);
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t g = 0; g < gaussians; ++g) {
      if (scores[g] < rough_best - kRefineMargin) {
        refined[g] = scores[g];
        continue;
      }
      const double* exact = &exact_[(g0 + g) * (1 + 2 * dim)];
      double sum = exact[0];
      for (int d = 0; d < dim; ++d) {
        const double diff = x[d] - exact[1 + d];
        sum += exact[1 + dim + d] * diff * diff;
      }
      refined[g] = sum;
      best = std::max(best, sum);
    }
    return best;
  }

  // Adds the ranges' sums to *stats in range order (deterministic).
  void AddRanges(const std::vector<Range>& ranges, GmmStats* stats) const {
    const int dim = shape_.dim;
    const int64_t stride = 1 + 2 * dim;
    for (const Range& range : ranges) {
      const int set = range.segment->target / num_states();
      const int state = range.segment->target % num_states();
      const int64_t row0 = set * stats->num_gaussians() + shape_.state_offsets[state];
      for (int64_t g = 0; g < StateSize(state); ++g) {
        const double* sums = &range.sums[g * stride];
        AddStatsRow(sums[0], sums + 1, sums + 1 + dim, row0 + g, stats);
      }
      stats->total_loglike += range.loglike;
    }
  }

  const int num_threads_;
  ThreadPool pool_;
  bool has_model_ = false;
  ModelShape shape_;
  std::vector<float> gconsts_;
  std::vector<float> linear_;  // G x 2D: [u, v] per Gaussian
  std::vector<float> center_;
  // Per Gaussian, float64: [K - sum v mu'^2, mu (D), v (D)], so that
  // loglik = row[0] + sum_d v_d (x_d - mu_d)^2 (Refine).
  std::vector<double> exact_;
};

}  // namespace

std::unique_ptr<StatsBackend> CreateCpuStatsBackend(const CpuStatsOptions& options) {
  // Our threads call BLAS; OpenBLAS's own threads would only oversubscribe.
  static std::once_flag single_threaded_blas;
  std::call_once(single_threaded_blas, [] { openblas_set_num_threads(1); });
  int num_threads = options.num_threads;
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  return std::make_unique<CpuStatsBackend>(std::max(num_threads, 1));
}

}  // namespace gmmscore
