// A batch of utterances in length order, longest first, so that the rows
// with a frame t are a prefix of the batch: each frame of a batched HMM
// recursion is then one GEMM over the first Active(t) rows. Shared by the
// CPU and CUDA forward-backward.
//
//   const LengthOrderedBatch batch = LengthOrderedBatch::Of(utterances);
//   for (int64_t t = 0; t < batch.frames(); ++t) Step(t, batch.Active(t));
#ifndef GMMSCORE_KERNELS_HMM_LENGTH_BATCH_H_
#define GMMSCORE_KERNELS_HMM_LENGTH_BATCH_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

struct LengthOrderedBatch {
  std::vector<int> order;        // row r is utterance order[r]
  std::vector<int64_t> lengths;  // frames of each row, non-increasing

  // Stable: utterances of equal length keep their order.
  static LengthOrderedBatch Of(absl::Span<const ConstMatrixView> utterances) {
    LengthOrderedBatch batch;
    batch.order.resize(utterances.size());
    std::iota(batch.order.begin(), batch.order.end(), 0);
    std::stable_sort(batch.order.begin(), batch.order.end(),
                     [&](int a, int b) { return utterances[a].rows > utterances[b].rows; });
    for (int u : batch.order) batch.lengths.push_back(utterances[u].rows);
    return batch;
  }
  // Rows that have a frame t (length > t).
  int Active(int64_t t) const {
    return static_cast<int>(std::lower_bound(lengths.begin(), lengths.end(), t, std::greater<>()) - lengths.begin());
  }
  // The longest utterance's frames.
  int64_t frames() const { return lengths.empty() ? 0 : lengths.front(); }
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_LENGTH_BATCH_H_
