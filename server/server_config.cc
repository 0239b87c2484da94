#include "server/server_config.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace gmmscore {
namespace {

namespace pb = google::protobuf;

// Collects the parser's complaints (it reports 0-based lines and columns).
class ParseErrors final : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    errors_.push_back(absl::StrFormat("line %d, column %d: %s", line + 1, column + 1, message));
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    AddError(line, column, message);
  }
  std::string Joined() const { return absl::StrJoin(errors_, "; "); }

 private:
  std::vector<std::string> errors_;
};

// The flag value of a present scalar field, as the flag parser reads it.
std::string FieldText(const pb::Message& message, const pb::FieldDescriptor& field) {
  const pb::Reflection& reflection = *message.GetReflection();
  switch (field.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return reflection.GetString(message, &field);
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(reflection.GetInt32(message, &field));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(reflection.GetInt64(message, &field));
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(reflection.GetUInt32(message, &field));
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(reflection.GetUInt64(message, &field));
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return reflection.GetBool(message, &field) ? "true" : "false";
    default:
      return "";  // not used by the schema
  }
}

// Applies the present fields of `message` (recursing into sub-messages,
// skipping `models`).
absl::Status ApplyMessage(const pb::Message& message, const std::string& path) {
  std::vector<const pb::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->is_repeated()) continue;  // models: ApplyModelConfigs
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      absl::Status status =
          ApplyMessage(message.GetReflection()->GetMessage(message, field), path);
      if (!status.ok()) return status;
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(field->name());
    if (flag == nullptr) {
      return absl::InternalError(
          absl::StrFormat("config field %s has no flag --%s", field->full_name(), field->name()));
    }
    std::string error;
    if (!flag->ParseFrom(FieldText(message, *field), &error)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s: %s", path, field->name(), error));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::ServerConfig> ReadServerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot read config file %s", path));
  std::stringstream text;
  text << in.rdbuf();
  pb::TextFormat::Parser parser;
  ParseErrors errors;
  parser.RecordErrorsTo(&errors);
  v1::ServerConfig config;
  if (!parser.ParseFromString(text.str(), &config)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "config file %s is not a valid gmmscore.v1.ServerConfig (protobuf text format, "
        "proto/gmmscore/v1/server_config.proto): %s",
        path, errors.Joined()));
  }
  return config;
}

std::string ConfigPathFromArgs(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;  // what follows is not flags
    if (!absl::ConsumePrefix(&arg, "--")) absl::ConsumePrefix(&arg, "-");
    if (absl::ConsumePrefix(&arg, "config=")) {
      path = std::string(arg);
    } else if (arg == "config" && i + 1 < argc) {
      path = argv[++i];
    }
  }
  return path;  // the last one given, as the flag parser keeps
}

absl::Status ApplyConfigToFlags(const v1::ServerConfig& config, const std::string& path) {
  return ApplyMessage(config, path);
}

std::vector<std::string> UnmatchedModelConfigs(const v1::ServerConfig& config,
                                               const std::set<std::string>& available) {
  std::vector<std::string> unmatched;
  for (const v1::ModelConfig& model : config.models()) {
    if (!available.contains(model.name())) unmatched.push_back(model.name());
  }
  return unmatched;
}

namespace {

// A model's placement as scheduler indexes (ascending), from its devices or
// its backend "cuda:N"; empty: every device. The error says why, without
// the model's name.
absl::StatusOr<std::vector<int>> PlacementOf(const v1::ModelConfig& model, const DeviceList& devices) {
  const std::string served = absl::StrJoin(devices.backends, ",");
  bool same_backend = model.backend().empty() || model.backend() == "cuda";
  for (const std::string& name : devices.backends) same_backend = same_backend || model.backend() == name;
  if (model.backend() == "cuda") same_backend = absl::StartsWith(served, "cuda");
  if (!same_backend) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "backend '%s', but this daemon scores on %s (run a daemon on that backend%s)", model.backend(),
        served, absl::StartsWith(served, "cuda") ? ", or list its GPU in --devices" : ""));
  }
  std::vector<int> ordinals(model.devices().begin(), model.devices().end());
  if (absl::StartsWith(model.backend(), "cuda:") && devices.backends.size() > 1) {
    if (!ordinals.empty()) {
      return absl::InvalidArgumentError("give its GPUs in devices or in backend, not both");
    }
    int ordinal = 0;  // the backend matched a "cuda:N" of `devices`: N parses
    (void)absl::SimpleAtoi(absl::string_view(model.backend()).substr(5), &ordinal);
    ordinals.push_back(ordinal);
  }
  std::set<int> indexes;
  for (int ordinal : ordinals) {
    const std::vector<int> found = devices.IndexesOf(ordinal);
    if (found.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "placed on device %d, which this daemon does not score on (its devices: %s)", ordinal,
          absl::StrJoin(devices.ordinals, ",")));
    }
    indexes.insert(found.begin(), found.end());
  }
  return std::vector<int>(indexes.begin(), indexes.end());
}

}  // namespace

absl::Status ApplyModelConfigs(const v1::ServerConfig& config, const std::string& backend,
                               int64_t max_batch_frames, RepositoryOptions* options) {
  absl::StatusOr<DeviceList> one = ParseDeviceList("", backend, 0);
  if (!one.ok()) return one.status();
  return ApplyModelConfigs(config, *one, max_batch_frames, options);
}

absl::Status ApplyModelConfigs(const v1::ServerConfig& config, const DeviceList& devices,
                               int64_t max_batch_frames, RepositoryOptions* options) {
  std::set<std::string> seen;
  for (const v1::ModelConfig& model : config.models()) {
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("config: model '%s': %s", model.name(), why));
    };
    if (model.name().empty()) return bad("a models entry needs a name");
    if (!seen.insert(model.name()).second) return bad("listed twice");
    absl::StatusOr<std::vector<int>> placement = PlacementOf(model, devices);
    if (!placement.ok()) return bad(std::string(placement.status().message()));
    if (!placement->empty()) options->placement[model.name()] = *std::move(placement);
    if (!model.precision().empty()) {
      absl::StatusOr<Precision> precision = ParsePrecision(model.precision());
      if (!precision.ok()) return bad(std::string(precision.status().message()));
      options->precision[model.name()] = *precision;
    }
    if (model.max_batch_frames() < 0 || model.max_batch_frames() > max_batch_frames) {
      return bad(absl::StrFormat("max_batch_frames %d is outside [0, %d] (--max_batch_frames)",
                                 model.max_batch_frames(), max_batch_frames));
    }
    if (model.max_batch_frames() > 0) {
      options->max_batch_frames[model.name()] = model.max_batch_frames();
    }
    if (model.load_on_demand()) options->skip_at_start.push_back(model.name());
    if (!model.dictionary().empty()) options->align.per_model[model.name()] = model.dictionary();
    if (model.has_front_end()) {
      options->front_ends[model.name()] = {.feat_params = model.front_end().feat_params(),
                                           .options = model.front_end().options()};
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
