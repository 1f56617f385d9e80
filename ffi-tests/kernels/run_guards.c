// Guards on bit patterns of the work-item id (src/jit/llvm/lower.cpp, matchRunGuard): the region loops run
// only the runs of matching ids where the form applies, and the guarded loop where it does not (a mask
// that is neither a power of two nor 2^k - 1, divergent operands, the flat id of a 2-D group).
// Shared arrays are 1024 long (seven of them stay under CUDA's 48 KiB of static shared memory, which the
// PTX test's ptxas run checks) and filled everywhere, so partners t ^ j beyond the group read defined data.
#include <gpuintrin.h>
#include <stdint.h>

#define RG_LEN 1024

// One region per guard form; j, m, q, mask are kernel arguments (uniform, unknown at compile time).
__gpu_kernel void run_guards(const uint32_t *in, uint32_t *out, uint32_t j, uint32_t m, uint32_t q,
                             uint32_t mask) {
  static __gpu_local uint32_t s[RG_LEN], r[6][RG_LEN];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  for (uint32_t i = t; i < RG_LEN; i += n) {
    s[i] = i < n ? in[base + i] : i * 7 % 13;
    for (int k = 0; k < 6; k++)
      r[k][i] = 0;
  }
  __gpu_sync_threads();
  uint32_t p = t ^ j;
  if (p > t) { // bit hb(j) of t clear
    r[0][t] = s[t] + 2 * s[p];
    r[0][p] = s[t] - s[p];
  }
  __gpu_sync_threads();
  if ((t & m) == 0) // runs of m (m a power of two), every 2^k-th id (m = 2^k - 1), else guarded
    r[1][t] = s[t | m] * 3 + 1;
  __gpu_sync_threads();
  if ((t & m) != 0)
    r[2][t] = s[t ^ m] - 5;
  __gpu_sync_threads();
  if (t % q == 0) // every q-th id
    r[3][t] = s[t] + 100;
  __gpu_sync_threads();
  if ((t & mask) == 0 && t + 2 < n) // with an affine bound in the same branch
    r[4][t] = s[(t + 1) % n] * 2;
  __gpu_sync_threads();
  if ((t & s[t]) == 0) // divergent mask: never narrowed
    r[5][t] = s[t] + 9;
  __gpu_sync_threads();
  uint32_t acc = 0;
  for (int k = 0; k < 6; k++)
    acc = acc * 31 + r[k][t];
  out[base + t] = acc;
}

// A sorting-network-like loop: j runs over powers of two (proved, so t ^ j becomes t + j in the loop),
// partners beyond the group skipped.
__gpu_kernel void xor_network(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[RG_LEN];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  s[t] = in[base + t];
  __gpu_sync_threads();
  for (uint32_t k = 2; k <= 2 * n; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      uint32_t p = t ^ j;
      if (p > t && p < n) {
        uint32_t a = s[t], b = s[p];
        if ((t & k) == 0 ? a > b : a < b) {
          s[t] = b;
          s[p] = a;
        }
      }
      __gpu_sync_threads();
    }
  out[base + t] = s[t];
}

// 2-D groups: a guard on the x id (narrowed in x) and one on the flat id tx + ty * nx (guarded loop).
__gpu_kernel void run_guards_2d(uint32_t *out, uint32_t m) {
  static __gpu_local uint32_t a[1024], b[1024];
  uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y(), nx = __gpu_num_threads_x();
  uint32_t f = tx + ty * nx, nf = nx * __gpu_num_threads_y();
  uint32_t base = (__gpu_block_id_x() + __gpu_block_id_y() * __gpu_num_blocks_x()) * nf;
  a[f] = 0;
  b[f] = 0;
  __gpu_sync_threads();
  if ((tx & m) == 0)
    a[f] = tx * 100 + ty + 1;
  __gpu_sync_threads();
  if ((f & m) != 0)
    b[f] = f + 7;
  __gpu_sync_threads();
  out[base + f] = a[f] * 3 + b[(f + 1) % nf];
}

// Without barriers: the work-item loop itself is narrowed (or versioned).
__gpu_kernel void xor_guard_nobar(uint32_t *out, uint32_t j) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  if ((t ^ j) <= t)
    return;
  out[i] = (t ^ j) * 2 + 1;
}

__gpu_kernel void mask_guard_nobar(uint32_t *out, uint32_t m) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  if ((t & m) != 0)
    return;
  out[i] = t + 5;
}

// Conditional stores to shared memory the work-item read before (made unconditional by
// speculateSharedStores), one of them after another conditional store to the same element.
__gpu_kernel void cond_stores(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  s[t] = in[base + t];
  __gpu_sync_threads();
  uint32_t a = s[t];
  if (a & 1)
    s[t] = a * 3;
  uint32_t b = in[base + n - 1 - t];
  if (b > a)
    s[t] = b;
  __gpu_sync_threads();
  out[base + t] = s[(t + 1) % n];
}
