#include "kernels/io/htk_model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
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

// Parameter kinds (HTK Book 5.10.1; qualifier bits are octal there).
constexpr int kHtkBaseMask = 077;
constexpr int kHtkWaveform = 0;
constexpr int kHtkIrefc = 5;
constexpr int kHtkDiscrete = 10;
constexpr int kHtkCompressed = 02000;  // _C
constexpr int kHtkChecksum = 010000;   // _K
constexpr int64_t kHtkHeaderBytes = 12;
constexpr int64_t kHtkCrcBytes = 2;
// A compressed file's A and B vectors (float32, one value per dimension)
// fill the room of 4 int16 frames, and nSamples counts them: HParm.c's
// OpenParmChannel does "nSamples -= 4" after reading A and B, Julius's
// rdparam.c "samplenum -= sizeof(float)".
constexpr int64_t kHtkScaleSamples = 4;
// IREFC files hold int16 reflection coefficients scaled by this (HParm.c
// sets A = 32767, B = 0 for them).
constexpr float kHtkIrefcScale = 32767.0f;

// Finite as a float32 too (a compressed value may overflow it).
bool FitsFloat(double value) { return std::abs(value) <= std::numeric_limits<float>::max(); }

bool NeedsSwap(bool big_endian) { return big_endian != (std::endian::native == std::endian::big); }

template <typename T>
T LoadValue(const char* bytes, bool swap) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return swap ? io_internal::ByteReader::Swap(value) : value;
}

// A parameter file's header as read in one byte order, and the layout it
// implies.
struct HtkHeader {
  int32_t samples = 0;       // nSamples: the frames, + 4 when compressed
  int32_t period = 0;        // sampPeriod
  int32_t sample_bytes = 0;  // sampSize
  uint16_t kind = 0;         // parmKind
  bool big_endian = true;

  bool compressed() const { return (kind & kHtkCompressed) != 0; }
  // Values stored as int16 (then scaled) rather than float32.
  bool shorts() const { return compressed() || (kind & kHtkBaseMask) == kHtkIrefc; }
  int value_bytes() const { return shorts() ? 2 : 4; }
  int64_t dim() const { return sample_bytes / value_bytes(); }
  int64_t frames() const { return compressed() ? samples - kHtkScaleSamples : samples; }
  // Where frame 0 starts: after the header and a compressed file's A and B.
  int64_t data_offset() const { return kHtkHeaderBytes + (compressed() ? kHtkScaleSamples * sample_bytes : 0); }
  // The file's size without a CRC.
  int64_t size() const { return kHtkHeaderBytes + int64_t{samples} * sample_bytes; }
};

HtkHeader ReadHtkHeader(absl::string_view bytes, bool big_endian) {
  const bool swap = NeedsSwap(big_endian);
  HtkHeader h;
  h.samples = LoadValue<int32_t>(bytes.data(), swap);
  h.period = LoadValue<int32_t>(bytes.data() + 4, swap);
  h.sample_bytes = LoadValue<int16_t>(bytes.data() + 8, swap);
  h.kind = LoadValue<uint16_t>(bytes.data() + 10, swap);
  h.big_endian = big_endian;
  return h;
}

bool Sane(const HtkHeader& h) { return h.samples >= 0 && h.period > 0 && h.sample_bytes > 0; }

// A sane header for a file of exactly `file_size` bytes: what decides the
// byte order.
bool FitsExactly(const HtkHeader& h, int64_t file_size) {
  if (!Sane(h)) return false;
  const int64_t extra = file_size - h.size();
  return extra == 0 || (extra == kHtkCrcBytes && (h.kind & kHtkChecksum));
}

