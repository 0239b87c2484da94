// Audio in: the acoustic features a CMU Sphinx model expects, computed from
// 16-bit PCM speech with sphinxbase's own front end (libsphinxbase, Debian's
// libsphinxbase-dev: fe_init_auto_r / fe_process_frames / fe_end_utt), then
// CMN and the dynamic features of kernels/io/sphinx_features.h.
//
//   GMM_ASSIGN_OR_RETURN(FeaturePipeline pipeline, FeaturePipelineForModel("en-us/"));
//   GMM_ASSIGN_OR_RETURN(PcmAudio audio, ReadSpeechFile("speech.wav", pipeline.front_end.sample_rate));
//   GMM_ASSIGN_OR_RETURN(FloatMatrix feats, ComputeFeatures(audio, pipeline, "speech.wav"));  // T x 39
//
// The model's feat.params names the front end (sphinxbase option names, the
// same values pocketsphinx and sphinx_fe would use): -samprate -frate -wlen
// -nfft -nfilt -lowerf -upperf -ncep -transform -lifter -alpha -remove_dc
// -remove_noise -round_filters -unit_area; options it does not name keep
// sphinxbase's defaults (fe.h). Then -cmn batch|current|live|none,
// -cmninit (live CMN's start), -agc none, -varnorm no and -feat (1s_c,
// 1s_c_d, 1s_c_d_dd, s2_4x). Decoder options in feat.params (-model,
// -svspec, beams ...) do not change features and are ignored. Three deliberate departures from pocketsphinx's defaults:
//   - dither is always off, whatever feat.params says, so the same audio
//     gives the same features on every run and machine (sphinxbase's dither
//     draws from a process-global random generator);
//   - silence removal (-remove_silence, sphinxbase's VAD, which drops frames)
//     is off unless FeaturePipeline::front_end.remove_silence is set, so frame
//     t of the output is audio time t / frate;
//   - a missing -cmn means batch CMN (the whole utterance is at hand).
// Noise removal (-remove_noise, spectral subtraction in the mel domain) stays
// on by default, as in sphinxbase: goforward.mfc in pocketsphinx-testdata was
// computed that way and we reproduce it bit for bit (sphinx_front_end_test.cc).
//
// Errors: INVALID_ARGUMENT naming the option and the file for values the
// front end cannot use (checked here before sphinxbase sees them, since some
// of its checks abort the process), and when the audio's sample rate is not
// the model's; UNIMPLEMENTED for feature options not supported (-agc, -varnorm yes, -lda, -doublebw, -logspec, -smoothspec, -warp_type,
// other -feat types); INTERNAL when sphinxbase itself fails (its message
// included). Reentrant: each call builds its own sphinxbase front end.
#ifndef GMMSCORE_KERNELS_FRONTEND_SPHINX_FRONT_END_H_
#define GMMSCORE_KERNELS_FRONTEND_SPHINX_FRONT_END_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/io/wav_reader.h"

namespace gmmscore {

// sphinxbase front-end options; the defaults are sphinxbase's (fe.h) except
// remove_silence (see the file comment).
struct FrontEndOptions {
  double sample_rate = 16000.0;   // -samprate, Hz
  int frame_rate = 100;           // -frate, frames per second
  double window_length = 0.025625;  // -wlen, seconds
  int fft_size = 512;             // -nfft
  int num_filters = 40;           // -nfilt
  double lower_freq = 133.33334;  // -lowerf, Hz
  double upper_freq = 6855.4976;  // -upperf, Hz
  int num_cepstra = 13;           // -ncep
  std::string transform = "legacy";  // -transform: legacy, dct or htk
  int lifter = 0;                 // -lifter, 0: none
  double pre_emphasis = 0.97;     // -alpha
  bool remove_dc = false;         // -remove_dc
  bool remove_noise = true;       // -remove_noise
  bool remove_silence = false;    // -remove_silence (sphinxbase default: yes)
  bool round_filters = true;      // -round_filters
  bool unit_area = true;          // -unit_area
};

// -cmn: none; batch (or current): the utterance's mean; live: a running
// mean started from -cmninit (live_cmn.h), what audio streams use.
enum class CmnMode { kNone, kBatch, kLive };

struct FeaturePipeline {
  FrontEndOptions front_end;
  CmnMode cmn = CmnMode::kBatch;
  // -cmninit: live CMN's starting mean, one value per cepstrum (sphinxbase's
  // default "40,3,-1", the rest zero).
  std::vector<float> cmn_init = DefaultCmnInit();
  std::string feature_type = "1s_c_d_dd";  // -feat

  static std::vector<float> DefaultCmnInit() { return {40, 3, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; }
};

bool operator==(const FrontEndOptions& a, const FrontEndOptions& b);
bool operator==(const FeaturePipeline& a, const FeaturePipeline& b);

// OK, or INVALID_ARGUMENT naming the first option sphinxbase could not use.
absl::Status ValidateFrontEndOptions(const FrontEndOptions& options);

// The pipeline feat.params describes; `where` names the file in errors.
absl::StatusOr<FeaturePipeline> FeaturePipelineFromFeatParams(const SphinxFeatParams& params,
                                                              const std::string& where);

// The pipeline of the Sphinx model directory `model_dir` (its feat.params, or
// the defaults when it has none). NOT_FOUND when it is not a Sphinx model
// directory (no mdef and means).
absl::StatusOr<FeaturePipeline> FeaturePipelineForModel(const std::string& model_dir);

// sphinxbase's front end over audio that arrives in pieces: the cepstra of
// each piece's whole frames as they complete (samples short of a frame wait
// for the next piece), then End: one last zero-padded frame for leftover
// samples, as sphinx_fe does. The result does not depend on how the audio
// is cut. Not thread-safe; movable.
class CepstraStream {
 public:
  // INVALID_ARGUMENT as ValidateFrontEndOptions; INTERNAL when sphinxbase fails.
  static absl::StatusOr<CepstraStream> Create(const FrontEndOptions& options);
  CepstraStream(CepstraStream&&) noexcept;
  CepstraStream& operator=(CepstraStream&&) noexcept;
  ~CepstraStream();

  // Cepstra (rows x width()) of the frames `samples` completed; 0 rows is
  // fine. FAILED_PRECONDITION after End.
  absl::StatusOr<FloatMatrix> Process(absl::Span<const int16_t> samples);
  // The last frame (0 or 1 rows); the stream takes no more samples.
  absl::StatusOr<FloatMatrix> End();
  int width() const;

 private:
  struct State;
  explicit CepstraStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Cepstra (frames x num_cepstra) of `samples`, taken at options.sample_rate:
// every whole frame plus, as sphinx_fe does, one last zero-padded frame for
// leftover samples. No samples give 0 rows.
absl::StatusOr<FloatMatrix> ComputeCepstra(absl::Span<const int16_t> samples, const FrontEndOptions& options);

// Cepstra, CMN and dynamic features: what the model scores (frames x
// SphinxFeatureDim). Live CMN runs the audio through a LiveFrontEnd
// (live_front_end.h), exactly as an audio stream would. `name` names the audio in errors; INVALID_ARGUMENT when
// audio.sample_rate differs from the pipeline's.
absl::StatusOr<FloatMatrix> ComputeFeatures(const PcmAudio& audio, const FeaturePipeline& pipeline,
                                            const std::string& name);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_FRONTEND_SPHINX_FRONT_END_H_
