#include "kernels/io/htk_model.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/byte_reader.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

struct Component {
  std::vector<double> mean, variance;
};
struct StreamMixture {
  std::vector<double> weights;
  std::vector<std::shared_ptr<const Component>> components;
};
struct StateDef {
  std::vector<StreamMixture> streams;
  std::vector<float> stream_weights;
};

class MmfParser {
 public:
  MmfParser(absl::string_view text, std::string name) : text_(text), name_(std::move(name)) {}

  absl::StatusOr<HtkModel> Parse() {
    std::vector<std::pair<std::string, std::shared_ptr<const StateDef>>> scoring;  // in order
    std::map<const StateDef*, int> index;
    std::map<std::string, std::vector<int>> hmm_states;
    while (true) {
      const std::string token = Next();
      if (token.empty()) break;
      if (token == "~O") {
        GMM_RETURN_IF_ERROR(GlobalOptions());
      } else if (token == "~S" || token == "~M" || token == "~U" || token == "~V" || token == "~T" || token == "~H") {
        GMM_ASSIGN_OR_RETURN(const std::string macro, Name());
        if (token == "~S") {
          GMM_ASSIGN_OR_RETURN(auto state, State());
          states_[macro] = std::move(state);
        } else if (token == "~M") {
          GMM_ASSIGN_OR_RETURN(auto component, ComponentDef(-1));
          components_[macro] = std::move(component);
        } else if (token == "~U" || token == "~V") {
          GMM_RETURN_IF_ERROR(ExpectKeyword(token == "~U" ? "<MEAN>" : "<VARIANCE>"));
          GMM_ASSIGN_OR_RETURN(auto values, Vector(-1));
          (token == "~U" ? means_ : variances_)[macro] = std::move(values);
        } else if (token == "~T") {
          GMM_RETURN_IF_ERROR(ExpectKeyword("<TRANSP>"));
          GMM_RETURN_IF_ERROR(SkipSquare());
        } else {
          GMM_ASSIGN_OR_RETURN(auto states, Hmm(macro));
          std::vector<int>& ids = hmm_states[macro];
          for (size_t i = 0; i < states.size(); ++i) {
            auto [it, inserted] = index.emplace(states[i].second.get(), static_cast<int>(scoring.size()));
            if (inserted) scoring.push_back(states[i]);
            ids.push_back(it->second);
          }
        }
      } else {
        return Error(absl::StrCat("expected a macro (~o, ~s, ~m, ~u, ~v, ~t, ~h), got \"", Quote(token), "\""));
      }
    }
    if (scoring.empty()) return Error("no HMM with emitting states (~h) in the file");
    return Build(scoring, std::move(hmm_states));
  }

