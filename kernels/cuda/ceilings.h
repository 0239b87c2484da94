// Hardware ceilings measured in the same run as the benchmarks they frame.
#ifndef GMMSCORE_KERNELS_CUDA_CEILINGS_H_
#define GMMSCORE_KERNELS_CUDA_CEILINGS_H_

#include "absl/status/statusor.h"

namespace gmmscore {

// FP32 FMA rate of a register-only loop filling the device (TFLOP/s, 2 flops
// per FMA).
absl::StatusOr<double> MeasureFmaPeakTflops();

// Device-to-device copy bandwidth, bytes read plus bytes written (GB/s).
absl::StatusOr<double> MeasureCopyBandwidthGBs();

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_CEILINGS_H_
