#include "kernels/cuda/cuda_backend.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_fmllr_gather.h"
#include "kernels/cuda/cuda_models.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/device_halves.h"
#include "kernels/cuda/device_selection.h"
#include "kernels/cuda/fusion_launch.h"
#include "kernels/cuda/lane_pool.h"
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/lane_warm_up.h"
#include "kernels/cuda/pinned_block_pool.h"

namespace gmmscore {
namespace {

// Concurrent Score calls per device: enough for copies in, a kernel and
// copies out of different batches to overlap.
constexpr int kLanes = 4;

// Pinned blocks for dense scores (pinned_block_pool.h): 41 chunks of 10
// frames of a 5000-state model a block, so a 2048-frame batch is five
// copies; a window larger than a block (a 100-frame chunk of 21000 states)
// is copied into its result as before.
constexpr int64_t kScoresBlockBytes = int64_t{8} << 20;

// A call's windows sorted by kind (CudaModelOf), each with its resident
// model, and its fusions renumbered into the untied windows.
struct SortedWindows {
  std::vector<ScoreWindow> untied, tied;
  std::vector<const DeviceModel*> untied_resident;
  std::vector<const TiedMixtureDevice*> tied_resident;
  std::vector<int> untied_index;  // per window of the call: its index in `untied`, or -1
  int64_t untied_frames = 0, tied_frames = 0;
  std::vector<FusionJob> untied_fusions;
};

class CudaBackend : public ScoringBackend {
 public:
  CudaBackend(int device, const CudaBackendOptions& options) : device_(device), options_(options) {}

