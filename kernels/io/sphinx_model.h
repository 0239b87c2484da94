// CMU Sphinx (sphinx3 / pocketsphinx) acoustic models: the directory that
// sphinxtrain writes (`means`, `variances`, `mixture_weights` or `sendump`,
// `mdef`, `feat.params`), read into a TiedMixtureModel.
//
//   GMM_ASSIGN_OR_RETURN(SphinxModel sphinx, ReadSphinxModel("/usr/share/pocketsphinx/model/en-us/en-us"));
//   sphinx.model.num_states();            // senones, in senone-id order
//   sphinx.kind;                          // kContinuous, kSemiContinuous or kPhoneticallyTied
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel m, sphinx.model.ToDiagGmmModel());  // single-stream only
//
// Files (all s3 binary files: "s3\n", "key value\n" lines, "endhdr\n", the
// uint32 byte-order magic 0x11223344 in the writer's byte order, int32 counts,
// float32 data, then, when the header has "chksum0", the checksum that
// sphinxbase's bio.c computes: sum = rotl(sum, 20) + word over every 32-bit
// word after the magic):
//   means, variances  int32 n_codebook, n_stream, n_density, veclen[n_stream],
//                     int32 n_floats, then [codebook][stream][density][veclen]
//   mixture_weights   int32 n_senone, n_stream, n_density, n_floats, then
//                     [senone][stream][density] (unnormalised counts: they are
//                     normalised, floored at SphinxReadOptions::weight_floor
//                     and renormalised, as pocketsphinx does)
//   sendump           pocketsphinx's quantised weights: length-prefixed header
//                     strings, then [stream][density][senone] bytes (or 4-bit
//                     ids into a 16-entry table when "cluster_count 15/16").
//                     A byte q means log w = -q * 2^mixw_shift * ln(logbase)
//                     (2^10 * ln 1.0001 = 0.1024 nats per step). pocketsphinx
//                     quantises with a floor: the true log weight lies in
//                     [-q*step, -q*step + step), so decoded weights are up to
//                     10.8% (one step) below the trained ones, the senone
//                     log-likelihood up to 0.1024 nats per stream below, and
//                     each stream's decoded weights sum to (0.90, 1].
//   mdef              text (version 0.3) or pocketsphinx's binary "BMDF":
//                     senone -> base phone (sen2cimap), base phone names
//   feat.params       "-name value" lines (feature type, -svspec, -cmn, ...)
// Which codebook a senone uses follows from the codebook count, as in
// pocketsphinx: 1 = semi-continuous (all share it), n_senone = continuous
// (senone s uses codebook s), n_base_phone = PTM (senone s uses the codebook
// of its base phone, from mdef). Streams are the `veclen` slices in order;
// a -svspec in feat.params must describe the same slices.
// Variances are floored at SphinxReadOptions::variance_floor (pocketsphinx's
// -varfloor default, 1e-4) before use.
//
// Errors name the file and the byte offset or line:
//   NOT_FOUND         the directory or a required file is missing
//   DATA_LOSS         a file ends early, or its checksum does not match
//   INVALID_ARGUMENT  bad magic (neither byte order), counts that disagree
//                     within a file or between files, bad values, an unknown
//                     mdef line, trailing bytes
//   UNIMPLEMENTED     a -svspec that is not contiguous in-order slices, an
//                     LDA/MLLT transform (feature_transform file), 4-bit
//                     sendump without its table
// Thread safety: all functions are reentrant.
#ifndef GMMSCORE_KERNELS_IO_SPHINX_MODEL_H_
#define GMMSCORE_KERNELS_IO_SPHINX_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

// An s3 Gaussian parameter file (means or variances) as stored.
struct SphinxGaussianFile {
  int num_codebooks = 0;
  int num_streams = 0;
  int num_densities = 0;
  std::vector<int> stream_dims;  // veclen
  std::vector<float> values;     // [codebook][stream][density][dim]
  bool had_checksum = false;
  bool byte_swapped = false;
};

// Mixture weights as log weights, [senone][stream][density].
struct SphinxWeights {
  int num_senones = 0;
  int num_streams = 0;
  int num_densities = 0;
  std::vector<float> log_weights;
  // "mixture_weights" (exact floats) or "sendump" (quantised).
  std::string source;
  double quantisation_step = 0.0;  // nats per quantisation step (sendump only)
};

// One mdef phone: a base (CI) phone, or a triphone of it in a left and
// right context at a word position. Contexts are base phone ids, -1 for a
// base phone's "-".
struct SphinxPhone {
  int base = 0;
  int left = -1;
  int right = -1;
  char position = '-';          // 'b'egin, 'e'nd, 'i'nternal, 's'ingle, '-' (base)
  bool filler = false;          // base phones marked "filler" (SIL, +NSN+, ...)
  int tmat = 0;                 // transition matrix id
  std::vector<int32_t> senones;  // one per emitting state, in order
};

