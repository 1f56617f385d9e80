// Warp collectives where a warp's lanes reach them apart (divergent branches, lanes that left, a loop
// each lane leaves in its own iteration): they see the lanes that reach them together, the GPU's active
// lanes. jit::llvm::tests::warp_collectives_see_the_active_lanes. 1-D groups; out has `per` u64 per
// work-item, left as it was by a lane that returns.
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// Each side of a branch on v & 1: its lanes, a ballot among them, the first one's value.
__gpu_kernel void sides(const uint32_t *in, uint64_t *out) {
  uint32_t i = gid(), v = in[i];
  uint64_t m, b;
  uint32_t f;
  if (v & 1) {
    m = __gpu_lane_mask();
    b = __gpu_ballot(m, (v & 2) != 0);
    f = __gpu_read_first_lane_u32(m, i);
  } else {
    m = __gpu_lane_mask();
    b = __gpu_ballot(m, (v & 4) != 0);
    f = __gpu_read_first_lane_u32(m, i * 3u);
  }
  out[3 * i] = m;
  out[3 * i + 1] = b;
  out[3 * i + 2] = f;
}

// The lanes with v % 3 == 0 return; the others: a ballot, the lanes with the same v % 4 (match_any,
// gpuintrin's loop on amdgcn, match.any.sync on nvptx64) and whether all hold the same i / 40 (match_all).
__gpu_kernel void leave(const uint32_t *in, uint64_t *out) {
  uint32_t i = gid(), v = in[i];
  if (v % 3 == 0)
    return;
  out[3 * i] = __gpu_ballot(__gpu_lane_mask(), v & 1);
  out[3 * i + 1] = __gpu_match_any_u32(__gpu_lane_mask(), v % 4);
  out[3 * i + 2] = __gpu_match_all_u32(__gpu_lane_mask(), i / 40);
}

// Warp-aggregated atomics: the lanes holding the same key elect the lowest to add their number.
__gpu_kernel void keyed(const uint32_t *in, uint32_t *hist, uint32_t n) {
  uint32_t i = gid();
  if (i < n) {
    uint32_t k = in[i] % 16;
    uint64_t peers = __gpu_match_any_u32(__gpu_lane_mask(), k);
    if (__gpu_lane_id() == (uint32_t)__builtin_ctzll(peers))
      __scoped_atomic_fetch_add(&hist[k], (uint32_t)__builtin_popcountll(peers), __ATOMIC_RELAXED,
                                __MEMORY_SCOPE_DEVICE);
  }
}

// A warp's sum behind a bounds guard (n short of the grid): nvptx64's gpuintrin shuffle gives 0 from a lane
// outside its mask (`__gpu_lane_mask()`, the lanes that passed the guard), so every lane of the last warp
// gets the sum of its active lanes.
__gpu_kernel void guarded_sum(const uint32_t *in, uint32_t *out, uint32_t n) {
  uint32_t i = gid();
  if (i < n) {
    uint32_t v = in[i], w = __gpu_num_lanes(), lane = __gpu_lane_id();
    for (uint32_t off = w / 2; off; off /= 2)
      v += __gpu_shuffle_idx_u32(__gpu_lane_mask(), lane ^ off, v, w);
    out[i] = v;
  }
}

#ifdef __NVPTX__
// sm_80's warp reductions (CUDA's `__reduce_*_sync`, nvvm redux.sync) over the lanes that did not return
// (v % 5 != 0: the active mask), the fourth over the even lanes among them, the fifth of a value computed
// from a mask just before it.
__gpu_kernel void reduces(const uint32_t *in, uint32_t *out) {
  uint32_t i = gid(), v = in[i];
  if (v % 5 == 0)
    return;
  uint32_t m = __nvvm_activemask();
  out[5 * i] = __nvvm_redux_sync_add(v, m);
  out[5 * i + 1] = __nvvm_redux_sync_umin(v, m);
  out[5 * i + 2] = (uint32_t)__nvvm_redux_sync_max((int)v, m);
  out[5 * i + 3] = __nvvm_redux_sync_xor(v, 0x55555555u & m);
  out[5 * i + 4] = __nvvm_redux_sync_add(__nvvm_activemask() & 7u, ~0u);
}
#endif
