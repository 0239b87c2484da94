#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/device_selection.h"
#include "kernels/cuda/feature_transform_launch.h"
#include "kernels/cuda/fusion_launch.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/tied_mixture_device.h"
#include "kernels/cuda/wgmma_loglik_launch.h"

namespace gmmscore {
namespace {

// Concurrent Score calls per device: enough for copies in, a kernel and
// copies out of different batches to overlap.
constexpr int kLanes = 4;

class CudaPreparedModel : public PreparedModel {
 public:
  CudaPreparedModel(std::shared_ptr<const DiagGmmModel> model, DeviceModel resident, int device)
      : PreparedModel(std::move(model)), resident_(std::move(resident)), device_(device) {}
  int64_t device_bytes() const override { return resident_.bytes(); }
  const DeviceModel& resident() const { return resident_; }
  int device() const { return device_; }

 private:
  DeviceModel resident_;
  const int device_;
};

// A tied-mixture model resident on the device (tied_mixture_device.h).
class CudaTiedPreparedModel : public PreparedModel {
 public:
  CudaTiedPreparedModel(std::shared_ptr<const TiedMixtureModel> model, TiedMixtureDevice resident, int device)
      : PreparedModel(std::move(model)), resident_(std::move(resident)), device_(device) {}
  int64_t device_bytes() const override { return resident_.bytes(); }
  const TiedMixtureDevice& resident() const { return resident_; }
  int device() const { return device_; }

 private:
  TiedMixtureDevice resident_;
  const int device_;
};

// One stream's worth of everything a Score call needs.
struct Lane {
  CudaStream stream;
  CublasHandle cublas;
  LoglikWorkspace gemm;
  TiedMixtureWorkspace tied;
  PinnedBuffer<float> host_in;   // every window's frames, then the packed transforms
  PinnedBuffer<float> host_out;
  DeviceBuffer<float> features;  // a copy of host_in
  DeviceBuffer<float> loglikes;  // T x S, then T frame totals
  // Windows with a speaker transform: their frames transformed on the device
  // into `transformed` (same offsets as in `features`).
  PinnedBuffer<TransformSegment> host_segments;
  DeviceBuffer<TransformSegment> segments;
  DeviceBuffer<float> transformed;
  // Fusion on the device (FuseOnLane): segments, model row pointers and log
  // weights in; fused scores, fused frame totals and per-frame winners out.
  PinnedBuffer<char> fusion_host_in;
  DeviceBuffer<char> fusion_in;
  PinnedBuffer<float> fusion_host_out;
  DeviceBuffer<float> fusion_out;
  // Windows asking for their top_k states: selected on the device.
  DeviceSelection selection;
};

// Where ScoreOnLane put each window's scores and totals in lane.loglikes.
struct OutputLayout {
  std::vector<int64_t> scores;  // per window: its first score
  std::vector<int64_t> totals;  // per window: its first frame total, after all scores
  int64_t totals_start = 0;     // floats of scores before the totals
  int64_t total_frames = 0;
};

class CudaBackend : public ScoringBackend {
 public:
  explicit CudaBackend(int device) : device_(device) {}

