// A row per warp, its lanes striding over it (`for (j = lane; j < n; j += W)`: CUDA's warp-per-row softmax,
// layer norm and CSR rows), and a loop the same for a warp's lanes over a row with work per lane, for the
// JIT's `warp_stride_loops_match_the_host` (src/jit/llvm/tests.rs; ol-block-stride-loops and
// ol-implicit-loop-barriers under ol-warp-lanes in src/jit/llvm/lower/README.md).
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// Each row's sum and maximum (lane-strided, then a butterfly), then every element of the row from the
// second column written as its value minus the maximum plus the sum.
__gpu_kernel void rows(const float *in, float *out, uint32_t nrows, uint32_t cols) {
  uint32_t w = __gpu_num_lanes(), lane = __gpu_lane_id(), row = gid() / w;
  if (row >= nrows)
    return;
  const float *r = in + (uint64_t)row * cols;
  float s = 0.0f, m = -1.0f;
  for (uint32_t j = lane; j < cols; j += w) {
    s += r[j];
    m = __builtin_fmaxf(m, r[j]);
  }
  for (uint32_t d = w / 2; d > 0; d /= 2) {
    s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ d, s, w);
    m = __builtin_fmaxf(m, __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ d, m, w));
  }
  for (uint32_t j = lane + 1; j < cols; j += w)
    out[(uint64_t)row * cols + j] = r[j] - m + s;
}

// Each lane's dot product of the row with its own column of x (a loop the same for the warp's lanes), the
// lane's value from before the loop added after it.
__gpu_kernel void dots(const float *in, const float *x, float *out, uint32_t nrows, uint32_t cols) {
  uint32_t w = __gpu_num_lanes(), lane = __gpu_lane_id(), row = gid() / w;
  if (row >= nrows)
    return;
  const float *r = in + (uint64_t)row * cols;
  float before = x[lane] * 3.0f, acc = 0.0f;
  for (uint32_t k = 0; k < cols; k++)
    acc += r[k] * x[(k + lane) % 64];
  acc += __gpu_shuffle_idx_f32(__gpu_lane_mask(), (lane + 1) % w, acc, w);
  out[gid()] = acc + before;
}
