// Dynamic shared memory (extern __gpu_local): reverse each block through it.
#include <gpuintrin.h>
#include <stdint.h>

extern __gpu_local uint32_t dyn[];

__gpu_kernel void reverse_block(const uint32_t *in, uint32_t *out) {
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  dyn[t] = in[base + t] * 2u;
  __gpu_sync_threads();
  out[base + t] = dyn[n - 1 - t];
}
