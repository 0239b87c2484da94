// Launch of the Hopper statistics kernel (stats_wgmma_kernel.cuh). Its
// translation unit is compiled for sm_90a alone (wgmma exists only there),
// so this is a library of its own, as kernels/cuda/wgmma_loglik_launch.h.
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WGMMA_LAUNCH_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WGMMA_LAUNCH_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/train/cuda/stats_kernels.h"

namespace gmmscore {
namespace train_cuda {

// Columns of the kernel's tiles for `dim`: TcCols(dim) rounded up to the
// nearest built instance (32, 64, 80 or 88 columns); 0 where none serves
// (dim above kTcMaxDim).
int WgmmaStatsCols(int dim);

// Resident CTAs per SM of the kernel for `dim` (2: ~108 KB of shared
// memory each at D = 43).
absl::StatusOr<int> WgmmaStatsCtasPerSm(int dim);

// LaunchStats for the wgmma kernel: tile_big and tile_small hold the
// model's BuildTcTiles(tiles, WgmmaStatsCols(dim)) rows split into TF32
// big parts and the TF32 of their rests. FAILED_PRECONDITION on a device
// other than compute capability 9.0, INVALID_ARGUMENT for a tile width other
// than kTcTile or a dimension no instance serves.
absl::Status LaunchWgmmaStats(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                              int num_items, const float* tile_big, const float* tile_small, float* lse_max,
                              float* lse_log, double* partials, cudaStream_t stream);

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WGMMA_LAUNCH_H_