 private:
  std::string Quote(absl::string_view s) const { return absl::CEscape(s.substr(0, 40)); }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("HTK MMF '", name_, "', line ", line_, ": ", what));
  }
  absl::Status Truncated(absl::string_view expected) const {
    return absl::DataLossError(absl::StrCat("HTK MMF '", name_, "', line ", line_, ": file ends where ", expected,
                                            " was expected (truncated?)"));
  }

  // Next token: <KEYWORD> (upper-cased), ~x (upper-cased), "quoted", word.
  std::string Next() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
    if (pos_ >= text_.size()) return "";
    const size_t start = pos_;
    if (text_[pos_] == '"') {
      const size_t end = text_.find('"', pos_ + 1);
      pos_ = end == absl::string_view::npos ? text_.size() : end + 1;
      return std::string(text_.substr(start, pos_ - start));
    }
    if (text_[pos_] == '<') {
      const size_t end = text_.find('>', pos_);
      pos_ = end == absl::string_view::npos ? text_.size() : end + 1;
      return absl::AsciiStrToUpper(text_.substr(start, pos_ - start));
    }
    while (pos_ < text_.size() && !absl::ascii_isspace(text_[pos_]) && text_[pos_] != '<' &&
           !(pos_ > start && text_[pos_] == '"')) {
      ++pos_;
    }
    std::string token(text_.substr(start, pos_ - start));
    if (token.size() == 2 && token[0] == '~') token[1] = absl::ascii_toupper(token[1]);
    return token;
  }
  std::string Peek() {
    const size_t pos = pos_;
    const int64_t line = line_;
    std::string token = Next();
    pos_ = pos;
    line_ = line;
    return token;
  }
  absl::Status ExpectKeyword(absl::string_view keyword) {
    const std::string token = Next();
    if (token.empty()) return Truncated(keyword);
    if (token != keyword) return Error(absl::StrCat("expected ", keyword, ", got \"", Quote(token), "\""));
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Name() {
    const std::string token = Next();
    if (token.empty()) return Truncated("a macro name");
    if (token.size() < 2 || token.front() != '"' || token.back() != '"') {
      return Error(absl::StrCat("expected a quoted macro name, got \"", Quote(token), "\""));
    }
    return token.substr(1, token.size() - 2);
  }
  absl::StatusOr<double> Number(absl::string_view what) {
    const std::string token = Next();
    if (token.empty()) return Truncated(what);
    double value;
    if (!absl::SimpleAtod(token, &value) || !std::isfinite(value)) {
      return Error(absl::StrCat("expected ", what, ", got \"", Quote(token), "\""));
    }
    return value;
  }
  absl::StatusOr<int> Int(absl::string_view what) {
    const std::string token = Next();
    if (token.empty()) return Truncated(what);
    int value;
    if (!absl::SimpleAtoi(token, &value)) return Error(absl::StrCat("expected ", what, ", got \"", Quote(token), "\""));
    return value;
  }
  // "n v1..vn"; n must equal `expected` when that is >= 0.
  absl::StatusOr<std::vector<double>> Vector(int expected) {
    GMM_ASSIGN_OR_RETURN(const int n, Int("a vector size"));
    if (n <= 0 || n > (1 << 16) || (expected >= 0 && n != expected)) {
      return Error(absl::StrCat("vector size ", n, expected >= 0 ? absl::StrCat(", expected ", expected) : ""));
    }
    std::vector<double> values(n);
    for (double& v : values) {
      GMM_ASSIGN_OR_RETURN(v, Number("a vector value"));
    }
    return values;
  }
  absl::Status SkipSquare() {
    GMM_ASSIGN_OR_RETURN(const int n, Int("the matrix size"));
    if (n <= 0 || n > 1024) return Error(absl::StrCat("bad matrix size ", n));
    for (int i = 0; i < n * n; ++i) {
      GMM_RETURN_IF_ERROR(Number("a matrix value").status());
    }
    return absl::OkStatus();
  }

  absl::Status GlobalOptions() {
    while (true) {
      const std::string token = Peek();
      if (token.empty() || token[0] != '<') return absl::OkStatus();
      Next();
      if (token == "<VECSIZE>") {
        GMM_ASSIGN_OR_RETURN(vec_size_, Int("the vector size"));
      } else if (token == "<STREAMINFO>") {
        GMM_ASSIGN_OR_RETURN(const int streams, Int("the stream count"));
        if (streams <= 0 || streams > 32) return Error(absl::StrCat("bad stream count ", streams));
        stream_dims_.resize(streams);
        for (int& d : stream_dims_) {
          GMM_ASSIGN_OR_RETURN(d, Int("a stream width"));
        }
      } else if (token == "<DIAGC>" || token == "<NULLD>") {
      } else if (token == "<FULLC>" || token == "<INVDIAGC>" || token == "<LLTC>" || token == "<XFORMC>") {
        return absl::UnimplementedError(absl::StrCat("HTK MMF '", name_, "', line ", line_, ": covariance kind ", token,
                                                     " is not supported (only <DiagC>)"));
      } else if (token.size() > 2) {
        kind_ = token.substr(1, token.size() - 2);  // a parameter kind such as <MFCC_D_A_0>
      }
    }
  }

  int Dim(int stream) const {
    if (!stream_dims_.empty()) return stream < static_cast<int>(stream_dims_.size()) ? stream_dims_[stream] : -1;
    return vec_size_ > 0 ? vec_size_ : -1;
  }

  absl::StatusOr<std::shared_ptr<const Component>> ComponentDef(int dim) {
    if (Peek() == "~M") {
      Next();
      GMM_ASSIGN_OR_RETURN(const std::string name, Name());
      const auto it = components_.find(name);
      if (it == components_.end()) return Error(absl::StrCat("undefined mixture macro ~m \"", name, "\""));
      return it->second;
    }
    auto component = std::make_shared<Component>();
    std::string token = Next();
    if (token == "~U") {
      GMM_ASSIGN_OR_RETURN(const std::string name, Name());
      if (!means_.count(name)) return Error(absl::StrCat("undefined mean macro ~u \"", name, "\""));
      component->mean = means_[name];
    } else if (token == "<MEAN>") {
      GMM_ASSIGN_OR_RETURN(component->mean, Vector(dim));
    } else if (token.empty()) {
      return Truncated("<Mean>");
    } else if (token == "<TMIX>" || token == "<DPROB>") {
      return absl::UnimplementedError(absl::StrCat("HTK MMF '", name_, "', line ", line_, ": ", token, " is not supported"));
    } else {
      return Error(absl::StrCat("expected <Mean> or ~u, got \"", Quote(token), "\""));
    }
    token = Next();
    if (token == "~V") {
      GMM_ASSIGN_OR_RETURN(const std::string name, Name());
      if (!variances_.count(name)) return Error(absl::StrCat("undefined variance macro ~v \"", name, "\""));
      component->variance = variances_[name];
    } else if (token == "<VARIANCE>") {
      GMM_ASSIGN_OR_RETURN(component->variance, Vector(static_cast<int>(component->mean.size())));
    } else if (token.empty()) {
      return Truncated("<Variance>");
    } else if (token == "<INVCOVAR>" || token == "<LLTCOVAR>" || token == "<XFORM>") {
      return absl::UnimplementedError(absl::StrCat("HTK MMF '", name_, "', line ", line_, ": ", token,
                                                   " (non-diagonal covariance) is not supported"));
    } else {
      return Error(absl::StrCat("expected <Variance> or ~v, got \"", Quote(token), "\""));
    }
    if (component->variance.size() != component->mean.size()) {
      return Error(absl::StrCat("variance has ", component->variance.size(), " values, mean has ", component->mean.size()));
    }
    for (const double v : component->variance) {
      if (!(v > 0.0)) return Error(absl::StrCat("variance ", v, " is not positive"));
    }
    if (Peek() == "<GCONST>") {
      Next();
      GMM_RETURN_IF_ERROR(Number("the GConst").status());
    }
    return component;
  }

  absl::StatusOr<StreamMixture> Mixture(int dim, int count) {
    StreamMixture mixture;
    if (Peek() != "<MIXTURE>") {
      GMM_ASSIGN_OR_RETURN(auto component, ComponentDef(dim));
      mixture.weights.push_back(1.0);
      mixture.components.push_back(std::move(component));
      return mixture;
    }
    while (Peek() == "<MIXTURE>") {
      Next();
      GMM_ASSIGN_OR_RETURN(const int k, Int("the mixture index"));
      GMM_ASSIGN_OR_RETURN(const double weight, Number("the mixture weight"));
      if (k < 1 || k > count || weight < 0.0 || weight > 1.0 + 1e-6) {
        return Error(absl::StrCat("mixture ", k, " of ", count, " with weight ", weight));
      }
      GMM_ASSIGN_OR_RETURN(auto component, ComponentDef(dim));
      mixture.weights.push_back(weight);
      mixture.components.push_back(std::move(component));
    }
    return mixture;
  }

  absl::StatusOr<std::shared_ptr<const StateDef>> State() {
    if (Peek() == "~S") {
      Next();
      GMM_ASSIGN_OR_RETURN(const std::string name, Name());
      const auto it = states_.find(name);
      if (it == states_.end()) return Error(absl::StrCat("undefined state macro ~s \"", name, "\""));
      return it->second;
    }
    const int num_streams = stream_dims_.empty() ? 1 : static_cast<int>(stream_dims_.size());
    std::vector<int> counts(num_streams, 1);
    auto state = std::make_shared<StateDef>();
    state->stream_weights.assign(num_streams, 1.0f);
    if (Peek() == "<NUMMIXES>") {
      Next();
      for (int& c : counts) {
        GMM_ASSIGN_OR_RETURN(c, Int("a mixture count"));
        if (c <= 0 || c > (1 << 16)) return Error(absl::StrCat("bad mixture count ", c));
      }
    }
    if (Peek() == "<SWEIGHTS>") {
      Next();
      GMM_ASSIGN_OR_RETURN(const std::vector<double> w, Vector(num_streams));
      for (int s = 0; s < num_streams; ++s) state->stream_weights[s] = static_cast<float>(w[s]);
    }
    for (int s = 0; s < num_streams; ++s) {
      if (Peek() == "<STREAM>") {
        Next();
        GMM_ASSIGN_OR_RETURN(const int index, Int("the stream index"));
        if (index != s + 1) return Error(absl::StrCat("<Stream> ", index, " where stream ", s + 1, " was expected"));
      }
      GMM_ASSIGN_OR_RETURN(StreamMixture mixture, Mixture(Dim(s), counts[s]));
      state->streams.push_back(std::move(mixture));
    }
    return state;
  }

  absl::StatusOr<std::vector<std::pair<std::string, std::shared_ptr<const StateDef>>>> Hmm(const std::string& hmm) {
    GMM_RETURN_IF_ERROR(ExpectKeyword("<BEGINHMM>"));
    if (Peek() == "~O") {
      Next();
      GMM_RETURN_IF_ERROR(GlobalOptions());
    }
    GMM_RETURN_IF_ERROR(ExpectKeyword("<NUMSTATES>"));
    GMM_ASSIGN_OR_RETURN(const int num_states, Int("the state count"));
    if (num_states < 3 || num_states > 1000) return Error(absl::StrCat("bad state count ", num_states));
    std::vector<std::pair<std::string, std::shared_ptr<const StateDef>>> states;
    for (int i = 2; i < num_states; ++i) {
      GMM_RETURN_IF_ERROR(ExpectKeyword("<STATE>"));
      GMM_ASSIGN_OR_RETURN(const int index, Int("the state index"));
      if (index != i) return Error(absl::StrCat("<State> ", index, " where state ", i, " was expected"));
      const bool shared = Peek() == "~S";
      std::string label = absl::StrCat(hmm, "[", i, "]");
      if (shared) {
        const size_t keep = pos_;
        const int64_t line = line_;
        Next();
        GMM_ASSIGN_OR_RETURN(label, Name());
        pos_ = keep;
        line_ = line;
      }
      GMM_ASSIGN_OR_RETURN(auto state, State());
      states.emplace_back(label, std::move(state));
    }
    std::string token = Next();
    if (token == "~T") {
      GMM_ASSIGN_OR_RETURN(const std::string name, Name());
      (void)name;
    } else if (token == "<TRANSP>") {
      GMM_RETURN_IF_ERROR(SkipSquare());
    } else if (token.empty()) {
      return Truncated("<TransP>");
    } else {
      return Error(absl::StrCat("expected <TransP> or ~t, got \"", Quote(token), "\""));
    }
    GMM_RETURN_IF_ERROR(ExpectKeyword("<ENDHMM>"));
    return states;
  }

  absl::StatusOr<HtkModel> Build(const std::vector<std::pair<std::string, std::shared_ptr<const StateDef>>>& scoring,
                                 std::map<std::string, std::vector<int>> hmm_states) {
    const StateDef& first = *scoring[0].second;
    std::vector<FeatureStream> streams;
    int offset = 0;
    for (size_t s = 0; s < first.streams.size(); ++s) {
      const int dim = static_cast<int>(first.streams[s].components[0]->mean.size());
      streams.push_back({offset, dim});
      offset += dim;
    }
    if (vec_size_ > 0 && offset != vec_size_) {
      return absl::InvalidArgumentError(absl::StrCat("HTK MMF '", name_, "': streams cover ", offset,
                                                     " dimensions but <VecSize> is ", vec_size_));
    }
    TiedMixtureModelBuilder builder(streams);
    builder.SetStreamWeights(first.stream_weights);
    std::vector<std::vector<double>> means(streams.size()), vars(streams.size()), weights(streams.size());
    for (size_t i = 0; i < scoring.size(); ++i) {
      const StateDef& state = *scoring[i].second;
      const std::string where = absl::StrCat("HTK MMF '", name_, "', state ", scoring[i].first);
      if (state.streams.size() != streams.size() || state.stream_weights != first.stream_weights) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": stream layout or <SWeights> differ from the first state's"));
      }
      std::vector<CodebookStreamParams> params;
      std::vector<absl::Span<const double>> log_w;
      for (size_t f = 0; f < streams.size(); ++f) {
        means[f].clear();
        vars[f].clear();
        weights[f].clear();
        for (size_t g = 0; g < state.streams[f].components.size(); ++g) {
          const Component& c = *state.streams[f].components[g];
          if (static_cast<int>(c.mean.size()) != streams[f].dim) {
            return absl::InvalidArgumentError(absl::StrCat(where, ", stream ", f + 1, ": a mean of size ", c.mean.size(),
                                                           ", expected ", streams[f].dim));
          }
          means[f].insert(means[f].end(), c.mean.begin(), c.mean.end());
          vars[f].insert(vars[f].end(), c.variance.begin(), c.variance.end());
          const double w = state.streams[f].weights[g];
          weights[f].push_back(w > 0.0 ? std::log(w) : -std::numeric_limits<double>::infinity());
        }
        params.push_back({means[f], vars[f]});
        log_w.push_back(weights[f]);
      }
      absl::StatusOr<int> codebook = builder.AddCodebook(params);
      if (!codebook.ok()) return PrefixStatus(where, codebook.status());
      if (absl::Status status = builder.AddState(*codebook, log_w); !status.ok()) {
        return PrefixStatus(where, status);
      }
    }
    absl::StatusOr<TiedMixtureModel> model = std::move(builder).Build();
    if (!model.ok()) return PrefixStatus(absl::StrCat("HTK MMF '", name_, "'"), model.status());
    std::vector<std::string> names;
    for (const auto& entry : scoring) names.push_back(entry.first);
    return HtkModel{.model = *std::move(model), .state_names = std::move(names), .hmm_states = std::move(hmm_states),
                    .parameter_kind = kind_};
  }

  absl::string_view text_;
  const std::string name_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int vec_size_ = -1;
  std::vector<int> stream_dims_;
  std::string kind_;
  std::map<std::string, std::shared_ptr<const StateDef>> states_;
  std::map<std::string, std::shared_ptr<const Component>> components_;
  std::map<std::string, std::vector<double>> means_, variances_;
};

