#include "kernels/train/cuda/cuda_stats_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/stats_kernels.h"
#include "kernels/train/cuda/stats_plan.h"

namespace gmmscore {
namespace {

using train_cuda::ChunkPlan;
using train_cuda::GroupedPairs;
using train_cuda::ItemRange;
using train_cuda::LseItem;
using train_cuda::PairRecord;
using train_cuda::StatsBatch;
using train_cuda::StatsItem;
using train_cuda::StatsTiles;

// Frames in device memory, tagged with the backend that loaded them.
class CudaFrameBlock : public FrameBlock {
 public:
  CudaFrameBlock(const void* owner, DeviceBuffer<float> frames, int64_t rows, int dim)
      : owner_(owner), frames_(std::move(frames)), rows_(rows), dim_(dim) {}
  int64_t num_frames() const override { return rows_; }
  int dim() const override { return dim_; }
  const void* owner() const { return owner_; }
  const float* data() const { return frames_.data(); }

 private:
  const void* owner_;
  DeviceBuffer<float> frames_;
  int64_t rows_;
  int dim_;
};

// One output block's rows in the pinned host buffer, added to the
// statistics once the whole request has succeeded.
struct PendingRows {
  int64_t first_row = 0;  // row of the block's first Gaussian in GmmStats
  int rows = 0;           // the tile's real Gaussians
  int64_t offset = 0;     // of its first double in the pinned buffer
};

// Fills a device buffer with NaN bytes (tests: unwritten elements show).
template <typename T>
absl::Status Poison(const DeviceBuffer<T>& buffer, size_t count, cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buffer.data(), 0xFF, count * sizeof(T), stream), "poison scratch");
  return absl::OkStatus();
}

template <typename T>
absl::Status Upload(const DeviceBuffer<T>& buffer, const T* host, size_t count, cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(buffer.data(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream),
      "upload statistics work");
  return absl::OkStatus();
}

class CudaStatsBackend : public StatsBackend {
 public:
  CudaStatsBackend(int device, const CudaStatsOptions& options, CudaStream stream, int sms, int64_t score_bytes)
      : device_(device), options_(options), stream_(std::move(stream)), sms_(sms), score_bytes_(score_bytes) {}

  std::string name() const override { return "cuda"; }

