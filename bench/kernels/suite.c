// The classic-kernel suite for the CPU device, written as a CUDA/HIP user would write it with clang's
// <gpuintrin.h>. Built to nvptx64 and amdgcn bitcode by bench/build.sh (for build/bench/suite) and by
// ffi-tests/build-device.sh (for ffi-tests/test_suite.c). The same kernels as OpenCL C for PoCL are in
// suite.cl, as hand-written work-group loops in suite_hand.c; inputs, launch shapes and the host reference
// are in suite_ref.h. Every kernel is sized for 1-D groups of SUITE_WG work-items or 2-D groups of
// SUITE_TILE x SUITE_TILE (suite_shape.h).
#include <gpuintrin.h>
#include <stdint.h>

#include "saxpy_reduce.h" // saxpy and reduce (and gid_x), shared with bench.c
#include "suite_shape.h"

// out = in over n elements, one per work-item; the grid is rounded up to whole groups.
__gpu_kernel void copy(const float *in, float *out, uint32_t n) {
  uint32_t i = gid_x();
  if (i < n)
    out[i] = in[i];
}

// Inclusive prefix sum within each group (Hillis-Steele in shared memory).
__gpu_kernel void scan(const float *in, float *out) {
  static __gpu_local float s[SUITE_WG];
  uint32_t t = __gpu_thread_id_x();
  s[t] = in[gid_x()];
  __gpu_sync_threads();
  for (uint32_t off = 1; off < __gpu_num_threads_x(); off <<= 1) {
    float v = t >= off ? s[t - off] : 0.0f;
    __gpu_sync_threads();
    s[t] += v;
    __gpu_sync_threads();
  }
  out[gid_x()] = s[t];
}

// c = a * b for n x n row-major matrices (n a multiple of SUITE_TILE), one output per work-item of a
// 2-D grid, through SUITE_TILE x SUITE_TILE tiles of a and b in shared memory.
__gpu_kernel void matmul(const float *a, const float *b, float *c, uint32_t n) {
  static __gpu_local float ta[SUITE_TILE][SUITE_TILE], tb[SUITE_TILE][SUITE_TILE];
  uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y();
  uint32_t col = __gpu_block_id_x() * SUITE_TILE + tx, row = __gpu_block_id_y() * SUITE_TILE + ty;
  float acc = 0.0f;
  for (uint32_t k0 = 0; k0 < n; k0 += SUITE_TILE) {
    ta[ty][tx] = a[row * n + k0 + tx];
    tb[ty][tx] = b[(k0 + ty) * n + col];
    __gpu_sync_threads();
    for (uint32_t k = 0; k < SUITE_TILE; k++)
      acc += ta[ty][k] * tb[k][tx];
    __gpu_sync_threads();
  }
  c[row * n + col] = acc;
}

// bins[v % SUITE_BINS] += 1 for every v of in[0..n): each group counts its SUITE_HIST_PER_ITEM * group size
// elements into a shared histogram with atomics, then adds it to the global one with atomics.
__gpu_kernel void histogram(const uint32_t *in, uint32_t *bins, uint32_t n) {
  static __gpu_local uint32_t h[SUITE_BINS];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x();
  for (uint32_t b = t; b < SUITE_BINS; b += nt)
    h[b] = 0;
  __gpu_sync_threads();
  uint32_t base = __gpu_block_id_x() * nt * SUITE_HIST_PER_ITEM;
  for (uint32_t k = 0; k < SUITE_HIST_PER_ITEM; k++) {
    uint32_t i = base + k * nt + t;
    if (i < n)
      __atomic_fetch_add(&h[in[i] % SUITE_BINS], 1u, __ATOMIC_RELAXED);
  }
  __gpu_sync_threads();
  for (uint32_t b = t; b < SUITE_BINS; b += nt)
    if (h[b])
      __atomic_fetch_add(&bins[b], h[b], __ATOMIC_RELAXED);
}

// out (w rows of h) = transpose of in (h rows of w), through a padded shared tile on a 2-D grid.
__gpu_kernel void transpose(const float *in, float *out, uint32_t w, uint32_t h) {
  static __gpu_local float tile[SUITE_TILE][SUITE_TILE + 1];
  uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y();
  uint32_t x = __gpu_block_id_x() * SUITE_TILE + tx, y = __gpu_block_id_y() * SUITE_TILE + ty;
  if (x < w && y < h)
    tile[ty][tx] = in[y * w + x];
  __gpu_sync_threads();
  x = __gpu_block_id_y() * SUITE_TILE + tx;
  y = __gpu_block_id_x() * SUITE_TILE + ty;
  if (x < h && y < w)
    out[y * h + x] = tile[tx][ty];
}

