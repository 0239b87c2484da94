// absl::Status <-> grpc::Status. Both use the canonical codes, so the mapping
// is 1:1 and loses nothing but payloads.
//
//   return ToGrpcStatus(ValidateChunk(chunk));          // server side
//   absl::Status status = ToAbslStatus(stub->Score(...));  // client side
#ifndef GMMSCORE_PROTO_RPC_STATUS_H_
#define GMMSCORE_PROTO_RPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace gmmscore {

// Same code, same message.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status ToAbslStatus(const grpc::Status& status);

}  // namespace gmmscore

#endif  // GMMSCORE_PROTO_RPC_STATUS_H_
