// Work-items that leave early while the others go on to barriers and warp collectives (CUDA's exited threads:
// a bounds guard around a barrier, a return before one), for the JIT's `early_exits_match_the_host`
// (src/jit/llvm/tests.rs; ol-early-exits in src/jit/llvm/lower/README.md).
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// A bounds guard around a group barrier: each work-item below n reads its neighbour among those below n.
__gpu_kernel void guard(const float *in, float *out, uint32_t n) {
  static __gpu_local float s[256];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(), g = gid();
  if (g < n) {
    s[t] = in[g];
    __gpu_sync_threads();
    uint32_t left = n - __gpu_block_id_x() * nt, live = left < nt ? left : nt;
    out[g] = s[(t + 1) % live] * 2.0f + s[t];
  }
}

// Work-items with a negative value leave after the first barrier (with a store); the others run m rounds of
// two barriers each, reading the shared array where those that left keep their first value.
__gpu_kernel void rounds(const float *in, float *out, uint32_t m) {
  static __gpu_local float s[256];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(), g = gid();
  float v = in[g];
  s[t] = v;
  __gpu_sync_threads();
  if (v < 0.0f) {
    out[g] = -1.0f;
    return;
  }
  float a = v;
  for (uint32_t k = 0; k < m; k++) {
    a += s[(t + k) % nt];
    __gpu_sync_threads();
    s[t] = a;
    __gpu_sync_threads();
  }
  out[g] = a;
}

// A return before a ballot and a group barrier: each warp's count of the lanes left with a positive value,
// and the group's through shared memory.
__gpu_kernel void ballots(const float *in, uint32_t *out, uint32_t n) {
  static __gpu_local uint32_t c[64];
  uint32_t t = __gpu_thread_id_x(), g = gid(), w = __gpu_num_lanes();
  if (g >= n)
    return;
  uint64_t b = __gpu_ballot(__gpu_lane_mask(), in[g] > 0.0f);
  if (__gpu_lane_id() == (uint32_t)__builtin_ctzll(__gpu_lane_mask()))
    c[t / w] = (uint32_t)__builtin_popcountll(b);
  __gpu_sync_threads();
  out[2 * g] = (uint32_t)__builtin_popcountll(b);
  out[2 * g + 1] = c[0];
}

#ifdef __NVPTX__
// A warp's butterfly sum behind a return, then the warps' sums added through shared memory by the first
// work-item (nvptx64: a lane outside the mask gives 0).
__gpu_kernel void wsums(const float *in, float *out, uint32_t n) {
  static __gpu_local float p[64];
  uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(), g = gid(), w = __gpu_num_lanes(), l = __gpu_lane_id();
  if (g >= n)
    return;
  float v = in[g];
  for (uint32_t d = w / 2; d > 0; d >>= 1)
    v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ d, v, w);
  if (l == 0)
    p[t / w] = v;
  __gpu_sync_threads();
  if (t == 0) {
    uint32_t left = n - __gpu_block_id_x() * nt, live = left < nt ? left : nt;
    float s = 0.0f;
    for (uint32_t k = 0; k < (live + w - 1) / w; k++)
      s += p[k];
    out[__gpu_block_id_x()] = s;
  }
}
#endif
