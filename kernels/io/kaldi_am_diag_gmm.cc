#include "kernels/io/kaldi_am_diag_gmm.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"
#include "kernels/io/internal/input_stream.h"
#include "kernels/io/kaldi_transition_model.h"
#include "kernels/io/internal/kaldi_binary.h"
#include "kernels/io/internal/kaldi_text.h"

namespace gmmscore {
namespace {

using io_internal::InputStream;

constexpr double kLog2Pi = 1.8378770664093454835606594728112;  // log(2 pi), as M_LOG_2PI

// Adds `where` in front of a status message, keeping the code.
absl::Status Annotate(const absl::Status& status, absl::string_view where) {
  return PrefixStatus(where, status);
}

absl::Status CheckGmmValues(const KaldiDiagGmm& gmm, int dim, const std::string& where) {
  for (size_t g = 0; g < gmm.weights.size(); ++g) {
    const float weight = gmm.weights[g];
    if (!std::isfinite(weight) || weight < 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(where, ", Gaussian ", g, ": weight ",
                                                     weight, " is not a probability"));
    }
    for (int d = 0; d < dim; ++d) {
      const float mean_invvar = gmm.means_invvars.at(g, d);
      const float inv_var = gmm.inv_vars.at(g, d);
      if (!std::isfinite(mean_invvar)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ", Gaussian ", g, ": <MEANS_INVVARS> value ", mean_invvar,
            " in dimension ", d, " is not finite"));
      }
      if (!std::isfinite(inv_var) || !(inv_var > 0.0f)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ", Gaussian ", g, ": <INV_VARS> value ", inv_var, " in dimension ", d,
            " is not a positive finite inverse variance"));
      }
    }
  }
  return absl::OkStatus();
}

// Parses one AmDiagGmm, keeping track of where it is for messages.
class Parser {
 public:
  Parser(std::string contents, absl::string_view source_name)
      : source_name_(source_name),
        in_(InputStream::FromString(std::move(contents), std::string(source_name))) {}

  absl::StatusOr<KaldiModel> Parse() {
    KaldiModel whole;
    KaldiAmDiagGmm& model = whole.am;
    std::string token;
    GMM_RETURN_IF_ERROR(NextToken("<DIMENSION>, <TransitionModel> or <DiagGMM>", &token));
    if (token == "<DiagGMM>" || token == "<DiagGMMBegin>") return ParseStandaloneDiagGmm();
    if (token == "<TransitionModel>") {
      GMM_ASSIGN_OR_RETURN(whole.transition_model,
                           ParseKaldiTransitionModelText(*in_, absl::StrCat("Kaldi model '", source_name_, "'")));
      GMM_RETURN_IF_ERROR(NextToken("<DIMENSION>", &token));
    }
    if (token != "<DIMENSION>") return Unexpected("<DIMENSION>", token);
    GMM_ASSIGN_OR_RETURN(model.dim, ReadPositiveInt("the dimension"));
    GMM_RETURN_IF_ERROR(Expect("<NUMPDFS>"));
    GMM_ASSIGN_OR_RETURN(const int num_pdfs, ReadPositiveInt("the number of pdfs"));
    model.pdfs.reserve(std::min(num_pdfs, 1 << 16));
    for (pdf_ = 0; pdf_ < num_pdfs; ++pdf_) {
      GMM_ASSIGN_OR_RETURN(KaldiDiagGmm gmm, ParseDiagGmm(model.dim, num_pdfs));
      model.pdfs.push_back(std::move(gmm));
    }
    pdf_ = -1;
    if (io_internal::ReadToken(*in_, &token)) {
      return Error(absl::StrCat("unexpected \"", absl::CEscape(token.substr(0, 40)), "\" after the last of ",
                                num_pdfs, " pdfs (is <NUMPDFS> right?)"));
    }
    return whole;
  }

