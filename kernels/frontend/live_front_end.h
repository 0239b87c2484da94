// LiveFrontEnd: a model's features from audio that arrives in pieces, as an
// audio stream's server gets it (StreamConfig.audio): sphinxbase's cepstra
// (CepstraStream), live CMN (LiveCmn) and the dynamic features, each frame
// given as soon as the frames it reads have arrived.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<LiveFrontEnd> live, LiveFrontEnd::Create(pipeline));
//   while (audio) { GMM_ASSIGN_OR_RETURN(FloatMatrix ready, live->Push(samples)); ... }
//   GMM_ASSIGN_OR_RETURN(FloatMatrix rest, live->Finish());
//
// Frame t covers samples [t * shift, t * shift + window) (shift =
// -samprate / -frate, window = -wlen * -samprate, both rounded) and comes
// out once the audio reaches frame t + lookahead() (the feature type's
// context, 3 frames for 1s_c_d_dd); Finish gives the frames held back and
// the zero-padded last one. The frames out, all pushes and Finish together,
// do not depend on how the audio was cut: they equal ComputeFeatures over
// the whole recording with CmnMode::kLive. CMN is live unless the pipeline
// says kNone (batch CMN needs the whole utterance, which a stream never
// has). Not thread-safe.
#ifndef GMMSCORE_KERNELS_FRONTEND_LIVE_FRONT_END_H_
#define GMMSCORE_KERNELS_FRONTEND_LIVE_FRONT_END_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/frontend/live_cmn.h"
#include "kernels/frontend/sphinx_front_end.h"

namespace gmmscore {

class LiveFrontEnd {
 public:
  // INVALID_ARGUMENT / UNIMPLEMENTED for options or feature types the front
  // end cannot run (as FeaturePipelineFromFeatParams); INTERNAL when
  // sphinxbase fails.
  static absl::StatusOr<std::unique_ptr<LiveFrontEnd>> Create(const FeaturePipeline& pipeline);

  // The feature frames `samples` completed (rows x dim(); 0 rows is fine).
  // FAILED_PRECONDITION after Finish.
  absl::StatusOr<FloatMatrix> Push(absl::Span<const int16_t> samples);
  // The end of the audio: every frame not given yet. FAILED_PRECONDITION
  // when called twice.
  absl::StatusOr<FloatMatrix> Finish();

  int dim() const { return dim_; }
  int lookahead() const { return context_; }
  int64_t frames_out() const { return frames_out_; }
  const FeaturePipeline& pipeline() const { return pipeline_; }

 private:
  LiveFrontEnd(FeaturePipeline pipeline, CepstraStream cepstra, int dim, int context);
  // Normalises and keeps `cepstra`, then gives frames [frames_out_, end)
  // where end leaves `context_` frames of lookahead (or none at the end).
  absl::StatusOr<FloatMatrix> Take(FloatMatrix cepstra, bool at_end);

  const FeaturePipeline pipeline_;
  CepstraStream cepstra_;
  std::optional<LiveCmn> cmn_;
  const int dim_;
  const int context_;
  // Normalised cepstra from frame kept_first_ on: the context of the frames
  // still to give, and the frames already given that they read.
  FloatMatrix kept_;
  int64_t kept_first_ = 0;
  int64_t frames_in_ = 0;   // cepstral frames so far
  int64_t frames_out_ = 0;  // feature frames given
  bool finished_ = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_FRONTEND_LIVE_FRONT_END_H_
