// The classic-kernel suite as hand-written C work-group loops: the practical limit for the CPU device.
// Built by bench/build.sh with clang-22 -O3 -march=native -fveclib=libmvec -fno-math-errno (the vector
// math a person gets from the compiler and glibc, for softmax's expf and blackscholes' expf/logf/sqrtf:
// the CPU device's JIT uses glibc's vector math too) and linked into build/bench/suite.
//
// Each kernel of suite.c becomes a function over one group: one plain loop over the work-items per
// barrier region, arrays for shared memory and for the private values that live across a barrier (a
// group runs on one thread, so shared-memory atomics are plain increments). Where a region has a loop of
// its own (matmul's k, n-body's j, the scan's steps), the work-item loop is the inner one so that it
// vectorises: what a person writing the loops for a CPU does. The groups are shared out to `threads`
// threads in chunks from an atomic counter, like the CPU device's pool and PoCL's.
#include <math.h>
#include <pthread.h>

#include "suite_ref.h"

#define BS_FN static inline
#define BS_EXP expf
#define BS_LOG logf
#define BS_SQRT sqrtf
#define BS_FABS fabsf
#include "blackscholes.h"

void suite_hand_run(const struct suite_case *c, void *const bufs[], unsigned threads);

typedef void group_fn(const struct suite_case *c, void *const bufs[], uint32_t gx, uint32_t gy);

static void saxpy_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  const float *restrict x = bufs[0];
  float *restrict y = bufs[1];
  float a = c->args[0].f32;
  uint32_t n = c->w, end = (g + 1) * SUITE_WG < n ? (g + 1) * SUITE_WG : n;
  for (uint32_t i = g * SUITE_WG; i < end; i++)
    y[i] = a * x[i] + y[i];
}

static void copy_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  const float *restrict in = bufs[0];
  float *restrict out = bufs[1];
  uint32_t n = c->w, end = (g + 1) * SUITE_WG < n ? (g + 1) * SUITE_WG : n;
  for (uint32_t i = g * SUITE_WG; i < end; i++)
    out[i] = in[i];
}

static void reduce_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)c, (void)gy;
  const float *restrict in = (const float *)bufs[0] + (size_t)g * SUITE_WG;
  float s[SUITE_WG];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    s[t] = in[t];
  for (uint32_t k = SUITE_WG / 2; k > 0; k >>= 1)
    for (uint32_t t = 0; t < k; t++)
      s[t] += s[t + k];
  ((float *)bufs[1])[g] = s[0];
}

static void scan_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)c, (void)gy;
  const float *restrict in = (const float *)bufs[0] + (size_t)g * SUITE_WG;
  float *restrict out = (float *)bufs[1] + (size_t)g * SUITE_WG;
  float s[SUITE_WG], v[SUITE_WG];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    s[t] = in[t];
  for (uint32_t off = 1; off < SUITE_WG; off <<= 1) {
    for (uint32_t t = 0; t < SUITE_WG; t++)
      v[t] = t >= off ? s[t - off] : 0.0f;
    for (uint32_t t = 0; t < SUITE_WG; t++)
      s[t] += v[t];
  }
  for (uint32_t t = 0; t < SUITE_WG; t++)
    out[t] = s[t];
}

static void matmul_group(const struct suite_case *c, void *const bufs[], uint32_t bx, uint32_t by) {
  const float *restrict a = bufs[0], *restrict b = bufs[1];
  float *restrict cm = bufs[2];
  uint32_t n = c->w;
  float ta[SUITE_TILE][SUITE_TILE], tb[SUITE_TILE][SUITE_TILE], acc[SUITE_TILE][SUITE_TILE];
  memset(acc, 0, sizeof acc);
  for (uint32_t k0 = 0; k0 < n; k0 += SUITE_TILE) {
    for (uint32_t ty = 0; ty < SUITE_TILE; ty++)
      for (uint32_t tx = 0; tx < SUITE_TILE; tx++) {
        ta[ty][tx] = a[(by * SUITE_TILE + ty) * n + k0 + tx];
        tb[ty][tx] = b[(k0 + ty) * n + bx * SUITE_TILE + tx];
      }
    for (uint32_t ty = 0; ty < SUITE_TILE; ty++)
      for (uint32_t k = 0; k < SUITE_TILE; k++)
        for (uint32_t tx = 0; tx < SUITE_TILE; tx++)
          acc[ty][tx] += ta[ty][k] * tb[k][tx];
  }
  for (uint32_t ty = 0; ty < SUITE_TILE; ty++)
    for (uint32_t tx = 0; tx < SUITE_TILE; tx++)
      cm[(by * SUITE_TILE + ty) * n + bx * SUITE_TILE + tx] = acc[ty][tx];
}

