// ScoreUntiedOnLane (lane_scoring.h): untied windows on one lane.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_fmllr_gather.h"
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/pinned_block_pool.h"
#include "kernels/cuda/scores_blocks.h"

namespace gmmscore {
namespace {

std::vector<PlanWindow> PlanWindows(absl::Span<const ScoreWindow> jobs,
                                    absl::Span<const DeviceModel* const> resident,
                                    absl::Span<const FusionJob> fusions) {
  std::vector<PlanWindow> windows(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    windows[j] = {.model = resident[j],
                  .rows = jobs[j].features.rows,
                  .dim = static_cast<int>(jobs[j].features.cols),
                  .num_states = resident[j]->num_states,
                  .num_gaussians = resident[j]->num_gaussians,
                  .precision = jobs[j].precision,
                  .transform = jobs[j].transform,
                  .selected = DeviceSelection::Selects(jobs[j])};
  }
  for (size_t j = 0; j < jobs.size(); ++j) windows[j].halved = DeviceHalves::Encodes(jobs[j]);
  for (const FusionJob& fusion : fusions) {
    for (int w : fusion.windows) {
      windows[w].fused_only = !fusion.model_scores;
      windows[w].halved = false;  // fused from its float32 scores
    }
  }
  return windows;
}

// Packs every window's frames and each transform into lane.host_in, copies
// them in and, with transforms, runs the transform pass. Returns where the
// runs read their frames on the device.
absl::StatusOr<const float*> CopyInFrames(Lane& lane, absl::Span<const ScoreWindow> jobs,
                                          const BatchPlan& plan) {
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_in, plan.in_floats));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.features, plan.in_floats));
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ConstMatrixView& features = jobs[j].features;
    for (int64_t t = 0; t < features.rows; ++t) {
      std::memcpy(lane.host_in.data() + plan.in_offset[j] + t * features.cols, features.row(t),
                  features.cols * sizeof(float));
    }
  }
  for (const auto& [transform, offset] : plan.transforms) {
    PackTransform(*transform, lane.host_in.data() + offset);
  }
  cudaStream_t stream = lane.stream.get();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.features.data(), lane.host_in.data(),
                                           plan.in_floats * sizeof(float), cudaMemcpyHostToDevice,
                                           stream),
                           "copy features to device");
  if (plan.segments.empty()) return lane.features.data();
  const size_t count = plan.segments.size();
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.transformed, plan.frame_floats));
  GMM_RETURN_IF_ERROR(StageToDevice(plan.segments.data(), count, lane.host_segments, lane.segments, stream,
                                    "copy transform segments to device"));
  GMM_RETURN_IF_ERROR(LaunchFeatureTransforms(lane.features.data(), lane.transformed.data(),
                                              lane.features.data(), lane.segments.data(),
                                              static_cast<int>(count), plan.max_segment_values,
                                              stream));
  return lane.transformed.data();
}

// The plan's runs (one multi-model launch, or one launch each), then their
// frame totals.
absl::Status LaunchRuns(Lane& lane, absl::Span<const DeviceModel* const> resident,
                        const BatchPlan& plan, const float* frames) {
  cudaStream_t stream = lane.stream.get();
  float* out = lane.loglikes.data();
  std::vector<LoglikJob> runs;
  for (const BatchPlan::Run& run : plan.runs) {
    runs.push_back({resident[run.first], frames + plan.in_offset[run.first], run.frames,
                    out + plan.scores_offset[run.first]});
  }
  if (plan.one_launch) {
    GMM_RETURN_IF_ERROR(LaunchMultiModelLoglik(runs, lane.gemm, stream));
  } else {
    for (size_t r = 0; r < runs.size(); ++r) {
      GMM_RETURN_IF_ERROR(LaunchLoglik(*runs[r].model, plan.runs[r].algorithm, runs[r].features,
                                       runs[r].num_frames, runs[r].loglikes, lane.gemm, stream));
    }
  }
  if (!plan.frame_totals) return absl::OkStatus();
  for (size_t r = 0; r < runs.size(); ++r) {
    float* totals = out + plan.scores_floats + plan.totals_offset[plan.runs[r].first];
    GMM_RETURN_IF_ERROR(LaunchFrameTotals(runs[r].loglikes, runs[r].num_frames,
                                          runs[r].model->num_states, totals, stream));
  }
  return absl::OkStatus();
}

