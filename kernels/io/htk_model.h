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
// HTK parameter files (HTK Book 5.10.1): a 12-byte header (int32 nSamples,
// int32 sampPeriod in 100 ns, int16 sampSize in bytes, int16 parmKind), then
// nSamples frames of sampSize/4 float32. Read as well:
//   _C compressed (parmKind bit 02000): sampSize/2 int16 per frame, after two
//      float32 vectors A and B of that size which take up the first 4 of
//      nSamples (so nSamples - 4 frames); x = (s + B) / A, as HTK's HParm.c
//      (and Julius's rdparam.c) decode it. A must be finite and non-zero.
//   IREFC (base kind 5): int16, x = s / 32767, as HParm.c reads it.
//   _K: 2 trailing CRC bytes, accepted and not checked.
//   Byte order: HTK writes big-endian. A file whose big-endian header does
//      not fit its size (12 + nSamples * sampSize [+ 2 with _K] bytes) while
//      the byte-swapped one fits exactly is read little-endian, as some
//      tools write it (HTK's NATURALREADORDER) and as Julius detects it.
//      A header that fits both ways is read big-endian; a damaged file is
//      judged by the first sane reading (nSamples >= 0, sampPeriod and
//      sampSize > 0), big-endian first.
// Errors name the file: DATA_LOSS a file shorter than its header says;
// INVALID_ARGUMENT a bad header, bytes after the frames, a non-finite value
// (naming frame and dimension) or scale; UNIMPLEMENTED waveform (parmKind
// 0) and DISCRETE (VQ index) files. Reentrant.
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

// parameter_kind of what was read keeps the file's _C and _K bits.
absl::StatusOr<HtkFeatures> DecodeHtkParameterFile(absl::string_view bytes, const std::string& name);
absl::StatusOr<HtkFeatures> ReadHtkParameterFile(const std::string& path);
// Frames first_frame..last_frame (inclusive, 0-based, as HTK's extended file
// names "file[s,e]" select them) of `path`, reading only those frames' bytes.
// INVALID_ARGUMENT when first_frame < 0, last_frame < first_frame or
// last_frame is not a frame of the file.
absl::StatusOr<HtkFeatures> ReadHtkParameterFrames(const std::string& path, int64_t first_frame, int64_t last_frame);

// True when the first 12 bytes of a file of `file_size` bytes are an HTK
// header that fits that size exactly, in either byte order.
bool LooksLikeHtkParameterFile(absl::string_view header, int64_t file_size);

struct HtkEncodeOptions {
  int32_t sample_period = 100000;  // 100 ns units: 10 ms
  int parameter_kind = 9;          // USER; _C is set or cleared by `compressed`
  // _C: int16 values with HTK's per-dimension A and B (HParm.c's
  // ComputeCompress: A = 2*32767/(max-min), B = (max+min)*32767/(max-min),
  // or A = 1, B = max for a constant dimension), s = round(x*A - B).
  bool compressed = false;
  bool little_endian = false;  // not HTK's order: for tests of other tools' files
};
std::string EncodeHtkParameterFile(ConstMatrixView frames, const HtkEncodeOptions& options);
// Big-endian, uncompressed, parmKind 9 (USER) unless given.
std::string EncodeHtkParameterFile(ConstMatrixView frames, int32_t sample_period = 100000, int parameter_kind = 9);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_HTK_MODEL_H_
