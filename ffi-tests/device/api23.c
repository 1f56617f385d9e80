// Device code for ffi-tests/test_api23.c (LLVM 23.1's API): a kernel with mixed-size arguments (the
// 8-argument olLaunchKernel's pointer array laid out with padding) and a grid-wide barrier written with
// atomics on global memory (a cooperative launch must run every group at the same time to finish it).
#include <gpuintrin.h>
#include <stdint.h>

// A symbol that is not a kernel (constant: the kernels stay specialisable).
__attribute__((visibility("default"))) const uint32_t api23_constant = 23;

// out[0] = a + b + (int64_t)c, out[1] = d: a 4-byte, an 8-byte, a double and a byte argument.
__gpu_kernel void add_args(int32_t a, int64_t b, double c, uint8_t d, int64_t *out) {
  if (__gpu_thread_id_x() == 0 && __gpu_block_id_x() == 0) {
    out[0] = a + b + (int64_t)c;
    out[1] = d;
  }
}

// Every group arrives at a grid barrier (counter), waits until all `groups` have arrived, then writes
// out[group] = the number it saw. Never finishes unless every group runs at the same time.
__gpu_kernel void grid_barrier(uint32_t *counter, uint32_t *out, uint32_t groups) {
  uint32_t g = __gpu_block_id_x();
  if (__gpu_thread_id_x() == 0) {
    __atomic_fetch_add(counter, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < groups) {
    }
    out[g] = __atomic_load_n(counter, __ATOMIC_ACQUIRE);
  }
  __gpu_sync_threads();
}