// Where the call's whole scores go (scores_blocks.h): blocks of `pool` where
// it has them; lane.host_out otherwise, and for calls with fusions (their
// model scores come back only where asked for beside the fused ones, and
// blocks are not measured there: FuseOnLane is left as it was).
ScoresPlacement PlaceCallScores(PinnedBlockPool* pool, const BatchPlan& plan,
                                absl::Span<const PlanWindow> windows, bool fused) {
  std::vector<int64_t> floats(windows.size());
  for (size_t j = 0; j < windows.size(); ++j) floats[j] = windows[j].rows * windows[j].num_states;
  if (pool == nullptr || fused) {
    return PlaceScores(plan, floats, 0, [] { return std::shared_ptr<float>(); });
  }
  return PlaceScores(plan, floats, pool->block_floats(), [pool] { return pool->Take(); });
}

// Queues the placement's copies back.
absl::Status CopyBack(Lane& lane, const ScoresPlacement& placed) {
  for (const ScoresCopy& copy : placed.copies) {
    float* host = copy.block < 0 ? lane.host_out.data() : placed.blocks[copy.block].get();
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host + copy.host_offset, lane.loglikes.data() + copy.device_offset,
                                             copy.count * sizeof(float), cudaMemcpyDeviceToHost,
                                             lane.stream.get()),
                             "copy scores to host");
  }
  return absl::OkStatus();
}

// The call's placement, its blocks held until the lane's stream is done
// with them: a call that fails after queuing copies into them waits for
// those here, before the blocks can go back to the pool and to another call.
class PlacementHold {
 public:
  PlacementHold(const Lane& lane, ScoresPlacement placed) : lane_(lane), placed_(std::move(placed)) {}
  ~PlacementHold() {
    if (!placed_.blocks.empty() && !synchronized_) (void)cudaStreamSynchronize(lane_.stream.get());
  }
  PlacementHold(const PlacementHold&) = delete;
  PlacementHold& operator=(const PlacementHold&) = delete;

  const ScoresPlacement& placed() const { return placed_; }
  void MarkSynchronized() { synchronized_ = true; }

 private:
  const Lane& lane_;
  const ScoresPlacement placed_;
  bool synchronized_ = false;
};

// Poisons the gathering windows' targets unless disarmed: a call that fails
// after queuing its gathering leaves their sums unknown.
class GatherGuard {
 public:
  explicit GatherGuard(absl::Span<const ScoreWindow> jobs) : jobs_(jobs) {}
  ~GatherGuard() {
    if (!armed_) return;
    for (const ScoreWindow& job : jobs_) {
      if (job.gather != nullptr) job.gather->Poison();
    }
  }
  void Arm() { armed_ = true; }
  void Disarm() { armed_ = false; }

 private:
  absl::Span<const ScoreWindow> jobs_;
  bool armed_ = false;
};

// Queues the fMLLR gathering of every window that asks for it (from its raw
// frames in lane.features and its scores in lane.loglikes), one pair of
// launches per feature dimension among them (models of one dimension: one).
absl::Status QueueGathers(Lane& lane, absl::Span<const ScoreWindow> jobs, const BatchPlan& plan,
                          GatherGuard* guard) {
  std::vector<int> gathering;
  int64_t term_values = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].gather == nullptr || jobs[j].features.rows == 0) continue;
    gathering.push_back(static_cast<int>(j));
    term_values += GatherTermValues(jobs[j].features.rows, static_cast<int>(jobs[j].features.cols));
  }
  if (gathering.empty()) return absl::OkStatus();
  std::stable_sort(gathering.begin(), gathering.end(), [&](int a, int b) {
    return jobs[a].features.cols < jobs[b].features.cols;
  });
  const size_t count = gathering.size();
  GMM_RETURN_IF_ERROR(ReserveGathers(lane, static_cast<int64_t>(count), term_values));
  int64_t terms = 0;
  for (size_t i = 0; i < count; ++i) {
    const ScoreWindow& job = jobs[gathering[i]];
    const auto* target = static_cast<const CudaFmllrGather*>(job.gather);
    FmllrGatherWindow window = target->Window(job.gather_segment);
    window.frames = lane.features.data() + plan.in_offset[gathering[i]];
    window.scores = lane.loglikes.data() + plan.scores_offset[gathering[i]];
    window.terms = lane.gather_terms.data() + terms;
    window.rows = static_cast<int>(job.features.rows);
    lane.host_gathers.data()[i] = window;
    terms += GatherTermValues(job.features.rows, static_cast<int>(job.features.cols));
  }
  cudaStream_t stream = lane.stream.get();
  guard->Arm();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.gathers.data(), lane.host_gathers.data(),
                                           count * sizeof(FmllrGatherWindow),
                                           cudaMemcpyHostToDevice, stream),
                           "copy fMLLR gathering windows to device");
  for (size_t first = 0; first < count;) {
    const int dim = static_cast<int>(jobs[gathering[first]].features.cols);
    size_t end = first;
    int max_rows = 0, max_gaussians = 1;
    while (end < count && jobs[gathering[end]].features.cols == dim) {
      const ScoreWindow& job = jobs[gathering[end]];
      max_rows = std::max(max_rows, static_cast<int>(job.features.rows));
      max_gaussians = std::max(max_gaussians, job.model->max_gaussians_per_state());
      ++end;
    }
    GMM_RETURN_IF_ERROR(LaunchFmllrGather(lane.gathers.data() + first, static_cast<int>(end - first),
                                          dim, max_rows, max_gaussians, stream));
    first = end;
  }
  return absl::OkStatus();
}

