// State selection on the device (ScoreWindow::select with top_k > 0): each
// frame's kept states picked where its scores lie, so that a 5000-state
// frame sends top_k (id, value) pairs back through the copy and the host
// instead of 5000 floats. The choice is StateSelection's (state_selection.h)
// exactly: the same scores give the same states, ties at the cut-off going
// to the lower state.
//
// For every segment (one window) and frame t < rows, with k = top_k:
//   counts[first_row + t]      = the number of states kept (<= k)
//   state_ids / values + slots_offset + t * k: the kept states, ascending,
//                                and their scores (slots past the count
//                                are left as they were)
#ifndef GMMSCORE_KERNELS_CUDA_STATE_SELECT_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_STATE_SELECT_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gmmscore {

// One window. Offsets count elements from the launch's buffers.
struct SelectSegment {
  int64_t first_row = 0;      // its first frame among all rows of the launch
  int64_t scores_offset = 0;  // its rows x states scores in `scores`
  int64_t slots_offset = 0;   // its rows x top_k slots in `state_ids`, `values`
  int32_t rows = 0;
  int32_t states = 0;
  int32_t top_k = 0;  // 1 .. states (a larger k keeps what the beam keeps)
  float beam = 0;     // > 0: only states within `beam` of the frame's best
};

// Segments must be ordered by first_row and cover rows [0, total_rows)
// without gaps; every pointer is device memory. One block per frame.
absl::Status LaunchStateSelect(const SelectSegment* segments, int num_segments, int64_t total_rows,
                               const float* scores, int32_t* counts, uint32_t* state_ids, float* values,
                               cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_STATE_SELECT_LAUNCH_H_
