// Shared tiles filled by the whole group with a constant-bounded block-stride loop (a halo past the group's
// own elements, bins to zero), for the JIT's `halo_tiles_match_the_host` (src/jit/llvm/tests.rs;
// ol-group-loops in src/jit/llvm/lower/README.md). Groups of WG work-items.
#include <gpuintrin.h>
#include <stdint.h>

#define WG 64
#define R 4
#define BINS 300

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// A 9-tap convolution through a tile with a halo of R each side: WG + 2R elements over WG work-items (the
// loop's second round is the halo's last 2R), the input's ends read as 0.
__gpu_kernel void halo(const float *in, const float *w, float *out, uint32_t n) {
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

// A group's histogram of BINS bins: zeroed by the group, counted with shared atomics, added to the output.
__gpu_kernel void hist(const uint32_t *in, uint32_t *out, uint32_t n) {
  static __gpu_local uint32_t bins[BINS];
  uint32_t t = __gpu_thread_id_x(), g = gid();
  for (uint32_t k = t; k < BINS; k += WG)
    bins[k] = 0;
  __gpu_sync_threads();
  if (g < n)
    __scoped_atomic_fetch_add(&bins[in[g] % BINS], 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_WRKGRP);
  __gpu_sync_threads();
  for (uint32_t k = t; k < BINS; k += WG)
    if (bins[k])
      __scoped_atomic_fetch_add(&out[k], bins[k], __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}
