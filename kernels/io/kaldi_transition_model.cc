#include "kernels/io/kaldi_transition_model.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/input_stream.h"
#include "kernels/io/internal/kaldi_binary.h"
#include "kernels/io/internal/kaldi_text.h"

namespace gmmscore {
namespace {

using io_internal::InputStream;
using io_internal::KaldiBinaryReader;

// Transition-id -> pdf map and checks that tie tuples to the topology.
absl::Status ComputeDerived(KaldiTransitionModel& tm, absl::string_view where) {
  tm.transition_id_to_pdf.assign(1, -1);
  tm.state_first_transition_id.assign(1, 0);
  for (size_t i = 0; i < tm.tuples.size(); ++i) {
    tm.state_first_transition_id.push_back(static_cast<int>(tm.transition_id_to_pdf.size()));
    const KaldiTransitionModel::Tuple& t = tm.tuples[i];
    const int entry = t.phone >= 0 && t.phone < static_cast<int>(tm.phone_to_entry.size()) ? tm.phone_to_entry[t.phone] : -1;
    if (entry < 0 || entry >= static_cast<int>(tm.entries.size())) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": transition state ", i + 1, ": phone ", t.phone,
                                                     " has no topology entry"));
    }
    const auto& states = tm.entries[entry];
    if (t.hmm_state < 0 || t.hmm_state >= static_cast<int>(states.size())) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": transition state ", i + 1, ": HMM state ", t.hmm_state,
                                                     " is not in phone ", t.phone, "'s topology of ", states.size(), " states"));
    }
    if (t.forward_pdf < 0 || t.self_loop_pdf < 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": transition state ", i + 1, " has a negative pdf"));
    }
    for (const auto& [destination, prob] : states[t.hmm_state].transitions) {
      tm.transition_id_to_pdf.push_back(destination == t.hmm_state ? t.self_loop_pdf : t.forward_pdf);
    }
  }
  tm.state_first_transition_id.push_back(static_cast<int>(tm.transition_id_to_pdf.size()));
  if (tm.log_probs.size() != tm.transition_id_to_pdf.size()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": <LogProbs> has ", tm.log_probs.size(),
                                                   " values, expected ", tm.transition_id_to_pdf.size(),
                                                   " (transition-ids + 1)"));
  }
  return absl::OkStatus();
}

absl::Status SetEntryPhones(KaldiTransitionModel& tm, const std::vector<int>& phones, int entry, absl::string_view where) {
  for (const int phone : phones) {
    if (phone <= 0 || phone > (1 << 20)) return absl::InvalidArgumentError(absl::StrCat(where, ": bad phone ", phone));
    if (static_cast<int>(tm.phone_to_entry.size()) <= phone) tm.phone_to_entry.resize(phone + 1, -1);
    if (tm.phone_to_entry[phone] != -1) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": phone ", phone, " is in two topology entries"));
    }
    tm.phone_to_entry[phone] = entry;
    tm.phones.push_back(phone);
  }
  return absl::OkStatus();
}

class TextParser {
 public:
  TextParser(InputStream& in, absl::string_view where) : in_(in), where_(where) {}