 private:
  // "Kaldi model 'x', line 7, pdf 3" (pdf left out outside the pdfs).
  std::string Where() const {
    std::string where = absl::StrCat("Kaldi model '", source_name_, "', line ", in_->line());
    if (pdf_ >= 0) absl::StrAppend(&where, ", pdf ", pdf_);
    return where;
  }
  std::string WhereNoLine() const {
    std::string where = absl::StrCat("Kaldi model '", source_name_, "'");
    if (pdf_ >= 0) absl::StrAppend(&where, ", pdf ", pdf_);
    return where;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(), ": ", what));
  }
  absl::Status Unexpected(absl::string_view expected, absl::string_view got) const {
    if (in_->Peek() == InputStream::kEof) {
      return absl::DataLossError(absl::StrCat(Where(), ": file ends inside \"",
                                              absl::CEscape(got.substr(0, 40)), "\" where ",
                                              expected, " was expected (truncated?)"));
    }
    return Error(absl::StrCat("expected ", expected, ", got \"", absl::CEscape(got.substr(0, 40)), "\""));
  }

  // Reads the next token; DATA_LOSS naming what was expected at end of input.
  absl::Status NextToken(absl::string_view expected, std::string* token) {
    if (io_internal::ReadToken(*in_, token)) return absl::OkStatus();
    return absl::DataLossError(
        absl::StrCat(Where(), ": file ends where ", expected, " was expected (truncated?)"));
  }
  absl::Status Expect(absl::string_view expected) {
    std::string token;
    GMM_RETURN_IF_ERROR(NextToken(expected, &token));
    if (token != expected) return Unexpected(expected, token);
    return absl::OkStatus();
  }
  absl::StatusOr<int> ReadPositiveInt(absl::string_view what) {
    std::string token;
    GMM_RETURN_IF_ERROR(NextToken(what, &token));
    const std::optional<int> value = io_internal::ParseInt(token);
    if (!value.has_value() || *value <= 0) {
      return Error(absl::StrCat("expected ", what, " (a positive integer), got \"",
                                absl::CEscape(token.substr(0, 40)), "\""));
    }
    return *value;
  }

  // A lone DiagGmm (gmm-global-init's output) after its <DiagGMM> token. Its
  // dimension comes from the <MEANS_INVVARS> matrix.
  absl::StatusOr<KaldiModel> ParseStandaloneDiagGmm() {
    KaldiModel whole;
    pdf_ = 0;
    GMM_ASSIGN_OR_RETURN(KaldiDiagGmm gmm, ParseDiagGmmBody(/*dim=*/-1));
    whole.am.dim = static_cast<int>(gmm.means_invvars.cols());
    if (whole.am.dim <= 0) return Error("the GMM has dimension 0");
    whole.am.pdfs.push_back(std::move(gmm));
    pdf_ = -1;
    std::string token;
    if (io_internal::ReadToken(*in_, &token)) {
      return Error(absl::StrCat("unexpected \"", absl::CEscape(token.substr(0, 40)), "\" after the GMM"));
    }
    return whole;
  }

  absl::StatusOr<std::vector<float>> Vector(absl::string_view name) {
    absl::StatusOr<std::vector<float>> values = io_internal::ReadTextVector(*in_);
    if (!values.ok()) return Annotate(values.status(), absl::StrCat(WhereNoLine(), ", ", name));
    return values;
  }
  // A matrix that must be rows x cols.
  absl::StatusOr<FloatMatrix> Matrix(absl::string_view name, int64_t rows, int64_t cols) {
    const int64_t line = in_->line();
    absl::StatusOr<FloatMatrix> matrix = io_internal::ReadTextMatrix(*in_);
    if (!matrix.ok()) return Annotate(matrix.status(), absl::StrCat(WhereNoLine(), ", ", name));
    if (matrix->rows() != rows || (cols >= 0 && matrix->cols() != cols)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s, %s (from line %d): matrix is %d x %d, expected %d x %d (Gaussians x dimension)",
          WhereNoLine(), name, line, matrix->rows(), matrix->cols(), rows, cols));
    }
    return matrix;
  }

  absl::StatusOr<KaldiDiagGmm> ParseDiagGmm(int dim, int num_pdfs) {
    std::string token;
    const std::string expected_open = absl::StrCat("<DiagGMM> of pdf ", pdf_, " of ", num_pdfs);
    GMM_RETURN_IF_ERROR(NextToken(expected_open, &token));
    if (token != "<DiagGMM>" && token != "<DiagGMMBegin>") return Unexpected("<DiagGMM>", token);
    return ParseDiagGmmBody(dim);
  }

  // From after <DiagGMM>; dim < 0 takes the dimension from the matrices.
  absl::StatusOr<KaldiDiagGmm> ParseDiagGmmBody(int dim) {
    KaldiDiagGmm gmm;
    std::string token;
    GMM_RETURN_IF_ERROR(NextToken("<GCONSTS> or <WEIGHTS>", &token));
    std::vector<float> gconsts;
    bool have_gconsts = false;
    if (token == "<GCONSTS>") {
      GMM_ASSIGN_OR_RETURN(gconsts, Vector("<GCONSTS>"));
      have_gconsts = true;
      GMM_RETURN_IF_ERROR(Expect("<WEIGHTS>"));
    } else if (token != "<WEIGHTS>") {
      return Unexpected("<GCONSTS> or <WEIGHTS>", token);
    }
    GMM_ASSIGN_OR_RETURN(gmm.weights, Vector("<WEIGHTS>"));
    const int64_t count = static_cast<int64_t>(gmm.weights.size());
    if (count == 0) return Error("<WEIGHTS> is empty: the pdf has no Gaussians");
    if (have_gconsts && static_cast<int64_t>(gconsts.size()) != count) {
      return Error(absl::StrCat("<GCONSTS> has ", gconsts.size(), " values but <WEIGHTS> has ", count));
    }
    GMM_RETURN_IF_ERROR(Expect("<MEANS_INVVARS>"));
    GMM_ASSIGN_OR_RETURN(gmm.means_invvars, Matrix("<MEANS_INVVARS>", count, dim));
    if (dim < 0) dim = static_cast<int>(gmm.means_invvars.cols());
    GMM_RETURN_IF_ERROR(Expect("<INV_VARS>"));
    GMM_ASSIGN_OR_RETURN(gmm.inv_vars, Matrix("<INV_VARS>", count, dim));
    GMM_RETURN_IF_ERROR(NextToken("</DiagGMM>", &token));
    if (token != "</DiagGMM>" && token != "<DiagGMMEnd>") return Unexpected("</DiagGMM>", token);
    GMM_RETURN_IF_ERROR(CheckValues(gmm, dim));
    return gmm;
  }

  absl::Status CheckValues(const KaldiDiagGmm& gmm, int dim) const {
    return CheckGmmValues(gmm, dim, WhereNoLine());
  }

  const std::string source_name_;
  std::unique_ptr<InputStream> in_;
  int pdf_ = -1;
};

