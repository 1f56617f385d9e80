/* A tiny GPU-style program for the CPU-device tests (compiled to nvptx64 bitcode by ffi-tests/Makefile):
 * kernel fill_ids(out): out[tid + ntid * bid] = tid + 100 * bid; kernel noargs(); global uint32_t global[64]. */
#include <gpuintrin.h>

uint32_t global[64];

__gpu_kernel void fill_ids(uint32_t *out) {
  out[__gpu_thread_id(0) + __gpu_num_threads(0) * __gpu_block_id(0)] = __gpu_thread_id(0) + 100 * __gpu_block_id(0);
}

__gpu_kernel void noargs(void) {}