constexpr int kHtkCompressed = 0x400;  // _C
constexpr int kHtkChecksum = 0x1000;   // _K

}  // namespace

bool LooksLikeHtkMmf(absl::string_view prefix) {
  size_t i = 0;
  while (i < prefix.size() && absl::ascii_isspace(prefix[i])) ++i;
  prefix = prefix.substr(i);
  return (prefix.size() >= 2 && prefix[0] == '~' && absl::ascii_isalpha(prefix[1])) ||
         absl::StartsWithIgnoreCase(prefix, "<BeginHMM>");
}

absl::StatusOr<HtkModel> ParseHtkMmf(absl::string_view text, const std::string& name) {
  if (!text.empty() && text[0] == '\0') {
    return absl::UnimplementedError(absl::StrCat("HTK MMF '", name, "' is binary; convert it with HHEd (no -B) first"));
  }
  return MmfParser(text, name).Parse();
}

absl::StatusOr<HtkModel> ReadHtkMmf(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  return ParseHtkMmf(text, path);
}

absl::StatusOr<HtkFeatures> DecodeHtkParameterFile(absl::string_view bytes, const std::string& name) {
  io_internal::ByteReader in(bytes, absl::StrCat("HTK parameter file '", name, "'"), /*big_endian=*/true);
  GMM_ASSIGN_OR_RETURN(const int32_t samples, in.Read<int32_t>("the header"));
  GMM_ASSIGN_OR_RETURN(const int32_t period, in.Read<int32_t>("the header"));
  GMM_ASSIGN_OR_RETURN(const int16_t sample_bytes, in.Read<int16_t>("the header"));
  GMM_ASSIGN_OR_RETURN(const uint16_t kind, in.Read<uint16_t>("the header"));
  if (samples < 0 || period <= 0 || sample_bytes <= 0 || sample_bytes % 4 != 0) {
    return in.ErrorAt(0, absl::StrCat("bad header: ", samples, " samples, period ", period, ", ", sample_bytes,
                                      " bytes per sample (byte-swapped or not an HTK file?)"));
  }
  if ((kind & 0x3f) == 0) return absl::UnimplementedError(absl::StrCat(in.what(), ": waveform files are not supported"));
  if (kind & kHtkCompressed) {
    return absl::UnimplementedError(absl::StrCat(in.what(), ": compressed (_C) parameter files are not supported"));
  }
  const int64_t dim = sample_bytes / 4;
  const int64_t needed = int64_t{samples} * sample_bytes;
  if (in.remaining() < needed) return in.Truncated(absl::StrCat(samples, " frames of ", dim, " values"));
  const int64_t extra = in.remaining() - needed;
  if (extra != 0 && !((kind & kHtkChecksum) && extra == 2)) {
    return in.Error(absl::StrCat(extra, " bytes after the ", samples, " frames the header announces"));
  }
  std::vector<float> values;
  GMM_RETURN_IF_ERROR(in.ReadArray(int64_t{samples} * dim, "the frames", &values));
  HtkFeatures out;
  out.frames = FloatMatrix(samples, dim);
  for (int64_t i = 0; i < samples * dim; ++i) {
    if (!std::isfinite(values[i])) {
      return in.ErrorAt(12 + 4 * i, absl::StrCat("frame ", i / dim, ", dimension ", i % dim, " is not finite"));
    }
  }
  if (!values.empty()) std::memcpy(out.frames.data(), values.data(), values.size() * 4);
  out.sample_period = period;
  out.parameter_kind = kind;
  return out;
}

absl::StatusOr<HtkFeatures> ReadHtkParameterFile(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, io_internal::ReadFileToString(path));
  return DecodeHtkParameterFile(bytes, path);
}

std::string EncodeHtkParameterFile(ConstMatrixView frames, int32_t sample_period, int parameter_kind) {
  std::string out;
  auto put = [&](auto value) {
    value = io_internal::ByteReader::Swap(value);
    out.append(reinterpret_cast<const char*>(&value), sizeof(value));
  };
  put(static_cast<int32_t>(frames.rows));
  put(sample_period);
  put(static_cast<int16_t>(frames.cols * 4));
  put(static_cast<int16_t>(parameter_kind));
  for (int64_t t = 0; t < frames.rows; ++t) {
    for (int64_t d = 0; d < frames.cols; ++d) put(frames.at(t, d));
  }
  return out;
}

}  // namespace gmmscore
