// Kaldi's GMM accumulator files, read into GmmStats (kernels/train/
// gmm_stats.h) and written back byte for byte as Kaldi writes them: the
// acoustic-model accumulators of gmm-acc-stats-ali / gmm-sum-accs / gmm-est
// and the one-GMM (UBM) accumulators of gmm-global-acc-stats /
// gmm-global-sum-accs / gmm-global-est.
//
//   GMM_ASSIGN_OR_RETURN(KaldiAccs sum, SumKaldiAccsFiles({"1.acc", "2.acc"}));
//   GMM_RETURN_IF_ERROR(WriteKaldiAccs(sum, "sum.acc", /*binary=*/true));
//
// A global accumulator is one AccumDiagGmm (D dimensions, G Gaussians):
//   <GMMACCS> <VECSIZE> D <NUMCOMPONENTS> G <FLAGS> f
//   <OCCUPANCY> vec(G) <MEANACCS> mat(G x D) <DIAGVARACCS> mat(G x D) </GMMACCS>
// An acoustic-model accumulator is the transition accumulators (a float64
// vector, one count per transition-id, index 0 unused) then AccumAmDiagGmm:
//   vec <NUMPDFS> N  (N AccumDiagGmm blocks)  <total_like> L <total_frames> F
// Binary files start with "\0B"; every token is followed by one space; D, G
// and N are int32s (the byte 4 and four little-endian bytes); f, Kaldi's
// GmmFlagsType, is a uint16 (the byte 0xFE = -2, unsigned, then two bytes);
// L and F are float64s (the byte 8 and eight bytes); vec is "FV " + int32
// size + float32s ("DV " and float64s for the transition accumulators); mat
// is "FM " + int32 rows + int32 cols + float32s. Text prints numbers as a
// Kaldi stream does at precision 7 ("%.7g"), vectors " [ a b ]\n", matrices
// " [\n  a b \n  c d ]\n", an empty matrix " [ ]\n".
//
// Values: Kaldi sums in float64 but writes the GMM accumulators as float32
// (BaseFloat); so does FormatKaldiAccs. Binary files are read in full
// precision ("FV"/"DV", "FM"/"DM" alike); text vectors and matrices are
// parsed as float32 (kaldi_text.h), which keeps every value Kaldi prints at
// 7 digits, the totals as float64.
//
// Mapping to GmmStats: one set; a global accumulator is one state of G
// Gaussians, an acoustic-model accumulator one state per pdf. <FLAGS> goes
// to GmmStats::flags after Kaldi's AugmentGmmFlags (variances imply means,
// means imply weights, weights are always on), as Kaldi applies it on
// reading and writing; flags above kGmmAll are INVALID_ARGUMENT, and all pdfs
// must share one value. A mean or variance accumulator the flags leave out is
// written as an empty matrix; on reading, one that is absent or empty
// (0 x 0) is zero. GmmStats::total_loglike/total_weight are <total_like> and
// <total_frames> where the file has them (acoustic-model files as Kaldi
// writes them now); global files and older acoustic-model files do not: then
// total_loglike is 0 and total_weight the sum of the occupancies.
//
// Reading accepts what Kaldi's readers accept: the blocks' <OCCUPANCY>,
// <MEANACCS>, <DIAGVARACCS> in any order or absent. It rejects what Kaldi
// would misread or not survive: a token given twice in a block, pdfs of different
// dimensions or flags, content after the end, and more than 2^26 Gaussians x
// dimension in all (a damaged size, refused before zero-filling).
//
// Errors name the file, the pdf where there is one, and the line (text) or
// byte offset (binary): NOT_FOUND for a missing file, DATA_LOSS when the
// data ends early, INVALID_ARGUMENT for malformed content or mismatched
// shapes. Thread safety: all functions are reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_GMM_ACCS_H_
#define GMMSCORE_KERNELS_IO_KALDI_GMM_ACCS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/train/gmm_stats.h"

namespace gmmscore {

struct KaldiAccs {
  // One set: one state (global) or one state per pdf (acoustic model).
  GmmStats stats;
  // Acoustic-model files only: the transition-id counts, as written.
  std::vector<double> transition_accs;
  // True for an acoustic-model accumulator (transition accumulators and
  // <NUMPDFS>), false for a lone AccumDiagGmm.
  bool is_am = false;
};

// Text or binary (by the "\0B" header), global or acoustic-model (by whether
// the first token is <GMMACCS>). `source_name` (usually the path) starts
// every error.
absl::StatusOr<KaldiAccs> ParseKaldiAccs(std::string contents, absl::string_view source_name);
absl::StatusOr<KaldiAccs> ReadKaldiAccs(const std::string& path);

// The file Kaldi writes for `accs` (Output with --binary=true/false, then the
// object), byte for byte. INVALID_ARGUMENT when the statistics are not one
// set, a global accumulator has other than one state or has transition
// accumulators, an array does not match the shape, or a size does not fit
// Kaldi's int32.
absl::StatusOr<std::string> FormatKaldiAccs(const KaldiAccs& accs, bool binary);
// FormatKaldiAccs written to `path` atomically (a temporary renamed).
absl::Status WriteKaldiAccs(const KaldiAccs& accs, const std::string& path, bool binary);

// Adds `other` into `*sum` as gmm-sum-accs / gmm-global-sum-accs do: the
// statistics (GmmStats::Add, totals included) and the transition
// accumulators. INVALID_ARGUMENT, naming both (`other_name`, `sum_name`),
// when their kind, pdf count, dimension, a pdf's Gaussian count, flags or
// transition-accumulator size differ, e.g. "accumulator 'b.acc' has 4 pdfs,
// accumulator 'a.acc' has 3"; `*sum` is then unchanged.
absl::Status AddKaldiAccs(const KaldiAccs& other, KaldiAccs* sum,
                          absl::string_view other_name = "the accumulator added",
                          absl::string_view sum_name = "the sum");

// Reads every file and sums them (errors name the file that disagrees with
// the first). INVALID_ARGUMENT for an empty list.
absl::StatusOr<KaldiAccs> SumKaldiAccsFiles(absl::Span<const std::string> paths);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_GMM_ACCS_H_