absl::Status CheckHtkHeader(const HtkHeader& h, int64_t file_size, const std::string& what) {
  if (!Sane(h)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ", byte offset 0: bad header: ", h.samples,
                                                   " samples, period ", h.period, ", ", h.sample_bytes,
                                                   " bytes per sample (not an HTK parameter file?)"));
  }
  const int base = h.kind & kHtkBaseMask;
  if (base == kHtkWaveform) return absl::UnimplementedError(absl::StrCat(what, ": waveform files are not supported"));
  if (base == kHtkDiscrete) {
    return absl::UnimplementedError(absl::StrCat(what, ": DISCRETE (vector-quantised) files are not supported"));
  }
  if (h.sample_bytes % h.value_bytes() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ", byte offset 8: ", h.sample_bytes,
                                                   " bytes per sample is not a whole number of ",
                                                   h.shorts() ? "int16" : "float32", " values"));
  }
  if (h.compressed() && h.samples < kHtkScaleSamples) {
    return absl::InvalidArgumentError(absl::StrCat(what, ", byte offset 0: a compressed (_C) file of ", h.samples,
                                                   " samples, too few to hold its A and B vectors (4)"));
  }
  if (file_size < h.size()) {
    return absl::DataLossError(absl::StrCat(what, " ends at byte ", file_size, " while reading ", h.frames(),
                                            " frames of ", h.dim(), " values (truncated?)"));
  }
  const int64_t extra = file_size - h.size();
  if (extra != 0 && !((h.kind & kHtkChecksum) && extra == kHtkCrcBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ", byte offset ", h.size(), ": ", extra, " bytes after the ",
                                                   h.frames(), " frames the header announces"));
  }
  return absl::OkStatus();
}

// The header of a file of `file_size` bytes whose first bytes are `bytes`:
// big-endian, or little-endian when only that reading fits the size. A
// damaged file (fitting neither way) is judged by the first sane reading,
// big-endian first, so that a truncated little-endian file is DATA_LOSS.
absl::StatusOr<HtkHeader> ParseHtkHeader(absl::string_view bytes, int64_t file_size, const std::string& what) {
  if (static_cast<int64_t>(bytes.size()) < kHtkHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(what, " ends at byte ", file_size, " while reading the header (truncated?)"));
  }
  const HtkHeader big = ReadHtkHeader(bytes, /*big_endian=*/true);
  const HtkHeader little = ReadHtkHeader(bytes, /*big_endian=*/false);
  HtkHeader h = big;
  if (!FitsExactly(big, file_size) && (FitsExactly(little, file_size) || (!Sane(big) && Sane(little)))) h = little;
  GMM_RETURN_IF_ERROR(CheckHtkHeader(h, file_size, what));
  return h;
}

// x = (s + B) / A per dimension for int16 files; empty for float32 ones.
struct HtkScale {
  std::vector<float> a, b;
};

// `bytes`: the file's bytes between the header and frame 0.
absl::StatusOr<HtkScale> DecodeHtkScale(const HtkHeader& h, absl::string_view bytes, const std::string& what) {
  HtkScale scale;
  if (!h.shorts()) return scale;
  const int64_t dim = h.dim();
  if (!h.compressed()) {
    scale.a.assign(dim, kHtkIrefcScale);
    scale.b.assign(dim, 0.0f);
    return scale;
  }
  const bool swap = NeedsSwap(h.big_endian);
  for (int64_t d = 0; d < dim; ++d) {
    scale.a.push_back(LoadValue<float>(bytes.data() + 4 * d, swap));
    scale.b.push_back(LoadValue<float>(bytes.data() + 4 * (dim + d), swap));
    if (!std::isfinite(scale.a[d]) || scale.a[d] == 0.0f || !std::isfinite(scale.b[d])) {
      return absl::InvalidArgumentError(absl::StrCat(what, ", byte offset ", kHtkHeaderBytes + 4 * d, ": dimension ", d,
                                                     " has compression scale A = ", scale.a[d], ", B = ", scale.b[d],
                                                     " (A must be finite and non-zero, B finite)"));
    }
  }
  return scale;
}

