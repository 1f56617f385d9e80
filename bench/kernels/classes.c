// Kernel classes outside the suite, written as a CUDA/HIP user writes them with <gpuintrin.h>, for
// bench/classes.c (built by bench/build.sh for nvptx64 and amdgcn; the hand-written loops are in
// classes_hand.c): warps as the unit of work (a CSR row per warp, a softmax row per warp), warp-aggregated
// atomics through match_any, a warp sum behind a bounds guard, a 1-D convolution through a shared tile
// with a halo, double-precision math, a grid-stride loop, a median filter sorting a private array.
#include <gpuintrin.h>
#include <stdint.h>
extern float expf(float);
extern double exp(double), log(double), pow(double, double);

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// CSR-vector SpMV: one warp per row, lanes stride over the row, xor butterfly.
__gpu_kernel void csr_vector(const uint32_t *rowp, const uint32_t *col, const float *val, const float *x, float *y,
                             uint32_t rows) {
  uint32_t W = __gpu_num_lanes(), lane = __gpu_lane_id(), row = gid() / W;
  if (row >= rows)
    return;
  float s = 0;
  for (uint32_t j = rowp[row] + lane; j < rowp[row + 1]; j += W)
    s += val[j] * x[col[j]];
  for (uint32_t off = W / 2; off; off /= 2)
    s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ off, s, W);
  if (lane == 0)
    y[row] = s;
}

// Warp-per-row softmax.
__gpu_kernel void warp_softmax(const float *in, float *out, uint32_t rows, uint32_t cols) {
  uint32_t W = __gpu_num_lanes(), lane = __gpu_lane_id(), row = gid() / W;
  if (row >= rows)
    return;
  const float *r = in + (uint64_t)row * cols;
  float m = -__builtin_inff();
  for (uint32_t j = lane; j < cols; j += W)
    m = __builtin_fmaxf(m, r[j]);
  for (uint32_t off = W / 2; off; off /= 2)
    m = __builtin_fmaxf(m, __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ off, m, W));
  float s = 0;
  for (uint32_t j = lane; j < cols; j += W)
    s += expf(r[j] - m);
  for (uint32_t off = W / 2; off; off /= 2)
    s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ off, s, W);
  float inv = 1.0f / s;
  for (uint32_t j = lane; j < cols; j += W)
    out[(uint64_t)row * cols + j] = expf(r[j] - m) * inv;
}

// A grid-stride loop (`for (i = gid; i < n; i += grid size)`) over a grid of a few groups.
__gpu_kernel void grid_stride(const float *x, const float *y, float *out, float a, int n) {
  for (int i = gid(); i < n; i += __gpu_num_blocks_x() * __gpu_num_threads_x())
    out[i] = a * x[i] + y[i];
}

// The classic CUDA sum: a grid-stride loop, a warp's xor butterfly, one atomic add per warp.
__gpu_kernel void grid_sum(const float *x, float *out, uint32_t n) {
  float s = 0.0f;
  for (uint32_t i = gid(); i < n; i += __gpu_num_blocks_x() * __gpu_num_threads_x())
    s += x[i];
  for (uint32_t d = __gpu_num_lanes() / 2; d > 0; d >>= 1)
    s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), __gpu_lane_id() ^ d, s, __gpu_num_lanes());
  if (__gpu_lane_id() == 0)
    __scoped_atomic_fetch_add(out, s, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}

// A 2-D grid-stride loop: rows by y, columns by x inside, over a grid of a few 2-D groups.
__gpu_kernel void grid2d(const float *in, float *out, uint32_t w, uint32_t h) {
  for (uint32_t r = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); r < h;
       r += __gpu_num_blocks_y() * __gpu_num_threads_y())
    for (uint32_t c = gid(); c < w; c += __gpu_num_blocks_x() * __gpu_num_threads_x())
      out[(uint64_t)r * w + c] = in[(uint64_t)r * w + c] * 0.5f + 1.0f;
}

// A 3x3 median filter: each pixel's window in a private array, sorted by a bubble sort (a triangular nest
// of loops over the array), the border copied.
__gpu_kernel void median3x3(const float *in, float *out, uint32_t w, uint32_t h) {
  uint32_t i = gid();
  if (i >= w * h)
    return;
  uint32_t x = i % w, y = i / w;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
    out[i] = in[i];
    return;
  }
  float v[9];
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      v[(dy + 1) * 3 + dx + 1] = in[i + dy * (int)w + dx];
  for (int a = 0; a < 9; a++)
    for (int b = 0; b < 8 - a; b++) {
      float lo = __builtin_fminf(v[b], v[b + 1]), hi = __builtin_fmaxf(v[b], v[b + 1]);
      v[b] = lo;
      v[b + 1] = hi;
    }
  out[i] = v[4];
}

// Warp-aggregated atomics: lanes with the same key elect a leader that adds their count.
__gpu_kernel void keyed_count(const uint32_t *keys, uint32_t *hist, uint32_t n) {
  uint32_t i = gid();
  if (i < n) {
    uint32_t k = keys[i];
    uint64_t peers = __gpu_match_any_u32(__gpu_lane_mask(), k);
    if (__gpu_lane_id() == (uint32_t)__builtin_ctzll(peers))
      __scoped_atomic_fetch_add(&hist[k], (uint32_t)__builtin_popcountll(peers), __ATOMIC_RELAXED,
                                __MEMORY_SCOPE_DEVICE);
  }
}

// 1-D convolution, 17 taps, through a shared tile with a halo of 8 each side.
#define WG 256
#define R 8
__gpu_kernel void conv1d(const float *in, const float *w, float *out, uint32_t n) {
  static __gpu_local float tile[WG + 2 * R];
  uint32_t t = __gpu_thread_id_x(), g = gid();
  int64_t base = (int64_t)__gpu_block_id_x() * WG - R;
  for (uint32_t k = t; k < WG + 2 * R; k += WG) {
    int64_t idx = base + k;
    tile[k] = idx >= 0 && idx < n ? in[idx] : 0.0f;
  }
  __gpu_sync_threads();
  if (g < n) {
    float s = 0;
    for (uint32_t j = 0; j < 2 * R + 1; j++)
      s += w[j] * tile[t + j];
    out[g] = s;
  }
}

// Double-precision math.
__gpu_kernel void dmath(const double *a, const double *b, double *o, uint32_t n) {
  uint32_t i = gid();
  if (i < n)
    o[i] = exp(-a[i]) * log(b[i]) + pow(b[i], 0.3);
}

// A warp sum behind the usual bounds guard.
__gpu_kernel void guarded_wsum(const float *in, float *out, uint32_t n) {
  uint32_t i = gid();
  if (i < n) {
    float v = in[i];
    uint32_t W = __gpu_num_lanes(), lane = __gpu_lane_id();
    for (uint32_t off = W / 2; off; off /= 2)
      v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ off, v, W);
    if (lane == 0)
      out[i / W] = v;
  }
}
