// Grid-stride loops, the CUDA idiom `for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i +=
// blockDim.x * gridDim.x)` (ol-block-stride-loops; src/jit/llvm/tests.rs grid_stride_loops_match_the_host):
// in the four index types kernels use, a sum carried out of the loop with a stride of k group sizes (k an
// argument), a loop followed by a barrier; 2-D grid-stride loops (grid_stride_2d_loops_match_the_host) and a
// loop with a `break`.
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

// a 2-D grid-stride loop: rows by y, columns by x inside (the x loop is taken once the y loop is uniform)
__gpu_kernel void gs_2d(float *o, const float *x, float a, uint32_t w, uint32_t h) {
  for (uint32_t r = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); r < h;
       r += __gpu_num_blocks_y() * __gpu_num_threads_y())
    for (uint32_t c = gid(); c < w; c += grid())
      o[(uint64_t)r * w + c] = a * x[((uint64_t)r * w + c) % 4096] + (float)((r ^ c) & 7);
}

// the same walk with int indices, each work-item's sum carried out of both loops
__gpu_kernel void gs_2d_sum(float *o, const float *x, int w, int h) {
  float s = 0.0f;
  for (int r = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); r < h;
       r += __gpu_num_blocks_y() * __gpu_num_threads_y())
    for (int c = gid(); c < w; c += grid())
      s += x[(r * 31 + c) & 4095];
  uint32_t flat = (__gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y()) * grid() + gid();
  o[flat] = s;
}

// a loop that a work-item may leave early (a second way out: left as it is)
__gpu_kernel void gs_break(float *o, const float *x, uint32_t n) {
  for (uint32_t i = gid(); i < n; i += grid()) {
    if (x[i % 4096] > 11.0f)
      break;
    o[i] = x[i % 4096] + 1.0f;
  }
}

// the classic CUDA sum: a grid-stride loop, a warp's xor butterfly, one atomic add per warp (under warp
// lanes the loop's region has two branches the same for a warp's lanes: both are decided once per warp)
__gpu_kernel void gs_wsum(const float *x, float *out, uint32_t n) {
  float s = 0.0f;
  for (uint32_t i = gid(); i < n; i += grid())
    s += x[i % 4096];
  for (uint32_t d = __gpu_num_lanes() / 2; d > 0; d >>= 1)
    s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), __gpu_lane_id() ^ d, s, __gpu_num_lanes());
  if (__gpu_lane_id() == 0)
    __scoped_atomic_fetch_add(out, s, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}