// 2-D 5-point stencil (the discrete Laplacian) on a w x h grid; the border is copied.
__gpu_kernel void stencil(const float *in, float *out, uint32_t w, uint32_t h) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  if (x >= w || y >= h)
    return;
  uint32_t i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
    out[i] = in[i];
  else
    out[i] = 4.0f * in[i] - in[i - w] - in[i + w] - in[i - 1] - in[i + 1];
}

// Each group sorts its SUITE_WG elements ascending: a bitonic network in shared memory.
__gpu_kernel void bitonic(const float *in, float *out) {
  static __gpu_local float s[SUITE_WG];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  s[t] = in[gid_x()];
  __gpu_sync_threads();
  for (uint32_t k = 2; k <= n; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      uint32_t p = t ^ j;
      if (p > t) {
        float a = s[t], b = s[p];
        if ((t & k) == 0 ? a > b : a < b) {
          s[t] = b;
          s[p] = a;
        }
      }
      __gpu_sync_threads();
    }
  out[gid_x()] = s[t];
}

// One n-body step (n a multiple of the group size): every body feels every other through tiles of
// positions in shared memory. The force law is a polynomial, m_j * (d^2 + 1) * d, instead of 1/r^2 so
// that small-integer inputs give exact results in any summation order; the cost per pair is the same kind
// of multiply-add chain.
struct body {
  float x, y, z, m;
};
__gpu_kernel void nbody(const struct body *pos, const struct body *vel, struct body *pos_out,
                        struct body *vel_out, uint32_t n) {
  static __gpu_local struct body tile[SUITE_WG];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(), i = gid_x();
  struct body p = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (uint32_t j0 = 0; j0 < n; j0 += nt) {
    tile[t] = pos[j0 + t];
    __gpu_sync_threads();
    for (uint32_t j = 0; j < nt; j++) {
      float dx = tile[j].x - p.x, dy = tile[j].y - p.y, dz = tile[j].z - p.z;
      float f = tile[j].m * (dx * dx + dy * dy + dz * dz + 1.0f);
      ax += f * dx;
      ay += f * dy;
      az += f * dz;
    }
    __gpu_sync_threads();
  }
  struct body v = vel[i];
  v.x += ax;
  v.y += ay;
  v.z += az;
  vel_out[i] = v;
  pos_out[i] = (struct body){p.x + v.x, p.y + v.y, p.z + v.z, p.m};
}

// Warp collectives, as CUDA code is full of them (__shfl_xor_sync, __shfl_up_sync): the lanes of a warp
// (__gpu_num_lanes(): 32 on nvptx64, 64 on amdgcn) exchange values with shuffles, the warps through shared
// memory. Group sizes are a multiple of the warp width, with at most a warp's width of warps.

// Per-group sum (as reduce): a butterfly over each warp's lanes (the xor form), each warp's sum to shared
// memory, then the first warp adds those up the same way.
__gpu_kernel void wreduce(const float *in, float *out) {
  static __gpu_local float partial[64];
  uint32_t t = __gpu_thread_id_x(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id();
  float v = in[gid_x()];
  for (uint32_t off = lanes / 2; off > 0; off >>= 1)
    v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ off, v, lanes);
  if (lane == 0)
    partial[t / lanes] = v;
  __gpu_sync_threads();
  if (t < lanes) {
    float s = t < __gpu_num_threads_x() / lanes ? partial[t] : 0.0f;
    for (uint32_t off = lanes / 2; off > 0; off >>= 1)
      s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane ^ off, s, lanes);
    if (t == 0)
      out[__gpu_block_id_x()] = s;
  }
}

// Inclusive prefix sum within each group (as scan): each warp scans its lanes with shuffles from `off`
// lanes below (the up form; the lanes below `off` keep their value), the warps' totals go through shared
// memory and the first warp scans them, and every lane adds the total of the warps before its own.
__gpu_kernel void wscan(const float *in, float *out) {
  static __gpu_local float totals[64];
  uint32_t t = __gpu_thread_id_x(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id(), w = t / lanes;
  float v = in[gid_x()];
  for (uint32_t off = 1; off < lanes; off <<= 1) {
    float up = __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane - off, v, lanes);
    if (lane >= off)
      v += up;
  }
  if (lane == lanes - 1)
    totals[w] = v;
  __gpu_sync_threads();
  if (t < lanes) {
    uint32_t warps = __gpu_num_threads_x() / lanes;
    float s = t < warps ? totals[t] : 0.0f;
    for (uint32_t off = 1; off < lanes; off <<= 1) {
      float up = __gpu_shuffle_idx_f32(__gpu_lane_mask(), lane - off, s, lanes);
      if (lane >= off)
        s += up;
    }
    if (t < warps)
      totals[t] = s;
  }
  __gpu_sync_threads();
  out[gid_x()] = v + (w ? totals[w - 1] : 0.0f);
}

