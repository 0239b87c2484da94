// Test helper shared by the statistics backends' tests: one request through
// a backend, with every step expected to succeed.
#ifndef GMMSCORE_KERNELS_TRAIN_STATS_TEST_UTIL_H_
#define GMMSCORE_KERNELS_TRAIN_STATS_TEST_UTIL_H_

#include <vector>

#include "gtest/gtest.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// SetModel, LoadFrames and Accumulate into fresh statistics of `sets` sets.
inline GmmStats Accumulated(StatsBackend& backend, const DiagGmmModel& model, const FloatMatrix& frames,
                            const std::vector<StatsPair>& pairs, int sets) {
  EXPECT_TRUE(backend.SetModel(model).ok());
  auto block = backend.LoadFrames(frames.view());
  EXPECT_TRUE(block.ok()) << block.status();
  GmmStats stats = GmmStats::ForModel(model, sets);
  if (!block.ok()) return stats;
  const absl::Status status = backend.Accumulate(**block, pairs, &stats);
  EXPECT_TRUE(status.ok()) << status;
  return stats;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_STATS_TEST_UTIL_H_
