// A device global read and written by a kernel and found by name.
#include <gpuintrin.h>
#include <stdint.h>

[[gnu::visibility("default")]] uint32_t dev_counter = 5;
[[gnu::visibility("default")]] uint32_t dev_table[16];
uint32_t plain_global = 9; // hidden by default on amdgcn: still found by name

__gpu_kernel void bump(uint32_t *out) {
  if (__gpu_thread_id_x() == 0 && __gpu_block_id_x() == 0) {
    out[0] = dev_counter;
    dev_counter += 10;
    plain_global += 1;
  }
  dev_table[__gpu_thread_id_x() & 15] = __gpu_thread_id_x();
}
