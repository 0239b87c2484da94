// Speaker transforms from Kaldi files: fMLLR matrices as transform-feats and
// gmm-est-fmllr read and write them, D x (D+1) [A | b] or D x D (A alone),
// into the engine's FeatureTransform (kernels/score/feature_transform.h).
//
//   GMM_ASSIGN_OR_RETURN(FmllrTransforms fmllr, ReadFmllrTransforms("ark:trans.ark", 39));
//   GMM_ASSIGN_OR_RETURN(const FeatureTransform* t, fmllr.For("utt1"));
//
// `spec` is either a table, "ark:FILE" / "ark,t:FILE" / "scp:FILE" (one
// matrix per utterance key), or a plain file holding one matrix (binary
// "\0B" + "FM "/"DM ", or text "[ ... ]") used for every utterance.
//
// Errors name the file (and the entry): NOT_FOUND for a missing file or, from
// For(), a key the table lacks; INVALID_ARGUMENT for a matrix whose shape is
// not D x D or D x (D+1) for the features' dimension D, or with non-finite
// values; the table readers' codes for damaged files (DATA_LOSS truncated,
// INVALID_ARGUMENT malformed). Reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_FMLLR_H_
#define GMMSCORE_KERNELS_IO_KALDI_FMLLR_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/score/feature_transform.h"

namespace gmmscore {

struct FmllrTransforms {
  std::string source;                          // the spec it was read from
  std::map<std::string, FeatureTransform> by_key;  // from a table
  std::optional<FeatureTransform> global;      // from a single-matrix file
  // Utterance -> speaker (Kaldi's utt2spk): when set, the table is keyed by
  // speaker, as gmm-est-fmllr --spk2utt writes it and transform-feats
  // --utt2spk reads it.
  std::map<std::string, std::string> utt2spk;

  // The transform for utterance `key`: the global one, or the table's entry
  // for the utterance (or its speaker); NOT_FOUND naming the source when it
  // has none, or when the utterance is not in the utt2spk map.
  absl::StatusOr<const FeatureTransform*> For(const std::string& key) const;
};

// `matrix` as a transform of `dim`-dimensional features; `where` names it in
// errors ("fMLLR file 'x', entry 'utt1'").
absl::StatusOr<FeatureTransform> FmllrFromMatrix(const FloatMatrix& matrix, int dim, const std::string& where);

absl::StatusOr<FmllrTransforms> ReadFmllrTransforms(const std::string& spec, int dim);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_FMLLR_H_
