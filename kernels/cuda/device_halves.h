// DeviceHalves: the host side of half-precision encoding on the GPU
// (half_encode_launch.h) for one lane of the CUDA backend. After a call's
// likelihood launches it stages one HalfSegment per window that asks for
// half_from_best, launches the encoding over all of them and queues one copy
// back of the halves and frame bests; once the lane's stream has
// synchronised, Finish hands each window its HalfScores. Such a window's
// float32 scores never leave the device. Modelled on DeviceSelection.
//
//   GMM_RETURN_IF_ERROR(lane.halves.Queue(jobs, halved, scores, offsets, stream));
//   ... other copies, cudaStreamSynchronize(stream) ...
//   lane.halves.Finish(jobs);
#ifndef GMMSCORE_KERNELS_CUDA_DEVICE_HALVES_H_
#define GMMSCORE_KERNELS_CUDA_DEVICE_HALVES_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/half_encode_launch.h"
#include "kernels/cuda/pinned_block_pool.h"
#include "kernels/cuda/scores_blocks.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

class DeviceHalves {
 public:
  // Whether the device encodes `window` in half precision when it is not in
  // a fusion: asked for, with no selection (a selected window's kept values
  // are encoded by the caller, from the device's or its own selection).
  static bool Encodes(const ScoreWindow& window);

  // Queues on `stream` the encoding of every window j with halved[j],
  // whose rows x num_states scores lie at scores + score_offsets[j] on the
  // device, and the copy of its halves and frame bests back: the halves
  // into blocks of `pool` where it has them (packed window after window,
  // scores_blocks.h), into this object's own buffer otherwise.
  absl::Status Queue(absl::Span<const ScoreWindow> jobs, const std::vector<bool>& halved,
                     const float* scores, absl::Span<const int64_t> score_offsets, cudaStream_t stream,
                     PinnedBlockPool* pool);

  // After the stream has synchronised: result->half of every window Queue
  // staged (windows with frames), then forgets them. Halves copied into a
  // block stay there (HalfScores::values on the block); others are copied.
  void Finish(absl::Span<const ScoreWindow> jobs);

 private:
  // The staged windows' halves packed into blocks of `pool`.
  ScoresPlacement PlaceHalves(PinnedBlockPool& pool) const;
  // Where the halves of a placement's block go (-1: host_out_'s halves).
  uint16_t* HalvesAt(int block) const;

  // Staged by Queue for Finish: the windows, their segments.
  std::vector<int> windows_;
  std::vector<HalfSegment> segments_;
  int64_t rows_ = 0;    // frames encoded: one best each
  int64_t values_ = 0;  // halves
  PinnedBuffer<HalfSegment> host_segments_;
  DeviceBuffer<HalfSegment> device_segments_;
  PinnedBuffer<char> host_out_;  // bests, then halves
  DeviceBuffer<char> device_out_;
  // Where the staged windows' halves went (halves as the unit). Its blocks
  // are held until Finish, or the next Queue: a failed call's lease waits
  // for the stream before the lane is used again, so no copy still lands
  // in a block another call has.
  ScoresPlacement placed_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_DEVICE_HALVES_H_
