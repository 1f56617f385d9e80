// Divergent, barrier-free control flow with per-item loops and __gpu_exit.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void divergent(uint32_t *out, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i >= n)
    return;
  if (i % 7 == 6) {
    out[i] = 0xdead;
    __gpu_exit();
  }
  uint32_t acc = 0;
  if (i % 3 == 0) {
    for (uint32_t k = 0; k < i % 11; ++k)
      acc += k * k;
  } else {
    acc = i * 5u;
  }
  out[i] = acc;
}