  absl::Status SetModel(const DiagGmmModel& model) override {
    if (!train_cuda::StatsShapeSupported(model.dim(), 32)) {
      return absl::InvalidArgumentError(absl::StrCat("CUDA statistics support feature dimensions 1 to ",
                                                     train_cuda::kMaxStatsDim, "; the model has ",
                                                     model.dim()));
    }
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "set statistics device");
    has_model_ = false;  // until the new one is complete on the device
    GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
    const int tile = train_cuda::ChooseTileGaussians(model);
    kernel_ = options_.kernel == train_cuda::StatsKernelChoice::kAuto
                  ? train_cuda::ChooseStatsKernel(info.major, model.dim(), tile)
                  : options_.kernel;
    tiles_ = train_cuda::BuildStatsTiles(
        model, kernel_ == train_cuda::StatsKernelChoice::kTf32x3 ? train_cuda::kTcTile : tile);
    GMM_ASSIGN_OR_RETURN(tiles_device_,
                         DeviceBuffer<float>::FromHost(tiles_.params.data(), tiles_.params.size()));
    GMM_ASSIGN_OR_RETURN(single_tile_device_, DeviceBuffer<int32_t>::FromHost(tiles_.single_tile.data(),
                                                                              tiles_.single_tile.size()));
    GMM_ASSIGN_OR_RETURN(tile_in_state_device_, DeviceBuffer<int32_t>::FromHost(tiles_.tile_in_state.data(),
                                                                                tiles_.tile_in_state.size()));
    center_.assign(model.center().begin(), model.center().end());
    GMM_ASSIGN_OR_RETURN(center_device_, DeviceBuffer<float>::FromHost(center_.data(), center_.size()));
    GMM_RETURN_IF_ERROR(PrepareKernels(model, info));
    GMM_ASSIGN_OR_RETURN(const int ctas_per_sm, CtasPerSm(model.dim()));
    target_items_ = int64_t{train_cuda::kItemsPerResidentCta} * sms_ * std::max(1, ctas_per_sm);
    row_doubles_ = train_cuda::StatsRowDoubles(model.dim());
    block_doubles_ = int64_t{tiles_.tile_gaussians} * row_doubles_;
    max_items_ = static_cast<int32_t>(std::clamp<int64_t>(
        options_.max_partial_bytes / (block_doubles_ * static_cast<int64_t>(sizeof(double))), 1, 1 << 30));
    score_row_floats_ = kernel_ == train_cuda::StatsKernelChoice::kFp32 ? train_cuda::KeptScoreRowFloats(tiles_) : 0;
    has_single_tiles_ =
        std::find(tiles_.single_tile.begin(), tiles_.single_tile.end(), 1) != tiles_.single_tile.end();
    shape_ = ModelShape::Of(model);
    has_model_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) override {
    GMM_RETURN_IF_ERROR(ValidateFrames(frames));
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "set statistics device");
    GMM_ASSIGN_OR_RETURN(DeviceBuffer<float> buffer,
                         DeviceBuffer<float>::Allocate(static_cast<size_t>(frames.rows * frames.cols)));
    if (frames.rows > 0 && frames.cols > 0) {
      GMM_CUDA_RETURN_IF_ERROR(
          cudaMemcpy2D(buffer.data(), frames.cols * sizeof(float), frames.data, frames.stride * sizeof(float),
                       frames.cols * sizeof(float), frames.rows, cudaMemcpyHostToDevice),
          "upload frames");
    }
    return std::unique_ptr<FrameBlock>(
        new CudaFrameBlock(this, std::move(buffer), frames.rows, static_cast<int>(frames.cols)));
  }

  absl::Status Accumulate(const FrameBlock& block, absl::Span<const StatsPair> pairs,
                          GmmStats* stats) override {
    const auto* frames = dynamic_cast<const CudaFrameBlock*>(&block);
    if (frames == nullptr || frames->owner() != this) {
      return absl::InvalidArgumentError("the frame block was not loaded by this CUDA statistics backend");
    }
    GMM_RETURN_IF_ERROR(ValidateStatsRequest(has_model_ ? &shape_ : nullptr, block.num_frames(), block.dim(),
                                             pairs, *stats));
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "set statistics device");
    const int num_states = shape_.num_states();
    // Grouped straight into pinned memory: each chunk's upload is a DMA.
    GMM_RETURN_IF_ERROR(EnsureCapacity(host_records_, pairs.size()));
    const GroupedPairs grouped =
        train_cuda::GroupStatsPairs(pairs, block.num_frames(), num_states * stats->num_sets,
                                    absl::MakeSpan(host_records_.data(), pairs.size()));

    // Plan every chunk first: the request's output rows size the pinned
    // buffer the statistics come back into (no zeroing, no regrowth).
    int64_t chunk = std::clamp<int64_t>(options_.max_chunk_pairs, train_cuda::kPairsPerTile, 1 << 30);
    const int64_t kept_pairs = KeptChunkPairs();
    if (kept_pairs > 0) chunk = std::min(chunk, kept_pairs);
    std::vector<ChunkPlan> plans;
    int64_t total_rows = 0;
    for (int64_t begin = 0; begin < grouped.num_pairs; begin += chunk) {
      plans.push_back(train_cuda::PlanChunk(grouped, begin, std::min(grouped.num_pairs, begin + chunk), tiles_,
                                            shape_.state_offsets, target_items_, max_items_));
      for (const StatsBatch& batch : plans.back().batches) total_rows += batch.rows;
    }
    GMM_RETURN_IF_ERROR(EnsureCapacity(pending_, total_rows * row_doubles_));
    pending_rows_.clear();
    int64_t rows_back = 0;
    double loglike = 0.0;
    for (size_t k = 0; k < plans.size(); ++k) {
      const int64_t begin = static_cast<int64_t>(k) * chunk;
      GMM_RETURN_IF_ERROR(AccumulateChunk(*frames, grouped, begin, std::min(grouped.num_pairs, begin + chunk),
                                          plans[k], kept_pairs > 0, stats->num_gaussians(), &rows_back, &loglike));
    }
    // Everything succeeded: add to the caller's statistics.
    for (const PendingRows& rows : pending_rows_) {
      for (int g = 0; g < rows.rows; ++g) {
        const double* row = pending_.data() + rows.offset + static_cast<int64_t>(g) * row_doubles_;
        AddStatsRow(row[0], row + 1, row + 1 + shape_.dim, rows.first_row + g, stats);
      }
    }
    stats->total_loglike += loglike;
    stats->total_weight += grouped.total_weight;
    return absl::OkStatus();
  }

  int64_t frame_memory_budget() const override {
    if (cudaSetDevice(device_) != cudaSuccess) return 0;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    // 80% of what is free, less the scratch a request may still allocate
    // (pair arrays, partials and outputs at their bounds).
    // Kept scores: what their scratch may still grow by (what it holds
    // already is not free), whatever the current model: training mixes up
    // from one tile to many while the frames it kept stay resident.
    const int64_t score_growth =
        std::max<int64_t>(0, score_bytes_ - static_cast<int64_t>(scores_.size() * sizeof(float)));
    const int64_t scratch = std::clamp<int64_t>(options_.max_chunk_pairs, 0, 1 << 30) * 16 +
                            2 * options_.max_partial_bytes + score_growth;
    return std::max<int64_t>(0, static_cast<int64_t>(0.8 * static_cast<double>(free_bytes)) - scratch);
  }

  int64_t kept_chunks() const { return kept_chunks_; }

 private:
  // Checks the kernels chosen (kernel_) against the model just tiled
  // (tiles_) and uploads the tensor-core kernels' tiles when chosen.
  absl::Status PrepareKernels(const DiagGmmModel& model, const DeviceInfo& info) {
    const int dim = model.dim();
    tc_tiles_device_ = DeviceBuffer<float>();
    kept_gemm_ = train_cuda::KeptStatsGemm::kFfma;
    lse_dmma_min_tiles_ = std::numeric_limits<int>::max();
    if (kernel_ == train_cuda::StatsKernelChoice::kFp32) return ChooseKeptGemm(dim, info);
    if (!train_cuda::TcStatsShapeSupported(dim, tiles_.tile_gaussians)) {
      return absl::InvalidArgumentError(absl::StrCat("tensor-core statistics support feature dimensions 1 to ",
                                                     train_cuda::kTcMaxDim, "; the model has ", dim));
    }
    if (info.major < 8) {
      return absl::FailedPreconditionError(
          absl::StrCat("tensor-core (3xTF32) statistics need sm_80 or newer, not sm_", info.major, info.minor));
    }
    const std::vector<float> tc_tiles = train_cuda::BuildTcTiles(tiles_);
    GMM_ASSIGN_OR_RETURN(tc_tiles_device_, DeviceBuffer<float>::FromHost(tc_tiles.data(), tc_tiles.size()));
    return absl::OkStatus();
  }

  // kept_gemm_ for the float32 kernels on the model just tiled.
  absl::Status ChooseKeptGemm(int dim, const DeviceInfo& info) {
    kept_gemm_ = options_.kept_gemm == train_cuda::KeptStatsGemm::kAuto
                     ? train_cuda::ChooseKeptStatsGemm(info.major, dim, tiles_.tile_gaussians)
                     : options_.kept_gemm;
    if (kept_gemm_ != train_cuda::KeptStatsGemm::kFp64Mma) return absl::OkStatus();
    const absl::Status serves = train_cuda::CheckFp64MmaServes(dim, tiles_.tile_gaussians, info);
    if (!serves.ok()) {
      if (options_.kept_gemm != train_cuda::KeptStatsGemm::kAuto) return serves;
      kept_gemm_ = train_cuda::KeptStatsGemm::kFfma;  // the policy's choice, but a build without sm_90 code
      return absl::OkStatus();
    }
    lse_dmma_min_tiles_ = options_.lse_min_tiles < 0 ? train_cuda::kFp64MmaLseMinTiles : options_.lse_min_tiles;
    return absl::OkStatus();
  }

  // Pairs per chunk whose kept scores fit score_bytes_ (a
  // multiple of the pair tile), or 0 where scores are not kept: the
  // tensor-core kernels, states of one tile only, or too few pairs.
  int64_t KeptChunkPairs() const {
    if (score_row_floats_ == 0 || score_bytes_ <= 0) return 0;
    const int64_t pairs = score_bytes_ / (score_row_floats_ * static_cast<int64_t>(sizeof(float))) /
                          train_cuda::kPairsPerTile * train_cuda::kPairsPerTile;
    return pairs >= train_cuda::kMinKeptChunkPairs ? pairs : 0;
  }

  // The kept-score scratch at exactly `count` floats: at most the budget
  // frame_memory_budget reserves (EnsureCapacity would add a quarter).
  absl::Status EnsureScoreCapacity(size_t count) {
    if (scores_.size() >= count) return absl::OkStatus();
    scores_ = DeviceBuffer<float>();  // free first so the peak is not old + new
    GMM_ASSIGN_OR_RETURN(scores_, DeviceBuffer<float>::Allocate(count));
    return absl::OkStatus();
  }

  // Resident CTAs per SM the planner's item target is a multiple of. The
  // float32 statistics kernel's (3 at D <= 40) also for the float64 one,
  // which fits 2: the finer items balance better. Measured on an H100
  // (train_stats_bench, 2026-11-27): planning by the float64 kernel's own 2
  // gave Machlica's EM iteration 59.0-59.4 ms against 57.4-57.5 ms, M = 256
  // 381M against 396M frames/s. (Kept and rescored passes also get the same
  // items, so that they sum in the same order.)
  absl::StatusOr<int> CtasPerSm(int dim) const {
    return kernel_ == train_cuda::StatsKernelChoice::kTf32x3
               ? train_cuda::TcStatsCtasPerSm(dim)
               : train_cuda::StatsCtasPerSm(dim, tiles_.tile_gaussians, flush_tiles());
  }

  // The chunk's LSE items in launch order: those the float64 kernel takes
  // (states of at least lse_dmma_min_tiles_ tiles) first, in plan order,
  // then the rest; *dmma_items = how many of the first. Where all go to one
  // kernel (every global GMM), the plan's own items, not a copy.
  const std::vector<train_cuda::LseItem>& OrderLseItems(const ChunkPlan& plan, int* dmma_items) {
    auto to_dmma = [this](const train_cuda::LseItem& item) { return item.num_tiles >= lse_dmma_min_tiles_; };
    const int64_t count = std::count_if(plan.lse_items.begin(), plan.lse_items.end(), to_dmma);
    *dmma_items = static_cast<int>(count);
    if (count == 0 || count == static_cast<int64_t>(plan.lse_items.size())) return plan.lse_items;
    lse_order_ = plan.lse_items;
    std::stable_partition(lse_order_.begin(), lse_order_.end(), to_dmma);
    return lse_order_;
  }

  // The log-sum-exp of every pair of the chunk's multi-tile states: the
  // uploaded items (OrderLseItems), the first dmma_items of them on the
  // float64 kernel where scores are kept (each item's scores and
  // log-sum-exps come from one kernel, which is all a statistics kernel
  // needs), the rest on the float32 one.
  absl::Status LaunchLogSums(const train_cuda::StatsModelView& model, const train_cuda::PairsView& pairs,
                             int num_lse_items, int dmma_items, train_cuda::ScoresView scores, cudaStream_t stream) {
    if (kernel_ == train_cuda::StatsKernelChoice::kTf32x3) {
      return train_cuda::LaunchTcLse(model, pairs, lse_items_.data(), num_lse_items, lse_max_.data(),
                                     lse_log_.data(), stream);
    }
    if (scores.data == nullptr) dmma_items = 0;
    GMM_RETURN_IF_ERROR(train_cuda::LaunchLse(model, pairs, lse_items_.data(), dmma_items, lse_max_.data(),
                                              lse_log_.data(), stream, scores, train_cuda::KeptStatsGemm::kFp64Mma));
    return train_cuda::LaunchLse(model, pairs, lse_items_.data() + dmma_items, num_lse_items - dmma_items,
                                 lse_max_.data(), lse_log_.data(), stream, scores, train_cuda::KeptStatsGemm::kFfma);
  }

  // One batch's statistics kernel.
  absl::Status LaunchStatistics(const train_cuda::StatsModelView& model, const train_cuda::PairsView& pairs,
                                int num_items, train_cuda::ScoresView scores, cudaStream_t stream) {
    if (kernel_ == train_cuda::StatsKernelChoice::kTf32x3) {
      return train_cuda::LaunchTcStats(model, pairs, items_.data(), num_items, lse_max_.data(), lse_log_.data(),
                                       partials_.data(), stream);
    }
    return train_cuda::LaunchStats(model, pairs, items_.data(), num_items, lse_max_.data(), lse_log_.data(),
                                   partials_.data(), stream, flush_tiles(), scores, kept_gemm_);
  }

  int flush_tiles() const {
    return options_.flush_tiles < 0 ? train_cuda::kStatsFlushTiles : options_.flush_tiles;
  }

  // One chunk of grouped pairs [begin, end) under its plan: the kernels in
  // order (the LSE kernel's scores kept for the statistics kernel with
  // keep_scores), each batch's rows copied back to the pinned buffer at
  // *rows_back.
  absl::Status AccumulateChunk(const CudaFrameBlock& frames, const GroupedPairs& grouped, int64_t begin,
                               int64_t end, const ChunkPlan& plan, bool keep_scores, int64_t num_gaussians,
                               int64_t* rows_back, double* loglike) {
    cudaStream_t stream = stream_.get();
    const int64_t count = end - begin;
    size_t most_items = 0, most_outputs = 0;
    int64_t most_rows = 0;
    for (const StatsBatch& batch : plan.batches) {
      most_items = std::max(most_items, batch.items.size());
      most_outputs = std::max(most_outputs, batch.outputs.size());
      most_rows = std::max(most_rows, batch.rows);
    }
    // Grow every buffer before the first launch (a reallocation must not
    // free memory a queued kernel still reads).
    GMM_RETURN_IF_ERROR(EnsureCapacity(lse_max_, count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lse_log_, count));
    GMM_RETURN_IF_ERROR(EnsureCapacity(lse_items_, plan.lse_items.size()));
    GMM_RETURN_IF_ERROR(EnsureCapacity(items_, most_items));
    GMM_RETURN_IF_ERROR(EnsureCapacity(ranges_, most_outputs));
    GMM_RETURN_IF_ERROR(EnsureCapacity(partials_, most_items * block_doubles_));
    GMM_RETURN_IF_ERROR(EnsureCapacity(outputs_, most_rows * row_doubles_));
    GMM_RETURN_IF_ERROR(EnsureCapacity(block_sums_, train_cuda::kLseSumBlocks));
    train_cuda::ScoresView scores;
    if (keep_scores) {
      GMM_RETURN_IF_ERROR(EnsureScoreCapacity(static_cast<size_t>(count * score_row_floats_)));
      scores.data = scores_.data();
      scores.row_floats = score_row_floats_;
      ++kept_chunks_;
    }

    train_cuda::PairsView pairs;
    pairs.frames = frames.data();
    pairs.first_frame = begin;
    if (!grouped.identity) {
      GMM_RETURN_IF_ERROR(EnsureCapacity(records_, count));
      GMM_RETURN_IF_ERROR(Upload(records_, grouped.records + begin, count, stream));
      pairs.records = records_.data();
    }
    if (options_.poison_scratch) {
      GMM_RETURN_IF_ERROR(Poison(lse_max_, count, stream));
      GMM_RETURN_IF_ERROR(Poison(lse_log_, count, stream));
      GMM_RETURN_IF_ERROR(Poison(block_sums_, train_cuda::kLseSumBlocks, stream));
      if (keep_scores) GMM_RETURN_IF_ERROR(Poison(scores_, count * score_row_floats_, stream));
    }
    train_cuda::StatsModelView model;
    model.tiles = tiles_device_.data();
    model.single_tile = single_tile_device_.data();
    model.tile_in_state = tile_in_state_device_.data();
    model.has_single_tiles = has_single_tiles_;
    model.center = center_device_.data();
    model.tc_tiles = kernel_ == train_cuda::StatsKernelChoice::kTf32x3 ? tc_tiles_device_.data() : nullptr;
    model.dim = shape_.dim;
    model.tile = tiles_.tile_gaussians;

    int dmma_items = 0;
    const std::vector<train_cuda::LseItem>& lse_items = OrderLseItems(plan, &dmma_items);
    GMM_RETURN_IF_ERROR(Upload(lse_items_, lse_items.data(), lse_items.size(), stream));
    GMM_RETURN_IF_ERROR(LaunchLogSums(model, pairs, static_cast<int>(lse_items.size()), dmma_items, scores, stream));
    for (const StatsBatch& batch : plan.batches) {
      GMM_RETURN_IF_ERROR(Upload(items_, batch.items.data(), batch.items.size(), stream));
      GMM_RETURN_IF_ERROR(Upload(ranges_, batch.ranges.data(), batch.ranges.size(), stream));
      if (options_.poison_scratch) {
        GMM_RETURN_IF_ERROR(Poison(partials_, batch.items.size() * block_doubles_, stream));
        GMM_RETURN_IF_ERROR(Poison(outputs_, batch.rows * row_doubles_, stream));
      }
      GMM_RETURN_IF_ERROR(LaunchStatistics(model, pairs, static_cast<int>(batch.items.size()), scores, stream));
      GMM_RETURN_IF_ERROR(train_cuda::LaunchReducePartials(partials_.data(), ranges_.data(),
                                                           static_cast<int>(batch.outputs.size()),
                                                           tiles_.tile_gaussians, row_doubles_, outputs_.data(),
                                                           stream));
      const int64_t offset = *rows_back * row_doubles_;
      GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pending_.data() + offset, outputs_.data(),
                                               batch.rows * row_doubles_ * sizeof(double), cudaMemcpyDeviceToHost,
                                               stream),
                               "copy statistics back");
      for (size_t o = 0; o < batch.outputs.size(); ++o) {
        const int32_t target = batch.outputs[o].target;
        const int set = target / shape_.num_states();
        const int state = target % shape_.num_states();
        PendingRows rows;
        rows.first_row = set * num_gaussians + shape_.state_offsets[state] +
                         int64_t{batch.outputs[o].tile_in_state} * tiles_.tile_gaussians;
        rows.rows = batch.ranges[o].rows;
        rows.offset = offset + int64_t{batch.ranges[o].out_row} * row_doubles_;
        pending_rows_.push_back(rows);
      }
      *rows_back += batch.rows;
      // The next batch overwrites the items, partials and outputs.
      GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "statistics kernels");
    }
    GMM_RETURN_IF_ERROR(train_cuda::LaunchWeightedLseSum(lse_max_.data(), lse_log_.data(), pairs.records, count,
                                                         block_sums_.data(), stream));
    double sums[train_cuda::kLseSumBlocks];
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(sums, block_sums_.data(), sizeof(sums), cudaMemcpyDeviceToHost, stream),
                             "copy log-likelihood back");
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "statistics kernels");
    for (double s : sums) *loglike += s;
    return absl::OkStatus();
  }

  const int device_;
  const CudaStatsOptions options_;
  CudaStream stream_;
  const int sms_;
  const int64_t score_bytes_;  // options.max_score_bytes, resolved (>= 0)

  bool has_model_ = false;
  ModelShape shape_;
  StatsTiles tiles_;
  std::vector<float> center_;
  DeviceBuffer<float> tiles_device_;
  DeviceBuffer<int32_t> single_tile_device_;
  DeviceBuffer<int32_t> tile_in_state_device_;
  DeviceBuffer<float> center_device_;
  train_cuda::StatsKernelChoice kernel_ = train_cuda::StatsKernelChoice::kFp32;  // never kAuto
  train_cuda::KeptStatsGemm kept_gemm_ = train_cuda::KeptStatsGemm::kFfma;       // never kAuto
  // With the float64 GEMM, LSE items of states of at least this many tiles
  // run on the float64 kernel too (kFp64MmaLseMinTiles); INT_MAX otherwise.
  int lse_dmma_min_tiles_ = std::numeric_limits<int>::max();
  std::vector<train_cuda::LseItem> lse_order_;  // OrderLseItems' reordered copy, its storage reused
  DeviceBuffer<float> tc_tiles_device_;  // BuildTcTiles(tiles_), for the tf32x3 kernels
  int64_t target_items_ = 1;
  int row_doubles_ = 0;
  int64_t block_doubles_ = 0;
  int32_t max_items_ = 1;
  int64_t score_row_floats_ = 0;  // KeptScoreRowFloats for the fp32 kernels, else 0
  bool has_single_tiles_ = false;  // some state of the model has one tile
  int64_t kept_chunks_ = 0;        // chunks whose scores were kept (KeptScoreChunks)

  // Scratch, grown on demand and kept between calls.
  DeviceBuffer<PairRecord> records_;
  DeviceBuffer<float> lse_max_;
  DeviceBuffer<float> lse_log_;
  DeviceBuffer<LseItem> lse_items_;
  DeviceBuffer<StatsItem> items_;
  DeviceBuffer<ItemRange> ranges_;
  DeviceBuffer<double> partials_;
  DeviceBuffer<double> outputs_;
  DeviceBuffer<double> block_sums_;
  DeviceBuffer<float> scores_;  // kept scores of one chunk
  PinnedBuffer<PairRecord> host_records_;  // the request's pairs, grouped
  PinnedBuffer<double> pending_;  // statistics rows back from the device
  std::vector<PendingRows> pending_rows_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateCudaStatsBackend(int device,
                                                                     const CudaStatsOptions& options) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return absl::UnavailableError("no CUDA device answers");
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA device ", device, " does not exist (", count, " found)"));
  }
  GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "set statistics device");
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  int64_t score_bytes = options.max_score_bytes;
  if (score_bytes < 0) {
    size_t free_bytes = 0, total_bytes = 0;
    GMM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes), "device memory size");
    score_bytes = std::min(train_cuda::kMaxAutoScoreBytes,
                           static_cast<int64_t>(total_bytes) / train_cuda::kAutoScoreShare);
  }
  return std::unique_ptr<StatsBackend>(
      new CudaStatsBackend(device, options, std::move(stream), info.sms, score_bytes));
}

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateCudaStatsBackend(int device) {
  return CreateCudaStatsBackend(device, CudaStatsOptions());
}

int64_t KeptScoreChunks(const StatsBackend& backend) {
  const auto* cuda = dynamic_cast<const CudaStatsBackend*>(&backend);
  return cuda == nullptr ? 0 : cuda->kept_chunks();
}

}  // namespace gmmscore