// Stream compaction with ballots: each group keeps its elements that are multiples of 3, in order, at the
// front of its part of `out`, and their number in counts[group]. A warp's ballot of the predicate gives
// each lane its place among the warp's kept elements (the set bits below it); the warps' counts go
// through shared memory (the first warp adds up those before its own, as a prefix).
__gpu_kernel void compact(const uint32_t *in, uint32_t *out, uint32_t *counts) {
  static __gpu_local uint32_t kept[64];
  uint32_t t = __gpu_thread_id_x(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id(), w = t / lanes;
  uint32_t v = in[gid_x()];
  _Bool keep = v % 3 == 0;
  uint64_t mask = __gpu_ballot(__gpu_lane_mask(), keep);
  uint32_t below = (uint32_t)__builtin_popcountll(mask & ((1ull << lane) - 1));
  if (lane == 0)
    kept[w] = (uint32_t)__builtin_popcountll(mask);
  __gpu_sync_threads();
  uint32_t before = 0;
  for (uint32_t k = 0; k < w; k++)
    before += kept[k];
  uint32_t *dst = out + (uint64_t)__gpu_block_id_x() * __gpu_num_threads_x();
  if (keep)
    dst[before + below] = v;
  if (t == __gpu_num_threads_x() - 1)
    counts[__gpu_block_id_x()] = before + kept[w];
}

// Kernels with a math library, divergent loops, irregular memory and a local sort pass. expf, logf, sqrtf
// and fabsf come from the CPU device's math library (declared by blackscholes.c).

// The option pricer: bench/vmath.c's Black-Scholes kernel (exp, log, sqrt and a polynomial CNDF per
// option; blackscholes.h), one source for both benchmarks.
#include "blackscholes.c"

// Row-wise softmax, one group per row of `cols` (any number: the last chunk of a row is partial):
// out = exp(in - max) / sum(exp(in - max)). Each work-item takes the max and then the sum of exponentials
// over its strided elements; a tree in shared memory with barriers combines them (the group size a power
// of two).
__gpu_kernel void softmax(const float *in, float *out, uint32_t cols) {
  static __gpu_local float s[SUITE_WG];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x();
  const float *row = in + (uint64_t)__gpu_block_id_x() * cols;
  float *orow = out + (uint64_t)__gpu_block_id_x() * cols;
  float m = -__builtin_inff();
  for (uint32_t j = t; j < cols; j += nt)
    m = __builtin_fmaxf(m, row[j]);
  s[t] = m;
  __gpu_sync_threads();
  for (uint32_t k = nt / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] = __builtin_fmaxf(s[t], s[t + k]);
    __gpu_sync_threads();
  }
  m = s[0];
  __gpu_sync_threads();
  float sum = 0.0f;
  for (uint32_t j = t; j < cols; j += nt)
    sum += expf(row[j] - m);
  s[t] = sum;
  __gpu_sync_threads();
  for (uint32_t k = nt / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] += s[t + k];
    __gpu_sync_threads();
  }
  float inv = 1.0f / s[0];
  for (uint32_t j = t; j < cols; j += nt)
    orow[j] = expf(row[j] - m) * inv;
}

// 2-D convolution of a w x h image with a (2r+1) x (2r+1) filter (r = SUITE_CONV_R, zero outside the
// image) on a 2-D grid of SUITE_TILE x SUITE_TILE groups: the group loads its tile and an r-wide halo,
// (SUITE_TILE + 2r)^2 values, cooperatively into shared memory, and the filter beside it, then each
// work-item inside the image computes its output from shared memory. The tiles at the right and bottom
// edges are partial.
#define SUITE_CONV_SPAN (SUITE_TILE + 2 * SUITE_CONV_R)
__gpu_kernel void conv2d(const float *in, const float *filter, float *out, uint32_t w, uint32_t h) {
  static __gpu_local float tile[SUITE_CONV_SPAN][SUITE_CONV_SPAN], f[SUITE_CONV_TAPS];
  uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y(), t = ty * SUITE_TILE + tx;
  int x0 = (int)(__gpu_block_id_x() * SUITE_TILE) - SUITE_CONV_R;
  int y0 = (int)(__gpu_block_id_y() * SUITE_TILE) - SUITE_CONV_R;
  for (uint32_t i = t; i < SUITE_CONV_SPAN * SUITE_CONV_SPAN; i += SUITE_TILE * SUITE_TILE) {
    int x = x0 + (int)(i % SUITE_CONV_SPAN), y = y0 + (int)(i / SUITE_CONV_SPAN);
    _Bool inside = x >= 0 && y >= 0 && x < (int)w && y < (int)h;
    tile[i / SUITE_CONV_SPAN][i % SUITE_CONV_SPAN] = inside ? in[(uint32_t)y * w + (uint32_t)x] : 0.0f;
  }
  if (t < SUITE_CONV_TAPS)
    f[t] = filter[t];
  __gpu_sync_threads();
  uint32_t x = __gpu_block_id_x() * SUITE_TILE + tx, y = __gpu_block_id_y() * SUITE_TILE + ty;
  if (x < w && y < h) {
    float acc = 0.0f;
    for (uint32_t dy = 0; dy <= 2 * SUITE_CONV_R; dy++)
      for (uint32_t dx = 0; dx <= 2 * SUITE_CONV_R; dx++)
        acc += f[dy * (2 * SUITE_CONV_R + 1) + dx] * tile[ty + dy][tx + dx];
    out[y * w + x] = acc;
  }
}

