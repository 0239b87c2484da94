// TF32 tensor-core building blocks shared by the likelihood kernels
// (tc_loglik_kernel.cuh, wgmma_loglik_kernel.cuh) and the statistics
// kernels (kernels/train/cuda/stats_tc_kernels.cuh): rounding to TF32 and
// one m16n8k8 MMA with the fragments as the PTX ISA lays them out
//   A (16 x 8, row): a0 (group, thread), a1 (group + 8, thread),
//                    a2 (group, thread + 4), a3 (group + 8, thread + 4)
//   B (8 x 8, col):  b0 (thread, group), b1 (thread + 4, group)
//   C (16 x 8):      c0 (group, 2 thread), c1 (group, 2 thread + 1),
//                    c2 (group + 8, 2 thread), c3 (group + 8, 2 thread + 1)
// with group = lane / 4 and thread = lane % 4.
#ifndef GMMSCORE_KERNELS_CUDA_INTERNAL_TF32_MMA_CUH_
#define GMMSCORE_KERNELS_CUDA_INTERNAL_TF32_MMA_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace gmmscore {

// TF32 exists from sm_80 on. Turing (sm_75) builds compile these to a trap;
// the launchers refuse such a device before any launch.
__device__ __forceinline__ uint32_t ToTf32(float value) {
  uint32_t out;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(value));
#else
  out = __float_as_uint(value);
  __trap();
#endif
  return out;
}

// d += a * b for one m16n8k8 TF32 tile.
__device__ __forceinline__ void MmaTf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ < 800
  __trap();
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_INTERNAL_TF32_MMA_CUH_
