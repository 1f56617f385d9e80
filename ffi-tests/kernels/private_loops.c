// Loops over a work-item's private array (ol-unroll-private-loops; src/jit/llvm/tests.rs
// private_loops_match_the_host): a 3x3 median by a bubble sort (a triangular nest), a matrix times a
// work-item's vector, and an insertion sort whose inner loop exits on the data (not unrolled: its parent
// is).
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// the median of each pixel's 3x3 window (the border copied), w x h pixels on a 1-D grid
__gpu_kernel void median9(const float *in, float *out, uint32_t w, uint32_t h) {
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

// a 16 x 16 matrix (a table in memory) times a work-item's 16 values, in private arrays; then the
// largest product and one chosen by the data
__gpu_kernel void matvec16(const uint32_t *a, const uint32_t *in, uint32_t *out, uint32_t n) {
  uint32_t i = gid();
  if (i >= n)
    return;
  uint32_t v[16], r[16];
  for (int k = 0; k < 16; k++)
    v[k] = in[(i + k) % n];
  for (int k = 0; k < 16; k++) {
    uint32_t s = 0;
    for (int j = 0; j < 16; j++)
      s += a[k * 16 + j] * v[j];
    r[k] = s;
  }
  uint32_t m = r[0];
  for (int k = 1; k < 16; k++)
    m = m > r[k] ? m : r[k];
  out[i] = m ^ r[in[i] & 15];
}

// an insertion sort of 8 values: its inner loop stops on the data
__gpu_kernel void insertion8(const uint32_t *in, uint32_t *out, uint32_t n) {
  uint32_t i = gid();
  if (i >= n)
    return;
  uint32_t v[8];
  for (int k = 0; k < 8; k++)
    v[k] = in[(i * 8 + k) % n] ^ (uint32_t)(k * 2654435761u);
  for (int a = 1; a < 8; a++)
    for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
      uint32_t t = v[b];
      v[b] = v[b - 1];
      v[b - 1] = t;
    }
  for (int k = 0; k < 8; k++)
    out[i * 8 + k] = v[k];
}

// a private array written at constant indices and read at one the data chooses: it stays in memory
// (SROA cannot take it), in a body with no loop, so the work-item loop around it vectorises
__gpu_kernel void pick16(const uint32_t *in, uint32_t *out, uint32_t n) {
  uint32_t i = gid();
  if (i >= n)
    return;
  uint32_t r[16];
#pragma unroll
  for (int k = 0; k < 16; k++)
    r[k] = in[(i + k) % n] * (uint32_t)(k + 1);
  out[i] = r[in[i] & 15] + r[(in[i] >> 4) & 15];
}
