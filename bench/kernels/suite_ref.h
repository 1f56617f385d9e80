// The classic-kernel suite's launch shapes, inputs and host reference, shared by the benchmark
// (bench/suite.c, bench/kernels/suite_hand.c) and the exactness test (ffi-tests/test_suite.c).
//
// A case is one kernel at one size: its buffers (inputs filled by suite_fill, outputs zeroed), its
// arguments in the kernels' order (a buffer or a 32-bit scalar), its grid. suite_check compares the
// outputs with a plain serial computation on the host and counts the elements that differ. Every input is
// a small integer in a float (or a uint32_t), chosen so that every partial result is an integer below
// 2^24: the results are exact in any order of summation, with or without FMA contraction. Two exceptions:
// mandel's float trajectories are exact because every form does the same IEEE operations, one per
// statement (no compiler fuses across statements: clang's -ffp-contract=on, OpenCL C's FP_CONTRACT, and
// gcc on x86-64 without -march, which has no FMA); the kernels with exp and log, softmax and blackscholes,
// are compared with a double-precision reference within a stated tolerance (suite_tolerance).
#ifndef OFFLOAD_RS_BENCH_SUITE_REF_H
#define OFFLOAD_RS_BENCH_SUITE_REF_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite_shape.h"

enum suite_kernel {
  SUITE_SAXPY,
  SUITE_COPY,
  SUITE_REDUCE,
  SUITE_SCAN,
  SUITE_MATMUL,
  SUITE_HISTOGRAM,
  SUITE_TRANSPOSE,
  SUITE_STENCIL,
  SUITE_BITONIC,
  SUITE_NBODY,
  SUITE_WREDUCE,
  SUITE_WSCAN,
  SUITE_COMPACT,
  SUITE_SOFTMAX,
  SUITE_CONV2D,
  SUITE_MANDEL,
  SUITE_SPMV,
  SUITE_RADIX,
  SUITE_BLACKSCHOLES,
  SUITE_COUNT
};

static const char *const suite_names[SUITE_COUNT] = {
    "saxpy",  "copy",    "reduce",  "scan",   "matmul", "histogram", "transpose", "stencil", "bitonic", "nbody",
    "wreduce", "wscan",  "compact", "softmax", "conv2d", "mandel",    "spmv",      "radix",   "blackscholes"};

enum suite_arg_kind { SUITE_ARG_BUF, SUITE_ARG_U32, SUITE_ARG_F32 };
struct suite_arg {
  enum suite_arg_kind kind;
  uint32_t buf; // SUITE_ARG_BUF: index into the case's buffers
  uint32_t u32;
  float f32;
};

#define SUITE_MAX_BUFS 5
#define SUITE_MAX_ARGS 8
struct suite_case {
  enum suite_kernel kernel;
  const char *name;
  uint32_t w, h;   // the size: elements, matrix order or bodies (h = 1); 2-D kernels: width and height
  uint32_t dims;   // 1 or 2
  uint32_t groups[3], local[3];
  uint32_t nbufs;
  size_t bytes[SUITE_MAX_BUFS];
  bool output[SUITE_MAX_BUFS];
  uint32_t nargs;
  struct suite_arg args[SUITE_MAX_ARGS];
};

// n-body state, float4-shaped: position (or velocity) and the mass in m (0 in velocities).
struct suite_body {
  float x, y, z, m;
};

static inline uint32_t suite_hash(uint32_t i) {
  i ^= i >> 16;
  i *= 0x7feb352du;
  i ^= i >> 15;
  i *= 0x846ca68bu;
  i ^= i >> 16;
  return i;
}