  absl::Status Init() {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), absl::StrCat("select CUDA device ", device_));
    // Waits for a lane's copies and kernels sleep instead of spinning: in
    // the daemon the scheduler workers share the host's cores with gRPC, and
    // a spinning wait burns a core for as long as the GPU is busy (the
    // default heuristic spins whenever there are fewer contexts than cores).
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync),
                             "make CUDA waits block");
    int major = 0, minor = 0;
    GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_),
                             "compute capability");
    GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_),
                             "compute capability");
    wgmma_available_ = major == 9 && minor == 0;  // the wgmma kernel is sm_90a code only
    lanes_.resize(kLanes);
    for (Lane& lane : lanes_) {
      GMM_ASSIGN_OR_RETURN(lane.stream, CudaStream::Create());
      GMM_ASSIGN_OR_RETURN(lane.cublas, CublasHandle::Create());
      // FP32 arithmetic as written: no TF32 tensor-core shortcut in SGEMM.
      GMM_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(lane.cublas.get(), CUBLAS_DEFAULT_MATH),
                                 "set cuBLAS math mode");
      lane.gemm.cublas = lane.cublas.get();
      lane.tied.cublas = lane.cublas.get();
      free_lanes_.push_back(&lane);
    }
    return absl::OkStatus();
  }

  ~CudaBackend() override {
    cudaSetDevice(device_);
    for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream.get());
  }

  std::string name() const override { return absl::StrCat("cuda:", device_); }

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
  absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs, absl::Span<const FusionJob> fusions,
                               const ScoreOptions& options) override {
    GMM_RETURN_IF_ERROR(ValidateFusionJobs(jobs, fusions));
    for (const FusionJob& fusion : fusions) {
      bool on_device = fusion.windows.size() <= static_cast<size_t>(kMaxDeviceFusionModels);
      for (int w : fusion.windows) on_device &= dynamic_cast<const CudaPreparedModel*>(jobs[w].model) != nullptr;
      if (!on_device) return ScoringBackend::ScoreFusedBatch(jobs, fusions, options);
    }
    return ScoreWindows(jobs, fusions, options);
  }

 private:
  // Untied windows go through ScoreOnLane (which also runs the fusions, all
  // of untied windows), tied ones through ScoreTiedOnLane, on the same lane,
  // one after the other.
  absl::Status ScoreWindows(absl::Span<const ScoreWindow> jobs, absl::Span<const FusionJob> fusions,
                            const ScoreOptions& options) {
    std::vector<const DeviceModel*> resident;
    std::vector<ScoreWindow> untied_jobs, tied_jobs;
    std::vector<int> untied_index(jobs.size(), -1);
    int64_t untied_frames = 0, tied_frames = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const ScoreWindow& job = jobs[j];
      const auto* cuda_model = dynamic_cast<const CudaPreparedModel*>(job.model);
      const auto* tied_model = dynamic_cast<const CudaTiedPreparedModel*>(job.model);
      const int device = cuda_model != nullptr ? cuda_model->device() : tied_model != nullptr ? tied_model->device() : -1;
      if (device != device_ || job.result == nullptr) {
        return absl::InvalidArgumentError("model was not prepared by this CUDA backend, or no result");
      }
      GMM_RETURN_IF_ERROR(ValidateWindowShape(job));
      GMM_RETURN_IF_ERROR(ValidateFeatures(*job.model, job.features));
      if (cuda_model != nullptr) {
        untied_index[j] = static_cast<int>(untied_jobs.size());
        untied_jobs.push_back(job);
        resident.push_back(&cuda_model->resident());
        untied_frames += job.features.rows;
      } else {
        tied_jobs.push_back(job);
        tied_frames += job.features.rows;
      }
    }
    std::vector<FusionJob> untied_fusions(fusions.begin(), fusions.end());
    for (FusionJob& fusion : untied_fusions) {
      for (int& w : fusion.windows) w = untied_index[w];
    }
    // Windows fused only, and untied windows whose states are selected on
    // the device, are never filled whole: sizing them would zero-fill a
    // T x S matrix each (36 MB for 18 chunks of 10 models) for nothing.
    std::vector<bool> fused_only(jobs.size(), false);
    for (const FusionJob& fusion : fusions) {
      for (int w : fusion.windows) fused_only[w] = !fusion.model_scores;
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (fused_only[j] || (untied_index[j] >= 0 && DeviceSelection::Selects(jobs[j]))) {
        *jobs[j].result = ScoreResult{};
        if (!fused_only[j] && jobs[j].features.rows == 0) {
          jobs[j].result->sparse = SparseScores{.num_states = jobs[j].model->num_states()};
        }
        continue;
      }
      jobs[j].result->loglikes.Resize(jobs[j].features.rows, jobs[j].model->num_states());
      jobs[j].result->frame_totals.clear();
      jobs[j].result->sparse.reset();
    }
    if (untied_frames == 0) {
      // Only empty windows can be fused here (fusions are of untied ones).
      for (const FusionJob& fusion : fusions) GMM_RETURN_IF_ERROR(FuseEmpty(jobs, fusion));
    }
    if (untied_frames + tied_frames == 0) return absl::OkStatus();

    Lane* lane = AcquireLane();
    absl::Status status = absl::OkStatus();
    if (untied_frames > 0) status = ScoreOnLane(*lane, untied_jobs, resident, options, untied_fusions);
    if (status.ok() && tied_frames > 0) status = ScoreTiedOnLane(*lane, tied_jobs, options);
    ReleaseLane(lane);
    return status;
  }

  // The algorithm each run is launched with: the caller's, else the one its
  // window's precision and shape choose (kAuto where that is the exact
  // policy's, so LaunchLoglik applies its fallbacks).
  Algorithm RunAlgorithm(const LoglikJob& run, Precision precision, Algorithm requested) const {
    if (requested != Algorithm::kAuto || precision != Precision::kFast) return requested;
    // Wider features than the wgmma kernel takes are scored exactly.
    const bool wgmma_fits = wgmma_available_ && run.model->dim <= kWgmmaMaxDim;
    const Algorithm fast = ChooseFastAlgorithm(run.num_frames, run.model->num_gaussians, run.model->num_states,
                                               wgmma_fits);
    return fast == ChooseAlgorithm(run.num_frames, run.model->num_gaussians) ? Algorithm::kAuto : fast;
  }

  // Several models in one kernel launch when every run's algorithm
  // (RunAlgorithm) is split8, asked for or the kAuto choice for its length;
  // otherwise one launch per run, each with its own algorithm.
  static bool UseOneLaunch(absl::Span<const LoglikJob> runs, absl::Span<const Algorithm> algorithms) {
    if (runs.size() < 2) return false;
    for (size_t r = 0; r < runs.size(); ++r) {
      const Algorithm chosen = algorithms[r] == Algorithm::kAuto
                                   ? ChooseAlgorithm(runs[r].num_frames, runs[r].model->num_gaussians)
                                   : algorithms[r];
      if (chosen != Algorithm::kSplit8) return false;
    }
    return true;
  }

  // One copy in of every window's frames (and of each distinct speaker
  // transform), the transforms, the launches, the copies out of every
  // window's scores (and frame totals) and one synchronisation. A window
  // asking for its top_k states gets them selected on the device
  // (DeviceSelection): only they are copied out.
  //
  // Windows are packed in order; consecutive windows of one model (a
  // scheduler's batch of many streams' chunks) become one run, scored by one
  // launch over all their frames, as if they were one long window: that is
  // what lets the kernel read the model once for all of them. Scores are laid
  // out run after run, all frame totals after all scores, so a run's scores
  // and totals are contiguous.
  //
  // With `fusions` (indices into `jobs`), every run's frame totals are
  // computed and FuseOnLane fuses after the synchronisation.
  absl::Status ScoreOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs,
                           absl::Span<const DeviceModel* const> resident, const ScoreOptions& options,
                           absl::Span<const FusionJob> fusions) {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    // Posterior fusion weighs models by their frame totals.
    const bool frame_totals = options.frame_totals || !fusions.empty();
    std::vector<int64_t> in_offset(jobs.size()), out_offset(jobs.size()), totals_offset(jobs.size());
    int64_t in_count = 0, scores_count = 0, total_frames = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const int64_t frames = jobs[j].features.rows;
      in_offset[j] = in_count;
      out_offset[j] = scores_count;
      totals_offset[j] = total_frames;
      in_count += frames * jobs[j].features.cols;
      scores_count += frames * resident[j]->num_states;
      total_frames += frames;
    }
    const int64_t frames_count = in_count;
    const int64_t out_count = scores_count + (frame_totals ? total_frames : 0);

    // Each distinct transform once (a stream's chunks share theirs). When any
    // window has one, every window's frames go through the transform pass
    // (copied as they are where there is none), so that runs read one buffer.
    absl::flat_hash_map<const FeatureTransform*, int64_t> matrix_offset;
    std::vector<TransformSegment> segments;
    int64_t max_segment_values = 0;
    bool any_transform = false;
    for (const ScoreWindow& job : jobs) any_transform |= job.transform != nullptr;
    for (size_t j = 0; any_transform && j < jobs.size(); ++j) {
      const FeatureTransform* transform = jobs[j].transform;
      if (jobs[j].features.rows == 0) continue;
      int64_t matrix = TransformSegment::kCopy;
      if (transform != nullptr) {
        auto [it, added] = matrix_offset.try_emplace(transform, in_count);
        if (added) in_count += PackedTransformFloats(transform->dim());
        matrix = it->second;
      }
      segments.push_back({in_offset[j], jobs[j].features.rows, matrix, jobs[j].features.cols});
      max_segment_values = std::max(max_segment_values, jobs[j].features.rows * jobs[j].features.cols);
    }
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_in, in_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_out, out_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.features, in_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.loglikes, out_count));

    for (size_t j = 0; j < jobs.size(); ++j) {
      const ConstMatrixView& features = jobs[j].features;
      for (int64_t t = 0; t < features.rows; ++t) {
        std::memcpy(lane.host_in.data() + in_offset[j] + t * features.cols, features.row(t),
                    features.cols * sizeof(float));
      }
    }
    for (const auto& [transform, offset] : matrix_offset) PackTransform(*transform, lane.host_in.data() + offset);
    cudaStream_t stream = lane.stream.get();
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.features.data(), lane.host_in.data(), in_count * sizeof(float),
                                             cudaMemcpyHostToDevice, stream),
                             "copy features to device");
    const float* frames = lane.features.data();
    if (!segments.empty()) {
      GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_segments, segments.size()));
      GMM_RETURN_IF_ERROR(EnsureCapacity(lane.segments, segments.size()));
      GMM_RETURN_IF_ERROR(EnsureCapacity(lane.transformed, frames_count));
      std::memcpy(lane.host_segments.data(), segments.data(), segments.size() * sizeof(TransformSegment));
      GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.segments.data(), lane.host_segments.data(),
                                               segments.size() * sizeof(TransformSegment),
                                               cudaMemcpyHostToDevice, stream),
                               "copy transform segments to device");
      GMM_RETURN_IF_ERROR(LaunchFeatureTransforms(lane.features.data(), lane.transformed.data(),
                                                  lane.features.data(), lane.segments.data(),
                                                  static_cast<int>(segments.size()), max_segment_values, stream));
      frames = lane.transformed.data();
    }

    // Runs of consecutive windows of one model; run_totals[r]: where its
    // frame totals go.
    std::vector<LoglikJob> runs;
    std::vector<Precision> run_precision;
    std::vector<float*> run_totals;
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].features.rows == 0) continue;
      if (!runs.empty() && runs.back().model == resident[j] && run_precision.back() == jobs[j].precision) {
        runs.back().num_frames += jobs[j].features.rows;
        continue;
      }
      runs.push_back({resident[j], frames + in_offset[j], jobs[j].features.rows,
                      lane.loglikes.data() + out_offset[j]});
      run_precision.push_back(jobs[j].precision);
      run_totals.push_back(lane.loglikes.data() + scores_count + totals_offset[j]);
    }
    std::vector<Algorithm> algorithms(runs.size());
    for (size_t r = 0; r < runs.size(); ++r) algorithms[r] = RunAlgorithm(runs[r], run_precision[r], options.algorithm);
    if (UseOneLaunch(runs, algorithms)) {
      GMM_RETURN_IF_ERROR(LaunchMultiModelLoglik(runs, lane.gemm, stream));
    } else {
      for (size_t r = 0; r < runs.size(); ++r) {
        const LoglikJob& run = runs[r];
        GMM_RETURN_IF_ERROR(
            LaunchLoglik(*run.model, algorithms[r], run.features, run.num_frames, run.loglikes, lane.gemm, stream));
      }
    }
    if (frame_totals) {
      for (size_t r = 0; r < runs.size(); ++r) {
        GMM_RETURN_IF_ERROR(
            LaunchFrameTotals(runs[r].loglikes, runs[r].num_frames, runs[r].model->num_states, run_totals[r], stream));
      }
    }
    const OutputLayout layout{std::move(out_offset), std::move(totals_offset), scores_count, total_frames};
    // What comes back of each window: its scores whole, its top_k states
    // (selected on the device), or nothing (fused only).
    std::vector<bool> whole(jobs.size(), true), selected(jobs.size(), false);
    for (const FusionJob& fusion : fusions) {
      for (int w : fusion.windows) whole[w] = fusion.model_scores;
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (!DeviceSelection::Selects(jobs[j])) continue;
      selected[j] = true;
      whole[j] = false;
    }
    GMM_RETURN_IF_ERROR(lane.selection.Queue(jobs, selected, lane.loglikes.data(), layout.scores, stream));
    GMM_RETURN_IF_ERROR(CopyBack(lane, jobs, layout, whole, frame_totals));
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "run likelihood kernels");
    lane.selection.Finish(jobs);
    if (!fusions.empty()) GMM_RETURN_IF_ERROR(FuseOnLane(lane, jobs, layout, fusions));
    for (size_t j = 0; j < jobs.size(); ++j) {
      ScoreResult* result = jobs[j].result;
      const int64_t rows = jobs[j].features.rows;
      if (whole[j] && rows > 0) {
        std::memcpy(result->loglikes.data(), lane.host_out.data() + layout.scores[j],
                    rows * resident[j]->num_states * sizeof(float));
      }
      if (options.frame_totals && (whole[j] || selected[j])) {
        const float* totals = lane.host_out.data() + layout.totals_start + layout.totals[j];
        result->frame_totals.assign(totals, totals + rows);
      }
    }
    return absl::OkStatus();
  }

  // Queues the copies to lane.host_out of the scores of every window that
  // `whole` marks (adjacent ones in one copy) and, with `totals`, of every
  // frame total.
  static absl::Status CopyBack(Lane& lane, absl::Span<const ScoreWindow> jobs, const OutputLayout& layout,
                               const std::vector<bool>& whole, bool totals) {
    std::vector<std::pair<int64_t, int64_t>> ranges;  // [first, end) in floats
    const auto add = [&ranges](int64_t first, int64_t end) {
      if (first == end) return;
      if (!ranges.empty() && ranges.back().second == first) {
        ranges.back().second = end;
      } else {
        ranges.emplace_back(first, end);
      }
    };
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (whole[j]) add(layout.scores[j], layout.scores[j] + jobs[j].features.rows * jobs[j].model->num_states());
    }
    if (totals) add(layout.totals_start, layout.totals_start + layout.total_frames);
    for (const auto& [first, end] : ranges) {
      GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.host_out.data() + first, lane.loglikes.data() + first,
                                               (end - first) * sizeof(float), cudaMemcpyDeviceToHost,
                                               lane.stream.get()),
                               "copy scores to host");
    }
    return absl::OkStatus();
  }

  // Fuses windows of no frames: nothing to copy, only the outputs' shapes
  // (and a window that moves by zero frames).
  static absl::Status FuseEmpty(absl::Span<const ScoreWindow> jobs, const FusionJob& fusion) {
    const ScoreWindow& first = jobs[fusion.windows.front()];
    std::vector<double> log_weights;
    GMM_RETURN_IF_ERROR(fusion.fusion->NextLogWeights({}, 0, &log_weights, fusion.out));
    fusion.out->loglikes.Resize(0, first.model->num_states());
    fusion.out->frame_totals.clear();
    fusion.fusion->SetDominance({}, fusion.out);
    if (!fusion.model_scores) {
      for (int w : fusion.windows) *jobs[w].result = ScoreResult{};
    }
    return absl::OkStatus();
  }

  // The fusions of ScoreOnLane, once every run's frame totals (and the
  // scores of windows whose own scores are wanted) are in lane.host_out
  // (`layout`) and the window scores still on the device:
  //   1. per fusion, the log weights on the host (ModelFusion::NextLogWeights:
  //      the float64 posterior window), staged with one FusionSegment each;
  //   2. one copy in, one fusion launch (LaunchFusion), one copy out of the
  //      fused scores, fused totals and per-frame winners, and synchronise.
  // Windows fused only never leave the device: for ten speaker-cluster
  // models that is one tenth of the copy and none of the host-side
  // log-sum-exp work.
  absl::Status FuseOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs, const OutputLayout& layout,
                          absl::Span<const FusionJob> fusions) {
    cudaStream_t stream = lane.stream.get();
    // Segments, then the models' row pointers, then log weights.
    std::vector<FusionSegment> segments;
    std::vector<const float*> model_rows;
    std::vector<float> log_weights;
    std::vector<int64_t> fused_offset(fusions.size());
    int64_t fused_count = 0, fused_rows = 0;
    std::vector<double> totals, fusion_log_weights;
    for (size_t f = 0; f < fusions.size(); ++f) {
      const FusionJob& fusion = fusions[f];
      const int num_models = static_cast<int>(fusion.windows.size());
      const int64_t rows = jobs[fusion.windows.front()].features.rows;
      const int states = jobs[fusion.windows.front()].model->num_states();
      totals.resize(rows * num_models);
      for (int m = 0; m < num_models; ++m) {
        const float* window_totals = lane.host_out.data() + layout.totals_start + layout.totals[fusion.windows[m]];
        for (int64_t t = 0; t < rows; ++t) totals[t * num_models + m] = window_totals[t];
      }
      GMM_RETURN_IF_ERROR(fusion.fusion->NextLogWeights(totals, rows, &fusion_log_weights, fusion.out));
      fused_offset[f] = fused_count;
      if (rows == 0) continue;
      FusionSegment segment;
      segment.first_row = fused_rows;
      segment.out_offset = fused_count;
      segment.weights_offset = static_cast<int64_t>(log_weights.size());
      segment.totals_offset = fusion.frame_totals ? fused_rows : -1;
      segment.rows = static_cast<int32_t>(rows);
      segment.states = states;
      segment.num_models = num_models;
      segment.models_offset = static_cast<int32_t>(model_rows.size());
      segment.weighted = fusion.fusion->options().method != FusionMethod::kMax;
      segments.push_back(segment);
      for (int w : fusion.windows) model_rows.push_back(lane.loglikes.data() + layout.scores[w]);
      log_weights.insert(log_weights.end(), fusion_log_weights.begin(), fusion_log_weights.end());
      fused_count += rows * states;
      fused_rows += rows;
    }
    const size_t segments_bytes = segments.size() * sizeof(FusionSegment);
    const size_t rows_bytes = model_rows.size() * sizeof(const float*);
    const size_t in_bytes = segments_bytes + rows_bytes + log_weights.size() * sizeof(float);
    // Fused scores, then fused totals, then winners (int32, same size).
    const int64_t out_count = fused_count + 2 * fused_rows;
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_host_in, in_bytes));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_in, in_bytes));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_host_out, out_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_out, out_count));
    if (fused_rows > 0) {
      char* staged = lane.fusion_host_in.data();
      std::memcpy(staged, segments.data(), segments_bytes);
      std::memcpy(staged + segments_bytes, model_rows.data(), rows_bytes);
      std::memcpy(staged + segments_bytes + rows_bytes, log_weights.data(), log_weights.size() * sizeof(float));
      GMM_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(lane.fusion_in.data(), staged, in_bytes, cudaMemcpyHostToDevice, stream),
          "copy fusion weights to device");
      const char* device_in = lane.fusion_in.data();
      float* fused = lane.fusion_out.data();
      GMM_RETURN_IF_ERROR(LaunchFusion(reinterpret_cast<const FusionSegment*>(device_in),
                                       static_cast<int>(segments.size()), fused_rows,
                                       reinterpret_cast<const float* const*>(device_in + segments_bytes),
                                       reinterpret_cast<const float*>(device_in + segments_bytes + rows_bytes),
                                       fused, fused + fused_count,
                                       reinterpret_cast<int*>(fused + fused_count + fused_rows), stream));
      GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.fusion_host_out.data(), fused, out_count * sizeof(float),
                                               cudaMemcpyDeviceToHost, stream),
                               "copy fused scores to host");
      GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "run fusion kernel");
    }

    const float* host_fused = lane.fusion_host_out.data();
    const int* host_winners = reinterpret_cast<const int*>(host_fused + fused_count + fused_rows);
    int64_t row = 0;
    for (size_t f = 0; f < fusions.size(); ++f) {
      const FusionJob& fusion = fusions[f];
      const int64_t rows = jobs[fusion.windows.front()].features.rows;
      const int states = jobs[fusion.windows.front()].model->num_states();
      FusedScores& out = *fusion.out;
      out.loglikes.Resize(rows, states);
      if (rows > 0) std::memcpy(out.loglikes.data(), host_fused + fused_offset[f], rows * states * sizeof(float));
      out.frame_totals.clear();
      if (fusion.frame_totals) {
        out.frame_totals.assign(host_fused + fused_count + row, host_fused + fused_count + row + rows);
      }
      fusion.fusion->SetDominance(absl::MakeConstSpan(host_winners + row, rows), &out);
      row += rows;
    }
    return absl::OkStatus();
  }

  // Tied-mixture windows: one copy in, one TiedMixtureDevice::Launch per run
  // of consecutive windows of one model, their frame totals, one copy out,
  // one synchronisation. A window's speaker transform is applied on the host
  // while packing (FeatureTransform::ApplyUnchecked, as the base ScoreBatch
  // does), not on the device as for untied models: the tied path reads each
  // stream's slice of the transformed frame, and transforms are rare next to
  // the codebook work.
  absl::Status ScoreTiedOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) {
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select CUDA device");
    std::vector<int64_t> in_offset(jobs.size()), out_offset(jobs.size()), totals_offset(jobs.size());
    int64_t in_count = 0, scores_count = 0, total_frames = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      in_offset[j] = in_count;
      out_offset[j] = scores_count;
      totals_offset[j] = total_frames;
      in_count += jobs[j].features.rows * jobs[j].features.cols;
      scores_count += jobs[j].features.rows * jobs[j].model->num_states();
      total_frames += jobs[j].features.rows;
    }
    const int64_t out_count = scores_count + (options.frame_totals ? total_frames : 0);
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_in, in_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_out, out_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.features, in_count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lane.loglikes, out_count));
    for (size_t j = 0; j < jobs.size(); ++j) {
      const ConstMatrixView& features = jobs[j].features;
      float* packed = lane.host_in.data() + in_offset[j];
      if (features.rows == 0) continue;
      if (jobs[j].transform != nullptr) {
        jobs[j].transform->ApplyUnchecked(features, packed);
      } else {
        for (int64_t t = 0; t < features.rows; ++t) {
          std::memcpy(packed + t * features.cols, features.row(t), features.cols * sizeof(float));
        }
      }
    }
    cudaStream_t stream = lane.stream.get();
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.features.data(), lane.host_in.data(), in_count * sizeof(float),
                                             cudaMemcpyHostToDevice, stream),
                             "copy tied-model features to device");
    for (size_t first = 0; first < jobs.size();) {
      size_t end = first + 1;
      while (end < jobs.size() && jobs[end].model == jobs[first].model) ++end;
      int64_t frames = 0;
      for (size_t j = first; j < end; ++j) frames += jobs[j].features.rows;
      if (frames > 0) {
        const auto& model = static_cast<const CudaTiedPreparedModel&>(*jobs[first].model);
        float* scores = lane.loglikes.data() + out_offset[first];
        GMM_RETURN_IF_ERROR(model.resident().Launch(lane.features.data() + in_offset[first], frames, scores,
                                                    lane.tied, stream));
        if (options.frame_totals) {
          GMM_RETURN_IF_ERROR(LaunchFrameTotals(scores, frames, model.num_states(),
                                                lane.loglikes.data() + scores_count + totals_offset[first], stream));
        }
      }
      first = end;
    }
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.host_out.data(), lane.loglikes.data(), out_count * sizeof(float),
                                             cudaMemcpyDeviceToHost, stream),
                             "copy tied-model scores to host");
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "run tied-mixture kernels");
    for (size_t j = 0; j < jobs.size(); ++j) {
      ScoreResult* result = jobs[j].result;
      const int64_t rows = jobs[j].features.rows;
      if (rows == 0) continue;
      std::memcpy(result->loglikes.data(), lane.host_out.data() + out_offset[j],
                  rows * jobs[j].model->num_states() * sizeof(float));
      if (options.frame_totals) {
        const float* totals = lane.host_out.data() + scores_count + totals_offset[j];
        result->frame_totals.assign(totals, totals + rows);
      }
    }
    return absl::OkStatus();
  }

  Lane* AcquireLane() {
    std::unique_lock<std::mutex> lock(mu_);
    lane_free_.wait(lock, [&] { return !free_lanes_.empty(); });
    Lane* lane = free_lanes_.back();
    free_lanes_.pop_back();
    return lane;
  }

  void ReleaseLane(Lane* lane) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_lanes_.push_back(lane);
    }
    lane_free_.notify_one();
  }

  const int device_;
  bool wgmma_available_ = false;  // fixed after Init()
  std::vector<Lane> lanes_;  // fixed after Init()
  std::mutex mu_;
  std::condition_variable lane_free_;
  std::vector<Lane*> free_lanes_;  // guarded by mu_
};

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateCudaBackend(int device) {
  const int count = CudaDeviceCount();
  if (device < 0 || device >= count) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, " is not available (", count, " device(s) found)"));
  }
  auto backend = std::make_unique<CudaBackend>(device);
  GMM_RETURN_IF_ERROR(backend->Init());
  return backend;
}

}  // namespace gmmscore
