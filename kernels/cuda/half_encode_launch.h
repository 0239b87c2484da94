// Scores encoded in half precision on the device (ScoreWindow::
// half_from_best, OutputOptions.float16): each frame's best found and every
// score sent as binary16 of its distance from it, where the scores lie, so
// that a 5000-state frame copies back 10 KB instead of 20 KB and the host
// makes no pass over it. The encoding is HalfScores' (scoring_backend.h)
// bit for bit: the same float32 subtraction, round to nearest even (the
// host's F16C conversion does the same), finite results saturated to
// +-65504, a frame with no finite best sent against 0, a best of -0 sent
// as +0. NaN scores are outside the contract (features and models are
// checked finite; the host and the GPU write different NaN bits).
//
// For every segment (one window) and frame t < rows:
//   best[first_row + t]                       = the frame's best (or 0)
//   halves[halves_offset + t * states + s]    = binary16(score - best)
#ifndef GMMSCORE_KERNELS_CUDA_HALF_ENCODE_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_HALF_ENCODE_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gmmscore {

// One window. Offsets count elements from the launch's buffers.
struct HalfSegment {
  int64_t first_row = 0;      // its first frame among all rows of the launch
  int64_t scores_offset = 0;  // its rows x states scores in `scores`
  int64_t halves_offset = 0;  // its rows x states halves in `halves`
  int32_t rows = 0;
  int32_t states = 0;
};

// Segments must be ordered by first_row and cover rows [0, total_rows)
// without gaps; every pointer is device memory. One block per frame.
absl::Status LaunchHalfEncode(const HalfSegment* segments, int num_segments, int64_t total_rows,
                              const float* scores, float* best, uint16_t* halves, cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_HALF_ENCODE_LAUNCH_H_
