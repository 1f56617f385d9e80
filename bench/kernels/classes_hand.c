// The hand-written loops of bench/classes.c (kernels/classes.c's kernels as a C programmer writes them for a
// CPU), over [lo, hi) of rows or elements; -O3 -march=native (BENCH_MARCH) with glibc's vector math.
#include <math.h>
#include <stdint.h>
#include <stdatomic.h>
// hand loops over [lo, hi) of rows / elements
void h_csr(const uint32_t *rowp, const uint32_t *col, const float *val, const float *x, float *y, uint32_t lo,
           uint32_t hi, uint32_t W) {
  for (uint32_t r = lo; r < hi; r++) {
    float p[64] = {0};
    for (uint32_t j = rowp[r]; j < rowp[r + 1]; j++)
      p[(j - rowp[r]) % W] += val[j] * x[col[j]];
    for (uint32_t off = W / 2; off; off /= 2)
      for (uint32_t l = 0; l < off; l++)
        p[l] = p[l] + p[l + off];
    y[r] = p[0];
  }
}
void h_softmax(const float *in, float *out, uint32_t cols, uint32_t lo, uint32_t hi) {
  for (uint32_t r = lo; r < hi; r++) {
    const float *x = in + (uint64_t)r * cols;
    float m = -INFINITY, s = 0;
    for (uint32_t j = 0; j < cols; j++)
      m = fmaxf(m, x[j]);
    for (uint32_t j = 0; j < cols; j++)
      s += expf(x[j] - m);
    float inv = 1.0f / s;
    for (uint32_t j = 0; j < cols; j++)
      out[(uint64_t)r * cols + j] = expf(x[j] - m) * inv;
  }
}
void h_keyed(const uint32_t *keys, _Atomic uint32_t *hist, uint32_t lo, uint32_t hi) {
  uint32_t h[64] = {0};
  for (uint32_t i = lo; i < hi; i++)
    h[keys[i]]++;
  for (int k = 0; k < 64; k++)
    atomic_fetch_add_explicit(&hist[k], h[k], memory_order_relaxed);
}
void h_conv(const float *in, const float *w, float *out, uint32_t n, uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo; i < hi; i++) {
    float s = 0;
    for (int j = 0; j < 17; j++) {
      int64_t k = (int64_t)i + j - 8;
      s += w[j] * (k >= 0 && k < n ? in[k] : 0.0f);
    }
    out[i] = s;
  }
}
void h_dmath(const double *a, const double *b, double *o, uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo; i < hi; i++)
    o[i] = exp(-a[i]) * log(b[i]) + pow(b[i], 0.3);
}
void h_gsum(const float *in, float *out, uint32_t n, uint32_t lo, uint32_t hi, uint32_t W) {
  for (uint32_t w = lo; w < hi; w++) {
    float s = 0;
    for (uint32_t i = w * W; i < (w + 1) * W && i < n; i++)
      s += in[i];
    out[w] = s;
  }
}
void h_gstride(const float *x, const float *y, float *out, float a, uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo; i < hi; i++)
    out[i] = a * x[i] + y[i];
}
// (16 partial sums, which the compiler keeps in a vector: the kernel's work-items sum apart too)
void h_gridsum(const float *x, float *out, uint32_t lo, uint32_t hi) {
  float p[16] = {0}, s = 0;
  uint32_t i = lo;
  for (; i + 16 <= hi; i += 16)
    for (int k = 0; k < 16; k++)
      p[k] += x[i + k];
  for (; i < hi; i++)
    s += x[i];
  for (int k = 0; k < 16; k++)
    s += p[k];
  out[lo] = s;
}
void h_grid2d(const float *in, float *out, uint32_t w, uint32_t lo, uint32_t hi) {
  for (uint64_t i = (uint64_t)lo * w; i < (uint64_t)hi * w; i++)
    out[i] = in[i] * 0.5f + 1.0f;
}
void h_median(const float *in, float *out, uint32_t w, uint32_t h, uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo; i < hi; i++) {
    uint32_t x = i % w, y = i / w;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
      out[i] = in[i];
      continue;
    }
    float v[9];
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++)
        v[(dy + 1) * 3 + dx + 1] = in[i + dy * (int)w + dx];
    for (int a = 0; a < 9; a++)
      for (int b = 0; b < 8 - a; b++) {
        float l = fminf(v[b], v[b + 1]), m = fmaxf(v[b], v[b + 1]);
        v[b] = l;
        v[b + 1] = m;
      }
    out[i] = v[4];
  }
}