// Frames first.. of the file, decoded from `data`: exactly those frames'
// bytes. Messages give offsets in the file.
absl::StatusOr<FloatMatrix> DecodeHtkFrames(const HtkHeader& h, const HtkScale& scale, absl::string_view data,
                                            int64_t first, const std::string& what) {
  const int64_t dim = h.dim();
  const int64_t count = static_cast<int64_t>(data.size()) / h.sample_bytes;
  const bool swap = NeedsSwap(h.big_endian);
  FloatMatrix frames(count, dim);
  float* out = frames.data();
  for (int64_t i = 0; i < count * dim; ++i) {
    const char* at = data.data() + i * h.value_bytes();
    // In double, so that a compressed value is (s + B) / A rounded once.
    double value;
    if (h.shorts()) {
      const int64_t d = i % dim;
      value = (LoadValue<int16_t>(at, swap) + static_cast<double>(scale.b[d])) / scale.a[d];
    } else {
      value = LoadValue<float>(at, swap);
    }
    if (!FitsFloat(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ", byte offset ", h.data_offset() + first * h.sample_bytes + i * h.value_bytes(),
                       ": frame ", first + i / dim, ", dimension ", i % dim, " is not finite"));
    }
    out[i] = static_cast<float>(value);
  }
  return frames;
}

HtkFeatures MakeHtkFeatures(const HtkHeader& h, FloatMatrix frames) {
  HtkFeatures out;
  out.frames = std::move(frames);
  out.sample_period = h.period;
  out.parameter_kind = h.kind;
  return out;
}

std::string HtkFileWhat(const std::string& name) { return absl::StrCat("HTK parameter file '", name, "'"); }

// Closes a file descriptor on scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// `count` bytes of `fd` from `offset`; DATA_LOSS if the file has fewer (it
// shrank since its size was taken).
absl::StatusOr<std::string> ReadAt(int fd, int64_t offset, int64_t count, const std::string& path,
                                   const std::string& what) {
  std::string bytes(static_cast<size_t>(count), '\0');
  int64_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd, bytes.data() + done, count - done, offset + done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return io_internal::ErrnoStatus(errno, "read", path);
    if (got == 0) {
      return absl::DataLossError(
          absl::StrCat(what, " ends at byte ", offset + done, " (did it shrink while being read?)"));
    }
    done += got;
  }
  return bytes;
}

// Encoding: HParm.c's ComputeCompress, A and B per dimension from its range.
HtkScale CompressionScale(ConstMatrixView frames) {
  HtkScale scale;
  for (int64_t d = 0; d < frames.cols; ++d) {
    float low = 0.0f, high = 0.0f;
    for (int64_t t = 0; t < frames.rows; ++t) {
      const float x = frames.at(t, d);
      low = t == 0 ? x : std::min(low, x);
      high = t == 0 ? x : std::max(high, x);
    }
    const double range = static_cast<double>(high) - low;
    const double a = 2.0 * 32767.0 / range, b = (static_cast<double>(high) + low) * 32767.0 / range;
    if (range == 0.0 || !FitsFloat(a) || !FitsFloat(b)) {  // constant, or so nearly that A or B overflow
      scale.a.push_back(1.0f);
      scale.b.push_back(high);
    } else {
      scale.a.push_back(static_cast<float>(a));
      scale.b.push_back(static_cast<float>(b));
    }
  }
  return scale;
}

int16_t CompressValue(float x, float a, float b) {
  const double s = std::round(static_cast<double>(x) * a - b);  // half away from zero, as HParm.c
  return static_cast<int16_t>(std::clamp(s, -32767.0, 32767.0));
}

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
  const std::string what = HtkFileWhat(name);
  GMM_ASSIGN_OR_RETURN(const HtkHeader h, ParseHtkHeader(bytes, static_cast<int64_t>(bytes.size()), what));
  const absl::string_view scale_bytes = bytes.substr(kHtkHeaderBytes, h.data_offset() - kHtkHeaderBytes);
  GMM_ASSIGN_OR_RETURN(const HtkScale scale, DecodeHtkScale(h, scale_bytes, what));
  const absl::string_view data = bytes.substr(h.data_offset(), h.frames() * h.sample_bytes);
  GMM_ASSIGN_OR_RETURN(FloatMatrix frames, DecodeHtkFrames(h, scale, data, /*first=*/0, what));
  return MakeHtkFeatures(h, std::move(frames));
}