  absl::StatusOr<KaldiTransitionModel> Parse() {
    KaldiTransitionModel tm;
    GMM_RETURN_IF_ERROR(Expect("<Topology>"));
    GMM_ASSIGN_OR_RETURN(std::string token, Next("<TopologyEntry> or </Topology>"));
    while (token == "<TopologyEntry>") {
      GMM_RETURN_IF_ERROR(Expect("<ForPhones>"));
      std::vector<int> phones;
      while (true) {
        GMM_ASSIGN_OR_RETURN(token, Next("a phone or </ForPhones>"));
        if (token == "</ForPhones>") break;
        GMM_ASSIGN_OR_RETURN(const int phone, ToInt(token, "a phone"));
        phones.push_back(phone);
      }
      GMM_RETURN_IF_ERROR(SetEntryPhones(tm, phones, static_cast<int>(tm.entries.size()), Where()));
      std::vector<KaldiTransitionModel::HmmState> states;
      GMM_ASSIGN_OR_RETURN(token, Next("<State> or </TopologyEntry>"));
      while (token == "<State>") {
        GMM_ASSIGN_OR_RETURN(const int index, ReadInt("the state index"));
        if (index != static_cast<int>(states.size())) return Error(absl::StrCat("state ", index, " out of order"));
        KaldiTransitionModel::HmmState state;
        GMM_ASSIGN_OR_RETURN(token, Next("</State>"));
        if (token == "<PdfClass>") {
          GMM_ASSIGN_OR_RETURN(state.forward_pdf_class, ReadInt("the pdf class"));
          state.self_loop_pdf_class = state.forward_pdf_class;
          GMM_ASSIGN_OR_RETURN(token, Next("</State>"));
        } else if (token == "<ForwardPdfClass>") {
          GMM_ASSIGN_OR_RETURN(state.forward_pdf_class, ReadInt("the forward pdf class"));
          GMM_RETURN_IF_ERROR(Expect("<SelfLoopPdfClass>"));
          GMM_ASSIGN_OR_RETURN(state.self_loop_pdf_class, ReadInt("the self-loop pdf class"));
          GMM_ASSIGN_OR_RETURN(token, Next("</State>"));
        }
        while (token == "<Transition>") {
          GMM_ASSIGN_OR_RETURN(const int destination, ReadInt("the destination state"));
          GMM_ASSIGN_OR_RETURN(const std::string prob_token, Next("a probability"));
          const std::optional<float> prob = io_internal::ParseFloat(prob_token);
          if (!prob.has_value()) return Error(absl::StrCat("bad probability \"", absl::CEscape(prob_token), "\""));
          state.transitions.emplace_back(destination, *prob);
          GMM_ASSIGN_OR_RETURN(token, Next("</State>"));
        }
        if (token != "</State>") return Unexpected("<PdfClass>, <Transition> or </State>", token);
        states.push_back(std::move(state));
        GMM_ASSIGN_OR_RETURN(token, Next("<State> or </TopologyEntry>"));
      }
      if (token != "</TopologyEntry>") return Unexpected("<State> or </TopologyEntry>", token);
      tm.entries.push_back(std::move(states));
      GMM_ASSIGN_OR_RETURN(token, Next("<TopologyEntry> or </Topology>"));
    }
    if (token != "</Topology>") return Unexpected("<TopologyEntry> or </Topology>", token);
    std::sort(tm.phones.begin(), tm.phones.end());
    GMM_ASSIGN_OR_RETURN(token, Next("<Triples> or <Tuples>"));
    const bool tuples = token == "<Tuples>";
    if (!tuples && token != "<Triples>") return Unexpected("<Triples> or <Tuples>", token);
    GMM_ASSIGN_OR_RETURN(const int count, ReadInt("the tuple count"));
    if (count < 0) return Error("negative tuple count");
    for (int i = 0; i < count; ++i) {
      KaldiTransitionModel::Tuple t;
      GMM_ASSIGN_OR_RETURN(t.phone, ReadInt("a phone"));
      GMM_ASSIGN_OR_RETURN(t.hmm_state, ReadInt("an HMM state"));
      GMM_ASSIGN_OR_RETURN(t.forward_pdf, ReadInt("a pdf"));
      t.self_loop_pdf = t.forward_pdf;
      if (tuples) {
        GMM_ASSIGN_OR_RETURN(t.self_loop_pdf, ReadInt("a self-loop pdf"));
      }
      tm.tuples.push_back(t);
    }
    GMM_RETURN_IF_ERROR(Expect(tuples ? "</Tuples>" : "</Triples>"));
    GMM_RETURN_IF_ERROR(Expect("<LogProbs>"));
    absl::StatusOr<std::vector<float>> probs = io_internal::ReadTextVector(in_);
    if (!probs.ok()) return PrefixStatus(absl::StrCat(where_, ", <LogProbs>"), probs.status());
    tm.log_probs = *std::move(probs);
    GMM_RETURN_IF_ERROR(Expect("</LogProbs>"));
    GMM_RETURN_IF_ERROR(Expect("</TransitionModel>"));
    GMM_RETURN_IF_ERROR(ComputeDerived(tm, where_));
    return tm;
  }

