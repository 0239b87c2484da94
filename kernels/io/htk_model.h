// HTK acoustic models (MMF text files, as HHEd/HERest write them) and HTK
// parameter files (features).
//
//   GMM_ASSIGN_OR_RETURN(HtkModel htk, ReadHtkMmf("hmmdefs"));
//   htk.state_names[s];                 // "~s name" or "hmm[i]" of scoring state s
//   htk.hmm_states.at("aa");            // scoring states of aa's emitting states, in order
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel m, htk.model.ToDiagGmmModel());  // one stream
//   GMM_ASSIGN_OR_RETURN(HtkFeatures f, ReadHtkParameterFile("a.mfc"));
//
// MMF subset read (keywords are case-insensitive, as in HTK):
//   ~o global options: <VecSize> n, <StreamInfo> S n1..nS, <DiagC>,
//      <NullD>, a parameter kind such as <MFCC_D_A_0> (kept as text)
//   ~s "name" state, ~m "name" mixture component, ~u "name" mean,
//   ~v "name" variance (e.g. varFloor1), ~t "name" transition matrix
//   ~h "name" <BeginHMM> <NumStates> N (<State> i STATE)* <TransP> N ... <EndHMM>
//   STATE: ~s "name" | [<NumMixes> m1..mS] [<SWeights> S w1..wS]
//          ([<Stream> s] (<Mixture> k w COMPONENT)+ | COMPONENT)   per stream
//   COMPONENT: ~m "name" | (<Mean> n v.. | ~u "name") (<Variance> n v.. |
//          ~v "name") [<GConst> g]
// <GConst> is ignored (recomputed). Each distinct emitting state (a ~s
// macro once, an inline state once per HMM) becomes one scoring state, in
// order of first appearance. Single-stream models convert to DiagGmmModel;
// multi-stream ones are TiedMixtureModels with one codebook per state and
// stream weights from <SWeights>.
//
// Errors name the file and line: NOT_FOUND missing file, DATA_LOSS the text
// ends inside a definition, INVALID_ARGUMENT unknown keywords or macros,
// sizes that disagree with <VecSize>/<StreamInfo>, bad values, an undefined
// macro; UNIMPLEMENTED full or other non-diagonal covariances, binary MMFs,
// tied-mixture (<TMix>) states, <DProb>.
//
// HTK parameter files: 12-byte big-endian header (int32 nSamples, int32
// sampPeriod in 100 ns, int16 sampSize in bytes, int16 parmKind), then
// nSamples frames of sampSize/4 big-endian float32. Compressed (_C) and
// waveform files are UNIMPLEMENTED; a file shorter than its header says is
// DATA_LOSS; _K files carry a trailing CRC, which is accepted.
#ifndef GMMSCORE_KERNELS_IO_HTK_MODEL_H_
#define GMMSCORE_KERNELS_IO_HTK_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/core/matrix.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

struct HtkModel {
  TiedMixtureModel model;
  std::vector<std::string> state_names;                  // per scoring state
  std::map<std::string, std::vector<int>> hmm_states;    // HMM -> scoring states of states 2..N-1
  std::string parameter_kind;                            // e.g. "MFCC_D_A_0", or ""
};

absl::StatusOr<HtkModel> ParseHtkMmf(absl::string_view text, const std::string& name);
absl::StatusOr<HtkModel> ReadHtkMmf(const std::string& path);
// True when the text starts like an MMF (a "~" macro or <BeginHMM>).
bool LooksLikeHtkMmf(absl::string_view prefix);

struct HtkFeatures {
  FloatMatrix frames;
  int32_t sample_period = 0;  // 100 ns units
  int parameter_kind = 0;     // base kind and qualifier bits
};

absl::StatusOr<HtkFeatures> DecodeHtkParameterFile(absl::string_view bytes, const std::string& name);
absl::StatusOr<HtkFeatures> ReadHtkParameterFile(const std::string& path);
// Big-endian, parmKind 9 (USER) unless given.
std::string EncodeHtkParameterFile(ConstMatrixView frames, int32_t sample_period = 100000, int parameter_kind = 9);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_HTK_MODEL_H_