static void histogram_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  const uint32_t *restrict in = bufs[0];
  uint32_t *bins = bufs[1];
  uint32_t n = c->w, h[SUITE_BINS];
  memset(h, 0, sizeof h);
  uint32_t base = g * SUITE_WG * SUITE_HIST_PER_ITEM;
  for (uint32_t k = 0; k < SUITE_HIST_PER_ITEM; k++)
    for (uint32_t t = 0; t < SUITE_WG; t++) {
      uint32_t i = base + k * SUITE_WG + t;
      if (i < n)
        h[in[i] % SUITE_BINS]++;
    }
  for (uint32_t b = 0; b < SUITE_BINS; b++)
    if (h[b])
      __atomic_fetch_add(&bins[b], h[b], __ATOMIC_RELAXED);
}

static void transpose_group(const struct suite_case *c, void *const bufs[], uint32_t bx, uint32_t by) {
  const float *restrict in = bufs[0];
  float *restrict out = bufs[1];
  uint32_t w = c->w, h = c->h;
  float tile[SUITE_TILE][SUITE_TILE + 1];
  for (uint32_t ty = 0; ty < SUITE_TILE; ty++)
    for (uint32_t tx = 0; tx < SUITE_TILE; tx++) {
      uint32_t x = bx * SUITE_TILE + tx, y = by * SUITE_TILE + ty;
      if (x < w && y < h)
        tile[ty][tx] = in[y * w + x];
    }
  for (uint32_t ty = 0; ty < SUITE_TILE; ty++)
    for (uint32_t tx = 0; tx < SUITE_TILE; tx++) {
      uint32_t x = by * SUITE_TILE + tx, y = bx * SUITE_TILE + ty;
      if (x < h && y < w)
        out[y * h + x] = tile[tx][ty];
    }
}

static void stencil_group(const struct suite_case *c, void *const bufs[], uint32_t bx, uint32_t by) {
  const float *restrict in = bufs[0];
  float *restrict out = bufs[1];
  uint32_t w = c->w, h = c->h, x0 = bx * SUITE_TILE, x1 = x0 + SUITE_TILE < w ? x0 + SUITE_TILE : w;
  // Per row of the tile: the border work-items copy, the interior ones [lo, hi) run unconditionally.
  for (uint32_t y = by * SUITE_TILE; y < (by + 1) * SUITE_TILE && y < h; y++) {
    const float *r = in + (size_t)y * w;
    float *o = out + (size_t)y * w;
    if (y == 0 || y == h - 1) {
      for (uint32_t x = x0; x < x1; x++)
        o[x] = r[x];
      continue;
    }
    uint32_t lo = x0 ? x0 : 1, hi = x1 < w ? x1 : w - 1;
    if (x0 == 0)
      o[0] = r[0];
    const float *up = r - w, *down = r + w;
    for (uint32_t x = lo; x < hi; x++)
      o[x] = 4.0f * r[x] - up[x] - down[x] - r[x - 1] - r[x + 1];
    if (x1 == w)
      o[w - 1] = r[w - 1];
  }
}

static void bitonic_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)c, (void)gy;
  const float *restrict in = (const float *)bufs[0] + (size_t)g * SUITE_WG;
  float *restrict out = (float *)bufs[1] + (size_t)g * SUITE_WG;
  float s[SUITE_WG];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    s[t] = in[t];
  // The work-items with p = t ^ j > t are the runs t = b .. b + j - 1 of every 2j: loop over just those,
  // with p = t + j, branch-free.
  for (uint32_t k = 2; k <= SUITE_WG; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1)
      for (uint32_t b = 0; b < SUITE_WG; b += 2 * j)
        for (uint32_t t = b; t < b + j; t++) {
          float x = s[t], y = s[t + j], lo = x < y ? x : y, hi = x < y ? y : x;
          bool up = (t & k) == 0;
          s[t] = up ? lo : hi;
          s[t + j] = up ? hi : lo;
        }
  for (uint32_t t = 0; t < SUITE_WG; t++)
    out[t] = s[t];
}