 private:
  std::string Where() const { return absl::StrCat(where_, ", line ", in_.line()); }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(), ": ", what));
  }
  absl::Status Unexpected(absl::string_view expected, absl::string_view got) const {
    return Error(absl::StrCat("expected ", expected, ", got \"", absl::CEscape(got.substr(0, 40)), "\""));
  }
  absl::StatusOr<std::string> Next(absl::string_view expected) {
    std::string token;
    if (!io_internal::ReadToken(in_, &token)) {
      return absl::DataLossError(absl::StrCat(Where(), ": file ends where ", expected, " was expected (truncated?)"));
    }
    return token;
  }
  absl::Status Expect(absl::string_view expected) {
    GMM_ASSIGN_OR_RETURN(const std::string token, Next(expected));
    if (token != expected) return Unexpected(expected, token);
    return absl::OkStatus();
  }
  absl::StatusOr<int> ToInt(const std::string& token, absl::string_view what) const {
    const std::optional<int> value = io_internal::ParseInt(token);
    if (!value.has_value()) return Unexpected(what, token);
    return *value;
  }
  absl::StatusOr<int> ReadInt(absl::string_view what) {
    GMM_ASSIGN_OR_RETURN(const std::string token, Next(what));
    return ToInt(token, what);
  }

  InputStream& in_;
  const std::string where_;
};

}  // namespace

bool KaldiTransitionModel::IsHmm() const {
  for (const auto& entry : entries) {
    for (const HmmState& state : entry) {
      if (state.forward_pdf_class != state.self_loop_pdf_class) return false;
    }
  }
  return true;
}

int KaldiTransitionModel::num_pdfs() const {
  int most = -1;
  for (const Tuple& t : tuples) most = std::max({most, t.forward_pdf, t.self_loop_pdf});
  return most + 1;
}

absl::StatusOr<KaldiTransitionModel> ParseKaldiTransitionModelText(InputStream& in, absl::string_view where) {
  return TextParser(in, where).Parse();
}