struct SphinxMdef {
  std::vector<std::string> base_phones;  // CI phone names, by id
  int num_senones = 0;
  int num_ci_senones = 0;
  int num_phones = 0;                    // base + context-dependent
  int num_tmats = 0;                     // transition matrices the phones use
  std::vector<int> senone_base_phone;    // sen2cimap, num_senones entries
  std::vector<SphinxPhone> phones;       // num_phones, base phones first
  bool binary = false;
};

// feat.params: "-name value" pairs, in file order.
struct SphinxFeatParams {
  std::map<std::string, std::string> values;
  std::string Get(const std::string& name, const std::string& fallback = "") const {
    const auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
  }
};

enum class SphinxModelKind { kContinuous, kSemiContinuous, kPhoneticallyTied };
// "continuous", "semi-continuous", "ptm".
absl::string_view SphinxModelKindName(SphinxModelKind kind);

struct SphinxReadOptions {
  float variance_floor = 1e-4f;  // pocketsphinx -varfloor
  float weight_floor = 1e-7f;    // pocketsphinx -mixwfloor (mixture_weights only)
  // When both weight files exist: true reads mixture_weights (exact), false
  // reads sendump (what pocketsphinx itself uses when it is there).
  bool prefer_exact_weights = true;
};

struct SphinxModel {
  TiedMixtureModel model;        // states = senones, in id order
  SphinxModelKind kind;
  SphinxMdef mdef;
  SphinxFeatParams feat_params;  // empty when there is no feat.params
  std::string weights_source;    // "mixture_weights" or "sendump"
  double quantisation_step = 0;  // nats (sendump), else 0
  int floored_variances = 0;     // values raised to the variance floor
  std::vector<std::string> state_names;  // "AA_0" style: base phone, senone
};

// Single files; `path` names them in errors.
absl::StatusOr<SphinxGaussianFile> ReadSphinxGaussianFile(const std::string& path);
absl::StatusOr<SphinxGaussianFile> DecodeSphinxGaussianFile(absl::string_view bytes, const std::string& name);
absl::StatusOr<SphinxWeights> ReadSphinxMixtureWeights(const std::string& path, float weight_floor = 1e-7f);
absl::StatusOr<SphinxWeights> DecodeSphinxMixtureWeights(absl::string_view bytes, const std::string& name,
                                                         float weight_floor = 1e-7f);
// `num_senones` and `num_densities` come from mdef and means when the
// sendump header does not give them (pocketsphinx does the same).
absl::StatusOr<SphinxWeights> ReadSphinxSendump(const std::string& path, int num_streams,
                                                int num_densities, int num_senones);
absl::StatusOr<SphinxWeights> DecodeSphinxSendump(absl::string_view bytes, const std::string& name,
                                                  int num_streams, int num_densities, int num_senones);
absl::StatusOr<SphinxMdef> ReadSphinxMdef(const std::string& path);
absl::StatusOr<SphinxMdef> DecodeSphinxMdef(absl::string_view bytes, const std::string& name);
absl::StatusOr<SphinxFeatParams> ReadSphinxFeatParams(const std::string& path);
// feat.params text held in memory; `path` names it in errors.
absl::StatusOr<SphinxFeatParams> ParseSphinxFeatParams(absl::string_view text, const std::string& path);

// True when `directory` holds an mdef and a means file.
bool LooksLikeSphinxModelDirectory(const std::string& directory);

// The whole model directory (see the file comment).
absl::StatusOr<SphinxModel> ReadSphinxModel(const std::string& directory,
                                            const SphinxReadOptions& options = {});

// transition_matrices: per matrix, the probabilities from each emitting
// state to each state, the last (index num_emit) the non-emitting exit.
// Read as pocketsphinx's tmat_init does: non-zero values floored at
// `floor` (-tmatfloor, 1e-4), each row renormalised; zeros stay
// impossible. A matrix must be upper triangular (left-to-right).
struct SphinxTransitions {
  int num_tmats = 0;
  int num_emit = 0;          // emitting states; rows per matrix
  std::vector<float> probs;  // [tmat][from][to], to in [0, num_emit]

  float at(int tmat, int from, int to) const {
    return probs[(static_cast<int64_t>(tmat) * num_emit + from) * (num_emit + 1) + to];
  }
};
absl::StatusOr<SphinxTransitions> DecodeSphinxTransitions(absl::string_view bytes, const std::string& name,
                                                          float floor = 1e-4f);
absl::StatusOr<SphinxTransitions> ReadSphinxTransitions(const std::string& path, float floor = 1e-4f);
std::string EncodeSphinxTransitions(const SphinxTransitions& transitions);

// The s3 header + magic + payload + checksum, byte for byte as sphinxbase's
// bio_writehdr/bio_fwrite write it (little-endian), for Gaussian files: used
// by tests to craft inputs and by tools to write Sphinx files.
std::string EncodeSphinxGaussianFile(const SphinxGaussianFile& file);
// The same for mixture_weights ([senone][stream][density] linear weights).
std::string EncodeSphinxMixtureWeights(int num_senones, int num_streams, int num_densities,
                                       const std::vector<float>& weights);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_SPHINX_MODEL_H_
