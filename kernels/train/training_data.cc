#include "kernels/train/training_data.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_int_vector_archive.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"
#include "kernels/io/kaldi_posterior_archive.h"

namespace gmmscore {
namespace {

constexpr int kMaxWarnings = 20;

// Per utterance, per frame: (id, weight) pairs (one of weight 1 for an
// alignment).
using FramePairs = std::vector<std::vector<std::pair<int32_t, float>>>;

absl::StatusOr<absl::flat_hash_map<std::string, FramePairs>> ReadLabels(
    const TrainingDataOptions& options) {
  absl::flat_hash_map<std::string, FramePairs> labels;
  if (!options.alignments.empty()) {
    GMM_ASSIGN_OR_RETURN(auto entries, ReadKaldiIntVectorArchive(options.alignments));
    for (KaldiIntVectorEntry& entry : entries) {
      FramePairs& frames = labels[entry.key];
      frames.reserve(entry.value.size());
      for (int32_t id : entry.value) frames.push_back({{id, 1.0f}});
    }
  } else if (!options.posteriors.empty()) {
    GMM_ASSIGN_OR_RETURN(auto entries, ReadKaldiPosteriorArchive(options.posteriors));
    for (KaldiPosteriorEntry& entry : entries) labels[entry.key] = std::move(entry.value);
  }
  return labels;
}

// Accumulates utterances into blocks of at most block_frames frames.
class BlockBuilder {
 public:
  BlockBuilder(const TrainingDataOptions& options, TrainingData* data) : options_(options), data_(data) {}

  absl::Status Add(const std::string& key, const FloatMatrix& features, const FramePairs* labels,
                   int set) {
    if (dim_ != 0 && features.cols() != dim_) {
      return absl::InvalidArgumentError(absl::StrCat("utterance '", key, "' has dimension ", features.cols(),
                                                     ", earlier ones ", dim_));
    }
    // Every frame's transition counts, subsampled or not, as
    // gmm-acc-stats-ali counts them for the same data.
    if (labels != nullptr && !options_.transition_id_to_pdf.empty()) {
      for (int64_t t = 0; t < features.rows(); ++t) {
        for (const auto& [tid, weight] : (*labels)[t]) {
          GMM_RETURN_IF_ERROR(MapTransition(key, t, tid).status());
          data_->transition_counts[tid] += 1.0;
        }
      }
    }
    const int64_t kept = (features.rows() + options_.subsample - 1) / options_.subsample;
    if (rows_.size() / std::max<int64_t>(dim_, 1) + kept > options_.block_frames && !rows_.empty()) Flush();
    dim_ = features.cols();
    for (int64_t t = 0; t < features.rows(); t += options_.subsample) {
      const int32_t frame = static_cast<int32_t>(rows_.size() / dim_);
      rows_.insert(rows_.end(), features.row(t), features.row(t) + dim_);
      if (labels == nullptr) {
        // A one-state model: pairs are needed only to tell speakers apart.
        if (!options_.utterance_sets.empty()) pairs_.push_back({frame, set, 1.0f});
        continue;
      }
      for (auto [id, weight] : (*labels)[t]) {
        if (!options_.transition_id_to_pdf.empty()) {
          GMM_ASSIGN_OR_RETURN(id, MapTransition(key, t, id));
        }
        if (id < 0 || id >= options_.num_states) {
          return absl::InvalidArgumentError(absl::StrCat("utterance '", key, "' frame ", t, ": pdf id ", id,
                                                         " is outside the model's ", options_.num_states,
                                                         " states"));
        }
        pairs_.push_back({frame, set * options_.num_states + id, weight});
      }
    }
    data_->frames += kept;
    ++data_->utterances;
    return absl::OkStatus();
  }

  // The pdf of transition-id `tid`.
  absl::StatusOr<int32_t> MapTransition(const std::string& key, int64_t t, int32_t tid) const {
    const auto& map = options_.transition_id_to_pdf;
    if (tid < 1 || tid >= static_cast<int32_t>(map.size())) {
      return absl::InvalidArgumentError(absl::StrCat("utterance '", key, "' frame ", t, ": transition-id ", tid,
                                                     " is outside the transition model's 1..", map.size() - 1));
    }
    return map[tid];
  }

  void Flush() {
    if (rows_.empty()) return;
    TrainingBlock& block = data_->blocks.emplace_back();
    block.frames = FloatMatrix(static_cast<int64_t>(rows_.size()) / dim_, dim_);
    std::copy(rows_.begin(), rows_.end(), block.frames.data());
    block.pairs = std::move(pairs_);
    rows_.clear();
    pairs_.clear();
  }

 private:
  const TrainingDataOptions& options_;
  TrainingData* data_;
  int64_t dim_ = 0;
  std::vector<float> rows_;
  std::vector<StatsPair> pairs_;
};

void Skip(TrainingData* data, std::string why) {
  ++data->skipped;
  if (static_cast<int>(data->warnings.size()) < kMaxWarnings) data->warnings.push_back(std::move(why));
}

}  // namespace

absl::StatusOr<TrainingData> LoadTrainingData(const TrainingDataOptions& options) {
  if (!options.alignments.empty() && !options.posteriors.empty()) {
    return absl::InvalidArgumentError("give alignments or posteriors, not both");
  }
  if (options.subsample < 1 || options.block_frames < 1) {
    return absl::InvalidArgumentError("subsample and block size must be >= 1");
  }
  const bool labelled = !options.alignments.empty() || !options.posteriors.empty();
  if (!labelled && options.num_states != 1) {
    return absl::InvalidArgumentError(absl::StrCat("a model of ", options.num_states,
                                                   " states needs alignments or posteriors"));
  }
  if (!options.transition_id_to_pdf.empty() && options.alignments.empty()) {
    return absl::InvalidArgumentError("transition-ids are read from alignments; none were given");
  }
  GMM_ASSIGN_OR_RETURN(const auto labels, ReadLabels(options));
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixTableReader> reader, KaldiMatrixTableReader::Open(options.features));
  TrainingData data;
  if (!options.transition_id_to_pdf.empty()) data.transition_counts.assign(options.transition_id_to_pdf.size(), 0.0);
  BlockBuilder builder(options, &data);
  while (true) {
    GMM_ASSIGN_OR_RETURN(const bool more, reader->Next());
    if (!more) break;
    const std::string& key = reader->key();
    int set = 0;
    if (!options.utterance_sets.empty()) {
      const auto it = options.utterance_sets.find(key);
      if (it == options.utterance_sets.end()) {
        Skip(&data, absl::StrCat("utterance '", key, "' has no speaker: skipped"));
        continue;
      }
      set = it->second;
    }
    const FramePairs* frame_labels = nullptr;
    if (labelled) {
      const auto it = labels.find(key);
      if (it == labels.end()) {
        Skip(&data, absl::StrCat("utterance '", key, "' has no ", options.alignments.empty() ? "posteriors" : "alignment",
                                 ": skipped"));
        continue;
      }
      if (static_cast<int64_t>(it->second.size()) != reader->matrix().rows()) {
        Skip(&data, absl::StrCat("utterance '", key, "' has ", reader->matrix().rows(), " frames but ",
                                 it->second.size(), " labels: skipped"));
        continue;
      }
      frame_labels = &it->second;
    }
    GMM_RETURN_IF_ERROR(builder.Add(key, reader->matrix(), frame_labels, set));
  }
  builder.Flush();
  return data;
}

}  // namespace gmmscore
