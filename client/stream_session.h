// StreamSession: one live StreamScore stream seen from a decoder: push
// frames in, pull scores out, in order.
//
//   std::unique_ptr<StreamSession> stream = ...;  // Client::StartStream
//   GMM_RETURN_IF_ERROR(stream->Push(window.view()));   // any number of times
//   GMM_ASSIGN_OR_RETURN(StreamAnswer answer, stream->Next());  // blocks
//   ... answer.scores.at(t, state) is frame answer.first_frame + t ...
//   GMM_RETURN_IF_ERROR(stream->CloseSend());
//   while (true) { auto a = stream->Next(); if (absl::IsOutOfRange(a.status())) break; ... }
//   GMM_RETURN_IF_ERROR(stream->Finish());
//
// A background thread receives the answers as they come, so Push never
// waits for the decoder to pull (only for HTTP/2 flow control), and a
// decoder may push several chunks before pulling.
//
// Thread safety: Push/CloseSend from one thread and Next/TryNext from one
// (possibly other) thread; Cancel from any thread at any time. Destroying a
// session cancels the stream if it has not finished.
#ifndef GMMSCORE_CLIENT_STREAM_SESSION_H_
#define GMMSCORE_CLIENT_STREAM_SESSION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/sync_stream.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

// The answer to one pushed chunk.
struct StreamAnswer {
  int64_t first_frame = 0;  // stream index of scores' first row
  // T x S: the fused matrix when the stream names several models, otherwise
  // the one model's matrix.
  FloatMatrix scores;
  // Per model, in config order, when the stream names several models
  // (empty with one model, whose matrix is `scores`, or with fused_only).
  std::vector<FloatMatrix> model_scores;
  // Which model dominated the chunk (several models only; else empty).
  std::string dominant_model;
  // The full report as sent (several models only).
  v1::FusionReport fusion;
  // For a stream that adapts (StreamConfig.adaptation): the update that
  // scored this chunk (version 0: none yet). Absent otherwise.
  std::optional<v1::AdaptationReport> adaptation;
  // For a stream that asked (OutputOptions.server_timing): when the
  // server's read of the chunk completed and how long it held it. Absent
  // otherwise.
  std::optional<v1::ServerTiming> server_timing;
};

class StreamSession {
 public:
  // Used by Client::StartStream: `stream` was opened on `context` and the
  // config already written.
  StreamSession(std::unique_ptr<grpc::ClientContext> context,
                std::unique_ptr<grpc::ClientReaderWriter<v1::StreamScoreRequest,
                                                         v1::StreamScoreResponse>> stream);
  ~StreamSession();

  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  // Sends `frames` (T >= 1 rows) as one chunk. FAILED_PRECONDITION after
  // CloseSend; once the stream has ended, its final status (or UNAVAILABLE).
  absl::Status Push(ConstMatrixView frames);
  // An audio stream's (StreamConfig.audio, PCM16): sends `samples` (any
  // number, at least one) as one audio chunk. Its answers are the feature
  // frames the server's front end completed, so they need not be one per
  // push; the half-close (CloseSend) releases the last ones. Errors as Push.
  absl::Status PushAudio(absl::Span<const int16_t> samples);

  // No more chunks will be pushed; the server answers the rest and ends.
  absl::Status CloseSend();

  // The next answer, waiting for it. When the stream has ended and every
  // answer was taken: OUT_OF_RANGE if it ended OK, else its error.
  absl::StatusOr<StreamAnswer> Next();
  // Like Next, without waiting: nullopt when no answer is there yet.
  absl::StatusOr<std::optional<StreamAnswer>> TryNext();

  // Cancels the stream (the server frees what it holds for it).
  void Cancel();

  // CloseSend if not yet, drops unread answers, waits for the end: the
  // stream's final status (OK, or the server's error).
  absl::Status Finish();

  int64_t frames_pushed() const;

 private:
  void ReadLoop();
  // Writes one request (carrying `frames` feature frames) unless closed.
  absl::Status Write(const v1::StreamScoreRequest& request, int64_t frames);
  // The answer at the head of answers_, or the end status; mu_ held.
  absl::StatusOr<StreamAnswer> PopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for the reader to see the end; the final status.
  absl::Status AwaitEnd();

  // Both are released as soon as the call has finished, so that the server
  // sees the stream closed at once (gRPC keeps a finished call's HTTP/2
  // stream open until its context is destroyed).
  std::unique_ptr<grpc::ClientReaderWriter<v1::StreamScoreRequest, v1::StreamScoreResponse>>
      stream_ ABSL_GUARDED_BY(write_mu_);
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);

  // Serialises Write/WritesDone against Finish.
  mutable absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool send_closed_ ABSL_GUARDED_BY(write_mu_) = false;
  bool call_finished_ ABSL_GUARDED_BY(write_mu_) = false;
  int64_t frames_pushed_ ABSL_GUARDED_BY(write_mu_) = 0;

  mutable absl::Mutex mu_;
  std::deque<absl::StatusOr<StreamAnswer>> answers_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> end_status_ ABSL_GUARDED_BY(mu_);  // set when the call finished

  std::thread reader_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_STREAM_SESSION_H_
