// FeatureSource: the frames load-test streams send. A pool of frames (the
// utterances of a Kaldi archive end to end, or synthetic frames) that every
// stream reads cyclically from its own starting point, so that any chunk of
// any stream can be produced again later, e.g. to verify its answer.
//
//   GMM_ASSIGN_OR_RETURN(FeatureSource source, FeatureSource::FromKaldiArchive("ark:f.ark", 39));
//   source.Chunk(/*stream=*/3, /*first_frame=*/120, /*frames=*/10, request.mutable_chunk());
//
// Thread safety: immutable after construction; all methods are const.
#ifndef GMMSCORE_CLIENT_LOAD_FEATURE_SOURCE_H_
#define GMMSCORE_CLIENT_LOAD_FEATURE_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore::load {

class FeatureSource {
 public:
  // Every utterance of the archive, end to end; stream i starts at the first
  // frame of utterance i mod U (later laps shifted so that streams sharing
  // an utterance do not send the same frames at once). INVALID_ARGUMENT if
  // the archive is empty or an utterance's dimension is not `dim`; the
  // reader's errors otherwise.
  static absl::StatusOr<FeatureSource> FromKaldiArchive(const std::string& rspecifier, int dim);

  // 4096 frames drawn from `model` (GenerateSyntheticFeatures: likelihoods
  // in the range real speech gives) when it is given, else from a standard
  // normal scaled like cepstra (c0 around 50, the rest smaller).
  // Deterministic in `seed`.
  static FeatureSource Synthetic(int dim, uint64_t seed, const DiagGmmModel* model);

  // `pool`: frames x dim, at least one frame; `stream_starts`: at least one
  // row index into it.
  FeatureSource(FloatMatrix pool, std::vector<int64_t> stream_starts, std::string description);

  int dim() const { return static_cast<int>(pool_.cols()); }
  int64_t pool_frames() const { return pool_.rows(); }
  // "synthetic, 4096 frames" / "ark:f.ark: 12 utterances, 8231 frames".
  const std::string& description() const { return description_; }

  // Frames [first_frame, first_frame + frames) of stream `stream` into *out.
  void Chunk(int stream, int64_t first_frame, int frames, v1::FeatureMatrix* out) const;
  // The same frames as a matrix.
  FloatMatrix ChunkMatrix(int stream, int64_t first_frame, int frames) const;

 private:
  // Pool row of the stream's frame `frame`.
  int64_t PoolRow(int stream, int64_t frame) const;

  FloatMatrix pool_;
  std::vector<int64_t> stream_starts_;
  std::string description_;
};

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_FEATURE_SOURCE_H_
