#include "kernels/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kernels/core/status_macros.h"
#include "kernels/cpu/cpu_policy.h"
#include "kernels/cpu/internal/log_sum_exp.h"
#include "kernels/core/thread_pool.h"
#include "kernels/cpu/tied_mixture_scorer.h"

namespace gmmscore {
namespace {

// States [first_state, end_state), i.e. Gaussians [first_gaussian, end_gaussian).
struct Chunk {
  int first_state;
  int end_state;
  int64_t first_gaussian;
  int64_t end_gaussian;
};

// Packs whole states, in order, into chunks of at most `target` Gaussians
// (one state per chunk where a state alone has more).
std::vector<Chunk> PlanChunks(const DiagGmmModel& model, int64_t target) {
  const auto offsets = model.state_offsets();
  std::vector<Chunk> chunks;
  int first = 0;
  while (first < model.num_states()) {
    int end = first + 1;
    while (end < model.num_states() && offsets[end + 1] - offsets[first] <= target) ++end;
    chunks.push_back({first, end, offsets[first], offsets[end]});
    first = end;
  }
  return chunks;
}

int64_t ChunkTarget(const DiagGmmModel& model, int num_threads) {
  const int64_t even_share = model.num_gaussians() / (cpu_policy::kChunksPerThread * num_threads);
  return std::clamp(even_share, cpu_policy::kMinChunkGaussians, cpu_policy::kMaxChunkGaussians);
}

class CpuPreparedModel final : public PreparedModel {
 public:
  CpuPreparedModel(std::shared_ptr<const DiagGmmModel> model, std::vector<Chunk> chunks)
      : PreparedModel(std::move(model)), chunks_(std::move(chunks)) {}

  int64_t device_bytes() const override { return 0; }
  const std::vector<Chunk>& chunks() const { return chunks_; }

 private:
  const std::vector<Chunk> chunks_;
};

// A tied-mixture model: scored by TiedMixtureCpuScorer on the backend's pool
// (the scorer itself gets no threads).
class CpuTiedPreparedModel final : public PreparedModel {
 public:
  explicit CpuTiedPreparedModel(std::shared_ptr<const TiedMixtureModel> model)
      : PreparedModel(model), scorer_(std::move(model), {.num_threads = 1}) {}

  int64_t device_bytes() const override { return 0; }
  const TiedMixtureCpuScorer& scorer() const { return scorer_; }

 private:
  const TiedMixtureCpuScorer scorer_;
};

// Rows [1, y, y^2] with y = x - centre: the GEMM operand that meets [K, u, v].
std::vector<float> ExpandFeatures(const DiagGmmModel& model, ConstMatrixView features) {
  const int dim = model.dim();
  const int cols = model.param_cols();
  const auto center = model.center();
  std::vector<float> expanded(static_cast<size_t>(features.rows * cols));
  for (int64_t t = 0; t < features.rows; ++t) {
    const float* x = features.row(t);
    float* row = expanded.data() + t * cols;
    row[0] = 1.0f;
    for (int d = 0; d < dim; ++d) {
      const float y = x[d] - center[d];
      row[1 + d] = y;
      row[1 + dim + d] = y * y;
    }
  }
  return expanded;
}

// Per-thread working memory, grown to the largest task seen and then reused,
// so steady-state scoring does not allocate.
struct TaskScratch {
  std::vector<float> scores;    // Gaussians x frames (row stride padded)
  std::vector<float> loglikes;  // states x frames
};

TaskScratch& ThreadScratch(int64_t score_floats, int64_t loglike_floats) {
  thread_local TaskScratch scratch;
  if (static_cast<int64_t>(scratch.scores.size()) < score_floats) {
    scratch.scores.resize(score_floats);
  }
  if (static_cast<int64_t>(scratch.loglikes.size()) < loglike_floats) {
    scratch.loglikes.resize(loglike_floats);
  }
  return scratch;
}

// Log-likelihoods of the chunk's states for frames [first_frame,
// first_frame + frames), written into `loglikes` (T x S).
void ScoreChunkBlock(cpu_internal::SimdLevel simd, const DiagGmmModel& model, const Chunk& chunk,
                     const float* expanded, int64_t first_frame, int64_t frames,
                     FloatMatrix& loglikes) {
  const int cols = model.param_cols();
  const int64_t gaussians = chunk.end_gaussian - chunk.first_gaussian;
  const int num_states = chunk.end_state - chunk.first_state;
  const int64_t stride = (frames + cpu_policy::kScratchRowAlign - 1) /
                         cpu_policy::kScratchRowAlign * cpu_policy::kScratchRowAlign;
  TaskScratch& scratch = ThreadScratch(gaussians * stride, num_states * frames);
  float* scores = scratch.scores.data();
  const float* params = model.params().row(chunk.first_gaussian);
  const float* block = expanded + first_frame * cols;
  // scores (Gaussians x frames) = params (Gaussians x cols) * block^T.
  if (frames == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, gaussians, cols, 1.0f, params, cols, block, 1, 0.0f,
                scores, stride);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, gaussians, frames, cols, 1.0f, params,
                cols, block, cols, 0.0f, scores, stride);
  }
  // Log-sum-exp into a states x frames tile, then transpose it into the
  // output: writing the output a column at a time would touch a page per
  // frame for every state.
  const auto offsets = model.state_offsets();
  float* tile = scratch.loglikes.data();
  for (int i = 0; i < num_states; ++i) {
    const int s = chunk.first_state + i;
    cpu_internal::StateLogSumExp(simd, scores + (offsets[s] - chunk.first_gaussian) * stride,
                                 stride, model.num_gaussians_in_state(s), frames, tile + i * frames,
                                 1);
  }
  for (int64_t t = 0; t < frames; ++t) {
    float* out = loglikes.row(first_frame + t) + chunk.first_state;
    for (int i = 0; i < num_states; ++i) out[i] = tile[i * frames + t];
  }
}