static void nbody_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  const struct suite_body *restrict pos = bufs[0], *restrict vel = bufs[1];
  struct suite_body *restrict pos_out = bufs[2], *restrict vel_out = bufs[3];
  uint32_t n = c->w, i0 = g * SUITE_WG;
  float px[SUITE_WG], py[SUITE_WG], pz[SUITE_WG], ax[SUITE_WG], ay[SUITE_WG], az[SUITE_WG];
  for (uint32_t t = 0; t < SUITE_WG; t++) {
    px[t] = pos[i0 + t].x;
    py[t] = pos[i0 + t].y;
    pz[t] = pos[i0 + t].z;
    ax[t] = ay[t] = az[t] = 0.0f;
  }
  for (uint32_t j0 = 0; j0 < n; j0 += SUITE_WG) {
    struct suite_body tile[SUITE_WG];
    for (uint32_t t = 0; t < SUITE_WG; t++)
      tile[t] = pos[j0 + t];
    for (uint32_t j = 0; j < SUITE_WG; j++)
      for (uint32_t t = 0; t < SUITE_WG; t++) {
        float dx = tile[j].x - px[t], dy = tile[j].y - py[t], dz = tile[j].z - pz[t];
        float f = tile[j].m * (dx * dx + dy * dy + dz * dz + 1.0f);
        ax[t] += f * dx;
        ay[t] += f * dy;
        az[t] += f * dz;
      }
  }
  for (uint32_t t = 0; t < SUITE_WG; t++) {
    struct suite_body v = vel[i0 + t];
    v.x += ax[t];
    v.y += ay[t];
    v.z += az[t];
    vel_out[i0 + t] = v;
    pos_out[i0 + t] = (struct suite_body){px[t] + v.x, py[t] + v.y, pz[t] + v.z, pos[i0 + t].m};
  }
}

// The warp kernels with a warp of SUITE_LANES (nvptx64's 32): the same exchanges as loops over lanes.
#define SUITE_LANES 32
#define SUITE_WARPS (SUITE_WG / SUITE_LANES)

static void wreduce_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)c, (void)gy;
  const float *restrict in = (const float *)bufs[0] + (size_t)g * SUITE_WG;
  float v[SUITE_WG], x[SUITE_WG], partial[SUITE_LANES];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    v[t] = in[t];
  for (uint32_t off = SUITE_LANES / 2; off > 0; off >>= 1) {
    for (uint32_t t = 0; t < SUITE_WG; t++)
      x[t] = v[t ^ off];
    for (uint32_t t = 0; t < SUITE_WG; t++)
      v[t] += x[t];
  }
  for (uint32_t l = 0; l < SUITE_LANES; l++)
    partial[l] = l < SUITE_WARPS ? v[l * SUITE_LANES] : 0.0f;
  for (uint32_t off = SUITE_LANES / 2; off > 0; off >>= 1) {
    for (uint32_t l = 0; l < SUITE_LANES; l++)
      x[l] = partial[l ^ off];
    for (uint32_t l = 0; l < SUITE_LANES; l++)
      partial[l] += x[l];
  }
  ((float *)bufs[1])[g] = partial[0];
}

static void wscan_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)c, (void)gy;
  const float *restrict in = (const float *)bufs[0] + (size_t)g * SUITE_WG;
  float *restrict out = (float *)bufs[1] + (size_t)g * SUITE_WG;
  float v[SUITE_WG], x[SUITE_WG], totals[SUITE_LANES], y[SUITE_LANES];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    v[t] = in[t];
  for (uint32_t off = 1; off < SUITE_LANES; off <<= 1) {
    for (uint32_t t = 0; t < SUITE_WG; t++)
      x[t] = t % SUITE_LANES >= off ? v[t - off] : 0.0f;
    for (uint32_t t = 0; t < SUITE_WG; t++)
      v[t] += x[t];
  }
  for (uint32_t l = 0; l < SUITE_LANES; l++)
    totals[l] = l < SUITE_WARPS ? v[l * SUITE_LANES + SUITE_LANES - 1] : 0.0f;
  for (uint32_t off = 1; off < SUITE_LANES; off <<= 1) {
    for (uint32_t l = 0; l < SUITE_LANES; l++)
      y[l] = l >= off ? totals[l - off] : 0.0f;
    for (uint32_t l = 0; l < SUITE_LANES; l++)
      totals[l] += y[l];
  }
  for (uint32_t t = 0; t < SUITE_WG; t++)
    out[t] = v[t] + (t >= SUITE_LANES ? totals[t / SUITE_LANES - 1] : 0.0f);
}

