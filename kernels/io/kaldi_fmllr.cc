#include "kernels/io/kaldi_fmllr.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/kaldi_script_table.h"

namespace gmmscore {

absl::StatusOr<const FeatureTransform*> FmllrTransforms::For(const std::string& key) const {
  if (global.has_value()) return &*global;
  std::string table_key = key;
  if (!utt2spk.empty()) {
    const auto speaker = utt2spk.find(key);
    if (speaker == utt2spk.end()) {
      return absl::NotFoundError(absl::StrCat("utterance '", key, "' has no speaker in the utt2spk map"));
    }
    table_key = speaker->second;
  }
  const auto it = by_key.find(table_key);
  if (it == by_key.end()) {
    return absl::NotFoundError(absl::StrCat("no fMLLR transform for ", utt2spk.empty() ? "utterance '" : "speaker '",
                                            table_key, "' in '", source, "'"));
  }
  return &it->second;
}

absl::StatusOr<FeatureTransform> FmllrFromMatrix(const FloatMatrix& matrix, int dim, const std::string& where) {
  if (matrix.rows() != dim || (matrix.cols() != dim && matrix.cols() != dim + 1)) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is a ", matrix.rows(), " x ", matrix.cols(),
                                                   " matrix; an fMLLR transform of ", dim, "-dim features is ",
                                                   dim, " x ", dim + 1, " ([A | b]) or ", dim, " x ", dim));
  }
  absl::StatusOr<FeatureTransform> transform =
      FeatureTransform::Create(static_cast<int>(matrix.rows()), static_cast<int>(matrix.cols()), matrix.span());
  if (!transform.ok()) {
    return PrefixStatus(where, transform.status());
  }
  return transform;
}

absl::StatusOr<FmllrTransforms> ReadFmllrTransforms(const std::string& spec, int dim) {
  FmllrTransforms out;
  out.source = spec;
  const bool table = absl::StartsWith(spec, "ark:") || absl::StartsWith(spec, "ark,") || IsScriptRspecifier(spec);
  if (!table) {
    // A single matrix, as transform-feats takes for a global transform.
    GMM_ASSIGN_OR_RETURN(const FloatMatrix matrix, ReadKaldiMatrixObject(spec, 0));
    GMM_ASSIGN_OR_RETURN(out.global, FmllrFromMatrix(matrix, dim, absl::StrCat("fMLLR file '", spec, "'")));
    return out;
  }
  GMM_ASSIGN_OR_RETURN(const std::vector<KaldiMatrixEntry> entries, ReadKaldiMatrixTable(spec));
  for (const KaldiMatrixEntry& entry : entries) {
    GMM_ASSIGN_OR_RETURN(FeatureTransform transform,
                         FmllrFromMatrix(entry.matrix, dim,
                                         absl::StrCat("fMLLR table '", spec, "', entry '", entry.key, "'")));
    if (!out.by_key.emplace(entry.key, std::move(transform)).second) {
      return absl::InvalidArgumentError(absl::StrCat("fMLLR table '", spec, "' has entry '", entry.key, "' twice"));
    }
  }
  return out;
}

}  // namespace gmmscore
