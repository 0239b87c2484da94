// NameCurrentThread: gives the calling thread a name that `top -H`, /proc
// and debuggers show (Linux keeps 15 characters), so a profile of the
// daemon or the load generator tells our scheduler, answer and pacer
// threads apart from gRPC's own ("default-executo", "grpc_global_tim").
// tools/thread_cpu.py groups CPU time by these names.
#ifndef GMMSCORE_KERNELS_CORE_THREAD_NAME_H_
#define GMMSCORE_KERNELS_CORE_THREAD_NAME_H_

#include <pthread.h>

#include <string>
#include <string_view>

namespace gmmscore {

inline void NameCurrentThread(std::string_view name) {
#if defined(__linux__)
  // Longer names make pthread_setname_np fail (ERANGE) rather than truncate.
  const std::string truncated(name.substr(0, 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
#else
  (void)name;
#endif
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_THREAD_NAME_H_
