#include "server/device_list.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gmmscore {
namespace {

// "cpu" or "cuda" for --backend auto/cpu/cuda; INVALID_ARGUMENT for cuda:N
// (a list picks the GPUs) and anything else.
absl::StatusOr<std::string> KindOf(absl::string_view backend, int gpu_count) {
  if (backend == "auto") return std::string(gpu_count > 0 ? "cuda" : "cpu");
  if (backend == "cpu" || backend == "cuda") return std::string(backend);
  if (absl::StartsWith(backend, "cuda:")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--backend %s with --devices: give --backend cuda (or auto), and the GPUs in --devices", backend));
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown backend '%s' (expected auto, cpu, cuda or cuda:N)", backend));
}

}  // namespace

std::vector<int> DeviceList::IndexesOf(int ordinal) const {
  std::vector<int> out;
  for (size_t i = 0; i < ordinals.size(); ++i) {
    if (ordinals[i] == ordinal) out.push_back(static_cast<int>(i));
  }
  return out;
}

absl::StatusOr<DeviceList> ParseDeviceList(absl::string_view devices, absl::string_view backend,
                                           int gpu_count) {
  devices = absl::StripAsciiWhitespace(devices);
  if (devices.empty()) {
    int ordinal = 0;
    if (absl::StartsWith(backend, "cuda:")) (void)absl::SimpleAtoi(backend.substr(5), &ordinal);
    return DeviceList{.backends = {std::string(backend)}, .ordinals = {ordinal}};
  }
  absl::StatusOr<std::string> kind = KindOf(backend, gpu_count);
  if (!kind.ok()) return kind.status();
  const bool cuda = *kind == "cuda";
  DeviceList list;
  if (devices == "all") {
    if (!cuda || gpu_count == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--devices all needs a GPU%s; for several CPU schedulers list them (--devices 0,1)",
          cuda ? ", and no CUDA device answers" : " backend"));
    }
    for (int d = 0; d < gpu_count; ++d) {
      list.backends.push_back(absl::StrCat("cuda:", d));
      list.ordinals.push_back(d);
    }
    return list;
  }
  for (absl::string_view entry : absl::StrSplit(devices, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    int ordinal = -1;
    if (!absl::SimpleAtoi(entry, &ordinal) || ordinal < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--devices '%s': '%s' is not a device number; give all or a list such as 0,2", devices, entry));
    }
    if (cuda && ordinal >= gpu_count) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--devices '%s': GPU %d is not present (%d CUDA device%s answer%s)", devices, ordinal, gpu_count,
          gpu_count == 1 ? "" : "s", gpu_count == 1 ? "s" : ""));
    }
    list.backends.push_back(cuda ? absl::StrCat("cuda:", ordinal) : "cpu");
    list.ordinals.push_back(ordinal);
  }
  return list;
}

}  // namespace gmmscore
