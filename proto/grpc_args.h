// gRPC channel arguments given by name on a command line ("NAME=VALUE"),
// for the HTTP/2 and TCP knobs gRPC has no API for: flow-control windows,
// frame sizes, read chunk sizes.
//
//   GMM_ASSIGN_OR_RETURN(std::vector<GrpcArg> args, ParseGrpcArgs({"grpc.http2.max_frame_size=1048576"}));
//   ApplyGrpcArgs(args, &channel_arguments);   // a client's channel
//   ApplyGrpcArgs(args, &server_builder);      // a server's transports
//
// A value that is a whole number is passed as an integer, as gRPC's numeric
// arguments need (one past int is refused: gRPC would ignore it as a string);
// anything else as a string. Names are not
// checked against gRPC's list: gRPC ignores names it does not know, so a
// misspelt name changes nothing (say so where the flag is documented).
#ifndef GMMSCORE_PROTO_GRPC_ARGS_H_
#define GMMSCORE_PROTO_GRPC_ARGS_H_

#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace gmmscore {

struct GrpcArg {
  std::string name;
  std::variant<int, std::string> value;
};

// INVALID_ARGUMENT naming the spec that is not NAME=VALUE with a name that
// starts "grpc." (gRPC's own; a typo such as "grcp." is caught here) and
// holds no space, or whose whole-number value is past int.
absl::StatusOr<std::vector<GrpcArg>> ParseGrpcArgs(const std::vector<std::string>& specs);

void ApplyGrpcArgs(const std::vector<GrpcArg>& args, grpc::ChannelArguments* out);
void ApplyGrpcArgs(const std::vector<GrpcArg>& args, grpc::ServerBuilder* out);

}  // namespace gmmscore

#endif  // GMMSCORE_PROTO_GRPC_ARGS_H_
