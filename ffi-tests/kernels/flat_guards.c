// Guards on the flat work-item id f = tx + ty * nx + tz * nx * ny of 2-D and 3-D groups
// (src/jit/llvm/lower.cpp, narrowToGuards' row-affine ids): in each row (ty, tz) f is tx plus a row-invariant
// offset, so the x loop of every row runs only the ids that pass, as for a 1-D id.
// Shared arrays are 1024 long and filled everywhere, so partners beyond the group read defined data.
#include <gpuintrin.h>
#include <stdint.h>

#define FG_LEN 1024

static inline uint32_t flat_id(void) {
  uint32_t nx = __gpu_num_threads_x(), ny = __gpu_num_threads_y();
  return __gpu_thread_id_x() + __gpu_thread_id_y() * nx + __gpu_thread_id_z() * nx * ny;
}
static inline uint32_t flat_size(void) {
  return __gpu_num_threads_x() * __gpu_num_threads_y() * __gpu_num_threads_z();
}
static inline uint32_t flat_group(void) {
  return __gpu_block_id_x() + __gpu_block_id_y() * __gpu_num_blocks_x();
}

// The classic tree reduction (bench/kernels/suite.c's reduce) over the flat id: out[g] is the group's
// values added pairwise, k = n / 2, n / 4, ... (their sum when n is a power of two).
__gpu_kernel void flat_tree_sum(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[FG_LEN];
  uint32_t f = flat_id(), n = flat_size(), g = flat_group();
  s[f] = in[g * n + f];
  __gpu_sync_threads();
  for (uint32_t k = n / 2; k > 0; k >>= 1) {
    if (f < k)
      s[f] += s[f + k];
    __gpu_sync_threads();
  }
  if (f == 0)
    out[g] = s[0];
}

// Two tree reductions of one group's n values: interleaved (f % 2k == 0 && f + k < n) and sequential
// (f < k && f + k < n, k from the power of two at or above n, halving); out[2g], out[2g + 1].
__gpu_kernel void flat_reduce(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[FG_LEN], t[FG_LEN];
  uint32_t f = flat_id(), n = flat_size(), g = flat_group();
  s[f] = in[g * n + f];
  t[f] = s[f] * 3 + 1;
  __gpu_sync_threads();
  for (uint32_t k = 1; k < n; k <<= 1) {
    if (f % (2 * k) == 0 && f + k < n)
      s[f] += s[f + k];
    __gpu_sync_threads();
  }
  uint32_t p = 1;
  while (p < n)
    p <<= 1;
  for (uint32_t k = p >> 1; k > 0; k >>= 1) {
    if (f < k && f + k < n)
      t[f] += t[f + k];
    __gpu_sync_threads();
  }
  if (f == 0) {
    out[2 * g] = s[0];
    out[2 * g + 1] = t[0];
  }
}

// One region per guard form on f with uniform (argument) operands; out[g * n + f] combines them.
__gpu_kernel void flat_guards(uint32_t *out, uint32_t k, uint32_t j, uint32_t m, uint32_t q) {
  static __gpu_local uint32_t r[5][FG_LEN];
  uint32_t f = flat_id(), n = flat_size(), g = flat_group();
  for (uint32_t i = f; i < FG_LEN; i += n)
    for (int c = 0; c < 5; c++)
      r[c][i] = 0;
  __gpu_sync_threads();
  if (f < k)
    r[0][f] = f + 1;
  __gpu_sync_threads();
  if (f >= k)
    r[1][f] = f * 2 + 3;
  __gpu_sync_threads();
  if ((f ^ j) > f) { // bit hb(j) of f clear
    r[2][f] += f + 5;
    r[2][f ^ j] += 7;
  }
  __gpu_sync_threads();
  if ((f & m) == 0)
    r[3][f] = f * 5 + 1;
  __gpu_sync_threads();
  if (f % q == 0)
    r[4][f] = f + 9;
  __gpu_sync_threads();
  uint32_t acc = 0;
  for (int c = 0; c < 5; c++)
    acc = acc * 31 + r[c][f];
  out[g * n + f] = acc;
}

// Without barriers: the work-item loop nest itself is narrowed.
__gpu_kernel void flat_guards_nobar(uint32_t *out, uint32_t k, uint32_t m) {
  uint32_t f = flat_id(), n = flat_size(), g = flat_group();
  if (f >= k || (f & m) != 0)
    return;
  out[g * n + f] = f * 3 + 1;
}

// Guarded pieces one after another in one region (narrowToGuards' sequences): the first work-item's
// loop, then `f < j`, `k <= f < k + 3`, `f > j + 2`, with a value every work-item computes in between.
// A work-item outside every piece only computes there, so the loops run over the box around the pieces'
// ids (the guards stay). out[g * n + f] combines what the pieces stored.
__gpu_kernel void flat_pieces(uint32_t *out, uint32_t k, uint32_t j) {
  static __gpu_local uint32_t r[4][FG_LEN];
  uint32_t f = flat_id(), n = flat_size(), g = flat_group();
  for (uint32_t i = f; i < FG_LEN; i += n)
    for (int c = 0; c < 4; c++)
      r[c][i] = 0;
  __gpu_sync_threads();
  uint32_t w = f < k ? f * 2 + 1 : 5;
  if (f == 0)
    for (uint32_t i = 0; i < n && i < k; i++)
      r[0][i] = i * 7 + 1;
  if (f < j)
    r[1][f] = f + 3;
  if (f >= k && f < k + 3)
    r[2][f] = w + f;
  if (f > j + 2)
    r[3][f] = w;
  __gpu_sync_threads();
  uint32_t acc = 0;
  for (int c = 0; c < 4; c++)
    acc = acc * 31 + r[c][f];
  out[g * n + f] = acc;
}
