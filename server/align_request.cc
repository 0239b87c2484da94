#include "server/align_request.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/core/feature_values.h"
#include "kernels/core/status_macros.h"
#include "proto/wire_convert.h"
#include "server/client_text.h"

namespace gmmscore {
namespace {

absl::StatusOr<std::shared_ptr<const FloatMatrix>> CheckedFeatures(const v1::FeatureMatrix& features,
                                                                   const ModelAligner& aligner,
                                                                   const AlignLimits& limits) {
  const int64_t frames = features.num_frames();
  if (frames == 0) return absl::InvalidArgumentError("AlignRequest.features has no frames");
  if (frames > limits.max_frames) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AlignRequest.features has %d frames; this server aligns at most %d frames per utterance "
        "(--max_request_frames)",
        frames, limits.max_frames));
  }
  if (static_cast<int>(features.dim()) != aligner.feature_dim()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AlignRequest.features has dimension %d but the model's features have %d", features.dim(),
        aligner.feature_dim()));
  }
  absl::StatusOr<FloatMatrix> matrix = FeaturesFromProto(features);
  if (!matrix.ok()) return PrefixStatus("AlignRequest.features", matrix.status());
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = matrix->row(t);
    for (int d = 0; d < aligner.feature_dim(); ++d) {
      if (!IsUsableFeatureValue(row[d])) {
        return absl::InvalidArgumentError(absl::StrFormat("AlignRequest.features: frame %d, dimension %d is %g; %s",
                                                          t, d, row[d], kFeatureValueRule));
      }
    }
  }
  return std::make_shared<const FloatMatrix>(*std::move(matrix));
}

absl::StatusOr<std::shared_ptr<const PcmAudio>> CheckedAudio(const v1::PcmAudio& audio, const ModelAligner& aligner,
                                                             const AlignLimits& limits, int64_t* frames) {
  if (static_cast<int64_t>(audio.sample_rate()) != aligner.sample_rate()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AlignRequest.audio.sample_rate is %d Hz but the model's features are made from %d Hz audio; "
        "resample it (the server does not)",
        audio.sample_rate(), aligner.sample_rate()));
  }
  const std::string& bytes = audio.pcm16();
  if (bytes.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AlignRequest.audio.pcm16 has an odd number of bytes (%d): each 16-bit sample takes 2", bytes.size()));
  }
  if (bytes.empty()) return absl::InvalidArgumentError("AlignRequest.audio.pcm16 has no samples");
  const int64_t samples = static_cast<int64_t>(bytes.size() / 2);
  *frames = static_cast<int64_t>(std::ceil(samples / aligner.samples_per_frame()));
  if (*frames > limits.max_frames) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AlignRequest.audio holds %.1f s (%d frames); this server aligns at most %d frames per utterance "
        "(--max_request_frames)",
        samples / static_cast<double>(aligner.sample_rate()), *frames, limits.max_frames));
  }
  GMM_ASSIGN_OR_RETURN(PcmAudio decoded, DecodeRawPcm16(bytes, aligner.sample_rate(), "AlignRequest.audio"));
  return std::make_shared<const PcmAudio>(std::move(decoded));
}

void SegmentsToProto(const std::vector<AlignedSegment>& segments, double frame_seconds,
                     google::protobuf::RepeatedPtrField<v1::AlignSegment>* out) {
  out->Reserve(static_cast<int>(segments.size()));
  for (const AlignedSegment& s : segments) {
    v1::AlignSegment* segment = out->Add();
    segment->set_label(s.label);
    segment->set_filler(s.word < 0);
    segment->set_word_index(s.word);
    segment->set_first_frame(static_cast<uint32_t>(s.first_frame));
    segment->set_num_frames(static_cast<uint32_t>(s.num_frames));
    segment->set_start_seconds(s.first_frame * frame_seconds);
    segment->set_duration_seconds(s.num_frames * frame_seconds);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const ServedModel>> AligningModel(const v1::AlignRequest& request,
                                                                 const ModelRepository& repository) {
  GMM_ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, repository.Find(request.model()));
  if (model->aligner == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "model '%s' cannot align: only a CMU Sphinx model directory whose server config names a "
        "pronunciation dictionary can (ModelConfig.dictionary, or gmmscored --align_dictionary); this "
        "one is %s%s",
        ClientText(request.model()), model->format, model->format == "sphinx" ? " without a dictionary" : ""));
  }
  return model;
}

absl::StatusOr<AlignJob> AlignJobForRequest(const v1::AlignRequest& request, const ServedModel& model, int device,
                                            const AlignLimits& limits) {
  std::shared_ptr<ModelAligner> on_device = model.aligner_on(device);
  if (on_device == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("model '%s' has no aligner on device %d", ClientText(model.name), device));
  }
  const ModelAligner& aligner = *on_device;
  const std::vector<std::string> words(request.words().begin(), request.words().end());
  GMM_RETURN_IF_ERROR(aligner.CheckWords(words));
  AlignJob job{.aligner = std::move(on_device), .utterance = ClientText(request.utterance_id()), .words = words};
  switch (request.input_case()) {
    case v1::AlignRequest::kFeatures: {
      GMM_ASSIGN_OR_RETURN(job.features, CheckedFeatures(request.features(), aligner, limits));
      job.queued_frames = job.features->rows();
      break;
    }
    case v1::AlignRequest::kAudio: {
      GMM_ASSIGN_OR_RETURN(job.audio, CheckedAudio(request.audio(), aligner, limits, &job.queued_frames));
      break;
    }
    default:
      return absl::InvalidArgumentError("AlignRequest has no input: set features or audio");
  }
  // Cheap before the graph is built: every word takes at least one frame.
  if (static_cast<int64_t>(words.size()) > job.queued_frames) {
    return absl::OutOfRangeError(absl::StrFormat("%d words cannot be aligned to %d frames (%.2f s)", words.size(),
                                                 job.queued_frames, job.queued_frames * aligner.frame_seconds()));
  }
  return job;
}

void FillAlignResponse(const v1::AlignRequest& request, const AlignOutcome& outcome, double frame_seconds,
                       v1::AlignResponse* response) {
  response->set_utterance_id(request.utterance_id());
  SegmentsToProto(outcome.alignment.words, frame_seconds, response->mutable_words());
  if (request.phones()) SegmentsToProto(outcome.alignment.phones, frame_seconds, response->mutable_phones());
  response->set_log_likelihood(outcome.alignment.log_likelihood);
  response->set_num_frames(static_cast<uint32_t>(outcome.frames));
  response->set_frame_seconds(frame_seconds);
  v1::AlignTiming* timing = response->mutable_timing();
  timing->set_queue_seconds(absl::ToDoubleSeconds(outcome.queue_wait));
  timing->set_features_seconds(absl::ToDoubleSeconds(outcome.features_time));
  timing->set_batch_align_seconds(absl::ToDoubleSeconds(outcome.batch_time));
  timing->set_batch_utterances(static_cast<uint32_t>(outcome.batch_utterances));
}

}  // namespace gmmscore
