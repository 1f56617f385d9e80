// Reduction loops per work-item, as clang's nvptx64 pipeline unrolls them by 4 with a remainder loop
// (ol-reroll-loops rolls them back): several chains in one loop (an integer count, a float sum and
// difference, an unsigned max, an xor), a trip count that differs between work-items in a kernel with
// barriers (`j < t`), and one that is the same for all in a kernel without (`k < n`, any n).
#include <gpuintrin.h>
#include <stdint.h>

// For each work-item t of a group: over the group's earlier items j < t, how many have t's key, the
// float sum and difference of their values, their largest key and the xor of their keys.
__gpu_kernel void ranks(const uint32_t *keys, const float *vals, uint32_t *out, float *fout) {
  static __gpu_local uint32_t k[256];
  static __gpu_local float v[256];
  uint32_t t = __gpu_thread_id_x(), g = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  uint32_t key = keys[g];
  k[t] = key;
  v[t] = vals[g];
  __gpu_sync_threads();
  uint32_t same = 0, top = 0, x = 0;
  float sum = 0.0f, diff = 1.0f;
  for (uint32_t j = 0; j < t; j++) {
    same += k[j] == key;
    sum += v[j];
    diff -= v[j];
    top = top > k[j] ? top : k[j];
    x ^= k[j] * 2654435761u;
  }
  out[3 * g] = same;
  out[3 * g + 1] = top;
  out[3 * g + 2] = x;
  fout[2 * g] = sum;
  fout[2 * g + 1] = diff;
}

// For each work-item: the float sum of its row of n values from `start`, and how many of them are
// negative.
__gpu_kernel void rows(const float *a, uint32_t n, uint32_t start, float *sums, uint32_t *neg) {
  uint32_t g = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  const float *r = a + (uint64_t)g * n;
  float s = 0.0f;
  uint32_t c = 0;
  for (uint32_t i = start; i < n; i++) {
    s += r[i];
    c += r[i] < 0.0f;
  }
  sums[g] = s;
  neg[g] = c;
}

// Integer reductions over the group's earlier items, one operation per loop (a count, an or, an unsigned
// max, an xor) and no barrier: amdgcn's clang vectorises each loop (two i32 lanes, unrolled by 8, then
// scalarised into two chains and remainder loops); ol-reroll-loops rolls the main loop back into one
// chain. out[4 g ..]: the four results of work-item g.
__gpu_kernel void counts(const uint32_t *keys, uint32_t *out) {
  uint32_t n = __gpu_num_threads_x(), base = __gpu_block_id_x() * n, g = base + __gpu_thread_id_x();
  uint32_t key = keys[g], same = 0, any = 0, top = 0, x = 0;
  for (uint32_t j = base; j < g; j++)
    same += keys[j] == key;
  for (uint32_t j = base; j < g; j++)
    any |= keys[j] << (j & 7);
  for (uint32_t j = base; j < g; j++)
    top = top > keys[j] * 3u ? top : keys[j] * 3u;
  for (uint32_t j = base; j < g; j++)
    x ^= keys[j] * 2654435761u;
  out[4 * g] = same;
  out[4 * g + 1] = any;
  out[4 * g + 2] = top;
  out[4 * g + 3] = x;
}