absl::StatusOr<HtkFeatures> ReadHtkParameterFile(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string bytes, io_internal::ReadFileToString(path));
  return DecodeHtkParameterFile(bytes, path);
}

absl::StatusOr<HtkFeatures> ReadHtkParameterFrames(const std::string& path, int64_t first_frame, int64_t last_frame) {
  const std::string what = HtkFileWhat(path);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_internal::ErrnoStatus(errno, "open", path);
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return io_internal::ErrnoStatus(errno, "stat", path);
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not a regular file (frames are selected by seeking)"));
  }
  const int64_t size = info.st_size;
  GMM_ASSIGN_OR_RETURN(const std::string head, ReadAt(fd.get(), 0, std::min(size, kHtkHeaderBytes), path, what));
  GMM_ASSIGN_OR_RETURN(const HtkHeader h, ParseHtkHeader(head, size, what));
  if (first_frame < 0 || last_frame < first_frame || last_frame >= h.frames()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": frames [", first_frame, ",", last_frame,
                                                   "] asked of a file of ", h.frames(),
                                                   " frames (numbered from 0, both ends included)"));
  }
  GMM_ASSIGN_OR_RETURN(const std::string scale_bytes,
                       ReadAt(fd.get(), kHtkHeaderBytes, h.data_offset() - kHtkHeaderBytes, path, what));
  GMM_ASSIGN_OR_RETURN(const HtkScale scale, DecodeHtkScale(h, scale_bytes, what));
  const int64_t count = last_frame - first_frame + 1;
  GMM_ASSIGN_OR_RETURN(const std::string data, ReadAt(fd.get(), h.data_offset() + first_frame * h.sample_bytes,
                                                      count * h.sample_bytes, path, what));
  GMM_ASSIGN_OR_RETURN(FloatMatrix frames, DecodeHtkFrames(h, scale, data, first_frame, what));
  return MakeHtkFeatures(h, std::move(frames));
}

bool LooksLikeHtkParameterFile(absl::string_view header, int64_t file_size) {
  if (static_cast<int64_t>(header.size()) < kHtkHeaderBytes) return false;
  return FitsExactly(ReadHtkHeader(header, /*big_endian=*/true), file_size) ||
         FitsExactly(ReadHtkHeader(header, /*big_endian=*/false), file_size);
}

std::string EncodeHtkParameterFile(ConstMatrixView frames, const HtkEncodeOptions& options) {
  const bool swap = NeedsSwap(!options.little_endian);
  std::string out;
  auto put = [&](auto value) {
    if (swap) value = io_internal::ByteReader::Swap(value);
    out.append(reinterpret_cast<const char*>(&value), sizeof(value));
  };
  const int kind =
      options.compressed ? (options.parameter_kind | kHtkCompressed) : (options.parameter_kind & ~kHtkCompressed);
  const int64_t value_bytes = options.compressed ? 2 : 4;
  put(static_cast<int32_t>(frames.rows + (options.compressed ? kHtkScaleSamples : 0)));
  put(options.sample_period);
  put(static_cast<int16_t>(frames.cols * value_bytes));
  put(static_cast<int16_t>(kind));
  if (!options.compressed) {
    for (int64_t t = 0; t < frames.rows; ++t) {
      for (int64_t d = 0; d < frames.cols; ++d) put(frames.at(t, d));
    }
    return out;
  }
  const HtkScale scale = CompressionScale(frames);
  for (float a : scale.a) put(a);
  for (float b : scale.b) put(b);
  for (int64_t t = 0; t < frames.rows; ++t) {
    for (int64_t d = 0; d < frames.cols; ++d) put(CompressValue(frames.at(t, d), scale.a[d], scale.b[d]));
  }
  return out;
}

std::string EncodeHtkParameterFile(ConstMatrixView frames, int32_t sample_period, int parameter_kind) {
  return EncodeHtkParameterFile(frames, {.sample_period = sample_period, .parameter_kind = parameter_kind});
}

}  // namespace gmmscore
