#include "proto/grpc_args.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace gmmscore {

absl::StatusOr<std::vector<GrpcArg>> ParseGrpcArgs(const std::vector<std::string>& specs) {
  std::vector<GrpcArg> args;
  for (const std::string& spec : specs) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals + 1 == spec.size() ||
        !absl::StartsWith(spec, "grpc.") || equals == 5) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "gRPC argument '%s' is not NAME=VALUE with a name of gRPC's (grpc....), e.g. "
          "grpc.http2.lookahead_bytes=4194304",
          spec));
    }
    GrpcArg arg{.name = spec.substr(0, equals), .value = spec.substr(equals + 1)};
    const std::string& text = std::get<std::string>(arg.value);
    if (arg.name.find_first_of(" \t") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrFormat("gRPC argument '%s': the name holds a space", spec));
    }
    int number = 0;
    int64_t wide = 0;
    if (absl::SimpleAtoi(text, &number)) {
      arg.value = number;
    } else if (absl::SimpleAtoi(text, &wide)) {
      // gRPC would ignore a string where it reads an integer.
      return absl::InvalidArgumentError(absl::StrFormat(
          "gRPC argument '%s': %s is past gRPC's integers (at most 2147483647)", spec, text));
    }
    args.push_back(std::move(arg));
  }
  return args;
}

void ApplyGrpcArgs(const std::vector<GrpcArg>& args, grpc::ChannelArguments* out) {
  for (const GrpcArg& arg : args) {
    if (const int* number = std::get_if<int>(&arg.value)) {
      out->SetInt(arg.name, *number);
    } else {
      out->SetString(arg.name, std::get<std::string>(arg.value));
    }
  }
}

void ApplyGrpcArgs(const std::vector<GrpcArg>& args, grpc::ServerBuilder* out) {
  for (const GrpcArg& arg : args) {
    if (const int* number = std::get_if<int>(&arg.value)) {
      out->AddChannelArgument(arg.name, *number);
    } else {
      out->AddChannelArgument(arg.name, std::get<std::string>(arg.value));
    }
  }
}

}  // namespace gmmscore