static void compact_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)c, (void)gy;
  const uint32_t *restrict in = (const uint32_t *)bufs[0] + (size_t)g * SUITE_WG;
  uint32_t *restrict out = (uint32_t *)bufs[1] + (size_t)g * SUITE_WG;
  uint32_t keep[SUITE_WG], kept[SUITE_WARPS];
  uint64_t mask[SUITE_WARPS];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    keep[t] = in[t] % 3 == 0;
  for (uint32_t w = 0; w < SUITE_WARPS; w++) { // the ballots
    uint64_t m = 0;
    for (uint32_t l = 0; l < SUITE_LANES; l++)
      m |= (uint64_t)keep[w * SUITE_LANES + l] << l;
    mask[w] = m;
    kept[w] = (uint32_t)__builtin_popcountll(m);
  }
  uint32_t before = 0;
  for (uint32_t w = 0; w < SUITE_WARPS; w++) {
    for (uint32_t l = 0; l < SUITE_LANES; l++)
      if (keep[w * SUITE_LANES + l])
        out[before + (uint32_t)__builtin_popcountll(mask[w] & ((1ull << l) - 1))] = in[w * SUITE_LANES + l];
    before += kept[w];
  }
  ((uint32_t *)bufs[2])[g] = before;
}

// softmax: the kernel's per-work-item strided partials (the work-item loop inner), then its trees, so
// that the sums are added in the same order.
static void softmax_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  uint32_t cols = c->w;
  const float *restrict row = (const float *)bufs[0] + (size_t)g * cols;
  float *restrict orow = (float *)bufs[1] + (size_t)g * cols;
  float s[SUITE_WG];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    s[t] = -INFINITY;
  for (uint32_t j0 = 0; j0 < cols; j0 += SUITE_WG) {
    uint32_t n = cols - j0 < SUITE_WG ? cols - j0 : SUITE_WG;
    for (uint32_t t = 0; t < n; t++)
      s[t] = fmaxf(s[t], row[j0 + t]);
  }
  for (uint32_t k = SUITE_WG / 2; k > 0; k >>= 1)
    for (uint32_t t = 0; t < k; t++)
      s[t] = fmaxf(s[t], s[t + k]);
  float m = s[0];
  for (uint32_t t = 0; t < SUITE_WG; t++)
    s[t] = 0.0f;
  for (uint32_t j0 = 0; j0 < cols; j0 += SUITE_WG) {
    uint32_t n = cols - j0 < SUITE_WG ? cols - j0 : SUITE_WG;
    for (uint32_t t = 0; t < n; t++)
      s[t] += expf(row[j0 + t] - m);
  }
  for (uint32_t k = SUITE_WG / 2; k > 0; k >>= 1)
    for (uint32_t t = 0; t < k; t++)
      s[t] += s[t + k];
  float inv = 1.0f / s[0];
  for (uint32_t j = 0; j < cols; j++)
    orow[j] = expf(row[j] - m) * inv;
}

#define SUITE_CONV_SPAN (SUITE_TILE + 2 * SUITE_CONV_R)

