#include "server/stream_audio.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "server/client_text.h"

namespace gmmscore {
namespace {

// A model's front end as a stream runs it: batch CMN (which needs the
// whole utterance) becomes live; none stays none.
FeaturePipeline AsLive(FeaturePipeline pipeline) {
  if (pipeline.cmn == CmnMode::kBatch) pipeline.cmn = CmnMode::kLive;
  return pipeline;
}

// The front end all of the plan's models share.
absl::StatusOr<FeaturePipeline> PlanFrontEnd(const ScoringPlan& plan) {
  const ServedModel& first = *plan.models.front();
  for (const auto& model : plan.models) {
    if (model->front_end == nullptr) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "model '%s' has no front end for audio streams: %s; send features instead", ClientText(model->name),
          model->no_front_end));
    }
    if (!(AsLive(*model->front_end) == AsLive(*first.front_end))) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "models '%s' and '%s' have different front ends; an audio stream's models must share one",
          ClientText(first.name), ClientText(model->name)));
    }
  }
  return AsLive(*first.front_end);
}

// Little-endian bytes to int16 samples: PCM16 as is, float32 times 32768,
// rounded and clipped. `first_sample` places the chunk in errors.
absl::StatusOr<std::vector<int16_t>> DecodeSamples(const std::string& bytes,
                                                   v1::AudioStreamConfig::Encoding encoding,
                                                   int64_t first_sample) {
  const size_t width = encoding == v1::AudioStreamConfig::PCM16 ? 2 : 4;
  if (bytes.empty()) return absl::InvalidArgumentError("an audio chunk with no samples");
  if (bytes.size() % width != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the audio chunk at sample %d has %d bytes, not a whole number of %s samples (%d bytes each)",
        first_sample, bytes.size(), encoding == v1::AudioStreamConfig::PCM16 ? "PCM16" : "FLOAT32", width));
  }
  std::vector<int16_t> samples(bytes.size() / width);
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  static_assert(sizeof(float) == 4);
  for (size_t i = 0; i < samples.size(); ++i) {
    const unsigned char* b = in + i * width;
    if (width == 2) {
      samples[i] = static_cast<int16_t>(static_cast<uint16_t>(b[0] | (b[1] << 8)));
      continue;
    }
    const uint32_t word = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t{b[3]} << 24);
    float value;
    std::memcpy(&value, &word, sizeof(value));
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("audio sample %d is %f; FLOAT32 samples must be finite", first_sample + i, value));
    }
    samples[i] = static_cast<int16_t>(std::lrint(std::clamp(value * 32768.0f, -32768.0f, 32767.0f)));
  }
  return samples;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StreamAudio>> StreamAudio::Create(const v1::AudioStreamConfig& config,
                                                                 const ScoringPlan& plan, int64_t max_chunk_frames,
                                                                 AudioStreamStats* stats) {
  if (config.encoding() != v1::AudioStreamConfig::PCM16 && config.encoding() != v1::AudioStreamConfig::FLOAT32) {
    return absl::InvalidArgumentError("StreamConfig.audio.encoding is not set: say PCM16 or FLOAT32");
  }
  GMM_ASSIGN_OR_RETURN(FeaturePipeline pipeline, PlanFrontEnd(plan));
  if (config.sample_rate() != pipeline.front_end.sample_rate) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "StreamConfig.audio.sample_rate is %d Hz, but the models' front end takes %g Hz audio (-samprate); "
        "resample it first",
        config.sample_rate(), pipeline.front_end.sample_rate));
  }
  absl::StatusOr<std::unique_ptr<LiveFrontEnd>> front_end = LiveFrontEnd::Create(pipeline);
  if (!front_end.ok()) return PrefixStatus("the models' front end", front_end.status());
  if ((*front_end)->dim() != plan.dim) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the front end gives %d-dim features, but the models take %d", (*front_end)->dim(), plan.dim));
  }
  const FrontEndOptions& o = pipeline.front_end;
  const int64_t shift = std::lround(o.sample_rate / o.frame_rate);
  const int64_t window = std::lround(o.window_length * o.sample_rate);
  if (stats != nullptr) stats->AddStream();
  return std::unique_ptr<StreamAudio>(
      new StreamAudio(config.encoding(), *std::move(front_end), max_chunk_frames * shift + window, stats));
}

absl::StatusOr<FloatMatrix> StreamAudio::Push(const v1::AudioChunk& chunk) {
  const absl::Time start = absl::Now();
  const int64_t width = encoding_ == v1::AudioStreamConfig::PCM16 ? 2 : 4;
  if (static_cast<int64_t>(chunk.samples().size()) > max_samples_ * width) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the audio chunk at sample %d holds %d samples, more than this server's %d (--max_chunk_frames frames "
        "of audio); send shorter chunks",
        samples_, static_cast<int64_t>(chunk.samples().size()) / width, max_samples_));
  }
  GMM_ASSIGN_OR_RETURN(const std::vector<int16_t> samples, DecodeSamples(chunk.samples(), encoding_, samples_));
  samples_ += static_cast<int64_t>(samples.size());
  absl::StatusOr<FloatMatrix> frames = front_end_->Push(samples);
  Count(static_cast<int64_t>(samples.size()), frames, start);
  return frames;
}

absl::StatusOr<FloatMatrix> StreamAudio::Finish() {
  const absl::Time start = absl::Now();
  finished_ = true;
  absl::StatusOr<FloatMatrix> frames = front_end_->Finish();
  Count(0, frames, start);
  return frames;
}

void StreamAudio::Count(int64_t samples, const absl::StatusOr<FloatMatrix>& frames, absl::Time start) {
  if (stats_ != nullptr) stats_->Add(samples, frames.ok() ? frames->rows() : 0, absl::Now() - start);
}

}  // namespace gmmscore
