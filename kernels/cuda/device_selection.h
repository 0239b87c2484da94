// DeviceSelection: the host side of state selection on the GPU
// (state_select_launch.h) for one lane of the CUDA backend. After a call's
// likelihood launches it stages one SelectSegment per window that asks for
// top_k states, launches the selection over all of them and queues one copy
// back of the kept states; once the lane's stream has synchronised, Finish
// hands each window its SparseScores. Such a window's T x S scores never
// leave the device.
//
//   GMM_RETURN_IF_ERROR(lane.selection.Queue(jobs, selected, scores, offsets, stream));
//   ... other copies, cudaStreamSynchronize(stream) ...
//   lane.selection.Finish(jobs);
#ifndef GMMSCORE_KERNELS_CUDA_DEVICE_SELECTION_H_
#define GMMSCORE_KERNELS_CUDA_DEVICE_SELECTION_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/state_select_launch.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

class DeviceSelection {
 public:
  // Whether the device selects for `window`: a top_k below its state
  // count. A beam alone, or a k that keeps every state the beam does, can
  // send back every state (k slots a frame, ids and values): those are
  // copied dense and cut by the caller.
  static bool Selects(const ScoreWindow& window) { return Selects(window.select, window.model->num_states()); }
  static bool Selects(const StateSelection& select, int64_t num_states) {
    return select.top_k > 0 && select.top_k < num_states;
  }

  // Queues on `stream` the selection of every window j with selected[j]
  // and frames, whose rows x num_states scores lie at scores +
  // score_offsets[j] on the device, and the copy of the kept states back.
  // (A selected window of no frames is the caller's: nothing to launch.)
  absl::Status Queue(absl::Span<const ScoreWindow> jobs, const std::vector<bool>& selected,
                     const float* scores, absl::Span<const int64_t> score_offsets, cudaStream_t stream);

  // After the stream has synchronised: result->sparse of every window
  // Queue launched for, then forgets them.
  void Finish(absl::Span<const ScoreWindow> jobs);

 private:
  // Staged by Queue for Finish: the windows launched for, their segments.
  std::vector<int> windows_;
  std::vector<SelectSegment> segments_;
  int64_t rows_ = 0;   // frames selected: counts, one int32 each
  int64_t slots_ = 0;  // state ids, then values, one 32-bit word each
  PinnedBuffer<SelectSegment> host_segments_;
  DeviceBuffer<SelectSegment> device_segments_;
  PinnedBuffer<char> host_out_;   // counts, state ids, values
  DeviceBuffer<char> device_out_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_DEVICE_SELECTION_H_
