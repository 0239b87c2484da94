#include "client/load/audio_source.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/io/wav_reader.h"

namespace gmmscore::load {
namespace {

// Streams that share a starting file are shifted by this many samples per
// lap (a prime, so that they do not send the same audio at once).
constexpr int64_t kLapShift = 15991;

}  // namespace

absl::StatusOr<AudioSource> AudioSource::FromFiles(const std::vector<std::string>& paths, int sample_rate) {
  std::vector<int16_t> pool;
  std::vector<int64_t> starts;
  for (const std::string& path : paths) {
    absl::StatusOr<PcmAudio> audio = ReadSpeechFile(path, sample_rate);
    if (!audio.ok()) return audio.status();
    if (audio->sample_rate != sample_rate) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s is sampled at %d Hz, not %d", path, audio->sample_rate, sample_rate));
    }
    if (audio->samples.empty()) continue;
    starts.push_back(static_cast<int64_t>(pool.size()));
    pool.insert(pool.end(), audio->samples.begin(), audio->samples.end());
  }
  if (pool.empty()) return absl::InvalidArgumentError("the --audio files hold no samples");
  const std::string description =
      absl::StrFormat("%d files, %.1f s of audio", starts.size(), static_cast<double>(pool.size()) / sample_rate);
  return AudioSource(std::move(pool), std::move(starts), sample_rate, description);
}

void AudioSource::Chunk(int stream, int64_t first_sample, int64_t samples, v1::AudioChunk* out) const {
  const int64_t size = static_cast<int64_t>(pool_.size());
  const int64_t lap = stream / static_cast<int64_t>(starts_.size());
  const int64_t start = starts_[stream % starts_.size()] + lap * kLapShift;
  std::string* bytes = out->mutable_samples();
  bytes->resize(static_cast<size_t>(samples) * 2);
  for (int64_t i = 0; i < samples; ++i) {
    const auto s = static_cast<uint16_t>(pool_[(start + first_sample + i) % size]);
    (*bytes)[2 * i] = static_cast<char>(s & 0xff);
    (*bytes)[2 * i + 1] = static_cast<char>(s >> 8);
  }
}

}  // namespace gmmscore::load