absl::StatusOr<KaldiTransitionModel> ParseKaldiTransitionModelBinary(KaldiBinaryReader& in) {
  KaldiTransitionModel tm;
  GMM_RETURN_IF_ERROR(in.ExpectToken("<Topology>"));
  GMM_ASSIGN_OR_RETURN(const std::vector<int32_t> phones, in.ReadInt32Vector("the topology's phones"));
  GMM_ASSIGN_OR_RETURN(const std::vector<int32_t> phone_to_entry, in.ReadInt32Vector("the topology's phone2idx"));
  GMM_ASSIGN_OR_RETURN(int32_t num_entries, in.ReadInt32("the topology entry count"));
  const bool is_hmm = num_entries != -1;
  if (!is_hmm) {
    GMM_ASSIGN_OR_RETURN(num_entries, in.ReadInt32("the topology entry count"));
  }
  if (num_entries < 0 || num_entries > (1 << 20)) return in.Error(absl::StrCat("bad topology entry count ", num_entries));
  tm.phones.assign(phones.begin(), phones.end());
  tm.phone_to_entry.assign(phone_to_entry.begin(), phone_to_entry.end());
  for (int i = 0; i < num_entries; ++i) {
    GMM_ASSIGN_OR_RETURN(const int32_t num_states, in.ReadInt32("a topology entry's state count"));
    if (num_states < 0 || num_states > (1 << 16)) return in.Error(absl::StrCat("bad state count ", num_states));
    std::vector<KaldiTransitionModel::HmmState> states(num_states);
    for (auto& state : states) {
      GMM_ASSIGN_OR_RETURN(state.forward_pdf_class, in.ReadInt32("a pdf class"));
      state.self_loop_pdf_class = state.forward_pdf_class;
      if (!is_hmm) {
        GMM_ASSIGN_OR_RETURN(state.self_loop_pdf_class, in.ReadInt32("a self-loop pdf class"));
      }
      GMM_ASSIGN_OR_RETURN(const int32_t num_transitions, in.ReadInt32("a transition count"));
      if (num_transitions < 0 || num_transitions > (1 << 16)) return in.Error(absl::StrCat("bad transition count ", num_transitions));
      for (int k = 0; k < num_transitions; ++k) {
        GMM_ASSIGN_OR_RETURN(const int32_t destination, in.ReadInt32("a transition's destination"));
        GMM_ASSIGN_OR_RETURN(const float prob, in.ReadFloat("a transition's probability"));
        state.transitions.emplace_back(destination, prob);
      }
    }
    tm.entries.push_back(std::move(states));
  }
  GMM_RETURN_IF_ERROR(in.ExpectToken("</Topology>"));
  GMM_ASSIGN_OR_RETURN(const std::string kind, in.ReadToken("<Triples> or <Tuples>"));
  const bool tuples = kind == "<Tuples>";
  if (!tuples && kind != "<Triples>") return in.Error(absl::StrCat("expected <Triples> or <Tuples>, got \"", absl::CEscape(kind), "\""));
  GMM_ASSIGN_OR_RETURN(const int32_t count, in.ReadInt32("the tuple count"));
  if (count < 0 || count > (1 << 26)) return in.Error(absl::StrCat("bad tuple count ", count));
  for (int i = 0; i < count; ++i) {
    KaldiTransitionModel::Tuple t;
    GMM_ASSIGN_OR_RETURN(t.phone, in.ReadInt32("a phone"));
    GMM_ASSIGN_OR_RETURN(t.hmm_state, in.ReadInt32("an HMM state"));
    GMM_ASSIGN_OR_RETURN(t.forward_pdf, in.ReadInt32("a pdf"));
    t.self_loop_pdf = t.forward_pdf;
    if (tuples) {
      GMM_ASSIGN_OR_RETURN(t.self_loop_pdf, in.ReadInt32("a self-loop pdf"));
    }
    tm.tuples.push_back(t);
  }
  GMM_RETURN_IF_ERROR(in.ExpectToken(tuples ? "</Tuples>" : "</Triples>"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("<LogProbs>"));
  GMM_ASSIGN_OR_RETURN(tm.log_probs, in.ReadFloatVector("<LogProbs>"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("</LogProbs>"));
  GMM_RETURN_IF_ERROR(in.ExpectToken("</TransitionModel>"));
  GMM_RETURN_IF_ERROR(ComputeDerived(tm, absl::StrCat(in.what(), ", transition model ending at byte offset ", in.offset())));
  return tm;
}

namespace {

// The phones of topology entry `entry`, ascending (Kaldi walks phone2idx).
std::vector<int> EntryPhones(const KaldiTransitionModel& tm, int entry) {
  std::vector<int> phones;
  for (size_t phone = 0; phone < tm.phone_to_entry.size(); ++phone) {
    if (tm.phone_to_entry[phone] == entry) phones.push_back(static_cast<int>(phone));
  }
  return phones;
}

void AppendTextState(const KaldiTransitionModel::HmmState& state, int index, bool is_hmm, std::string* out) {
  absl::StrAppend(out, "<State> ", index, " ");
  if (state.forward_pdf_class != -1) {
    if (is_hmm) {
      absl::StrAppend(out, "<PdfClass> ", state.forward_pdf_class, " ");
    } else {
      absl::StrAppend(out, "<ForwardPdfClass> ", state.forward_pdf_class, " <SelfLoopPdfClass> ",
                      state.self_loop_pdf_class, " ");
    }
  }
  for (const auto& [destination, prob] : state.transitions) {
    absl::StrAppend(out, "<Transition> ", destination, " ");
    io_internal::AppendFloat(prob, out);
    out->push_back(' ');
  }
  out->append("</State> \n");
}

}  // namespace

void AppendKaldiTransitionModelText(const KaldiTransitionModel& tm, std::string* out) {
  const bool is_hmm = tm.IsHmm();
  out->append("<TransitionModel> \n<Topology> \n");
  for (size_t e = 0; e < tm.entries.size(); ++e) {
    out->append("<TopologyEntry> \n<ForPhones> \n");
    for (const int phone : EntryPhones(tm, static_cast<int>(e))) absl::StrAppend(out, phone, " ");
    out->append("\n</ForPhones> \n");
    for (size_t j = 0; j < tm.entries[e].size(); ++j) AppendTextState(tm.entries[e][j], static_cast<int>(j), is_hmm, out);
    out->append("</TopologyEntry> \n");
  }
  out->append("</Topology> \n");
  absl::StrAppend(out, is_hmm ? "<Triples> " : "<Tuples> ", tm.tuples.size(), " \n");
  for (const KaldiTransitionModel::Tuple& t : tm.tuples) {
    absl::StrAppend(out, t.phone, " ", t.hmm_state, " ", t.forward_pdf, " ");
    if (!is_hmm) absl::StrAppend(out, t.self_loop_pdf, " ");
    out->append("\n");
  }
  out->append(is_hmm ? "</Triples> \n<LogProbs> \n" : "</Tuples> \n<LogProbs> \n");
  io_internal::AppendTextVector(tm.log_probs.data(), static_cast<int64_t>(tm.log_probs.size()), out);
  out->append("</LogProbs> \n</TransitionModel> \n");
}

void AppendKaldiTransitionModelBinary(const KaldiTransitionModel& tm, io_internal::KaldiBinaryWriter& out) {
  const bool is_hmm = tm.IsHmm();
  out.Token("<TransitionModel>");
  out.Token("<Topology>");
  const std::vector<int32_t> phones(tm.phones.begin(), tm.phones.end());
  const std::vector<int32_t> phone_to_entry(tm.phone_to_entry.begin(), tm.phone_to_entry.end());
  out.Int32Vector(phones);
  out.Int32Vector(phone_to_entry);
  if (!is_hmm) out.Basic<int32_t>(-1);  // Kaldi's mark of separate self-loop pdf classes
  out.Basic<int32_t>(static_cast<int32_t>(tm.entries.size()));
  for (const auto& entry : tm.entries) {
    out.Basic<int32_t>(static_cast<int32_t>(entry.size()));
    for (const KaldiTransitionModel::HmmState& state : entry) {
      out.Basic<int32_t>(state.forward_pdf_class);
      if (!is_hmm) out.Basic<int32_t>(state.self_loop_pdf_class);
      out.Basic<int32_t>(static_cast<int32_t>(state.transitions.size()));
      for (const auto& [destination, prob] : state.transitions) {
        out.Basic<int32_t>(destination);
        out.Basic<float>(prob);
      }
    }
  }
  out.Token("</Topology>");
  out.Token(is_hmm ? "<Triples>" : "<Tuples>");
  out.Basic<int32_t>(static_cast<int32_t>(tm.tuples.size()));
  for (const KaldiTransitionModel::Tuple& t : tm.tuples) {
    out.Basic<int32_t>(t.phone);
    out.Basic<int32_t>(t.hmm_state);
    out.Basic<int32_t>(t.forward_pdf);
    if (!is_hmm) out.Basic<int32_t>(t.self_loop_pdf);
  }
  out.Token(is_hmm ? "</Triples>" : "</Tuples>");
  out.Token("<LogProbs>");
  out.Vector(absl::Span<const float>(tm.log_probs));
  out.Token("</LogProbs>");
  out.Token("</TransitionModel>");
}

}  // namespace gmmscore
