#include "client/client.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "kernels/core/status_macros.h"
#include "proto/rpc_status.h"

namespace gmmscore {
namespace {

std::chrono::system_clock::time_point DeadlineIn(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

// Waits for `channel` to connect. With `fail_fast` the first failed attempt
// ends the wait (nothing listening, a name that does not resolve, a TLS
// handshake the server refuses); without, gRPC retries with backoff until
// the deadline.
absl::Status AwaitReady(grpc::Channel& channel, const std::string& target, absl::Duration timeout,
                        bool fail_fast) {
  const auto deadline = DeadlineIn(timeout);
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (fail_fast && (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN)) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot connect to gmmscored at %s: the connection failed (nothing listening there, a name "
          "that does not resolve, or TLS settings the server does not accept)",
          target));
    }
    if (!channel.WaitForStateChange(state, deadline)) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot connect to gmmscored at %s within %s (is it running and reachable?)", target,
          absl::FormatDuration(timeout)));
    }
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& target,
                                                        const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(target,
                                options.credentials != nullptr
                                    ? options.credentials
                                    : grpc::InsecureChannelCredentials(),
                                args);
  GMM_RETURN_IF_ERROR(AwaitReady(*channel, target, options.connect_timeout, options.fail_fast));
  return std::make_unique<Client>(std::move(channel), options);
}

Client::Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options)
    : channel_(std::move(channel)),
      stub_(v1::AcousticScorer::NewStub(channel_)),
      options_(options) {}

void Client::Authorize(grpc::ClientContext* context) const {
  if (!options_.bearer_token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.bearer_token);
  }
}

absl::StatusOr<std::vector<v1::ModelInfo>> Client::ListModels() {
  grpc::ClientContext context;
  Authorize(&context);
  context.set_deadline(DeadlineIn(options_.call_timeout));
  v1::ListModelsResponse response;
  absl::Status status = ToAbslStatus(stub_->ListModels(&context, {}, &response));
  if (!status.ok()) return status;
  return std::vector<v1::ModelInfo>(response.models().begin(), response.models().end());
}

absl::StatusOr<v1::ScoreResponse> Client::Score(const v1::ScoreRequest& request) {
  grpc::ClientContext context;
  Authorize(&context);
  context.set_deadline(DeadlineIn(options_.call_timeout));
  v1::ScoreResponse response;
  absl::Status status = ToAbslStatus(stub_->Score(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::AlignResponse> Client::Align(const v1::AlignRequest& request) {
  grpc::ClientContext context;
  Authorize(&context);
  context.set_deadline(DeadlineIn(options_.call_timeout));
  v1::AlignResponse response;
  absl::Status status = ToAbslStatus(stub_->Align(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::GetAdaptationResponse> Client::GetAdaptation(const std::string& name) {
  grpc::ClientContext context;
  Authorize(&context);
  context.set_deadline(DeadlineIn(options_.call_timeout));
  v1::GetAdaptationRequest request;
  request.set_name(name);
  v1::GetAdaptationResponse response;
  absl::Status status = ToAbslStatus(stub_->GetAdaptation(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<std::unique_ptr<StreamSession>> Client::StartStream(
    const v1::StreamConfig& config) {
  auto context = std::make_unique<grpc::ClientContext>();
  Authorize(context.get());
  auto stream = stub_->StreamScore(context.get());
  v1::StreamScoreRequest first;
  *first.mutable_config() = config;
  // A failed write means the call is already over; the session reports the
  // status from Next/Finish.
  stream->Write(first);
  return std::make_unique<StreamSession>(std::move(context), std::move(stream));
}

}  // namespace gmmscore