absl::string_view FirstToken(absl::string_view contents) {
  size_t begin = 0;
  while (begin < contents.size() && io_internal::IsKaldiSpace(contents[begin])) ++begin;
  size_t end = begin;
  while (end < contents.size() && !io_internal::IsKaldiSpace(contents[end])) ++end;
  return contents.substr(begin, end - begin);
}

// DiagGmm::ComputeGconsts on Kaldi's float arrays, with its float/double mix:
// the offset and the running sum are BaseFloat, each term is double.
std::vector<float> KaldiGconsts(const KaldiDiagGmm& gmm, int dim) {
  const float offset = static_cast<float>(-0.5 * kLog2Pi * dim);
  std::vector<float> gconsts(gmm.weights.size());
  for (size_t g = 0; g < gmm.weights.size(); ++g) {
    float gc = static_cast<float>(std::log(static_cast<double>(gmm.weights[g])) + offset);
    for (int d = 0; d < dim; ++d) {
      const double inv_var = gmm.inv_vars.at(g, d);
      const double mean_invvar = gmm.means_invvars.at(g, d);
      gc += 0.5 * std::log(inv_var) - 0.5 * mean_invvar * mean_invvar / inv_var;
    }
    if (std::isinf(gc) && gc > 0) gc = -gc;  // as Kaldi: +inf becomes -inf
    gconsts[g] = gc;
  }
  return gconsts;
}