static void conv2d_group(const struct suite_case *c, void *const bufs[], uint32_t bx, uint32_t by) {
  const float *restrict in = bufs[0], *restrict filter = bufs[1];
  float *restrict out = bufs[2];
  uint32_t w = c->w, h = c->h;
  float tile[SUITE_CONV_SPAN][SUITE_CONV_SPAN], acc[SUITE_TILE][SUITE_TILE];
  int x0 = (int)(bx * SUITE_TILE) - SUITE_CONV_R, y0 = (int)(by * SUITE_TILE) - SUITE_CONV_R;
  for (int yy = 0; yy < SUITE_CONV_SPAN; yy++)
    for (int xx = 0; xx < SUITE_CONV_SPAN; xx++) {
      int x = x0 + xx, y = y0 + yy;
      tile[yy][xx] = x >= 0 && y >= 0 && x < (int)w && y < (int)h ? in[(size_t)y * w + (size_t)x] : 0.0f;
    }
  memset(acc, 0, sizeof acc);
  uint32_t ny = h - by * SUITE_TILE < SUITE_TILE ? h - by * SUITE_TILE : SUITE_TILE;
  uint32_t nx = w - bx * SUITE_TILE < SUITE_TILE ? w - bx * SUITE_TILE : SUITE_TILE;
  for (uint32_t ty = 0; ty < ny; ty++)
    for (uint32_t dy = 0; dy <= 2 * SUITE_CONV_R; dy++)
      for (uint32_t dx = 0; dx <= 2 * SUITE_CONV_R; dx++) {
        float f = filter[dy * (2 * SUITE_CONV_R + 1) + dx];
        for (uint32_t tx = 0; tx < SUITE_TILE; tx++)
          acc[ty][tx] += f * tile[ty + dy][tx + dx];
      }
  for (uint32_t ty = 0; ty < ny; ty++)
    for (uint32_t tx = 0; tx < nx; tx++)
      out[(size_t)(by * SUITE_TILE + ty) * w + bx * SUITE_TILE + tx] = acc[ty][tx];
}

// mandel: a row of the tile at a time, the iterations outer and its SUITE_TILE pixels inner (a vector),
// each pixel updated while it has not escaped, until none of them is left; the kernel's operations, one per
// statement.
static void mandel_group(const struct suite_case *c, void *const bufs[], uint32_t bx, uint32_t by) {
  uint32_t *restrict out = bufs[0], w = c->w, h = c->h;
  float x0 = c->args[3].f32, y0 = c->args[4].f32, step = c->args[5].f32;
  for (uint32_t y = by * SUITE_TILE; y < (by + 1) * SUITE_TILE && y < h; y++) {
    float cr[SUITE_TILE], ci[SUITE_TILE], zr[SUITE_TILE], zi[SUITE_TILE];
    uint32_t k[SUITE_TILE];
    for (uint32_t tx = 0; tx < SUITE_TILE; tx++) {
      float xr = (float)(bx * SUITE_TILE + tx) * step, yi = (float)y * step;
      cr[tx] = xr + x0;
      ci[tx] = yi + y0;
      zr[tx] = zi[tx] = 0.0f;
      k[tx] = 0;
    }
    for (uint32_t it = 0; it < SUITE_MANDEL_ITERS; it++) {
      uint32_t any = 0;
      for (uint32_t tx = 0; tx < SUITE_TILE; tx++) {
        float zr2 = zr[tx] * zr[tx], zi2 = zi[tx] * zi[tx], zri = zr[tx] * zi[tx];
        uint32_t go = k[tx] == it && !(zr2 + zi2 > 4.0f);
        float nr = zr2 - zi2;
        nr = nr + cr[tx];
        float ni = zri + zri;
        ni = ni + ci[tx];
        zr[tx] = go ? nr : zr[tx];
        zi[tx] = go ? ni : zi[tx];
        k[tx] += go;
        any |= go;
      }
      if (!any)
        break;
    }
    for (uint32_t tx = 0; tx < SUITE_TILE && bx * SUITE_TILE + tx < w; tx++)
      out[(size_t)y * w + bx * SUITE_TILE + tx] = k[tx];
  }
}

static void spmv_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  const uint32_t *restrict row_ptr = bufs[0], *restrict col = bufs[1];
  const float *restrict val = bufs[2], *restrict x = bufs[3];
  float *restrict y = bufs[4];
  uint32_t end = (g + 1) * SUITE_WG < c->w ? (g + 1) * SUITE_WG : c->w;
  for (uint32_t r = g * SUITE_WG; r < end; r++) {
    float acc = 0.0f;
    for (uint32_t k = row_ptr[r]; k < row_ptr[r + 1]; k++)
      acc += val[k] * x[col[k]];
    y[r] = acc;
  }
}

