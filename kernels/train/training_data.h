// Training data from Kaldi tables: a feature archive, optionally joined by
// utterance key with a pdf-id alignment archive (ali-to-pdf) or a pdf-id
// posterior archive (post-to-pdf-post, a decoder), optionally grouped by
// speaker into sets, cut into TrainingBlocks for a StatsPass.
//
//   TrainingDataOptions options;
//   options.features = "ark:feats.ark";  options.alignments = "ark:ali.ark";
//   options.num_states = model.num_states();
//   GMM_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(options));
//
// As Kaldi's tools, an utterance without an alignment (or posteriors), or
// whose alignment length differs from its frame count, is skipped with a
// warning and counted; an utterance of a speaker map that has no speaker is
// skipped likewise. Ids outside [0, num_states) are INVALID_ARGUMENT naming
// the utterance and frame, as are feature values that are not usable.
#ifndef GMMSCORE_KERNELS_TRAIN_TRAINING_DATA_H_
#define GMMSCORE_KERNELS_TRAIN_TRAINING_DATA_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/train/stats_pass.h"

namespace gmmscore {

struct TrainingDataOptions {
  std::string features;    // rspecifier
  std::string alignments;  // rspecifier of pdf ids; at most one of these two
  std::string posteriors;  // rspecifier of (pdf id, weight) lists
  int num_states = 1;      // of the model the ids index
  // Non-empty: `alignments` holds Kaldi transition-ids (ali.*.gz, gunzipped),
  // mapped to pdf ids through this (entry t for transition-id t, entry 0
  // unused: KaldiTransitionModel::transition_id_to_pdf), and counted, as
  // gmm-acc-stats-ali does. A transition-id outside it is INVALID_ARGUMENT.
  std::vector<int> transition_id_to_pdf;
  int subsample = 1;       // keep frames 0, k, 2k, ... of each utterance
  int64_t block_frames = int64_t{1} << 20;
  // Utterance -> set (speaker) index; empty: every utterance in set 0.
  std::map<std::string, int> utterance_sets;
};

struct TrainingData {
  std::vector<TrainingBlock> blocks;
  int64_t utterances = 0;  // used
  int64_t frames = 0;      // used (after subsampling)
  int64_t skipped = 0;     // utterances skipped, each with a warning
  std::vector<std::string> warnings;  // the first 20
  // With transition_id_to_pdf: frames aligned to each transition-id, indexed
  // as the map, over every frame of the utterances used (subsampling thins
  // the GMM statistics, not these counts); empty otherwise.
  std::vector<double> transition_counts;
};

absl::StatusOr<TrainingData> LoadTrainingData(const TrainingDataOptions& options);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_TRAINING_DATA_H_
