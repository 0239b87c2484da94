// gmmscore::Client: the C++ client of a gmmscored (gRPC gmmscore.v1).
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect("localhost:50051"));
//   GMM_ASSIGN_OR_RETURN(std::vector<v1::ModelInfo> models, client->ListModels());
//   v1::StreamConfig config;
//   config.add_models("spk1");
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<StreamSession> stream, client->StartStream(config));
//   GMM_RETURN_IF_ERROR(stream->Push(frames.view()));            // stream_session.h
//   GMM_ASSIGN_OR_RETURN(StreamAnswer answer, stream->Next());
//   v1::AlignRequest align;   // model, words, features or audio
//   GMM_ASSIGN_OR_RETURN(v1::AlignResponse segments, client->Align(align));
//
// Thread safety: a Client may be shared by threads; each StreamSession has
// its own rules (stream_session.h).
#ifndef GMMSCORE_CLIENT_CLIENT_H_
#define GMMSCORE_CLIENT_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/stream_session.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"

namespace gmmscore {

struct ClientOptions {
  // How long Connect waits for the server to answer.
  absl::Duration connect_timeout = absl::Seconds(10);
  // Connect gives up at the first failed attempt (nothing listening, a name
  // that does not resolve, TLS refused) instead of retrying until
  // connect_timeout: for command-line tools, where waiting 10 s for a dead
  // port helps nobody. Off for decoders, which may start beside a daemon
  // that is still loading its models.
  bool fail_fast = false;
  // Deadline of unary calls (ListModels, Score, Align).
  absl::Duration call_timeout = absl::Seconds(60);
  // Largest message received; answers of big models are large. -1: no limit.
  int max_receive_message_bytes = -1;
  // Transport credentials for Connect (TLS, mutual TLS: grpc::SslCredentials);
  // null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Sent with every call as "authorization: Bearer <token>" when not empty
  // (servers with --scoring_token_file require it).
  std::string bearer_token;
};

class Client {
 public:
  // Opens a channel to `target` ("host:port", or any gRPC target) with
  // options.credentials (plaintext when null) and waits up to
  // options.connect_timeout for it to connect; UNAVAILABLE naming the target
  // if it does not (with options.fail_fast, at once when the first attempt
  // fails).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& target,
                                                         const ClientOptions& options = {});

  // Over an existing channel (tests, custom credentials). Does not wait.
  explicit Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options = {});

  // The server's models, sorted by name; the RPC's status on failure.
  absl::StatusOr<std::vector<v1::ModelInfo>> ListModels();

  // One window, offline. The RPC's status on failure (INVALID_ARGUMENT,
  // NOT_FOUND, ... as documented in scorer.proto).
  absl::StatusOr<v1::ScoreResponse> Score(const v1::ScoreRequest& request);

  // Forced alignment of one utterance (scorer.proto's Align: word and,
  // if asked, phone segments). The RPC's status on failure: NOT_FOUND,
  // FAILED_PRECONDITION (the model cannot align), INVALID_ARGUMENT (a word
  // not in the dictionary, bad input), OUT_OF_RANGE (too short for its
  // transcript), RESOURCE_EXHAUSTED (the server's align queue is full), as
  // documented there. Blocks; call from several threads to keep several
  // utterances in flight (the server batches them).
  absl::StatusOr<v1::AlignResponse> Align(const v1::AlignRequest& request);

  // The latest adaptation published under `name` (AdaptationConfig.save_as):
  // an fMLLR transform, or the name its MAP model is served under.
  // NOT_FOUND when nothing was published under it; UNIMPLEMENTED from a
  // server without live adaptation.
  absl::StatusOr<v1::GetAdaptationResponse> GetAdaptation(const std::string& name);

  // Opens a StreamScore stream and sends `config` as its first message.
  // Does not wait for the server: a bad config, an unknown model or an
  // unreachable server arrive as the stream's status (from Next, Push or
  // Finish). Currently never fails.
  absl::StatusOr<std::unique_ptr<StreamSession>> StartStream(const v1::StreamConfig& config);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  // The bearer token, if any, on `context`.
  void Authorize(grpc::ClientContext* context) const;

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::AcousticScorer::Stub> stub_;
  const ClientOptions options_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_CLIENT_H_