// The binary form of one DiagGmm, after its <DiagGMM> token.
absl::StatusOr<KaldiDiagGmm> ParseBinaryDiagGmm(io_internal::KaldiBinaryReader& in, int dim, int pdf) {
  KaldiDiagGmm gmm;
  const std::string where = absl::StrCat(in.what(), ", pdf ", pdf);
  if (in.PeekToken() == "<GCONSTS>") {
    GMM_RETURN_IF_ERROR(in.ExpectToken("<GCONSTS>"));
    GMM_RETURN_IF_ERROR(in.ReadFloatVector("<GCONSTS>").status());
  }
  GMM_RETURN_IF_ERROR(in.ExpectToken("<WEIGHTS>"));
  GMM_ASSIGN_OR_RETURN(gmm.weights, in.ReadFloatVector("<WEIGHTS>"));
  const int64_t count = static_cast<int64_t>(gmm.weights.size());
  if (count == 0) return in.Error(absl::StrCat("pdf ", pdf, ": <WEIGHTS> is empty"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<MEANS_INVVARS>"));
  GMM_ASSIGN_OR_RETURN(gmm.means_invvars, in.ReadFloatMatrix("<MEANS_INVVARS>"));
  if (dim < 0) dim = static_cast<int>(gmm.means_invvars.cols());
  GMM_RETURN_IF_ERROR(in.ExpectToken("<INV_VARS>"));
  GMM_ASSIGN_OR_RETURN(gmm.inv_vars, in.ReadFloatMatrix("<INV_VARS>"));
  for (const FloatMatrix* m : {&gmm.means_invvars, &gmm.inv_vars}) {
    if (m->rows() != count || m->cols() != dim || dim <= 0) {
      return in.Error(absl::StrFormat("pdf %d: %s matrix is %d x %d, expected %d x %d (Gaussians x dimension)", pdf,
                                      m == &gmm.inv_vars ? "<INV_VARS>" : "<MEANS_INVVARS>", m->rows(), m->cols(),
                                      count, dim));
    }
  }
  const std::string close = in.PeekToken();
  if (close != "</DiagGMM>" && close != "<DiagGMMEnd>") GMM_RETURN_IF_ERROR(in.ExpectToken("</DiagGMM>"));
  GMM_RETURN_IF_ERROR(in.ReadToken("</DiagGMM>").status());
  GMM_RETURN_IF_ERROR(CheckGmmValues(gmm, dim, where));
  return gmm;
}

absl::StatusOr<KaldiModel> ParseBinaryModel(absl::string_view contents, absl::string_view source_name) {
  io_internal::KaldiBinaryReader in(contents, absl::StrCat("Kaldi model '", source_name, "'"));
  in.SkipBinaryHeader();
  KaldiModel model;
  model.binary = true;
  GMM_ASSIGN_OR_RETURN(std::string token, in.ReadToken("<DIMENSION>, <TransitionModel> or <DiagGMM>"));
  if (token == "<DiagGMM>" || token == "<DiagGMMBegin>") {
    GMM_ASSIGN_OR_RETURN(KaldiDiagGmm gmm, ParseBinaryDiagGmm(in, -1, 0));
    model.am.dim = static_cast<int>(gmm.means_invvars.cols());
    model.am.pdfs.push_back(std::move(gmm));
  } else {
    if (token == "<TransitionModel>") {
      GMM_ASSIGN_OR_RETURN(model.transition_model, ParseKaldiTransitionModelBinary(in));
      GMM_ASSIGN_OR_RETURN(token, in.ReadToken("<DIMENSION>"));
    }
    if (token != "<DIMENSION>") {
      return in.Error(absl::StrCat("expected <DIMENSION>, got \"", absl::CEscape(token.substr(0, 40)), "\""));
    }
    GMM_ASSIGN_OR_RETURN(model.am.dim, in.ReadInt32("the dimension"));
    GMM_RETURN_IF_ERROR(in.ExpectToken("<NUMPDFS>"));
    GMM_ASSIGN_OR_RETURN(const int32_t num_pdfs, in.ReadInt32("the number of pdfs"));
    if (model.am.dim <= 0 || num_pdfs <= 0) {
      return in.Error(absl::StrCat("dimension ", model.am.dim, " and pdf count ", num_pdfs, " must be positive"));
    }
    for (int pdf = 0; pdf < num_pdfs; ++pdf) {
      GMM_ASSIGN_OR_RETURN(token, in.ReadToken(absl::StrCat("<DiagGMM> of pdf ", pdf, " of ", num_pdfs)));
      if (token != "<DiagGMM>" && token != "<DiagGMMBegin>") {
        return in.Error(absl::StrCat("expected <DiagGMM> of pdf ", pdf, ", got \"", absl::CEscape(token.substr(0, 40)), "\""));
      }
      GMM_ASSIGN_OR_RETURN(KaldiDiagGmm gmm, ParseBinaryDiagGmm(in, model.am.dim, pdf));
      model.am.pdfs.push_back(std::move(gmm));
    }
  }
  if (!in.at_end()) return in.Error("unexpected bytes after the model");
  if (model.transition_model.has_value() && model.transition_model->num_pdfs() > static_cast<int>(model.am.pdfs.size())) {
    return in.Error(absl::StrCat("the transition model uses ", model.transition_model->num_pdfs(),
                                 " pdfs but the acoustic model has ", model.am.pdfs.size()));
  }
  return model;
}

// DiagGmm::Write, text: "<DiagGMM> \n<GCONSTS>  [ .. ]\n ... </DiagGMM> \n".
void AppendDiagGmmText(const KaldiDiagGmm& gmm, int dim, std::string* out) {
  const std::vector<float> gconsts = KaldiGconsts(gmm, dim);
  out->append("<DiagGMM> \n<GCONSTS> ");
  io_internal::AppendTextVector(gconsts.data(), static_cast<int64_t>(gconsts.size()), out);
  out->append("<WEIGHTS> ");
  io_internal::AppendTextVector(gmm.weights.data(), static_cast<int64_t>(gmm.weights.size()), out);
  out->append("<MEANS_INVVARS> ");
  io_internal::AppendTextMatrix(gmm.means_invvars.view(), out);
  out->append("<INV_VARS> ");
  io_internal::AppendTextMatrix(gmm.inv_vars.view(), out);
  out->append("</DiagGMM> \n");
}

// DiagGmm::Write, binary (no "\0B" header).
void AppendDiagGmmBinary(const KaldiDiagGmm& gmm, int dim, io_internal::KaldiBinaryWriter& out) {
  out.Token("<DiagGMM>");
  out.Token("<GCONSTS>");
  out.Vector(absl::MakeConstSpan(KaldiGconsts(gmm, dim)));
  out.Token("<WEIGHTS>");
  out.Vector(absl::MakeConstSpan(gmm.weights));
  out.Token("<MEANS_INVVARS>");
  out.Matrix(gmm.means_invvars.view());
  out.Token("<INV_VARS>");
  out.Matrix(gmm.inv_vars.view());
  out.Token("</DiagGMM>");
}

}  // namespace

bool LooksLikeKaldiText(absl::string_view contents) {
  const absl::string_view token = FirstToken(contents.substr(0, 4096));
  return token == "<DIMENSION>" || token == "<TransitionModel>" || token == "<DiagGMM>";
}

bool LooksLikeKaldiBinary(absl::string_view contents) {
  return contents.size() >= 2 && contents[0] == '\0' && contents[1] == 'B';
}

absl::StatusOr<KaldiAmDiagGmm> ParseKaldiAmDiagGmmText(std::string contents,
                                                      absl::string_view source_name) {
  GMM_ASSIGN_OR_RETURN(KaldiModel model, Parser(std::move(contents), source_name).Parse());
  return std::move(model.am);
}

absl::StatusOr<KaldiModel> ParseKaldiModel(std::string contents, absl::string_view source_name) {
  if (LooksLikeKaldiBinary(contents)) return ParseBinaryModel(contents, source_name);
  return Parser(std::move(contents), source_name).Parse();
}

absl::StatusOr<KaldiModel> ReadKaldiModel(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(std::string contents, io_internal::ReadFileToString(path));
  return ParseKaldiModel(std::move(contents), path);
}

std::string FormatKaldiAmDiagGmmBinary(const KaldiAmDiagGmm& kaldi) {
  std::string out;
  io_internal::KaldiBinaryWriter writer(&out);
  writer.Header();
  writer.Token("<DIMENSION>");
  writer.Basic<int32_t>(kaldi.dim);
  writer.Token("<NUMPDFS>");
  writer.Basic<int32_t>(static_cast<int32_t>(kaldi.pdfs.size()));
  for (const KaldiDiagGmm& gmm : kaldi.pdfs) AppendDiagGmmBinary(gmm, kaldi.dim, writer);
  return out;
}

absl::Status WriteKaldiAmDiagGmmBinary(const DiagGmmModel& model, const std::string& path) {
  return io_internal::WriteFileAtomically(path, FormatKaldiAmDiagGmmBinary(DiagGmmModelToKaldi(model)));
}

absl::StatusOr<DiagGmmModel> KaldiToDiagGmmModel(const KaldiAmDiagGmm& kaldi,
                                                 absl::string_view source_name) {
  const int dim = kaldi.dim;
  DiagGmmModelBuilder builder(dim);
  std::vector<double> weights, means, variances;
  for (size_t pdf = 0; pdf < kaldi.pdfs.size(); ++pdf) {
    const KaldiDiagGmm& gmm = kaldi.pdfs[pdf];
    const std::string where = absl::StrCat("Kaldi model '", source_name, "', pdf ", pdf);
    weights.clear();
    means.clear();
    variances.clear();
    double weight_sum = 0.0;
    for (size_t g = 0; g < gmm.weights.size(); ++g) {
      weight_sum += gmm.weights[g];
      if (gmm.weights[g] == 0.0f) continue;  // contributes exp(-inf) = 0
      weights.push_back(gmm.weights[g]);
      for (int d = 0; d < dim; ++d) {
        const double inv_var = gmm.inv_vars.at(g, d);
        variances.push_back(1.0 / inv_var);
        means.push_back(gmm.means_invvars.at(g, d) / inv_var);
      }
    }
    if (weights.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": every weight is 0"));
    if (std::abs(weight_sum - 1.0) > DiagGmmModel::kWeightSumTolerance) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: weights sum to %.6f, not 1 (tolerance %g)", where, weight_sum,
                          DiagGmmModel::kWeightSumTolerance));
    }
    if (absl::Status status = builder.AddState(weights, means, variances); !status.ok()) {
      return Annotate(status, where);
    }
  }
  absl::StatusOr<DiagGmmModel> model = std::move(builder).Build();
  if (!model.ok()) return Annotate(model.status(), absl::StrCat("Kaldi model '", source_name, "'"));
  return model;
}

