// Benchmark kernels for the CPU device (compiled to nvptx64 bitcode by bench/build.sh).
// The OpenCL C twins for PoCL are in bench/kernels/bench.cl.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// One partial sum per work-group of 256 work-items: a tree reduction in shared memory with barriers.
__gpu_kernel void reduce(const float *in, float *out) {
  static __gpu_local float s[256];
  uint32_t t = __gpu_thread_id_x();
  s[t] = in[__gpu_block_id_x() * __gpu_num_threads_x() + t];
  __gpu_sync_threads();
  for (uint32_t k = __gpu_num_threads_x() / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] += s[t + k];
    __gpu_sync_threads();
  }
  if (t == 0)
    out[__gpu_block_id_x()] = s[0];
}

__gpu_kernel void empty(void) {}