  absl::Status Init() {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), absl::StrCat("select CUDA device ", device_));
    // Waits for a lane's copies and kernels sleep instead of spinning: in
    // the daemon the scheduler workers share the host's cores with gRPC, and
    // a spinning wait burns a core for as long as the GPU is busy (the
    // default heuristic spins whenever there are fewer contexts than cores).
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync),
                             "make CUDA waits block");
    GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
    wgmma_available_ = info.has_wgmma();
    GMM_ASSIGN_OR_RETURN(lanes_, LanePool::Create(device_, kLanes));
    if (const int64_t blocks = options_.pinned_scores_bytes / kScoresBlockBytes; blocks > 0) {
      scores_pool_ = PinnedBlockPool::Create(kScoresBlockBytes, blocks, PinnedBlockPool::CudaPinned(),
                                             options_.pinned_scores_at_start ? blocks : 0);
    }
    take_channel_ = std::make_shared<FmllrTakeChannel>();
    take_channel_->device = device_;
    GMM_ASSIGN_OR_RETURN(take_channel_->stream, CudaStream::Create());
    return absl::OkStatus();
  }

  std::string name() const override { return absl::StrCat("cuda:", device_); }
  int concurrent_calls() const override { return kLanes; }
  PinnedScoresStats pinned_scores() const override {
    if (scores_pool_ == nullptr) return {};
    const PinnedBlockPool::Stats stats = scores_pool_->stats();
    return {.held_bytes = stats.blocks * kScoresBlockBytes,
            .in_use_bytes = stats.in_use * kScoresBlockBytes,
            .refusals = stats.refused};
  }
  // As PrepareResults decides: untied windows the device selects for.
  bool ReturnsSelected(const PreparedModel& model, const StateSelection& select) const override {
    return CudaModelOf(model).kind == CudaModel::Kind::kUntied &&
           DeviceSelection::Selects(select, model.num_states());
  }

  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) override {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    GMM_ASSIGN_OR_RETURN(DeviceModel resident, DeviceModel::Upload(*model));
    return std::make_shared<CudaPreparedModel>(std::move(model), std::move(resident), device_);
  }

  absl::StatusOr<std::shared_ptr<const PreparedModel>> PrepareTied(
      std::shared_ptr<const TiedMixtureModel> model) override {
    if (model == nullptr) return absl::InvalidArgumentError("null model");
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    GMM_ASSIGN_OR_RETURN(TiedMixtureDevice resident, TiedMixtureDevice::Upload(*model));
    return std::make_shared<CudaTiedPreparedModel>(std::move(model), std::move(resident), device_);
  }

  absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> CreateFmllrGather(
      const PreparedModel& model, const PosteriorPolicy& policy) override {
    const CudaModel cuda = CudaModelOf(model);
    if (cuda.kind == CudaModel::Kind::kForeign || cuda.device != device_) {
      return absl::InvalidArgumentError("model was not prepared by this CUDA backend");
    }
    if (cuda.kind == CudaModel::Kind::kTied) {
      return absl::FailedPreconditionError(
          "fMLLR statistics are gathered for models of their own Gaussians per state, not "
          "tied-mixture ones");
    }
    GMM_ASSIGN_OR_RETURN(std::unique_ptr<CudaFmllrGather> target,
                         CudaFmllrGather::Create(*cuda.untied, model.max_gaussians_per_state(),
                                                 policy, take_channel_));
    return std::unique_ptr<FmllrGatherTarget>(std::move(target));
  }

  bool warms_up() const override { return true; }
  // Each lane in turn (the others go on scoring), WarmLane on it, its
  // adapting calls gathering into one target made for the warm-up (where
  // the model's shape is one the device gathers for). The target's sums go
  // back to the take channel's free buffers, ready for the first stream.
  absl::Status WarmUp(const PreparedModel& model, const WarmUpShape& shape) override {
    const CudaModel cuda = CudaModelOf(model);
    if (cuda.kind == CudaModel::Kind::kForeign || cuda.device != device_) {
      return absl::InvalidArgumentError("model was not prepared by this CUDA backend");
    }
    if (shape.frames < 1 || shape.window_frames < 1) {
      return absl::InvalidArgumentError(absl::StrCat("a warm-up needs frames (", shape.frames,
                                                     ") and window frames (", shape.window_frames, ") of 1 or more"));
    }
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    std::unique_ptr<FmllrGatherTarget> gather;
    if (cuda.kind == CudaModel::Kind::kUntied) {
      absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> target = CreateFmllrGather(model, PosteriorPolicy{});
      if (target.ok()) {
        gather = *std::move(target);
      } else if (target.status().code() != absl::StatusCode::kUnimplemented) {
        return target.status();
      }
    }
    const LaneWarmUpTools tools{
        .wgmma_available = wgmma_available_, .scores_pool = scores_pool_.get(), .gather = gather.get()};
    for (int i = 0; i < lanes_->size(); ++i) {
      LaneLease lane = lanes_->AcquireLane(i);
      GMM_RETURN_IF_ERROR(WarmLane(*lane, model, cuda, shape, tools));
      lane.MarkIdle();  // WarmLane synchronised it
    }
    return absl::OkStatus();
  }

  absl::Status Score(const PreparedModel& prepared, ConstMatrixView features,
                     const ScoreOptions& options, ScoreResult* result) override {
    const ScoreWindow job{&prepared, features, result};
    return ScoreBatch(absl::MakeConstSpan(&job, 1), options);
  }

  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    return ScoreWindows(jobs, {}, options);
  }

  // Fusions of untied models of this backend (at most
  // kMaxDeviceFusionModels each) are fused on the device (FuseOnLane);
  // anything else goes the host way (the base class).
  absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs,
                               absl::Span<const FusionJob> fusions,
                               const ScoreOptions& options) override {
    GMM_RETURN_IF_ERROR(ValidateFusionJobs(jobs, fusions));
    for (const FusionJob& fusion : fusions) {
      bool on_device = fusion.windows.size() <= static_cast<size_t>(kMaxDeviceFusionModels);
      for (int w : fusion.windows) {
        on_device &= CudaModelOf(*jobs[w].model).kind == CudaModel::Kind::kUntied;
      }
      if (!on_device) {
        // Fused on the host after this backend's ScoreBatch: a failure after
        // that gathered leaves the windows to be scored again.
        absl::Status fused = ScoringBackend::ScoreFusedBatch(jobs, fusions, options);
        if (!fused.ok()) {
          for (const ScoreWindow& job : jobs) {
            if (job.gather != nullptr) job.gather->Poison();
          }
        }
        return fused;
      }
    }
    return ScoreWindows(jobs, fusions, options);
  }

 private:
  // Checks every window (this backend's model on this device, a result, its
  // shape and values) and sorts it by kind.
  absl::StatusOr<SortedWindows> SortWindows(absl::Span<const ScoreWindow> jobs,
                                            absl::Span<const FusionJob> fusions) const {
    SortedWindows sorted;
    sorted.untied_index.assign(jobs.size(), -1);
    for (size_t j = 0; j < jobs.size(); ++j) {
      const ScoreWindow& job = jobs[j];
      const CudaModel cuda = CudaModelOf(*job.model);
      if (cuda.kind == CudaModel::Kind::kForeign || cuda.device != device_ ||
          job.result == nullptr) {
        return absl::InvalidArgumentError(
            "model was not prepared by this CUDA backend, or no result");
      }
      GMM_RETURN_IF_ERROR(ValidateWindowShape(job));
      GMM_RETURN_IF_ERROR(ValidateFeatures(*job.model, job.features));
      GMM_RETURN_IF_ERROR(ValidateGather(job, cuda));
      switch (cuda.kind) {
        case CudaModel::Kind::kUntied:
          sorted.untied_index[j] = static_cast<int>(sorted.untied.size());
          sorted.untied.push_back(job);
          sorted.untied_resident.push_back(cuda.untied);
          sorted.untied_frames += job.features.rows;
          break;
        case CudaModel::Kind::kTied:
          sorted.tied.push_back(job);
          sorted.tied_resident.push_back(cuda.tied);
          sorted.tied_frames += job.features.rows;
          break;
        case CudaModel::Kind::kForeign:
          break;
      }
    }
    sorted.untied_fusions.assign(fusions.begin(), fusions.end());
    for (FusionJob& fusion : sorted.untied_fusions) {
      for (int& w : fusion.windows) w = sorted.untied_index[w];
    }
    return sorted;
  }

  // A gathering window names a target this backend made for its model, and
  // a segment of it.
  static absl::Status ValidateGather(const ScoreWindow& job, const CudaModel& cuda) {
    if (job.gather == nullptr) return absl::OkStatus();
    const auto* target = dynamic_cast<const CudaFmllrGather*>(job.gather);
    if (target == nullptr || cuda.kind != CudaModel::Kind::kUntied ||
        target->model() != cuda.untied || target->device() != cuda.device) {
      return absl::InvalidArgumentError(
          "a window gathers fMLLR statistics into a target made for another model or backend");
    }
    if (job.gather_segment < 0 || job.gather_segment >= FmllrGatherTarget::kSegments) {
      return absl::InvalidArgumentError(absl::StrCat("fMLLR gathering segment ", job.gather_segment,
                                                     " is not one of the target's ",
                                                     FmllrGatherTarget::kSegments));
    }
    return absl::OkStatus();
  }

  // Resets the result of every untied window and sizes those of tied ones
  // (their lane fills them in place). Untied windows whose scores come back
  // whole are sized by ScoreUntiedOnLane, which may put them on a pinned
  // block; windows fused only, and those whose states are selected or
  // encoded in half precision on the device, are never filled whole:
  // sizing them would allocate a T x S matrix each (36 MB for 18 chunks of
  // 10 models) for nothing.
  static void PrepareResults(absl::Span<const ScoreWindow> jobs,
                             absl::Span<const FusionJob> fusions, const SortedWindows& sorted) {
    std::vector<bool> fused_only(jobs.size(), false), fused(jobs.size(), false);
    for (const FusionJob& fusion : fusions) {
      for (int w : fusion.windows) {
        fused_only[w] = !fusion.model_scores;
        fused[w] = true;
      }
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      const bool untied = sorted.untied_index[j] >= 0;
      const bool selected = untied && DeviceSelection::Selects(jobs[j]);
      const bool halved = untied && !fused[j] && DeviceHalves::Encodes(jobs[j]);
      if (untied) {  // fused windows are untied ones
        *jobs[j].result = ScoreResult{};
        const int64_t states = jobs[j].model->num_states();
        if (selected && jobs[j].features.rows == 0) jobs[j].result->sparse = SparseScores{.num_states = states};
        if (halved && jobs[j].features.rows == 0) jobs[j].result->half = HalfScores{.num_states = states};
        // No lane sees a call's empty windows when all its untied windows are.
        const bool whole = !fused_only[j] && !selected && !halved;
        if (whole && jobs[j].features.rows == 0) jobs[j].result->loglikes.Resize(0, states);
        continue;
      }
      jobs[j].result->loglikes.Resize(jobs[j].features.rows, jobs[j].model->num_states());
      jobs[j].result->frame_totals.clear();
      jobs[j].result->sparse.reset();
      jobs[j].result->half.reset();
    }
  }

  // Untied windows (with the fusions, all of untied windows) then tied ones,
  // on one leased lane.
  absl::Status ScoreWindows(absl::Span<const ScoreWindow> jobs,
                            absl::Span<const FusionJob> fusions, const ScoreOptions& options) {
    GMM_ASSIGN_OR_RETURN(const SortedWindows sorted, SortWindows(jobs, fusions));
    PrepareResults(jobs, fusions, sorted);
    if (sorted.untied_frames == 0) {
      // Only empty windows can be fused here (fusions are of untied ones).
      for (const FusionJob& fusion : fusions) GMM_RETURN_IF_ERROR(FuseEmpty(jobs, fusion));
    }
    if (sorted.untied_frames + sorted.tied_frames == 0) return absl::OkStatus();
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    LaneLease lane = lanes_->Acquire();
    if (sorted.untied_frames > 0) {
      GMM_RETURN_IF_ERROR(ScoreUntiedOnLane(*lane, sorted.untied, sorted.untied_resident, options,
                                            sorted.untied_fusions, wgmma_available_,
                                            scores_pool_.get()));
    }
    if (sorted.tied_frames > 0) {
      if (absl::Status tied = ScoreTiedOnLane(*lane, sorted.tied, sorted.tied_resident, options);
          !tied.ok()) {
        // The untied windows' statistics are in, but the call fails and its
        // windows will be scored again: their sums would count twice.
        for (const ScoreWindow& job : sorted.untied) {
          if (job.gather != nullptr) job.gather->Poison();
        }
        return tied;
      }
    }
    lane.MarkIdle();  // both synchronised the stream before returning OK
    return absl::OkStatus();
  }

  const int device_;
  const CudaBackendOptions options_;
  bool wgmma_available_ = false;  // fixed after Init()
  std::shared_ptr<PinnedBlockPool> scores_pool_;  // fixed after Init(); null when off
  std::unique_ptr<LanePool> lanes_;  // fixed after Init()
  std::shared_ptr<FmllrTakeChannel> take_channel_;  // fixed after Init()
};

}  // namespace

absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateCudaBackend(int device,
                                                                  const CudaBackendOptions& options) {
  const int count = CudaDeviceCount();
  if (device < 0 || device >= count) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " is not available (", count, " device(s) found)"));
  }
  auto backend = std::make_unique<CudaBackend>(device, options);
  GMM_RETURN_IF_ERROR(backend->Init());
  return backend;
}

}  // namespace gmmscore