// The Mandelbrot set's escape times on a w x h grid of pixels from (x0, y0), `step` apart: per pixel,
// z = z^2 + c from z = 0 until |z| > 2 or SUITE_MANDEL_ITERS iterations; out = the iterations taken. A
// divergent loop per work-item. Every operation is its own statement, so that no compiler contracts a
// multiply and an add into an FMA (clang's default, -ffp-contract=on, fuses only within an expression):
// every form computes the same IEEE single-precision trajectory and the counts are exact.
__gpu_kernel void mandel(uint32_t *out, uint32_t w, uint32_t h, float x0, float y0, float step) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  if (x >= w || y >= h)
    return;
  float cr = (float)x * step, ci = (float)y * step;
  cr = cr + x0;
  ci = ci + y0;
  float zr = 0.0f, zi = 0.0f;
  uint32_t k = 0;
  for (; k < SUITE_MANDEL_ITERS; k++) {
    float zr2 = zr * zr, zi2 = zi * zi, zri = zr * zi;
    if (zr2 + zi2 > 4.0f)
      break;
    zr = zr2 - zi2;
    zr = zr + cr;
    zi = zri + zri;
    zi = zi + ci;
  }
  out[y * w + x] = k;
}

// Sparse matrix-vector product y = A x, A in CSR form (row_ptr[rows + 1], col and val), one row per
// work-item: irregular row lengths, gathers from x.
__gpu_kernel void spmv(const uint32_t *row_ptr, const uint32_t *col, const float *val, const float *x, float *y,
                       uint32_t rows) {
  uint32_t r = gid_x();
  if (r >= rows)
    return;
  float acc = 0.0f;
  for (uint32_t k = row_ptr[r]; k < row_ptr[r + 1]; k++)
    acc += val[k] * x[col[k]];
  y[r] = acc;
}

// One pass of a radix sort, local to each group: the group's keys (the last group's partial) ordered by
// their digit (key >> shift) & (2^SUITE_RADIX_BITS - 1), stably, in their part of `out`, and the group's
// digit counts in counts[group * 2^SUITE_RADIX_BITS ..]. The digit histogram is counted with shared
// atomics, one work-item scans it to each digit's start, and each key goes to its digit's start plus the
// number of the group's earlier keys with the same digit.
__gpu_kernel void radix(const uint32_t *in, uint32_t *out, uint32_t *counts, uint32_t n, uint32_t shift) {
  static __gpu_local uint32_t hist[SUITE_RADIX_DIGITS], start[SUITE_RADIX_DIGITS], digit[SUITE_WG];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(), base = __gpu_block_id_x() * nt;
  _Bool valid = base + t < n;
  uint32_t key = valid ? in[base + t] : 0, d = (key >> shift) & (SUITE_RADIX_DIGITS - 1);
  if (t < SUITE_RADIX_DIGITS)
    hist[t] = 0;
  digit[t] = d;
  __gpu_sync_threads();
  if (valid)
    __atomic_fetch_add(&hist[d], 1u, __ATOMIC_RELAXED);
  __gpu_sync_threads();
  if (t == 0) {
    uint32_t s = 0;
    for (uint32_t k = 0; k < SUITE_RADIX_DIGITS; k++) {
      start[k] = s;
      s += hist[k];
    }
  }
  __gpu_sync_threads();
  if (valid) {
    uint32_t rank = 0;
    for (uint32_t j = 0; j < t; j++)
      rank += digit[j] == d;
    out[base + start[d] + rank] = key;
  }
  if (t < SUITE_RADIX_DIGITS)
    counts[__gpu_block_id_x() * SUITE_RADIX_DIGITS + t] = hist[t];
}
