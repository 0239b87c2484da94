// DeviceList: the devices one gmmscored scores on (--devices with
// --backend): one backend and one batch scheduler per entry.
//
//   --backend cuda --devices all     every GPU of the host
//   --backend cuda --devices 0,2     GPUs 0 and 2
//   --backend cuda --devices 0,0     two schedulers over GPU 0
//   --backend cpu  --devices 0,1     two CPU backends (testing the
//                                    multi-scheduler daemon without a GPU)
//   (no --devices)                   the one device --backend names
//
// A model's ModelConfig.devices (server_config.proto) names the devices it
// is placed on by these numbers (GPU ordinals); a number given twice in
// --devices places it on both schedulers.
#ifndef GMMSCORE_SERVER_DEVICE_LIST_H_
#define GMMSCORE_SERVER_DEVICE_LIST_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

struct DeviceList {
  // CreateBackend names, one per scheduler: "cuda:0", "cpu", ...
  std::vector<std::string> backends;
  // The number each was given by (the GPU ordinal; for "cpu", the entry).
  std::vector<int> ordinals;

  // The schedulers (indexes into backends) whose ordinal is `ordinal`.
  std::vector<int> IndexesOf(int ordinal) const;
};

// `devices`: "" (the one device of `backend`), "all" or "N,M,..." (each N
// >= 0, below `gpu_count` on CUDA); `backend`: --backend (auto, cpu, cuda,
// cuda:N); `gpu_count`: the CUDA devices that answer (0 without CUDA).
// INVALID_ARGUMENT naming --devices for a bad entry, "all" or an ordinal
// past the GPUs present, a list with "cuda:N" (give --backend cuda), or
// "all" on the CPU.
absl::StatusOr<DeviceList> ParseDeviceList(absl::string_view devices, absl::string_view backend,
                                           int gpu_count);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_DEVICE_LIST_H_
