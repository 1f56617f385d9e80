// A program whose generic code is deferred (every kernel specialisable, no constructors) with a device
// global all the same: its address makes the generic code load (src/jit/mod.rs, `Generic`).
#include <gpuintrin.h>
#include <stdint.h>

[[gnu::visibility("default")]] uint32_t host_visible = 7; // read and written by no kernel

__gpu_kernel void scale(uint32_t *v, uint32_t k, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i < n)
    v[i] = v[i] * k + i;
}

__gpu_kernel void rotate(const uint32_t *in, uint32_t *out) {
  // a shared-memory rotation by one within the group (a barrier: the region scheduler)
  static __gpu_local uint32_t tile[1024];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), g = __gpu_block_id_x();
  tile[t] = in[g * n + t];
  __gpu_sync_threads();
  out[g * n + t] = tile[(t + 1) % n];
}
