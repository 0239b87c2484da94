// A short readable account of streamed utterances for `gmmscore stream`:
// frames, audio time, wall time, real-time factor, the best states over time
// and, with fusion, which model dominated.
//
//   StreamSummary summary(/*frame_shift_seconds=*/0.01);
//   summary.AddUtterance("utt1", scores, dominant_models, wall_seconds);
//   std::fputs(summary.UtteranceReport("utt1").c_str(), stderr);
//   std::fputs(summary.TotalReport().c_str(), stderr);
#ifndef GMMSCORE_CLIENT_CLI_STREAM_SUMMARY_H_
#define GMMSCORE_CLIENT_CLI_STREAM_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/matrix.h"

namespace gmmscore::cli {

// The most frequent best state (argmax over states) in each window of
// `window_frames` frames of `scores` (T x S), in order; ties go to the
// lower state.
std::vector<int> BestStatesOverTime(const FloatMatrix& scores, int window_frames);

class StreamSummary {
 public:
  StreamSummary(double frame_shift_seconds, int best_state_window_frames)
      : frame_shift_(frame_shift_seconds), window_(best_state_window_frames) {}

  // Records one utterance and returns its lines ("  " indented):
  //   utt1: 264 frames (2.64 s of audio) in 21.3 ms, real-time factor 0.0081
  //     best state per 0.25 s: 17 17 4 33 ...
  //     dominant model: spk1 in 9 of 12 chunks, spk2 in 3
  // `dominant_models` holds one name per chunk (empty without fusion).
  std::string AddUtterance(const std::string& key, const FloatMatrix& scores,
                           const std::vector<std::string>& dominant_models, double wall_seconds);

  // "N utterances, F frames (A s of audio) in W s: real-time factor R".
  std::string TotalReport() const;

 private:
  const double frame_shift_;
  const int window_;
  int64_t utterances_ = 0;
  int64_t frames_ = 0;
  double wall_seconds_ = 0.0;
};

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_STREAM_SUMMARY_H_
