// Shared-memory tree reduction with barriers: one partial sum per block (block size <= 256, power of 2).
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void reduce_sum(const float *in, float *out, uint32_t n) {
  static __gpu_local float sdata[256];
  uint32_t tid = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + tid;
  sdata[tid] = i < n ? in[i] : 0.0f;
  __gpu_sync_threads();
  for (uint32_t s = __gpu_num_threads_x() / 2; s > 0; s >>= 1) {
    if (tid < s)
      sdata[tid] += sdata[tid + s];
    __gpu_sync_threads();
  }
  if (tid == 0)
    out[__gpu_block_id_x()] = sdata[0];
}
