#include "client/cli/stream_summary.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gmmscore::cli {

std::vector<int> BestStatesOverTime(const FloatMatrix& scores, int window_frames) {
  std::vector<int> best;
  for (int64_t start = 0; start < scores.rows(); start += window_frames) {
    std::map<int, int> votes;
    const int64_t end = std::min<int64_t>(scores.rows(), start + window_frames);
    for (int64_t t = start; t < end; ++t) {
      const float* row = scores.row(t);
      ++votes[static_cast<int>(std::max_element(row, row + scores.cols()) - row)];
    }
    int winner = votes.begin()->first;
    for (const auto& [state, count] : votes) {
      if (count > votes[winner]) winner = state;
    }
    best.push_back(winner);
  }
  return best;
}

std::string StreamSummary::AddUtterance(const std::string& key, const FloatMatrix& scores,
                                        const std::vector<std::string>& dominant_models,
                                        double wall_seconds) {
  ++utterances_;
  frames_ += scores.rows();
  wall_seconds_ += wall_seconds;
  const double audio = scores.rows() * frame_shift_;
  std::string out = absl::StrFormat(
      "  %s: %d frames (%.2f s of audio) in %.1f ms, real-time factor %.4f\n", key,
      scores.rows(), audio, wall_seconds * 1e3, audio > 0 ? wall_seconds / audio : 0.0);
  if (scores.rows() > 0 && scores.cols() > 0) {
    absl::StrAppendFormat(&out, "    best state per %.2f s: %s\n", window_ * frame_shift_,
                          absl::StrJoin(BestStatesOverTime(scores, window_), " "));
  }
  if (!dominant_models.empty()) {
    std::map<std::string, int> counts;
    for (const std::string& name : dominant_models) ++counts[name];
    std::vector<std::pair<std::string, int>> ranked(counts.begin(), counts.end());
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> parts;
    for (const auto& [name, count] : ranked) parts.push_back(absl::StrCat(name, " in ", count));
    absl::StrAppendFormat(&out, "    dominant model per chunk: %s (of %d chunks)\n",
                          absl::StrJoin(parts, ", "), dominant_models.size());
  }
  return out;
}

std::string StreamSummary::TotalReport() const {
  const double audio = frames_ * frame_shift_;
  return absl::StrFormat(
      "%d utterances, %d frames (%.2f s of audio) in %.3f s of streaming: real-time factor "
      "%.4f (wall time / audio time; below 1 is faster than real time)\n",
      utterances_, frames_, audio, wall_seconds_, audio > 0 ? wall_seconds_ / audio : 0.0);
}

}  // namespace gmmscore::cli
