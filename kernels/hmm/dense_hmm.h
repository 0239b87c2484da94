// DenseHmm: N states, initial and N x N transition probabilities, and for
// each state the GMM state (a row of the scoring backends' output) that
// emits it. The HMM of Baum-Welch on CUDA (../shared/papers/
// baum-welch-hmm-cuda.md), with GMM emissions in place of discrete symbols.
//
//   GMM_ASSIGN_OR_RETURN(DenseHmm hmm, ReadDenseHmm("model.hmm"));
//   // emission log-likelihoods of utterance frames: T x model.num_states()
//   GMM_ASSIGN_OR_RETURN(HmmPosteriors post, ForwardBackwardReference(hmm, loglikes.view()));
//
// File format (text, whitespace-separated, '#' starts a comment to the end
// of its line):
//   gmmscore-dense-hmm 1
//   states N
//   emissions e_0 ... e_{N-1}        GMM state of each HMM state (>= 0)
//   initial p_0 ... p_{N-1}          sum to 1
//   transitions                      then N rows of N probabilities,
//   a_00 ... a_0,N-1                 each row summing to 1
//   ...
// Probabilities, not logs, so that files are easy to write by hand; zeros
// (a state that cannot start, a forbidden transition) are allowed and are
// held as -inf in log space. Sums must be 1 within 1e-6.
//
// Errors: NOT_FOUND for a missing file; INVALID_ARGUMENT naming the line
// for anything malformed (bad header, counts, negative or non-finite
// probabilities, sums off 1, trailing content); DATA_LOSS when it ends early.
#ifndef GMMSCORE_KERNELS_HMM_DENSE_HMM_H_
#define GMMSCORE_KERNELS_HMM_DENSE_HMM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

struct DenseHmm {
  int num_states = 0;
  std::vector<int32_t> emissions;        // N: GMM state per HMM state
  std::vector<double> log_initial;       // N
  std::vector<double> log_transitions;   // N x N, row = from, column = to

  double log_transition(int from, int to) const { return log_transitions[from * num_states + to]; }
  // The largest emission index + 1: the GMM states the model must have.
  int32_t num_emission_states() const;
};

// Builds a DenseHmm from probabilities (checked as the file's are).
absl::StatusOr<DenseHmm> MakeDenseHmm(std::vector<int32_t> emissions, const std::vector<double>& initial,
                                      const std::vector<double>& transitions);

absl::StatusOr<DenseHmm> ParseDenseHmm(absl::string_view text, absl::string_view source_name);
absl::StatusOr<DenseHmm> ReadDenseHmm(const std::string& path);
// The file format above, probabilities printed with 17 significant digits
// (round-trips exactly).
std::string FormatDenseHmm(const DenseHmm& hmm);
absl::Status WriteDenseHmm(const DenseHmm& hmm, const std::string& path);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_DENSE_HMM_H_
