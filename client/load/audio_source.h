// AudioSource: the speech audio streams send in gmmscore-load --audio: the
// samples of some speech files end to end, which every stream reads
// cyclically from its own starting point (as FeatureSource does frames).
//
//   GMM_ASSIGN_OR_RETURN(AudioSource audio, AudioSource::FromFiles({"a.wav", "b.wav"}, 16000));
//   audio.Chunk(/*stream=*/3, /*first_sample=*/16000, /*samples=*/1600, request.mutable_audio());
//
// Thread safety: immutable after construction; all methods are const.
#ifndef GMMSCORE_CLIENT_LOAD_AUDIO_SOURCE_H_
#define GMMSCORE_CLIENT_LOAD_AUDIO_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.pb.h"

namespace gmmscore::load {

class AudioSource {
 public:
  // WAV (PCM16 mono) or raw PCM16 files at `sample_rate`; INVALID_ARGUMENT
  // for a file at another rate, or no samples at all.
  static absl::StatusOr<AudioSource> FromFiles(const std::vector<std::string>& paths, int sample_rate);

  int sample_rate() const { return sample_rate_; }
  // "2 files, 5.6 s of audio".
  const std::string& description() const { return description_; }

  // Samples [first_sample, first_sample + samples) of stream `stream`,
  // little-endian PCM16, into *out.
  void Chunk(int stream, int64_t first_sample, int64_t samples, v1::AudioChunk* out) const;

 private:
  AudioSource(std::vector<int16_t> pool, std::vector<int64_t> starts, int sample_rate, std::string description)
      : pool_(std::move(pool)), starts_(std::move(starts)), sample_rate_(sample_rate),
        description_(std::move(description)) {}

  std::vector<int16_t> pool_;
  std::vector<int64_t> starts_;  // where each file begins in pool_
  int sample_rate_;
  std::string description_;
};

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_AUDIO_SOURCE_H_