KaldiAmDiagGmm DiagGmmModelToKaldi(const DiagGmmModel& model) {
  KaldiAmDiagGmm kaldi;
  kaldi.dim = model.dim();
  kaldi.pdfs.resize(model.num_states());
  const auto offsets = model.state_offsets();
  for (int s = 0; s < model.num_states(); ++s) {
    KaldiDiagGmm& gmm = kaldi.pdfs[s];
    const int count = model.num_gaussians_in_state(s);
    gmm.weights.resize(count);
    gmm.means_invvars = FloatMatrix(count, kaldi.dim);
    gmm.inv_vars = FloatMatrix(count, kaldi.dim);
    for (int g = 0; g < count; ++g) {
      const NaturalGaussian natural = model.Natural(offsets[s] + g);
      gmm.weights[g] = static_cast<float>(natural.weight);
      for (int d = 0; d < kaldi.dim; ++d) {
        gmm.inv_vars.at(g, d) = static_cast<float>(1.0 / natural.variance[d]);
        gmm.means_invvars.at(g, d) = static_cast<float>(natural.mean[d] / natural.variance[d]);
      }
    }
  }
  return kaldi;
}

std::string FormatKaldiAmDiagGmmText(const KaldiAmDiagGmm& kaldi) {
  std::string out = absl::StrCat("<DIMENSION> ", kaldi.dim, " <NUMPDFS> ", kaldi.pdfs.size(), " ");
  for (const KaldiDiagGmm& gmm : kaldi.pdfs) AppendDiagGmmText(gmm, kaldi.dim, &out);
  return out;
}

