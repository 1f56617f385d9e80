// y = a*x + y over a 1-D grid.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i < n)
    y[i] = a * x[i] + y[i];
}