class CpuBackend final : public ScoringBackend {
 public:
  explicit CpuBackend(int num_threads)
      : num_threads_(num_threads), simd_(cpu_internal::DetectSimdLevel()), pool_(num_threads - 1, "gs-cpu") {}

  std::string name() const override { return "cpu"; }

  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) override {
    if (model == nullptr) return absl::InvalidArgumentError("null model");
    std::vector<Chunk> chunks = PlanChunks(*model, ChunkTarget(*model, num_threads_));
    return std::make_shared<const CpuPreparedModel>(std::move(model), std::move(chunks));
  }

  absl::StatusOr<std::shared_ptr<const PreparedModel>> PrepareTied(
      std::shared_ptr<const TiedMixtureModel> model) override {
    if (model == nullptr) return absl::InvalidArgumentError("null model");
    return std::make_shared<const CpuTiedPreparedModel>(std::move(model));
  }

  absl::Status Score(const PreparedModel& prepared, ConstMatrixView features,
                     const ScoreOptions& options, ScoreResult* result) override {
    if (result == nullptr) return absl::InvalidArgumentError("null result");
    result->sparse.reset();
    result->half.reset();
    if (prepared.tied()) return ScoreTied(prepared, features, options, result);
    const DiagGmmModel& model = prepared.model();
    GMM_RETURN_IF_ERROR(ValidateFeatures(model, features));
    const auto* cpu_prepared = dynamic_cast<const CpuPreparedModel*>(&prepared);
    if (cpu_prepared == nullptr) {
      return absl::InvalidArgumentError("model was not prepared by the cpu backend");
    }
    const int64_t frames = features.rows;
    const int64_t num_states = model.num_states();
    result->loglikes.Resize(frames, num_states);
    result->frame_totals.clear();
    if (frames == 0) return absl::OkStatus();

    const std::vector<float> expanded = ExpandFeatures(model, features);
    const std::vector<Chunk>& chunks = cpu_prepared->chunks();
    const int64_t blocks = (frames + cpu_policy::kFramesPerBlock - 1) / cpu_policy::kFramesPerBlock;
    pool_.ParallelFor(static_cast<int64_t>(chunks.size()) * blocks, [&](int64_t task) {
      const int64_t first_frame = (task % blocks) * cpu_policy::kFramesPerBlock;
      ScoreChunkBlock(simd_, model, chunks[task / blocks], expanded.data(), first_frame,
                      std::min(cpu_policy::kFramesPerBlock, frames - first_frame),
                      result->loglikes);
    });

    if (options.frame_totals) FillFrameTotals(result);
    return absl::OkStatus();
  }

 private:
  absl::Status ScoreTied(const PreparedModel& prepared, ConstMatrixView features,
                         const ScoreOptions& options, ScoreResult* result) {
    GMM_RETURN_IF_ERROR(ValidateFeatures(prepared, features));
    const auto* tied = dynamic_cast<const CpuTiedPreparedModel*>(&prepared);
    if (tied == nullptr) return absl::InvalidArgumentError("model was not prepared by the cpu backend");
    result->frame_totals.clear();
    GMM_RETURN_IF_ERROR(tied->scorer().Score(features, &result->loglikes, &pool_));
    if (options.frame_totals && features.rows > 0) FillFrameTotals(result);
    return absl::OkStatus();
  }

  // result->frame_totals from result->loglikes (T x S, T > 0).
  void FillFrameTotals(ScoreResult* result) {
    const int64_t frames = result->loglikes.rows();
    const int64_t num_states = result->loglikes.cols();
    result->frame_totals.resize(frames);
    constexpr int64_t kGroup = cpu_policy::kFramesPerTotalsTask;
    pool_.ParallelFor((frames + kGroup - 1) / kGroup, [&](int64_t group) {
      const int64_t end = std::min(frames, (group + 1) * kGroup);
      for (int64_t t = group * kGroup; t < end; ++t) {
        result->frame_totals[t] = cpu_internal::FrameLogSumExp(simd_, result->loglikes.row(t), num_states);
      }
    });
  }

  const int num_threads_;
  const cpu_internal::SimdLevel simd_;
  ThreadPool pool_;
};

}  // namespace

std::unique_ptr<ScoringBackend> CreateCpuBackend(const CpuBackendOptions& options) {
  // Our threads call BLAS; OpenBLAS's own threads would only oversubscribe.
  static std::once_flag single_threaded_blas;
  std::call_once(single_threaded_blas, [] { openblas_set_num_threads(1); });
  int num_threads = options.num_threads;
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  return std::make_unique<CpuBackend>(std::max(num_threads, 1));
}

}  // namespace gmmscore
