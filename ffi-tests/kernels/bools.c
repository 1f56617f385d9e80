// Booleans live across barriers (their demotion slots hold bytes, cbsWidenBoolSlots): two predicates of
// each work-item kept across group barriers and, in `wbools`, across a ballot and a shuffle (ol-warp-lanes).
// 1-, 2- and 3-D groups (flat ids).
#include "flat_ids.h"

__gpu_kernel void bools(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  uint32_t t = flat(), nt = nthreads(), g = group() * nt + t;
  _Bool a = in[g] % 3 == 0, b = (in[g] & 4) != 0;
  s[t] = in[g];
  __gpu_sync_threads();
  uint32_t v = s[nt - 1 - t];
  __gpu_sync_threads();
  s[t] = v + a;
  __gpu_sync_threads();
  out[g] = (a ? s[(t + 1) % nt] : 7u) + (b ? 100u : 0u) + (a != b);
}

__gpu_kernel void wbools(const uint32_t *in, uint32_t *out) {
  uint32_t t = flat(), nt = nthreads(), g = group() * nt + t, lane = __gpu_lane_id(), lanes = __gpu_num_lanes();
  _Bool a = in[g] % 3 == 0, b = (in[g] & 4) != 0;
  uint64_t m = __gpu_ballot(__gpu_lane_mask(), a);
  uint32_t x = __gpu_shuffle_idx_u32(__gpu_lane_mask(), (lane + 1) & (lanes - 1), in[g], lanes);
  out[g] = (a ? (uint32_t)__builtin_popcountll(m & ((1ull << lane) - 1)) : 1000u + x) + (b ? 100000u : 0u);
}
