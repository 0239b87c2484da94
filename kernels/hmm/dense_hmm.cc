#include "kernels/hmm/dense_hmm.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

constexpr double kSumTolerance = 1e-6;

// Tokens of the text with the line each starts on, comments removed.
struct Token {
  std::string text;
  int line;
};

std::vector<Token> Tokenize(absl::string_view text) {
  std::vector<Token> tokens;
  int line = 0;
  for (absl::string_view row : absl::StrSplit(text, '\n')) {
    ++line;
    row = row.substr(0, row.find('#'));
    for (absl::string_view word : absl::StrSplit(row, absl::ByAnyChar(" \t\r"), absl::SkipEmpty())) {
      tokens.push_back({std::string(word), line});
    }
  }
  return tokens;
}

class TokenReader {
 public:
  TokenReader(std::vector<Token> tokens, std::string source)
      : tokens_(std::move(tokens)), source_(std::move(source)) {}

  absl::Status Error(absl::string_view what) const {
    const int line = next_ < tokens_.size() ? tokens_[next_].line : (tokens_.empty() ? 1 : tokens_.back().line);
    return absl::InvalidArgumentError(absl::StrCat(source_, " line ", line, ": ", what));
  }
  absl::Status Expect(absl::string_view word) {
    if (next_ >= tokens_.size()) return Truncated(word);
    if (tokens_[next_].text != word) return Error(absl::StrCat("expected '", word, "', found '", tokens_[next_].text, "'"));
    ++next_;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> Int(absl::string_view what) {
    if (next_ >= tokens_.size()) return Truncated(what);
    int64_t value = 0;
    if (!absl::SimpleAtoi(tokens_[next_].text, &value)) return Error(absl::StrCat("bad ", what, " '", tokens_[next_].text, "'"));
    ++next_;
    return value;
  }
  absl::StatusOr<double> Probability(absl::string_view what) {
    if (next_ >= tokens_.size()) return Truncated(what);
    double value = 0;
    if (!absl::SimpleAtod(tokens_[next_].text, &value) || !std::isfinite(value) || value < 0) {
      return Error(absl::StrCat("bad ", what, " '", tokens_[next_].text, "' (a probability in [0, 1])"));
    }
    ++next_;
    return value;
  }
  bool at_end() const { return next_ >= tokens_.size(); }

 private:
  absl::Status Truncated(absl::string_view what) const {
    return absl::DataLossError(absl::StrCat(source_, ": ends before ", what));
  }
  std::vector<Token> tokens_;
  std::string source_;
  size_t next_ = 0;
};

double SafeLog(double p) { return p > 0 ? std::log(p) : -std::numeric_limits<double>::infinity(); }

absl::Status CheckSum(const double* p, int count, absl::string_view what) {
  double sum = 0;
  for (int i = 0; i < count; ++i) sum += p[i];
  if (std::fabs(sum - 1.0) > kSumTolerance) {
    return absl::InvalidArgumentError(absl::StrCat(what, " sums to ", sum, ", not 1"));
  }
  return absl::OkStatus();
}

}  // namespace

int32_t DenseHmm::num_emission_states() const {
  int32_t most = 0;
  for (int32_t e : emissions) most = std::max(most, e + 1);
  return most;
}

