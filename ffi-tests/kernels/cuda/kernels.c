// Test kernels of the CUDA plugin (NVPTX bitcode, the same kind the CPU device runs).
// Build: clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 -c kernels.c -o kernels.bc
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void empty(void) {}

// y[i] = a * x[i] + y[i]
__gpu_kernel void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// One partial sum per block in shared memory with barriers; block size must be 256.
__gpu_kernel void reduce_sum(const uint32_t *in, uint32_t *out, uint32_t n) {
  static __gpu_local uint32_t tmp[256];
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  tmp[t] = i < n ? in[i] : 0;
  __gpu_sync_threads();
  for (uint32_t s = __gpu_num_threads_x() / 2; s > 0; s >>= 1) {
    if (t < s)
      tmp[t] += tmp[t + s];
    __gpu_sync_threads();
  }
  if (t == 0)
    out[__gpu_block_id_x()] = tmp[0];
}

// Same with dynamic shared memory (size given at launch).
extern __gpu_local uint32_t dyn_tmp[];
__gpu_kernel void reduce_sum_dyn(const uint32_t *in, uint32_t *out, uint32_t n) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  dyn_tmp[t] = i < n ? in[i] : 0;
  __gpu_sync_threads();
  for (uint32_t s = __gpu_num_threads_x() / 2; s > 0; s >>= 1) {
    if (t < s)
      dyn_tmp[t] += dyn_tmp[t + s];
    __gpu_sync_threads();
  }
  if (t == 0)
    out[__gpu_block_id_x()] = dyn_tmp[0];
}

// out[y * width + x] = (y << 16) | x over a 2-D grid of 2-D blocks.
__gpu_kernel void grid2d(uint32_t *out, uint32_t width, uint32_t height) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  if (x < width && y < height)
    out[y * width + x] = (y << 16) | x;
}

uint32_t global_array[64];
uint32_t global_scalar = 7;

// out[i] = global_array[i] * 2 + global_scalar
__gpu_kernel void read_global(uint32_t *out) {
  uint32_t i = __gpu_thread_id_x();
  if (i < 64)
    out[i] = global_array[i] * 2 + global_scalar;
}

__gpu_kernel void write_global(void) {
  uint32_t i = __gpu_thread_id_x();
  if (i < 64)
    global_array[i] = i * 3;
}

// Parameters with padding: (char, int*, short) -> offsets 0, 8, 16.
__gpu_kernel void multiargs(char c, int *out, short s) { out[0] = c; out[1] = s; }