static inline uint32_t suite_div_up(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

static inline void suite_add_buf(struct suite_case *c, size_t bytes, bool output) {
  c->bytes[c->nbufs] = bytes;
  c->output[c->nbufs] = output;
  c->args[c->nargs].kind = SUITE_ARG_BUF;
  c->args[c->nargs].buf = c->nbufs;
  c->nbufs++;
  c->nargs++;
}

static inline void suite_add_u32(struct suite_case *c, uint32_t v) {
  c->args[c->nargs].kind = SUITE_ARG_U32;
  c->args[c->nargs].u32 = v;
  c->nargs++;
}

static inline void suite_add_f32(struct suite_case *c, float v) {
  c->args[c->nargs].kind = SUITE_ARG_F32;
  c->args[c->nargs].f32 = v;
  c->nargs++;
}

// spmv's matrix: the length of row r (mostly 0-16, one row in eight 32-128).
static inline uint32_t suite_spmv_len(uint32_t r) {
  uint32_t x = suite_hash(r * 0x9e3779b9u + 12);
  return x % 8 == 0 ? 32 + (x >> 8) % 97 : (x >> 8) % 17;
}

// radix's digit: which SUITE_RADIX_BITS of the key the pass sorts by (the second digit).
#define SUITE_RADIX_SHIFT SUITE_RADIX_BITS

// blackscholes' rate and volatility (as bench/vmath.c's).
#define SUITE_BS_RATE 0.02f
#define SUITE_BS_VOL 0.30f

// The case for kernel k at size (w, h) with groups of lx (x ly for the stencil) work-items; sizes are
// rounded to what the kernel needs (whole groups for the kernels without bounds checks, a multiple of
// SUITE_TILE for matmul). The 1-D kernels take any power of two lx <= SUITE_WG (saxpy, histogram, spmv
// and blackscholes any lx <= SUITE_WG, radix any from SUITE_RADIX_DIGITS to SUITE_WG; wreduce and wscan a
// multiple of the warp width, 32 or 64), the stencil and mandel any lx x ly; matmul, transpose and conv2d
// always use SUITE_TILE x SUITE_TILE. softmax runs one group per row: w is the row length, h the rows.
static inline struct suite_case suite_case_shaped(enum suite_kernel k, uint32_t w, uint32_t h, uint32_t lx,
                                                  uint32_t ly) {
  struct suite_case c;
  memset(&c, 0, sizeof c);
  c.kernel = k;
  c.name = suite_names[k];
  c.dims = 1;
  c.local[0] = lx;
  c.local[1] = c.local[2] = 1;
  c.groups[1] = c.groups[2] = 1;
  c.h = 1;
  switch (k) {
  case SUITE_SAXPY: // (a, x, y, n), y in place
    c.w = w;
    c.groups[0] = suite_div_up(w, lx);
    c.args[c.nargs].kind = SUITE_ARG_F32;
    c.args[c.nargs++].f32 = 2.0f;
    suite_add_buf(&c, (size_t)w * 4, false);
    suite_add_buf(&c, (size_t)w * 4, true);
    suite_add_u32(&c, w);
    break;
  case SUITE_COPY: // (in, out, n)
    c.w = w;
    c.groups[0] = suite_div_up(w, lx);
    suite_add_buf(&c, (size_t)w * 4, false);
    suite_add_buf(&c, (size_t)w * 4, true);
    suite_add_u32(&c, w);
    break;
  case SUITE_REDUCE:  // (in, out[groups])
  case SUITE_WREDUCE: // (in, out[groups])
  case SUITE_SCAN:    // (in, out)
  case SUITE_WSCAN:   // (in, out)
  case SUITE_BITONIC: // (in, out)
    c.groups[0] = suite_div_up(w, lx);
    c.w = c.groups[0] * lx;
    suite_add_buf(&c, (size_t)c.w * 4, false);
    suite_add_buf(&c, (size_t)(k == SUITE_REDUCE || k == SUITE_WREDUCE ? c.groups[0] : c.w) * 4, true);
    break;
  case SUITE_MATMUL: // (a, b, c, n)
    c.w = suite_div_up(w, SUITE_TILE) * SUITE_TILE;
    c.dims = 2;
    c.local[0] = c.local[1] = SUITE_TILE;
    c.groups[0] = c.groups[1] = c.w / SUITE_TILE;
    suite_add_buf(&c, (size_t)c.w * c.w * 4, false);
    suite_add_buf(&c, (size_t)c.w * c.w * 4, false);
    suite_add_buf(&c, (size_t)c.w * c.w * 4, true);
    suite_add_u32(&c, c.w);
    break;
  case SUITE_HISTOGRAM: // (in, bins[SUITE_BINS], n), bins accumulate
    c.w = w;
    c.groups[0] = suite_div_up(w, lx * SUITE_HIST_PER_ITEM);
    suite_add_buf(&c, (size_t)w * 4, false);
    suite_add_buf(&c, SUITE_BINS * 4, true);
    suite_add_u32(&c, w);
    break;
  case SUITE_TRANSPOSE: // (in, out, w, h)
  case SUITE_STENCIL:   // (in, out, w, h)
    c.w = w;
    c.h = h;
    c.dims = 2;
    c.local[0] = k == SUITE_STENCIL ? lx : SUITE_TILE;
    c.local[1] = k == SUITE_STENCIL ? ly : SUITE_TILE;
    c.groups[0] = suite_div_up(w, c.local[0]);
    c.groups[1] = suite_div_up(h, c.local[1]);
    suite_add_buf(&c, (size_t)w * h * 4, false);
    suite_add_buf(&c, (size_t)w * h * 4, true);
    suite_add_u32(&c, w);
    suite_add_u32(&c, h);
    break;
  case SUITE_COMPACT: // (in, out, counts[groups]): each group's kept elements first, in order
    c.groups[0] = suite_div_up(w, lx);
    c.w = c.groups[0] * lx;
    suite_add_buf(&c, (size_t)c.w * 4, false);
    suite_add_buf(&c, (size_t)c.w * 4, true);
    suite_add_buf(&c, (size_t)c.groups[0] * 4, true);
    break;
  case SUITE_NBODY: // (pos, vel, pos_out, vel_out, n)
    c.groups[0] = suite_div_up(w, lx);
    c.w = c.groups[0] * lx;
    for (int i = 0; i < 4; i++)
      suite_add_buf(&c, (size_t)c.w * sizeof(struct suite_body), i >= 2);
    suite_add_u32(&c, c.w);
    break;
  case SUITE_SOFTMAX: // (in, out, cols), h rows of w
    c.w = w;
    c.h = h;
    c.groups[0] = h;
    suite_add_buf(&c, (size_t)w * h * 4, false);
    suite_add_buf(&c, (size_t)w * h * 4, true);
    suite_add_u32(&c, w);
    break;
  case SUITE_CONV2D: // (in, filter[SUITE_CONV_TAPS], out, w, h)
    c.w = w;
    c.h = h;
    c.dims = 2;
    c.local[0] = c.local[1] = SUITE_TILE;
    c.groups[0] = suite_div_up(w, SUITE_TILE);
    c.groups[1] = suite_div_up(h, SUITE_TILE);
    suite_add_buf(&c, (size_t)w * h * 4, false);
    suite_add_buf(&c, SUITE_CONV_TAPS * 4, false);
    suite_add_buf(&c, (size_t)w * h * 4, true);
    suite_add_u32(&c, w);
    suite_add_u32(&c, h);
    break;
  case SUITE_MANDEL: { // (out, w, h, x0, y0, step): x from -2.25 to 0.75, y centred on 0
    c.w = w;
    c.h = h;
    c.dims = 2;
    c.local[1] = ly;
    c.groups[0] = suite_div_up(w, lx);
    c.groups[1] = suite_div_up(h, ly);
    float step = 3.0f / (float)w;
    suite_add_buf(&c, (size_t)w * h * 4, true);
    suite_add_u32(&c, w);
    suite_add_u32(&c, h);
    suite_add_f32(&c, -2.25f);
    suite_add_f32(&c, -step * (float)(h / 2));
    suite_add_f32(&c, step);
    break;
  }
  case SUITE_SPMV: { // (row_ptr[w + 1], col[nnz], val[nnz], x[w], y[w], rows): w x w, CSR
    size_t nnz = 0;
    for (uint32_t r = 0; r < w; r++)
      nnz += suite_spmv_len(r);
    nnz = nnz ? nnz : 1;
    c.w = w;
    c.groups[0] = suite_div_up(w, lx);
    suite_add_buf(&c, ((size_t)w + 1) * 4, false);
    suite_add_buf(&c, nnz * 4, false);
    suite_add_buf(&c, nnz * 4, false);
    suite_add_buf(&c, (size_t)w * 4, false);
    suite_add_buf(&c, (size_t)w * 4, true);
    suite_add_u32(&c, w);
    break;
  }
  case SUITE_RADIX: // (in, out, counts[groups * SUITE_RADIX_DIGITS], n, shift)
    c.w = w;
    c.groups[0] = suite_div_up(w, lx);
    suite_add_buf(&c, (size_t)w * 4, false);
    suite_add_buf(&c, (size_t)w * 4, true);
    suite_add_buf(&c, (size_t)c.groups[0] * SUITE_RADIX_DIGITS * 4, true);
    suite_add_u32(&c, w);
    suite_add_u32(&c, SUITE_RADIX_SHIFT);
    break;
  case SUITE_BLACKSCHOLES: // (s, x, t, call, put, r, v, n)
    c.w = w;
    c.groups[0] = suite_div_up(w, lx);
    for (int i = 0; i < 5; i++)
      suite_add_buf(&c, (size_t)w * 4, i >= 3);
    suite_add_f32(&c, SUITE_BS_RATE);
    suite_add_f32(&c, SUITE_BS_VOL);
    suite_add_u32(&c, w);
    break;
  case SUITE_COUNT:
    break;
  }
  return c;
}

// The case with the suite's own group shapes (SUITE_WG, SUITE_TILE x SUITE_TILE).
static inline struct suite_case suite_case(enum suite_kernel k, uint32_t w, uint32_t h) {
  bool two_d = k == SUITE_STENCIL || k == SUITE_MANDEL;
  return suite_case_shaped(k, w, h, two_d ? SUITE_TILE : SUITE_WG, SUITE_TILE);
}

// The kernel arguments of case c as the kernel's C struct (what olLaunchKernel takes): pointers to bufs
// 8-aligned, 32-bit scalars 4-aligned, tail padding to 8. Returns the size written to out (<= 64 bytes:
// at most 5 pointers and 3 scalars).
static inline size_t suite_pack_args(const struct suite_case *c, void *const bufs[], unsigned char out[64]) {
  size_t off = 0;
  for (uint32_t a = 0; a < c->nargs; a++) {
    const struct suite_arg *x = &c->args[a];
    size_t s = x->kind == SUITE_ARG_BUF ? 8 : 4;
    off = (off + s - 1) / s * s;
    memcpy(out + off,
           x->kind == SUITE_ARG_BUF   ? (const void *)&bufs[x->buf]
           : x->kind == SUITE_ARG_U32 ? (const void *)&x->u32
                                      : (const void *)&x->f32,
           s);
    off += s;
  }
  return (off + 7) / 8 * 8;
}

static inline float suite_small(uint32_t seed, uint32_t i, uint32_t mod, int offset) {
  return (float)((int)(suite_hash(seed * 0x9e3779b9u + i) % mod) + offset);
}

// A float in [lo, lo + span) from a hash (24 bits of it).
static inline float suite_uniform(uint32_t seed, uint32_t i, float lo, float span) {
  return lo + (float)(suite_hash(seed * 0x9e3779b9u + i) >> 8) / (float)(1 << 24) * span;
}

// Fill the inputs of a case; zero its outputs.
static inline void suite_fill(const struct suite_case *c, void *const bufs[]) {
  for (uint32_t b = 0; b < c->nbufs; b++)
    if (c->output[b])
      memset(bufs[b], 0, c->bytes[b]);
  float *f0 = (float *)bufs[0];
  size_t n0 = c->bytes[0] / 4;
  switch (c->kernel) {
  case SUITE_SAXPY:
    for (size_t i = 0; i < n0; i++) {
      f0[i] = (float)(i % 1000);
      ((float *)bufs[1])[i] = 1.0f;
    }
    break;
  case SUITE_REDUCE:
  case SUITE_WREDUCE:
    for (size_t i = 0; i < n0; i++)
      f0[i] = (float)(i % 1000);
    break;
  case SUITE_SCAN:
  case SUITE_WSCAN:
    for (size_t i = 0; i < n0; i++)
      f0[i] = (float)(i % 7);
    break;
  case SUITE_MATMUL:
    for (size_t i = 0; i < n0; i++) {
      f0[i] = suite_small(1, (uint32_t)i, 5, -2);
      ((float *)bufs[1])[i] = suite_small(2, (uint32_t)i, 5, -2);
    }
    break;
  case SUITE_HISTOGRAM:
    for (size_t i = 0; i < n0; i++)
      ((uint32_t *)bufs[0])[i] = suite_hash((uint32_t)i) >> 3;
    break;
  case SUITE_COPY:
  case SUITE_TRANSPOSE:
    for (size_t i = 0; i < n0; i++)
      f0[i] = (float)(i % 16777216u);
    break;
  case SUITE_COMPACT: // about a third kept (the multiples of 3), in runs and alone
    for (size_t i = 0; i < n0; i++)
      ((uint32_t *)bufs[0])[i] = suite_hash((uint32_t)i) % 1000 + 1;
    break;
  case SUITE_STENCIL:
    for (size_t i = 0; i < n0; i++)
      f0[i] = suite_small(3, (uint32_t)i, 17, 0);
    break;
  case SUITE_BITONIC:
    for (size_t i = 0; i < n0; i++)
      f0[i] = suite_small(4, (uint32_t)i, 1000, 0);
    break;
  case SUITE_NBODY: {
    struct suite_body *p = (struct suite_body *)bufs[0], *v = (struct suite_body *)bufs[1];
    for (uint32_t i = 0; i < c->w; i++) {
      p[i] = (struct suite_body){suite_small(5, i, 5, -2), suite_small(6, i, 5, -2), suite_small(7, i, 5, -2),
                                 suite_small(8, i, 2, 1)};
      v[i] = (struct suite_body){suite_small(9, i, 5, -2), suite_small(10, i, 5, -2), suite_small(11, i, 5, -2), 0};
    }
    break;
  }
  case SUITE_SOFTMAX: // in [-10, 10]
    for (size_t i = 0; i < n0; i++)
      f0[i] = suite_small(12, (uint32_t)i, 2001, -1000) / 100.0f;
    break;
  case SUITE_CONV2D:
    for (size_t i = 0; i < n0; i++)
      f0[i] = suite_small(13, (uint32_t)i, 17, 0);
    for (uint32_t i = 0; i < SUITE_CONV_TAPS; i++)
      ((float *)bufs[1])[i] = suite_small(14, i, 5, -2);
    break;
  case SUITE_SPMV: {
    uint32_t *row_ptr = (uint32_t *)bufs[0], *col = (uint32_t *)bufs[1], k = 0;
    float *val = (float *)bufs[2], *x = (float *)bufs[3];
    for (uint32_t r = 0; r < c->w; r++) {
      row_ptr[r] = k;
      for (uint32_t e = suite_spmv_len(r); e > 0; e--, k++) {
        col[k] = suite_hash(k * 0x9e3779b9u + 15) % c->w;
        val[k] = suite_small(16, k, 5, -2);
      }
      x[r] = suite_small(17, r, 7, -3);
    }
    row_ptr[c->w] = k;
    break;
  }
  case SUITE_RADIX:
    for (size_t i = 0; i < n0; i++)
      ((uint32_t *)bufs[0])[i] = suite_hash((uint32_t)i * 0x9e3779b9u + 18);
    break;
  case SUITE_BLACKSCHOLES: // stock 5-30, strike 1-100, 0.25-10 years, as bench/vmath.c's
    for (uint32_t i = 0; i < c->w; i++) {
      f0[i] = suite_uniform(19, i, 5.0f, 25.0f);
      ((float *)bufs[1])[i] = suite_uniform(20, i, 1.0f, 99.0f);
      ((float *)bufs[2])[i] = suite_uniform(21, i, 0.25f, 9.75f);
    }
    break;
  case SUITE_MANDEL:
  case SUITE_COUNT:
    break;
  }
}

static int suite_cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

// The expected contents of output buffer b after `launches` launches (saxpy and histogram accumulate),
// computed serially on the host into `want` (c->bytes[b] bytes).
static inline void suite_reference(const struct suite_case *c, void *const bufs[], uint32_t b, uint32_t launches,
                                   void *want) {
  const float *f0 = (const float *)bufs[0];
  float *o = (float *)want;
  uint32_t w = c->w, h = c->h;
  switch (c->kernel) {
  case SUITE_SAXPY:
    for (uint32_t i = 0; i < w; i++)
      o[i] = 1.0f + 2.0f * f0[i] * (float)launches;
    break;
  case SUITE_COPY:
    memcpy(o, f0, (size_t)w * 4);
    break;
  case SUITE_REDUCE:
  case SUITE_WREDUCE:
    for (uint32_t g = 0; g < c->groups[0]; g++) {
      float s = 0;
      for (uint32_t t = 0; t < c->local[0]; t++)
        s += f0[g * c->local[0] + t];
      o[g] = s;
    }
    break;
  case SUITE_SCAN:
  case SUITE_WSCAN:
    for (uint32_t i = 0; i < w; i++)
      o[i] = (i % c->local[0] ? o[i - 1] : 0.0f) + f0[i];
    break;
  case SUITE_MATMUL: {
    const float *bm = (const float *)bufs[1];
    memset(o, 0, (size_t)w * w * 4);
    for (uint32_t i = 0; i < w; i++)
      for (uint32_t k = 0; k < w; k++)
        for (uint32_t j = 0; j < w; j++)
          o[i * w + j] += f0[i * w + k] * bm[k * w + j];
    break;
  }
  case SUITE_HISTOGRAM: {
    uint32_t *bins = (uint32_t *)want;
    memset(bins, 0, SUITE_BINS * 4);
    for (uint32_t i = 0; i < w; i++)
      bins[((const uint32_t *)bufs[0])[i] % SUITE_BINS] += launches;
    break;
  }
  case SUITE_TRANSPOSE:
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++)
        o[(size_t)x * h + y] = f0[(size_t)y * w + x];
    break;
  case SUITE_COMPACT: {
    const uint32_t *in = (const uint32_t *)bufs[0];
    uint32_t *u = (uint32_t *)want;
    memset(u, 0, c->bytes[b]);
    for (uint32_t g = 0; g < c->groups[0]; g++) {
      uint32_t kept = 0;
      for (uint32_t t = 0; t < c->local[0]; t++) {
        uint32_t v = in[g * c->local[0] + t];
        if (v % 3 == 0) {
          if (b == 1)
            u[g * c->local[0] + kept] = v;
          kept++;
        }
      }
      if (b == 2)
        u[g] = kept;
    }
    break;
  }
  case SUITE_STENCIL:
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
        size_t i = (size_t)y * w + x;
        o[i] = (x == 0 || y == 0 || x == w - 1 || y == h - 1)
                   ? f0[i]
                   : 4.0f * f0[i] - f0[i - w] - f0[i + w] - f0[i - 1] - f0[i + 1];
      }
    break;
  case SUITE_BITONIC:
    memcpy(o, f0, (size_t)w * 4);
    for (uint32_t g = 0; g < c->groups[0]; g++)
      qsort(o + (size_t)g * c->local[0], c->local[0], 4, suite_cmp_float);
    break;
  case SUITE_SOFTMAX: // in double precision
    for (uint32_t r = 0; r < h; r++) {
      const float *row = f0 + (size_t)r * w;
      double m = -INFINITY, sum = 0;
      for (uint32_t j = 0; j < w; j++)
        m = row[j] > m ? row[j] : m;
      for (uint32_t j = 0; j < w; j++)
        sum += exp((double)row[j] - m);
      for (uint32_t j = 0; j < w; j++)
        o[(size_t)r * w + j] = (float)(exp((double)row[j] - m) / sum);
    }
    break;
  case SUITE_CONV2D: {
    const float *f = (const float *)bufs[1];
    int r = SUITE_CONV_R;
    for (int y = 0; y < (int)h; y++)
      for (int x = 0; x < (int)w; x++) {
        float acc = 0;
        for (int dy = -r; dy <= r; dy++)
          for (int dx = -r; dx <= r; dx++)
            if (x + dx >= 0 && y + dy >= 0 && x + dx < (int)w && y + dy < (int)h)
              acc += f[(dy + r) * (2 * r + 1) + dx + r] * f0[(size_t)(y + dy) * w + (size_t)(x + dx)];
        o[(size_t)y * w + x] = acc;
      }
    break;
  }
  case SUITE_MANDEL: { // the kernel's operations, one per statement
    float x0 = c->args[3].f32, y0 = c->args[4].f32, step = c->args[5].f32;
    uint32_t *u = (uint32_t *)want;
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
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
        u[(size_t)y * w + x] = k;
      }
    break;
  }
  case SUITE_SPMV: {
    const uint32_t *row_ptr = (const uint32_t *)bufs[0], *col = (const uint32_t *)bufs[1];
    const float *val = (const float *)bufs[2], *x = (const float *)bufs[3];
    for (uint32_t r = 0; r < w; r++) {
      float acc = 0;
      for (uint32_t k = row_ptr[r]; k < row_ptr[r + 1]; k++)
        acc += val[k] * x[col[k]];
      o[r] = acc;
    }
    break;
  }
  case SUITE_RADIX: { // per group a stable counting sort by the digit
    const uint32_t *in = (const uint32_t *)bufs[0];
    uint32_t *u = (uint32_t *)want, lx = c->local[0];
    for (uint32_t g = 0; g < c->groups[0]; g++) {
      uint32_t n = w - g * lx < lx ? w - g * lx : lx, count[SUITE_RADIX_DIGITS] = {0}, at = 0;
      for (uint32_t i = 0; i < n; i++)
        count[(in[g * lx + i] >> SUITE_RADIX_SHIFT) % SUITE_RADIX_DIGITS]++;
      if (b == 2)
        memcpy(u + (size_t)g * SUITE_RADIX_DIGITS, count, sizeof count);
      else
        for (uint32_t d = 0; d < SUITE_RADIX_DIGITS; d++)
          for (uint32_t i = 0; i < n; i++)
            if ((in[g * lx + i] >> SUITE_RADIX_SHIFT) % SUITE_RADIX_DIGITS == d)
              u[g * lx + at++] = in[g * lx + i];
    }
    break;
  }
  case SUITE_BLACKSCHOLES: // the exact formula in double precision (the erfc normal distribution)
    for (uint32_t i = 0; i < w; i++) {
      double s = f0[i], x = ((const float *)bufs[1])[i], t = ((const float *)bufs[2])[i];
      double r = SUITE_BS_RATE, v = SUITE_BS_VOL;
      double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt(t)), d2 = d1 - v * sqrt(t);
      double e = exp(-r * t);
      o[i] = (float)(b == 3 ? s * 0.5 * erfc(-d1 / sqrt(2.0)) - x * e * 0.5 * erfc(-d2 / sqrt(2.0))
                            : x * e * 0.5 * erfc(d2 / sqrt(2.0)) - s * 0.5 * erfc(d1 / sqrt(2.0)));
    }
    break;
  case SUITE_NBODY: {
    const struct suite_body *p = (const struct suite_body *)bufs[0], *v = (const struct suite_body *)bufs[1];
    struct suite_body *out = (struct suite_body *)want;
    for (uint32_t i = 0; i < w; i++) {
      float ax = 0, ay = 0, az = 0;
      for (uint32_t j = 0; j < w; j++) {
        float dx = p[j].x - p[i].x, dy = p[j].y - p[i].y, dz = p[j].z - p[i].z;
        float f = p[j].m * (dx * dx + dy * dy + dz * dz + 1.0f);
        ax += f * dx;
        ay += f * dy;
        az += f * dz;
      }
      struct suite_body nv = {v[i].x + ax, v[i].y + ay, v[i].z + az, v[i].m};
      out[i] = b == 3 ? nv : (struct suite_body){p[i].x + nv.x, p[i].y + nv.y, p[i].z + nv.z, p[i].m};
    }
    break;
  }
  case SUITE_COUNT:
    break;
  }
}