// Each window's scores (whole ones) and asked-for frame totals. Scores
// copied into a block stay there: the result holds the block and reads its
// window's part of it. Others are copied from lane.host_out.
void FillResults(const Lane& lane, absl::Span<const ScoreWindow> jobs,
                 absl::Span<const PlanWindow> windows, const BatchPlan& plan, bool frame_totals,
                 const ScoresPlacement& placed) {
  for (size_t j = 0; j < jobs.size(); ++j) {
    ScoreResult* result = jobs[j].result;
    const int64_t rows = jobs[j].features.rows;
    const int64_t states = windows[j].num_states;
    if (placed.block_of[j] >= 0) {
      const std::shared_ptr<float>& block = placed.blocks[placed.block_of[j]];
      result->loglikes = FloatMatrix::OnBlock(
          std::shared_ptr<float>(block, block.get() + placed.block_offset[j]), rows, states);
    } else if (plan.whole[j]) {
      result->loglikes.Resize(rows, states);
      if (rows > 0) {
        std::memcpy(result->loglikes.data(), lane.host_out.data() + plan.scores_offset[j],
                    rows * states * sizeof(float));
      }
    }
    if (frame_totals && (plan.whole[j] || windows[j].selected || windows[j].halved)) {
      const float* totals = lane.host_out.data() + plan.scores_floats + plan.totals_offset[j];
      result->frame_totals.assign(totals, totals + rows);
    }
  }
}

}  // namespace

absl::Status ReserveGathers(Lane& lane, int64_t windows, int64_t term_values) {
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_gathers, static_cast<size_t>(windows)));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.gathers, static_cast<size_t>(windows)));
  return EnsureCapacity(lane.gather_terms, static_cast<size_t>(term_values));
}

absl::Status ScoreUntiedOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs,
                               absl::Span<const DeviceModel* const> resident,
                               const ScoreOptions& options, absl::Span<const FusionJob> fusions,
                               bool wgmma_available, PinnedBlockPool* scores_pool) {
  const std::vector<PlanWindow> windows = PlanWindows(jobs, resident, fusions);
  // Posterior fusion weighs models by their frame totals.
  const BatchPlan plan = PlanBatch(windows, {.frame_totals = options.frame_totals || !fusions.empty(),
                                             .requested = options.algorithm,
                                             .wgmma_available = wgmma_available});
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.loglikes, plan.out_floats));
  GMM_ASSIGN_OR_RETURN(const float* frames, CopyInFrames(lane, jobs, plan));
  GMM_RETURN_IF_ERROR(LaunchRuns(lane, resident, plan, frames));
  std::vector<bool> selected(jobs.size()), halved(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    selected[j] = windows[j].selected;
    halved[j] = windows[j].halved;
  }
  GMM_RETURN_IF_ERROR(lane.selection.Queue(jobs, selected, lane.loglikes.data(),
                                           plan.scores_offset, lane.stream.get()));
  GMM_RETURN_IF_ERROR(lane.halves.Queue(jobs, halved, lane.loglikes.data(), plan.scores_offset,
                                        lane.stream.get(), scores_pool));
  PlacementHold scores(lane, PlaceCallScores(scores_pool, plan, windows, !fusions.empty()));
  // Sized for this call's copies only (HostFloats), so after the placement.
  // A growth frees the old buffer with cudaFreeHost, which waits for the
  // device's work first, this call's kernels included.
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_out, HostFloats(scores.placed())));
  GMM_RETURN_IF_ERROR(CopyBack(lane, scores.placed()));
  // After the copies back: an answer need not wait for the statistics to
  // be queued ahead of it on the stream.
  GatherGuard gather_guard(jobs);
  GMM_RETURN_IF_ERROR(QueueGathers(lane, jobs, plan, &gather_guard));
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(lane.stream.get()), "run likelihood kernels");
  scores.MarkSynchronized();
  lane.selection.Finish(jobs);
  lane.halves.Finish(jobs);
  if (!fusions.empty()) GMM_RETURN_IF_ERROR(FuseOnLane(lane, jobs, plan, fusions));
  FillResults(lane, jobs, windows, plan, options.frame_totals, scores.placed());
  // Only now: a call that fails after gathering is retried, and its frames
  // must not count twice.
  gather_guard.Disarm();
  return absl::OkStatus();
}

}  // namespace gmmscore
