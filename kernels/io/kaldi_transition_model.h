// Kaldi's TransitionModel (hmm/transition-model.cc), the first half of a
// final.mdl: read in text or binary so that the acoustic model after it can
// be reached, and kept for its transition-id -> pdf-id map, which clients
// need to turn alignments and lattices into state (pdf) indices.
//
//   GMM_ASSIGN_OR_RETURN(KaldiModel mdl, ReadKaldiModel("final.mdl"));   // kaldi_am_diag_gmm.h
//   const KaldiTransitionModel& tm = *mdl.transition_model;
//   int pdf = tm.TransitionIdToPdf(tid);     // tid in [1, tm.num_transition_ids()]
//
// Layout (binary: tokens end in a space, int32/float as size byte + bytes):
//   <TransitionModel> <Topology> TOPOLOGY </Topology>
//   <Triples> N (phone hmm-state pdf) x N </Triples>       (older models)
//   | <Tuples> N (phone hmm-state forward-pdf self-loop-pdf) x N </Tuples>
//   <LogProbs> VECTOR </LogProbs> </TransitionModel>
// TOPOLOGY, text: <TopologyEntry> <ForPhones> p... </ForPhones>
//   (<State> i [<PdfClass> c | <ForwardPdfClass> c <SelfLoopPdfClass> c]
//    (<Transition> dst prob)* </State>)* </TopologyEntry> ...
// binary: int32 vector phones, int32 vector phone2idx, [int32 -1 when the
//   topology has separate self-loop pdf classes], int32 entry count, then per
//   entry int32 state count and per state int32 forward pdf class, [int32
//   self-loop pdf class], int32 transition count, (int32 dst, float prob)*.
// Transition-ids are numbered from 1 over the tuples in order, one per
// transition out of the tuple's HMM state; a transition-id maps to the
// tuple's self-loop pdf when the transition is the self-loop, otherwise to
// its forward pdf (TransitionModel::ComputeDerived).
//
// Writing (Kaldi's TransitionModel::Write, text or binary) gives the same
// layout back: <Triples> when every state's forward and self-loop pdf
// classes are equal (Kaldi's IsHmm), <Tuples> and the binary topology's -1
// marker otherwise; text breaks lines where Kaldi does and prints numbers at
// precision 7. The "\0B" header is the file's, not the object's.
//
// Errors name the source and the line (text) or byte offset (binary):
// DATA_LOSS when the input ends early, INVALID_ARGUMENT for unknown tokens,
// a phone without a topology entry, an HMM state out of range, or a
// <LogProbs> vector whose length is not the transition-id count + 1.
#ifndef GMMSCORE_KERNELS_IO_KALDI_TRANSITION_MODEL_H_
#define GMMSCORE_KERNELS_IO_KALDI_TRANSITION_MODEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

namespace io_internal {
class InputStream;
class KaldiBinaryReader;
class KaldiBinaryWriter;
}  // namespace io_internal

struct KaldiTransitionModel {
  struct Tuple {
    int phone = 0;
    int hmm_state = 0;
    int forward_pdf = 0;
    int self_loop_pdf = 0;
  };
  struct HmmState {
    int forward_pdf_class = -1;
    int self_loop_pdf_class = -1;
    std::vector<std::pair<int, float>> transitions;  // (destination state, probability)
  };
  std::vector<int> phones;
  std::vector<int> phone_to_entry;                 // -1 where a phone has none
  std::vector<std::vector<HmmState>> entries;      // topology entries
  std::vector<Tuple> tuples;                       // transition states 1..N
  std::vector<float> log_probs;                    // indexed by transition-id (0 unused)
  // Derived: transition_id_to_pdf[tid] for tid in [1, num_transition_ids()];
  // entry 0 is -1.
  std::vector<int> transition_id_to_pdf;
  // Derived: the first transition-id of transition-state s at [s], for s in
  // [1, tuples.size() + 1] (entry 0 unused).
  std::vector<int> state_first_transition_id;

  int num_transition_ids() const { return static_cast<int>(transition_id_to_pdf.size()) - 1; }
  // The largest pdf-id used, plus one.
  int num_pdfs() const;
  // Kaldi's IsHmm: no state has a separate self-loop pdf class.
  bool IsHmm() const;
  // Transition-state s (1-based, one per tuple) owns transition-ids
  // [first_transition_id(s), first_transition_id(s + 1)).
  int first_transition_id(int transition_state) const {
    return state_first_transition_id[transition_state];
  }
  // -1 when tid is out of range.
  int TransitionIdToPdf(int tid) const {
    return tid >= 1 && tid < static_cast<int>(transition_id_to_pdf.size()) ? transition_id_to_pdf[tid] : -1;
  }
};

// After the <TransitionModel> token has been read. `where` prefixes errors
// (e.g. "Kaldi model 'final.mdl'").
absl::StatusOr<KaldiTransitionModel> ParseKaldiTransitionModelText(io_internal::InputStream& in,
                                                                   absl::string_view where);
absl::StatusOr<KaldiTransitionModel> ParseKaldiTransitionModelBinary(io_internal::KaldiBinaryReader& in);

// From "<TransitionModel>" to "</TransitionModel>" as Kaldi writes them.
void AppendKaldiTransitionModelText(const KaldiTransitionModel& tm, std::string* out);
void AppendKaldiTransitionModelBinary(const KaldiTransitionModel& tm, io_internal::KaldiBinaryWriter& out);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_TRANSITION_MODEL_H_
