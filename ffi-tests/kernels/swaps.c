// Conditional swaps of two shared elements a work-item read (src/jit/llvm/lower.cpp: speculateSharedStores
// makes the stores selects, flattenDecision the decision in front of them, versionShortRuns gives run
// loops of 1, 2 or 4 ids a copy with constant runs). Each group works on its own SW_LEN elements, all
// of them filled and written back, so partners t ^ j beyond the group read and write defined data.
#include <gpuintrin.h>
#include <stdint.h>

#define SW_LEN 1024

static void load_all(__gpu_local float *s, const float *in) {
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), g = __gpu_block_id_x();
  for (uint32_t i = t; i < SW_LEN; i += n)
    s[i] = in[g * SW_LEN + i];
}

static void store_all(float *out, const __gpu_local float *s) {
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), g = __gpu_block_id_x();
  for (uint32_t i = t; i < SW_LEN; i += n)
    out[g * SW_LEN + i] = s[i];
}

// The bitonic compare-exchange of this work-item t with its partner t ^ j (the one with the higher id
// does nothing): ascending where t & k is 0, descending elsewhere.
static void compare_exchange(__gpu_local float *s, uint32_t j, uint32_t k) {
  uint32_t t = __gpu_thread_id_x(), p = t ^ j;
  if (p > t) {
    float a = s[t], b = s[p];
    if ((t & k) == 0 ? a > b : a < b) {
      s[t] = b;
      s[p] = a;
    }
  }
}

// One compare-exchange phase of a bitonic network, j and k kernel arguments: j a power of two narrows to
// runs of j ids (rewritten t + j only where j is known to be one, which it is not here); j = 3, 5, 6 also
// narrow to runs (of bit hb(j)) but keep t ^ j; j = 0 runs no id.
__gpu_kernel void swap_phase(const float *in, float *out, uint32_t j, uint32_t k) {
  static __gpu_local float s[SW_LEN];
  load_all(s, in);
  __gpu_sync_threads();
  compare_exchange(s, j, k);
  __gpu_sync_threads();
  store_all(out, s);
}

// The merge phases j = 2^sh, ..., 2, 1 of a bitonic network for one k: j is a proven power of two (a
// shift of 1, halved), so t ^ j becomes t + j and the short runs get their constant copies.
__gpu_kernel void swap_merge(const float *in, float *out, uint32_t sh, uint32_t k) {
  static __gpu_local float s[SW_LEN];
  load_all(s, in);
  __gpu_sync_threads();
  for (uint32_t j = 1u << sh; j > 0; j >>= 1) {
    compare_exchange(s, j, k);
    __gpu_sync_threads();
  }
  store_all(out, s);
}

// A swap that may be of one element with itself: with j = 0 every work-item's partner is itself
// (p == t), and an equal pair swaps on the way up; the guard p >= t is no run form (the loop keeps it).
__gpu_kernel void swap_self(const float *in, float *out, uint32_t j, uint32_t k) {
  static __gpu_local float s[SW_LEN];
  uint32_t t = __gpu_thread_id_x();
  load_all(s, in);
  __gpu_sync_threads();
  uint32_t p = t ^ j;
  if (p >= t) {
    float a = s[t], b = s[p];
    if ((t & k) == 0 ? a >= b : a < b) {
      s[t] = b + 1.0f;
      s[p] = a + 2.0f;
    }
  }
  __gpu_sync_threads();
  store_all(out, s);
}
