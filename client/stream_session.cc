#include "client/stream_session.h"

#include <utility>

#include "proto/rpc_status.h"
#include "proto/wire_convert.h"

namespace gmmscore {
namespace {

absl::StatusOr<StreamAnswer> DecodeAnswer(const v1::StreamScoreResponse& response) {
  StreamAnswer answer;
  answer.first_frame = static_cast<int64_t>(response.first_frame());
  if (response.has_adaptation()) answer.adaptation = response.adaptation();
  if (response.has_timing()) answer.server_timing = response.timing();
  for (const v1::StateScores& scores : response.scores()) {
    absl::StatusOr<FloatMatrix> matrix = ScoresFromProto(scores);
    if (!matrix.ok()) return matrix.status();
    answer.model_scores.push_back(*std::move(matrix));
  }
  if (response.has_fused()) {
    absl::StatusOr<FloatMatrix> fused = ScoresFromProto(response.fused());
    if (!fused.ok()) return fused.status();
    answer.scores = *std::move(fused);
    answer.dominant_model = response.fusion().dominant_model();
    answer.fusion = response.fusion();
  } else if (answer.model_scores.size() == 1) {
    answer.scores = std::move(answer.model_scores.front());
    answer.model_scores.clear();
  } else {
    return absl::InternalError("an answer without scores");
  }
  return answer;
}

}  // namespace

StreamSession::StreamSession(
    std::unique_ptr<grpc::ClientContext> context,
    std::unique_ptr<grpc::ClientReaderWriter<v1::StreamScoreRequest, v1::StreamScoreResponse>>
        stream)
    : stream_(std::move(stream)), context_(std::move(context)) {
  reader_ = std::thread([this] { ReadLoop(); });
}

StreamSession::~StreamSession() {
  Cancel();
  reader_.join();
}

void StreamSession::ReadLoop() {
  grpc::ClientReaderWriter<v1::StreamScoreRequest, v1::StreamScoreResponse>* stream;
  {
    absl::MutexLock lock(&write_mu_);
    stream = stream_.get();  // stays until this thread releases it below
  }
  v1::StreamScoreResponse response;
  while (stream->Read(&response)) {
    absl::StatusOr<StreamAnswer> answer = DecodeAnswer(response);
    absl::MutexLock lock(&mu_);
    answers_.push_back(std::move(answer));
  }
  grpc::Status status;
  {
    absl::MutexLock lock(&write_mu_);
    status = stream->Finish();
    call_finished_ = true;
    stream_.reset();
  }
  absl::MutexLock lock(&mu_);
  end_status_ = ToAbslStatus(status);
  context_.reset();
}

absl::Status StreamSession::AwaitEnd() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::optional<absl::Status>* end) { return end->has_value(); }, &end_status_));
  return *end_status_;
}

absl::Status StreamSession::Push(ConstMatrixView frames) {
  v1::StreamScoreRequest request;
  FeaturesToProto(frames, request.mutable_chunk());
  return Write(request, frames.rows);
}

absl::Status StreamSession::PushAudio(absl::Span<const int16_t> samples) {
  v1::StreamScoreRequest request;
  std::string* bytes = request.mutable_audio()->mutable_samples();
  bytes->resize(samples.size() * 2);
  for (size_t i = 0; i < samples.size(); ++i) {  // little-endian, whatever the host
    const auto sample = static_cast<uint16_t>(samples[i]);
    (*bytes)[2 * i] = static_cast<char>(sample & 0xff);
    (*bytes)[2 * i + 1] = static_cast<char>(sample >> 8);
  }
  return Write(request, 0);
}

absl::Status StreamSession::Write(const v1::StreamScoreRequest& request, int64_t frames) {
  {
    absl::MutexLock lock(&write_mu_);
    if (send_closed_) {
      return absl::FailedPreconditionError("Push after CloseSend: the stream takes no more frames");
    }
    if (!call_finished_ && stream_->Write(request)) {
      frames_pushed_ += frames;
      return absl::OkStatus();
    }
  }
  // The stream has ended: say how.
  absl::Status end = AwaitEnd();
  return end.ok() ? absl::UnavailableError("the stream has ended") : end;
}

absl::Status StreamSession::CloseSend() {
  absl::MutexLock lock(&write_mu_);
  if (!send_closed_ && !call_finished_) stream_->WritesDone();
  send_closed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<StreamAnswer> StreamSession::PopLocked() {
  if (!answers_.empty()) {
    absl::StatusOr<StreamAnswer> answer = std::move(answers_.front());
    answers_.pop_front();
    return answer;
  }
  if (end_status_->ok()) {
    return absl::OutOfRangeError("the stream has ended and every answer was taken");
  }
  return *end_status_;
}

absl::StatusOr<StreamAnswer> StreamSession::Next() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !answers_.empty() || end_status_.has_value();
  };
  mu_.Await(absl::Condition(&ready));
  return PopLocked();
}

absl::StatusOr<std::optional<StreamAnswer>> StreamSession::TryNext() {
  absl::MutexLock lock(&mu_);
  if (answers_.empty() && !end_status_.has_value()) return std::nullopt;
  absl::StatusOr<StreamAnswer> answer = PopLocked();
  if (!answer.ok()) return answer.status();
  return std::optional<StreamAnswer>(*std::move(answer));
}

void StreamSession::Cancel() {
  absl::MutexLock lock(&mu_);
  if (context_ != nullptr) context_->TryCancel();
}

absl::Status StreamSession::Finish() {
  CloseSend().IgnoreError();
  absl::Status end = AwaitEnd();
  absl::MutexLock lock(&mu_);
  answers_.clear();
  return end;
}

int64_t StreamSession::frames_pushed() const {
  absl::MutexLock lock(&write_mu_);
  return frames_pushed_;
}

}  // namespace gmmscore