absl::StatusOr<DenseHmm> MakeDenseHmm(std::vector<int32_t> emissions, const std::vector<double>& initial,
                                      const std::vector<double>& transitions) {
  const int n = static_cast<int>(emissions.size());
  if (n < 1 || static_cast<int>(initial.size()) != n || static_cast<int64_t>(transitions.size()) != int64_t{n} * n) {
    return absl::InvalidArgumentError(absl::StrCat("an HMM of ", n, " states needs ", n, " initial and ", n, " x ",
                                                   n, " transition probabilities (got ", initial.size(), " and ",
                                                   transitions.size(), ")"));
  }
  for (int i = 0; i < n; ++i) {
    if (emissions[i] < 0) return absl::InvalidArgumentError(absl::StrCat("state ", i, ": emission ", emissions[i], " < 0"));
  }
  for (double p : initial) {
    if (!(p >= 0) || !std::isfinite(p)) return absl::InvalidArgumentError(absl::StrCat("initial probability ", p));
  }
  for (double p : transitions) {
    if (!(p >= 0) || !std::isfinite(p)) return absl::InvalidArgumentError(absl::StrCat("transition probability ", p));
  }
  GMM_RETURN_IF_ERROR(CheckSum(initial.data(), n, "the initial distribution"));
  for (int i = 0; i < n; ++i) {
    GMM_RETURN_IF_ERROR(CheckSum(&transitions[int64_t{i} * n], n, absl::StrCat("transition row ", i)));
  }
  DenseHmm hmm;
  hmm.num_states = n;
  hmm.emissions = std::move(emissions);
  for (double p : initial) hmm.log_initial.push_back(SafeLog(p));
  for (double p : transitions) hmm.log_transitions.push_back(SafeLog(p));
  return hmm;
}

absl::StatusOr<DenseHmm> ParseDenseHmm(absl::string_view text, absl::string_view source_name) {
  TokenReader in(Tokenize(text), std::string(source_name));
  GMM_RETURN_IF_ERROR(in.Expect("gmmscore-dense-hmm"));
  GMM_RETURN_IF_ERROR(in.Expect("1"));
  GMM_RETURN_IF_ERROR(in.Expect("states"));
  GMM_ASSIGN_OR_RETURN(const int64_t n, in.Int("state count"));
  if (n < 1 || n > (1 << 20)) return in.Error(absl::StrCat("state count ", n, " is not in [1, 2^20]"));
  GMM_RETURN_IF_ERROR(in.Expect("emissions"));
  std::vector<int32_t> emissions;
  for (int64_t i = 0; i < n; ++i) {
    GMM_ASSIGN_OR_RETURN(const int64_t e, in.Int("emission"));
    if (e < 0 || e > std::numeric_limits<int32_t>::max()) return in.Error(absl::StrCat("emission ", e, " out of range"));
    emissions.push_back(static_cast<int32_t>(e));
  }
  GMM_RETURN_IF_ERROR(in.Expect("initial"));
  std::vector<double> initial, transitions;
  for (int64_t i = 0; i < n; ++i) {
    GMM_ASSIGN_OR_RETURN(const double p, in.Probability("initial probability"));
    initial.push_back(p);
  }
  GMM_RETURN_IF_ERROR(in.Expect("transitions"));
  for (int64_t i = 0; i < n * n; ++i) {
    GMM_ASSIGN_OR_RETURN(const double p, in.Probability("transition probability"));
    transitions.push_back(p);
  }
  if (!in.at_end()) return in.Error("content after the transitions");
  absl::StatusOr<DenseHmm> hmm = MakeDenseHmm(std::move(emissions), initial, transitions);
  if (!hmm.ok()) return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", hmm.status().message()));
  return hmm;
}

absl::StatusOr<DenseHmm> ReadDenseHmm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open HMM file '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseDenseHmm(text.str(), path);
}

std::string FormatDenseHmm(const DenseHmm& hmm) {
  const int n = hmm.num_states;
  std::string out = absl::StrCat("gmmscore-dense-hmm 1\nstates ", n, "\nemissions");
  for (int32_t e : hmm.emissions) absl::StrAppend(&out, " ", e);
  auto probability = [](double log_p) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), " %.17g", std::exp(log_p));
    return std::string(buffer);
  };
  absl::StrAppend(&out, "\ninitial");
  for (double lp : hmm.log_initial) absl::StrAppend(&out, probability(lp));
  absl::StrAppend(&out, "\ntransitions\n");
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) absl::StrAppend(&out, probability(hmm.log_transition(i, j)).substr(j == 0 ? 1 : 0));
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::Status WriteDenseHmm(const DenseHmm& hmm, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << FormatDenseHmm(hmm);
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write HMM file '", path, "'"));
  return absl::OkStatus();
}

}  // namespace gmmscore
