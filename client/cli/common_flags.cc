#include "client/cli/common_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, model, "",
          "model file: a gmmscore native model, a Kaldi AmDiagGmm (text or binary), an HTK MMF or a CMU "
          "Sphinx model directory (detected by content; docs/MODEL_FORMAT.md)");
ABSL_FLAG(std::string, output, "", "where to write the result");
ABSL_FLAG(std::string, backend, "auto", "scoring backend: cpu, cuda, cuda:N or auto (cuda when a GPU answers)");
ABSL_FLAG(std::string, features, "",
          "feature table: ark:FILE, ark,t:FILE, ark:- (stdin), scp:FILE, or htk:FILE (an HTK parameter "
          "file, or an HTK script of them, KEY=FILE[S,E] names included)");
ABSL_FLAG(std::string, format, "native", "output model format: native, kaldi-text or kaldi-binary");
ABSL_FLAG(uint64_t, seed, 1, "random seed; the same seed gives the same result");