// radix: the kernel's work (each key compared with the group's earlier keys), the loop over the later keys
// inner so that it vectorises.
static void radix_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  uint32_t base = g * SUITE_WG, n = c->w - base < SUITE_WG ? c->w - base : SUITE_WG;
  const uint32_t *restrict in = (const uint32_t *)bufs[0] + base;
  uint32_t *restrict out = (uint32_t *)bufs[1] + base;
  uint32_t d[SUITE_WG], rank[SUITE_WG], hist[SUITE_RADIX_DIGITS] = {0}, start[SUITE_RADIX_DIGITS];
  for (uint32_t t = 0; t < n; t++) {
    d[t] = (in[t] >> SUITE_RADIX_SHIFT) & (SUITE_RADIX_DIGITS - 1);
    rank[t] = 0;
  }
  for (uint32_t t = 0; t < n; t++)
    hist[d[t]]++;
  for (uint32_t k = 0, s = 0; k < SUITE_RADIX_DIGITS; k++) {
    start[k] = s;
    s += hist[k];
  }
  for (uint32_t j = 0; j < n; j++)
    for (uint32_t t = j + 1; t < n; t++)
      rank[t] += d[j] == d[t];
  for (uint32_t t = 0; t < n; t++)
    out[start[d[t]] + rank[t]] = in[t];
  memcpy((uint32_t *)bufs[2] + (size_t)g * SUITE_RADIX_DIGITS, hist, sizeof hist);
}

static void blackscholes_group(const struct suite_case *c, void *const bufs[], uint32_t g, uint32_t gy) {
  (void)gy;
  const float *restrict s = bufs[0], *restrict x = bufs[1], *restrict t = bufs[2];
  float *restrict call = bufs[3], *restrict put = bufs[4];
  float r = c->args[5].f32, v = c->args[6].f32;
  uint32_t end = (g + 1) * SUITE_WG < c->w ? (g + 1) * SUITE_WG : c->w;
  for (uint32_t i = g * SUITE_WG; i < end; i++)
    bs_price(s[i], x[i], t[i], r, v, &call[i], &put[i]);
}

static group_fn *const group_fns[SUITE_COUNT] = {
    [SUITE_SAXPY] = saxpy_group,         [SUITE_COPY] = copy_group,           [SUITE_REDUCE] = reduce_group,
    [SUITE_SCAN] = scan_group,           [SUITE_MATMUL] = matmul_group,       [SUITE_HISTOGRAM] = histogram_group,
    [SUITE_TRANSPOSE] = transpose_group, [SUITE_STENCIL] = stencil_group,     [SUITE_BITONIC] = bitonic_group,
    [SUITE_NBODY] = nbody_group,         [SUITE_WREDUCE] = wreduce_group,     [SUITE_WSCAN] = wscan_group,
    [SUITE_COMPACT] = compact_group,     [SUITE_SOFTMAX] = softmax_group,     [SUITE_CONV2D] = conv2d_group,
    [SUITE_MANDEL] = mandel_group,       [SUITE_SPMV] = spmv_group,           [SUITE_RADIX] = radix_group,
    [SUITE_BLACKSCHOLES] = blackscholes_group,
};

struct hand_launch {
  const struct suite_case *c;
  void *const *bufs;
  uint32_t groups, chunk;
  uint32_t next; // the next unclaimed group (atomic)
};

static void *hand_worker(void *arg) {
  struct hand_launch *l = arg;
  group_fn *fn = group_fns[l->c->kernel];
  uint32_t gx = l->c->groups[0];
  for (;;) {
    uint32_t g0 = __atomic_fetch_add(&l->next, l->chunk, __ATOMIC_RELAXED);
    if (g0 >= l->groups)
      return NULL;
    uint32_t g1 = g0 + l->chunk < l->groups ? g0 + l->chunk : l->groups;
    for (uint32_t g = g0; g < g1; g++)
      fn(l->c, l->bufs, g % gx, g / gx);
  }
}

// One launch of case c on `threads` threads (the calling one and threads - 1 more).
void suite_hand_run(const struct suite_case *c, void *const bufs[], unsigned threads) {
  struct hand_launch l = {c, bufs, c->groups[0] * c->groups[1], 1, 0};
  l.chunk = l.groups / (threads * 16) ? l.groups / (threads * 16) : 1;
  pthread_t t[64];
  unsigned extra = threads > 64 ? 63 : threads - 1;
  for (unsigned i = 0; i < extra; i++)
    if (pthread_create(&t[i], NULL, hand_worker, &l)) {
      extra = i;
      break;
    }
  hand_worker(&l);
  for (unsigned i = 0; i < extra; i++)
    pthread_join(t[i], NULL);
}
