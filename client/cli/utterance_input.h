// What the Sphinx commands (align, bw) read per utterance: features from a
// Kaldi table (--features) or computed from a wav.scp (--audio) with the
// model's front end, joined with the transcripts by utterance id.
//
//   GMM_ASSIGN_OR_RETURN(UtteranceInputs in, ReadUtteranceInputs(model_dir));
//   for (const AlignInput& u : in.inputs) ...;   // in transcript order
//   for (const std::string& id : in.missing) ...;  // transcripts without features
#ifndef GMMSCORE_CLIENT_CLI_UTTERANCE_INPUT_H_
#define GMMSCORE_CLIENT_CLI_UTTERANCE_INPUT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/io/transcripts.h"

namespace gmmscore::cli {

struct UtteranceInputs {
  std::map<std::string, FloatMatrix> features;  // owns what `inputs` views
  std::vector<Transcript> transcripts;
  std::vector<AlignInput> inputs;     // transcripts with features, in file order
  std::vector<std::string> missing;   // transcripts without features or audio
};

// Reads --transcripts and exactly one of --features / --audio (the caller
// checks that). Audio goes through `model_dir`'s feat.params front end.
absl::StatusOr<UtteranceInputs> ReadUtteranceInputs(const std::string& model_dir);

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_UTTERANCE_INPUT_H_
