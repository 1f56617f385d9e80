// __gpu_exit before a barrier: exited work-items leave the group, the others still synchronise.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void exitbar(uint32_t *out) {
  static __gpu_local uint32_t s[256];
  uint32_t t = __gpu_thread_id_x();
  uint32_t base = __gpu_block_id_x() * __gpu_num_threads_x();
  if (t % 4 == 3) {
    out[base + t] = 7;
    __gpu_exit();
  }
  s[t] = t * 3 + base;
  __gpu_sync_threads();
  out[base + t] = s[t - t % 4] + 1;
}
