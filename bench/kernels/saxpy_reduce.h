// The saxpy and tree-reduction kernels, one source for both benchmark programs: bench.c (build/bench/cpu_kernels,
// program_cache, jit_process) and the classic-kernel suite, suite.c. Their OpenCL C twins are in
// saxpy_reduce.cl. Device code: include after <gpuintrin.h> and <stdint.h>.
#ifndef OFFLOAD_RS_BENCH_SAXPY_REDUCE_H
#define OFFLOAD_RS_BENCH_SAXPY_REDUCE_H

#include "suite_shape.h"

static inline uint32_t gid_x(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// y = a*x + y over n elements; the grid is rounded up to whole groups.
__gpu_kernel void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = gid_x();
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// One partial sum per group of SUITE_WG work-items: a tree reduction in shared memory with barriers.
__gpu_kernel void reduce(const float *in, float *out) {
  static __gpu_local float s[SUITE_WG];
  uint32_t t = __gpu_thread_id_x();
  s[t] = in[gid_x()];
  __gpu_sync_threads();
  for (uint32_t k = __gpu_num_threads_x() / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] += s[t + k];
    __gpu_sync_threads();
  }
  if (t == 0)
    out[__gpu_block_id_x()] = s[0];
}

#endif