std::string FormatKaldiDiagGmmText(const KaldiDiagGmm& gmm) {
  std::string out;
  AppendDiagGmmText(gmm, static_cast<int>(gmm.means_invvars.cols()), &out);
  return out;
}

std::string FormatKaldiDiagGmmBinary(const KaldiDiagGmm& gmm) {
  std::string out;
  io_internal::KaldiBinaryWriter writer(&out);
  writer.Header();
  AppendDiagGmmBinary(gmm, static_cast<int>(gmm.means_invvars.cols()), writer);
  return out;
}

absl::Status WriteKaldiDiagGmm(const DiagGmmModel& model, const std::string& path, bool binary) {
  if (model.num_states() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("writing '", path, "': a lone Kaldi DiagGmm holds one GMM, the model has ",
                                                   model.num_states(), " states"));
  }
  const KaldiAmDiagGmm kaldi = DiagGmmModelToKaldi(model);
  return io_internal::WriteFileAtomically(
      path, binary ? FormatKaldiDiagGmmBinary(kaldi.pdfs[0]) : FormatKaldiDiagGmmText(kaldi.pdfs[0]));
}

absl::StatusOr<DiagGmmModel> DecodeKaldiAmDiagGmm(std::string contents,
                                                  absl::string_view source_name) {
  GMM_ASSIGN_OR_RETURN(const KaldiModel kaldi, ParseKaldiModel(std::move(contents), source_name));
  return KaldiToDiagGmmModel(kaldi.am, source_name);
}

