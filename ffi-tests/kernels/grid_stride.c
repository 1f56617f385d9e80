// Grid-stride loops, the CUDA idiom `for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i +=
// blockDim.x * gridDim.x)` (ol-block-stride-loops; src/jit/llvm/tests.rs grid_stride_loops_match_the_host):
// in the four index types kernels use, a sum carried out of the loop with a stride of k group sizes (k an
// argument), and a loop followed by a barrier.
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }
static inline uint32_t grid(void) { return __gpu_num_blocks_x() * __gpu_num_threads_x(); }

__gpu_kernel void gs_u32(float *o, const float *x, float a, uint32_t n) {
  for (uint32_t i = gid(); i < n; i += grid())
    o[i] = a * x[i] + (float)(i & 7);
}

__gpu_kernel void gs_i32(float *o, const float *x, float a, int n) {
  for (int i = gid(); i < n; i += grid())
    o[i] = a * x[i] + (float)(i & 7);
}

__gpu_kernel void gs_u64(float *o, const float *x, float a, uint64_t n) {
  for (uint64_t i = gid(); i < n; i += (uint64_t)grid())
    o[i] = a * x[i] + (float)(i & 7);
}

__gpu_kernel void gs_i64(float *o, const float *x, float a, int64_t n) {
  for (int64_t i = gid(); i < n; i += grid())
    o[i] = a * x[i] + (float)(i & 7);
}

// a work-item's sum and xor of its indices, out of the loop; the stride k group sizes
__gpu_kernel void gs_sum(float *o, const float *x, uint32_t n, uint32_t k) {
  float s = 0.0f;
  uint32_t c = 0;
  for (uint32_t i = gid(); i < n; i += k * __gpu_num_threads_x()) {
    s += x[i % 4096];
    c ^= i;
  }
  o[gid()] = s + (float)(c & 0xffff);
}

// a barrier after the loop: the group's sums added in order by its first work-item
__gpu_kernel void gs_bar(float *o, const float *x, uint32_t n) {
  static __gpu_local float s[1024];
  uint32_t t = __gpu_thread_id_x();
  float a = 0.0f;
  for (uint32_t i = gid(); i < n; i += grid())
    a += x[i];
  s[t] = a;
  __gpu_sync_threads();
  if (t == 0) {
    float r = 0.0f;
    for (uint32_t j = 0; j < __gpu_num_threads_x(); j++)
      r += s[j];
    o[__gpu_block_id_x()] = r;
  }
}
