#include "kernels/io/kaldi_gmm_accs.h"

#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"
#include "kernels/io/internal/kaldi_object_io.h"

namespace gmmscore {
namespace {

using io_internal::KaldiDoubleMatrix;
using io_internal::KaldiObjectInput;
using io_internal::KaldiObjectOutput;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
// Gaussians x dimension over all pdfs: beyond this a file is damaged (over
// 100 times a large model's), rejected before zero-filling what it omits.
constexpr int64_t kMaxValues = int64_t{1} << 26;

// Kaldi's AugmentGmmFlags: variances need means, means need weights, and
// weights are always accumulated.
uint16_t AugmentFlags(uint16_t flags) {
  if (flags & kGmmVariances) flags |= kGmmMeans;
  return flags | kGmmWeights;
}

// "pdf 3" in an acoustic-model file, "the GMM" in a global one.
std::string BlockName(bool is_am, int pdf) { return is_am ? absl::StrCat("pdf ", pdf) : "the GMM"; }

// ---------------------------------------------------------------------------
// Reading

// One AccumDiagGmm's header fields.
struct BlockHeader {
  int32_t dim = 0;
  int32_t count = 0;
  uint16_t flags = 0;
};

// Reads up to <FLAGS>; `values` is the Gaussians x dimension read so far.
absl::StatusOr<BlockHeader> ReadBlockHeader(KaldiObjectInput& in, absl::string_view name, int64_t values) {
  BlockHeader header;
  GMM_RETURN_IF_ERROR(in.ExpectToken("<GMMACCS>"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<VECSIZE>"));
  GMM_ASSIGN_OR_RETURN(header.dim, in.Int32(absl::StrCat(name, ": the dimension")));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<NUMCOMPONENTS>"));
  GMM_ASSIGN_OR_RETURN(header.count, in.Int32(absl::StrCat(name, ": the Gaussian count")));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<FLAGS>"));
  GMM_ASSIGN_OR_RETURN(header.flags, in.UInt16(absl::StrCat(name, ": <FLAGS>")));
  if (header.dim <= 0 || header.count <= 0) {
    return in.Error(absl::StrCat(name, ": dimension ", header.dim, " and Gaussian count ", header.count,
                                 " must be positive"));
  }
  if (values + int64_t{header.dim} * header.count > kMaxValues) {
    return in.Error(absl::StrCat(name, ": ", header.count, " Gaussians of dimension ", header.dim,
                                 " make the accumulator implausibly large"));
  }
  if (header.flags & ~kGmmAll) {
    return in.Error(absl::StrCat(name, ": <FLAGS> ", header.flags, " has bits other than m, v, w, t (0xF)"));
  }
  header.flags = AugmentFlags(header.flags);
  return header;
}

// Reads one accumulator vector or matrix of `rows` x `dim` (or 0 x 0 for a
// matrix) and appends it to `out`, zeros for an empty matrix.
absl::Status ReadAccumulator(KaldiObjectInput& in, absl::string_view what, bool is_matrix, int64_t rows,
                             int64_t dim, std::vector<double>* out) {
  KaldiDoubleMatrix m;
  if (is_matrix) {
    GMM_ASSIGN_OR_RETURN(m, in.DoubleMatrix(what));
  } else {
    GMM_ASSIGN_OR_RETURN(m.values, in.DoubleVector(what));
    m.rows = static_cast<int64_t>(m.values.size());
    m.cols = 1;
  }
  if (m.values.empty() && is_matrix) m.values.assign(rows * dim, 0.0);
  if (m.values.size() != static_cast<size_t>(rows * dim)) {
    return in.Error(is_matrix ? absl::StrCat(what, ": matrix is ", m.rows, " x ", m.cols, ", expected ", rows, " x ",
                                             dim, " (Gaussians x dimension) or empty")
                              : absl::StrCat(what, ": ", m.rows, " values, expected ", rows, " (one a Gaussian)"));
  }
  out->insert(out->end(), m.values.begin(), m.values.end());
  return absl::OkStatus();
}

// Reads a block's body after <FLAGS>, in any order, up to </GMMACCS>, and
// appends its G rows to `stats`.
absl::Status ReadBlockBody(KaldiObjectInput& in, absl::string_view name, const BlockHeader& header,
                           GmmStats* stats) {
  const std::string tokens[3] = {"<OCCUPANCY>", "<MEANACCS>", "<DIAGVARACCS>"};
  std::vector<double>* targets[3] = {&stats->occupancy, &stats->mean_acc, &stats->var_acc};
  bool seen[3] = {false, false, false};
  while (true) {
    GMM_ASSIGN_OR_RETURN(const std::string token, in.Token(absl::StrCat(name, ": </GMMACCS>")));
    if (token == "</GMMACCS>") break;
    int i = 0;
    while (i < 3 && token != tokens[i]) ++i;
    if (i == 3) {
      return in.Unexpected(absl::StrCat(name, ": <OCCUPANCY>, <MEANACCS>, <DIAGVARACCS> or </GMMACCS>"), token);
    }
    if (seen[i]) return in.Error(absl::StrCat(name, ": ", token, " is repeated"));
    seen[i] = true;
    GMM_RETURN_IF_ERROR(ReadAccumulator(in, absl::StrCat(name, ": ", token), i > 0, header.count,
                                        i > 0 ? header.dim : 1, targets[i]));
  }
  for (int i = 0; i < 3; ++i) {
    if (!seen[i]) targets[i]->resize(targets[i]->size() + header.count * (i > 0 ? header.dim : 1), 0.0);
  }
  stats->state_offsets.push_back(stats->state_offsets.back() + header.count);
  return absl::OkStatus();
}

// One AccumDiagGmm, appended to `stats` as its next state.
absl::Status ReadBlock(KaldiObjectInput& in, absl::string_view name, bool first, GmmStats* stats) {
  GMM_ASSIGN_OR_RETURN(const BlockHeader header,
                       ReadBlockHeader(in, name, static_cast<int64_t>(stats->mean_acc.size())));
  if (first) {
    stats->dim = header.dim;
    stats->flags = header.flags;
  } else if (header.dim != stats->dim || header.flags != stats->flags) {
    return in.Error(absl::StrCat(name, " has dimension ", header.dim, " and flags ", header.flags,
                                 ", pdf 0 has dimension ", stats->dim, " and flags ", stats->flags));
  }
  return ReadBlockBody(in, name, header, stats);
}

// After the pdfs: <total_like> L <total_frames> F, absent in older files.
// True when they were there.
absl::StatusOr<bool> ReadTotals(KaldiObjectInput& in, GmmStats* stats) {
  if (in.AtEnd()) return false;
  GMM_RETURN_IF_ERROR(in.ExpectToken("<total_like>"));
  GMM_ASSIGN_OR_RETURN(stats->total_loglike, in.Double("<total_like>"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<total_frames>"));
  GMM_ASSIGN_OR_RETURN(stats->total_weight, in.Double("<total_frames>"));
  return true;
}

// The transition accumulators, <NUMPDFS>, the pdfs' blocks and the totals
// (true when the file has them).
absl::StatusOr<bool> ReadAm(KaldiObjectInput& in, KaldiAccs* accs) {
  GMM_ASSIGN_OR_RETURN(accs->transition_accs, in.DoubleVector("the transition accumulators"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<NUMPDFS>"));
  GMM_ASSIGN_OR_RETURN(const int32_t num_pdfs, in.Int32("the pdf count"));
  if (num_pdfs <= 0) return in.Error(absl::StrCat("the pdf count ", num_pdfs, " must be positive"));
  for (int pdf = 0; pdf < num_pdfs; ++pdf) {
    GMM_RETURN_IF_ERROR(ReadBlock(in, absl::StrCat("pdf ", pdf, " of ", num_pdfs), pdf == 0, &accs->stats));
  }
  return ReadTotals(in, &accs->stats);
}

absl::StatusOr<KaldiAccs> Parse(KaldiObjectInput& in) {
  KaldiAccs accs;
  accs.is_am = !in.NextIsToken();
  bool have_totals = false;
  if (accs.is_am) {
    GMM_ASSIGN_OR_RETURN(have_totals, ReadAm(in, &accs));
  } else {
    GMM_RETURN_IF_ERROR(ReadBlock(in, BlockName(false, 0), true, &accs.stats));
  }
  if (!in.AtEnd()) return in.Error("unexpected content after the accumulator");
  if (!have_totals) {
    for (const double occupancy : accs.stats.occupancy) accs.stats.total_weight += occupancy;
  }
  return accs;
}

// ---------------------------------------------------------------------------
// Writing

absl::Status CheckShape(const KaldiAccs& accs) {
  const GmmStats& s = accs.stats;
  const int64_t rows = s.num_gaussians();
  if (s.num_sets != 1 || (!accs.is_am && s.num_states() != 1) || s.num_states() < 1 || s.dim <= 0 ||
      s.occupancy.size() != static_cast<size_t>(rows) || s.mean_acc.size() != static_cast<size_t>(rows * s.dim) ||
      s.var_acc.size() != static_cast<size_t>(rows * s.dim)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write ", accs.is_am ? "acoustic-model" : "global", " Kaldi accumulators of ", s.num_sets,
        " sets, ", s.num_states(), " states, dimension ", s.dim, " with ", s.occupancy.size(), " occupancies, ",
        s.mean_acc.size(), " and ", s.var_acc.size(), " mean and variance sums"));
  }
  if (s.flags & ~kGmmAll) return absl::InvalidArgumentError(absl::StrCat("flags ", s.flags, " are not Kaldi's"));
  if (!accs.is_am && !accs.transition_accs.empty()) {
    return absl::InvalidArgumentError("a global Kaldi accumulator has no transition accumulators to write");
  }
  for (int k = 0; k < s.num_states(); ++k) {
    const int64_t count = s.state_offsets[k + 1] - s.state_offsets[k];
    if (count < 1 || count > kMaxInt32) {
      return absl::InvalidArgumentError(
          absl::StrCat("state ", k, " has ", count, " Gaussians; a Kaldi AccumDiagGmm holds 1 to 2^31 - 1"));
    }
  }
  return absl::OkStatus();
}

// `count` x `dim` float32 copies of the float64 sums from row `first` on,
// or 0 x 0 when `present` is false (AccumDiagGmm::Resize).
FloatMatrix ToFloat(const std::vector<double>& values, int64_t first, int64_t count, int64_t dim, bool present) {
  if (!present) return FloatMatrix();
  FloatMatrix m(count, dim);
  for (int64_t i = 0; i < count * dim; ++i) m.data()[i] = static_cast<float>(values[first * dim + i]);
  return m;
}

// AccumDiagGmm::Write for state `state`.
void WriteBlock(const GmmStats& s, int state, KaldiObjectOutput& out) {
  const int64_t first = s.state_offsets[state];
  const int64_t count = s.state_offsets[state + 1] - first;
  const uint16_t flags = AugmentFlags(s.flags);
  out.Token("<GMMACCS>");
  out.Token("<VECSIZE>");
  out.Int32(s.dim);
  out.Token("<NUMCOMPONENTS>");
  out.Int32(static_cast<int32_t>(count));
  out.Token("<FLAGS>");
  out.UInt16(flags);
  out.Token("<OCCUPANCY>");
  out.Vector(ToFloat(s.occupancy, first, count, 1, true).span());
  out.Token("<MEANACCS>");
  out.Matrix(ToFloat(s.mean_acc, first, count, s.dim, flags & kGmmMeans).view());
  out.Token("<DIAGVARACCS>");
  out.Matrix(ToFloat(s.var_acc, first, count, s.dim, flags & kGmmVariances).view());
  out.Token("</GMMACCS>");
}

// gmm-acc-stats-ali's output: transition accumulators, AccumAmDiagGmm::Write.
void WriteAm(const KaldiAccs& accs, KaldiObjectOutput& out) {
  out.Vector(absl::MakeConstSpan(accs.transition_accs));
  out.Token("<NUMPDFS>");
  out.Int32(accs.stats.num_states());
  for (int pdf = 0; pdf < accs.stats.num_states(); ++pdf) WriteBlock(accs.stats, pdf, out);
  out.Token("<total_like>");
  out.Double(accs.stats.total_loglike);
  out.Token("<total_frames>");
  out.Double(accs.stats.total_weight);
}

// ---------------------------------------------------------------------------
// Summing

std::string KindName(bool is_am) { return is_am ? "an acoustic-model accumulator" : "a global accumulator"; }

// The first difference between the shapes of `a` and `b`, or "".
std::string ShapeMismatch(const KaldiAccs& a, absl::string_view a_name, const KaldiAccs& b, absl::string_view b_name) {
  if (a.is_am != b.is_am) return absl::StrCat(a_name, " is ", KindName(a.is_am), ", ", b_name, " ", KindName(b.is_am));
  const GmmStats& s = a.stats;
  const GmmStats& t = b.stats;
  if (s.num_states() != t.num_states()) {
    return absl::StrCat(a_name, " has ", s.num_states(), " pdfs, ", b_name, " has ", t.num_states());
  }
  if (s.dim != t.dim) return absl::StrCat(a_name, " has dimension ", s.dim, ", ", b_name, " has ", t.dim);
  for (int k = 0; k < s.num_states(); ++k) {
    const int64_t n = s.state_offsets[k + 1] - s.state_offsets[k];
    const int64_t m = t.state_offsets[k + 1] - t.state_offsets[k];
    if (n != m) {
      return absl::StrCat(BlockName(a.is_am, k), " has ", n, " Gaussians in ", a_name, ", ", m, " in ", b_name);
    }
  }
  if (s.flags != t.flags) return absl::StrCat(a_name, " has flags ", s.flags, ", ", b_name, " has ", t.flags);
  if (a.transition_accs.size() != b.transition_accs.size()) {
    return absl::StrCat(a_name, " has ", a.transition_accs.size(), " transition accumulators, ", b_name, " has ",
                        b.transition_accs.size());
  }
  return "";
}

}  // namespace

absl::StatusOr<KaldiAccs> ParseKaldiAccs(std::string contents, absl::string_view source_name) {
  std::unique_ptr<KaldiObjectInput> in =
      KaldiObjectInput::Open(std::move(contents), absl::StrCat("Kaldi accumulator '", source_name, "'"));
  return Parse(*in);
}

absl::StatusOr<KaldiAccs> ReadKaldiAccs(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(std::string contents, io_internal::ReadFileToString(path));
  return ParseKaldiAccs(std::move(contents), path);
}

absl::StatusOr<std::string> FormatKaldiAccs(const KaldiAccs& accs, bool binary) {
  GMM_RETURN_IF_ERROR(CheckShape(accs));
  KaldiObjectOutput out(binary);
  if (accs.is_am) {
    WriteAm(accs, out);
  } else {
    WriteBlock(accs.stats, 0, out);
  }
  return out.Take();
}

absl::Status WriteKaldiAccs(const KaldiAccs& accs, const std::string& path, bool binary) {
  absl::StatusOr<std::string> bytes = FormatKaldiAccs(accs, binary);
  if (!bytes.ok()) return PrefixStatus(absl::StrCat("writing '", path, "'"), bytes.status());
  return io_internal::WriteFileAtomically(path, *bytes);
}

absl::Status AddKaldiAccs(const KaldiAccs& other, KaldiAccs* sum, absl::string_view other_name,
                          absl::string_view sum_name) {
  const std::string mismatch = ShapeMismatch(other, other_name, *sum, sum_name);
  if (!mismatch.empty()) return absl::InvalidArgumentError(absl::StrCat("cannot add accumulators: ", mismatch));
  GMM_RETURN_IF_ERROR(sum->stats.Add(other.stats));
  for (size_t i = 0; i < other.transition_accs.size(); ++i) sum->transition_accs[i] += other.transition_accs[i];
  return absl::OkStatus();
}

absl::StatusOr<KaldiAccs> SumKaldiAccsFiles(absl::Span<const std::string> paths) {
  if (paths.empty()) return absl::InvalidArgumentError("no accumulator files to sum");
  GMM_ASSIGN_OR_RETURN(KaldiAccs sum, ReadKaldiAccs(paths[0]));
  const std::string sum_name = absl::StrCat("accumulator '", paths[0], "'");
  for (size_t i = 1; i < paths.size(); ++i) {
    GMM_ASSIGN_OR_RETURN(const KaldiAccs accs, ReadKaldiAccs(paths[i]));
    GMM_RETURN_IF_ERROR(AddKaldiAccs(accs, &sum, absl::StrCat("accumulator '", paths[i], "'"), sum_name));
  }
  return sum;
}

}  // namespace gmmscore