absl::StatusOr<DiagGmmModel> ReadKaldiAmDiagGmmText(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(std::string contents, io_internal::ReadFileToString(path));
  return DecodeKaldiAmDiagGmm(std::move(contents), path);
}

absl::Status WriteKaldiAmDiagGmmText(const DiagGmmModel& model, const std::string& path) {
  return io_internal::WriteFileAtomically(path, FormatKaldiAmDiagGmmText(DiagGmmModelToKaldi(model)));
}

std::string FormatKaldiModel(const KaldiTransitionModel& tm, const KaldiAmDiagGmm& am, bool binary) {
  std::string out;
  if (!binary) {
    AppendKaldiTransitionModelText(tm, &out);
    return out + FormatKaldiAmDiagGmmText(am);
  }
  io_internal::KaldiBinaryWriter writer(&out);
  writer.Header();
  AppendKaldiTransitionModelBinary(tm, writer);
  const std::string am_bytes = FormatKaldiAmDiagGmmBinary(am);
  return out.append(am_bytes, 2);  // the AmDiagGmm without its own header
}

absl::Status WriteKaldiModel(const KaldiTransitionModel& tm, const DiagGmmModel& model, const std::string& path,
                             bool binary) {
  if (tm.num_pdfs() != model.num_states()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the transition model has %d pdfs, the acoustic model %d states", path, tm.num_pdfs(),
        model.num_states()));
  }
  return io_internal::WriteFileAtomically(path, FormatKaldiModel(tm, DiagGmmModelToKaldi(model), binary));
}

}  // namespace gmmscore
