// Writes a CMU Sphinx model directory that pocketsphinx loads: the four
// parameter files (means, variances, mixture_weights, transition_matrices)
// in sphinxbase's s3 format with checksums, and the files that describe the
// model (mdef, feat.params, noisedict, ...) copied from the model it was
// trained from.
//
//   SphinxModelFiles files = ...;   // from a re-estimated model
//   GMM_RETURN_IF_ERROR(WriteSphinxModelDirectory(files, "an4_ci_cont", "out/an4_bw"));
//
// The output directory is created if missing. Files of the source directory
// other than the parameter files being written (and `sendump`, which would
// shadow new weights) are copied byte for byte. Each file is written to a
// temporary name and renamed, so no file is ever left half written.
// Errors: INVALID_ARGUMENT when the parts disagree (codebook, senone or
// density counts, dimensions), UNAVAILABLE for I/O failures (naming the path).
#ifndef GMMSCORE_KERNELS_IO_SPHINX_MODEL_WRITER_H_
#define GMMSCORE_KERNELS_IO_SPHINX_MODEL_WRITER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/io/sphinx_model.h"

namespace gmmscore {

struct SphinxModelFiles {
  // False: only the transitions are new; means, variances and the weights
  // (mixture_weights or sendump) are copied from the source directory.
  bool gmm = true;
  SphinxGaussianFile means;
  SphinxGaussianFile variances;
  int num_senones = 0;
  std::vector<float> mixture_weights;  // [senone][stream][density], linear
  SphinxTransitions transitions;
};

absl::Status WriteSphinxModelDirectory(const SphinxModelFiles& files, const std::string& source_dir,
                                       const std::string& output_dir);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_SPHINX_MODEL_WRITER_H_
