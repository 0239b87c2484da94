// Work sizes of the CPU backend and why they are what they are.
//
// One task of a Score call is (chunk of whole states) x (block of frames):
// an SGEMM of the chunk's Gaussians against the block's expanded features
// into a chunk x block float scratch, then each state's log-sum-exp.
#ifndef GMMSCORE_KERNELS_CPU_CPU_POLICY_H_
#define GMMSCORE_KERNELS_CPU_CPU_POLICY_H_

#include <cstdint>

namespace gmmscore::cpu_policy {

// Numbers measured on the 2-core AMD EPYC (Zen) development VM with Debian's
// OpenBLAS 0.3.21, single-threaded SGEMM of M Gaussians x N frames x K = 73
// (thread CPU time, so other load on the machine matters less):
//   N = 8: 5.6 ns per Gaussian-frame at M = 256, 7.8 at M = 512
//   N = 16: 5.8 at M = 256, 5.3 at M >= 512
//   N = 128: 3.2 at M = 256, 2.2 at M = 1024;  N = 256: 2.2 for M = 128..1024
// (Small N is slow presumably because OpenBLAS repacks the Gaussian panel on
// every call.) The AVX2 log-sum-exp adds ~0.7-0.9 ns per Gaussian-frame.

// Frames per task. 256 reaches SGEMM's plateau at every chunk size.
inline constexpr int64_t kFramesPerBlock = 256;

// Gaussians per chunk: chunks grow state by state up to this many (a state
// with more Gaussians is a chunk of its own). 256 is best for small batches
// and on the plateau for large ones; with kFramesPerBlock the GEMM output is
// 256 x 256 x 4 B = 256 KiB, and the chunk's parameters and the block's
// expanded features (73 KiB each at D = 36) fit beside it in a 512 KiB L2.
inline constexpr int64_t kMaxChunkGaussians = 256;
// ...but small models are cut finer, into about kChunksPerThread chunks per
// thread (not below kMinChunkGaussians), so that a single-block call still
// splits across all threads and load-balances.
inline constexpr int64_t kMinChunkGaussians = 32;
inline constexpr int64_t kChunksPerThread = 4;

// Frames per task of the frame-totals pass (a row of S floats each).
inline constexpr int64_t kFramesPerTotalsTask = 16;

// Row stride of the scratch is rounded up to this many floats (64 bytes), so
// every Gaussian's row starts on a cache line.
inline constexpr int64_t kScratchRowAlign = 16;

}  // namespace gmmscore::cpu_policy

#endif  // GMMSCORE_KERNELS_CPU_CPU_POLICY_H_