// How far a float output element may be from the reference value `want`: 0 (exact) but for the kernels
// with exp and log. softmax: 1e-4 relative (its outputs are 2e-12 to 1, all normal; a float sum of at
// most a few thousand terms in any order and exp within a few ulp are well inside it). blackscholes:
// 1e-3 relative, absolute below 1 (bench/vmath.c's check: the CNDF polynomial is within 7.5e-8 of the
// exact distribution, the prices carry float rounding of log, exp and the put's cancellation). The CPU
// device's worst on 2026-12-03 (nvptx64 and amdgcn): 1.2e-6 for softmax, 1.0e-5 for blackscholes.
static inline double suite_tolerance(enum suite_kernel k, double want) {
  double mag = want < 0 ? -want : want;
  switch (k) {
  case SUITE_SOFTMAX:
    return 1e-4 * mag;
  case SUITE_BLACKSCHOLES:
    return 1e-3 * (mag > 1 ? mag : 1);
  default:
    return 0;
  }
}

// Compare every output of a case with the host reference after `launches` launches: the number of
// elements that differ (0 = all exact, or within suite_tolerance), and in `why` the first difference.
static inline size_t suite_check(const struct suite_case *c, void *const bufs[], uint32_t launches, char *why,
                                 size_t why_size) {
  size_t bad = 0;
  if (why_size)
    why[0] = 0;
  for (uint32_t b = 0; b < c->nbufs; b++) {
    if (!c->output[b])
      continue;
    void *want = malloc(c->bytes[b]);
    if (!want) {
      snprintf(why, why_size, "out of memory");
      return 1;
    }
    suite_reference(c, bufs, b, launches, want);
    const uint32_t *gw = (const uint32_t *)want, *gg = (const uint32_t *)bufs[b];
    bool ints = c->kernel == SUITE_HISTOGRAM || c->kernel == SUITE_COMPACT || c->kernel == SUITE_MANDEL ||
                c->kernel == SUITE_RADIX;
    for (size_t i = 0; i < c->bytes[b] / 4; i++) {
      float got = ((const float *)bufs[b])[i], wf = ((const float *)want)[i];
      double tol = ints ? 0 : suite_tolerance(c->kernel, wf);
      bool same = ints ? gg[i] == gw[i] : tol > 0 ? fabs((double)got - wf) <= tol : got == wf;
      if (!same && bad++ == 0) {
        if (ints)
          snprintf(why, why_size, "%s %ux%u: buffer %u element %zu is %u, want %u", c->name, c->w, c->h, b, i,
                   gg[i], gw[i]);
        else
          snprintf(why, why_size, "%s %ux%u: buffer %u element %zu is %g, want %g", c->name, c->w, c->h, b, i,
                   (double)((const float *)bufs[b])[i], (double)((const float *)want)[i]);
      }
    }
    free(want);
  }
  return bad;
}

#endif
