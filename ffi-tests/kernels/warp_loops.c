// Loops the same for a warp's lanes between warp collectives (ol-warp-uniform-loops): a sum over shared
// memory up to the warp's index, a search of a sorted buffer for the warp's first index, and loops that
// must stay per lane (a trip count of the lane's, a loop only some lanes run, memory the lanes write).
// 1-, 2- and 3-D groups (flat ids).
#include "flat_ids.h"

// Each group's multiples of 3 ranked in order (~0 for the others): a warp's ballot counts its own into
// shared memory; after the barrier each lane adds the counts of the warps before its own (weighted, so
// that the order of the loop's terms shows) to its place among its warp's. counts[group]: the total.
__gpu_kernel void ranks(const uint32_t *in, uint32_t *out, uint32_t *counts) {
  static __gpu_local uint32_t kept[64];
  uint32_t t = flat(), nt = nthreads(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id(), w = t / lanes;
  uint32_t g = group() * nt + t;
  uint32_t v = in[g];
  _Bool keep = v % 3 == 0;
  uint64_t mask = __gpu_ballot(__gpu_lane_mask(), keep);
  if (lane == 0)
    kept[w] = (uint32_t)__builtin_popcountll(mask);
  __gpu_sync_threads();
  uint32_t before = 0, weighted = 0;
  for (uint32_t k = 0; k < w; k++) {
    before += kept[k];
    weighted = weighted * 3 + kept[k];
  }
  out[2 * g] = keep ? before + (uint32_t)__builtin_popcountll(mask & ((1ull << lane) - 1)) : ~0u;
  out[2 * g + 1] = weighted;
  if (t == nt - 1)
    counts[group()] = before + kept[w];
}

// Between two shuffles, each warp finds its segment: the entries of the sorted `ends` (n of them) not
// above its first global index (a loop with two exits, over a kernel buffer); each lane adds it to its
// neighbour's value and takes its xor partner's.
__gpu_kernel void segments(const uint32_t *in, const uint32_t *ends, uint32_t n, uint32_t *out) {
  uint32_t t = flat(), nt = nthreads(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id();
  uint32_t g = group() * nt + t;
  uint32_t v = __gpu_shuffle_idx_u32(__gpu_lane_mask(), (lane + 1) & (lanes - 1), in[g], lanes);
  uint32_t first = group() * nt + t / lanes * lanes;
  uint32_t s = 0;
  while (s < n && ends[s] <= first)
    s++;
  v = __gpu_shuffle_idx_u32(__gpu_lane_mask(), lane ^ 1, v * 1000 + s, lanes);
  out[g] = v;
}

// Loops that stay per lane, between two shuffles: one up to the lane's id, one only odd lanes run, one
// over shared memory that the lanes write to in the same stretch (elsewhere, but the same variable).
__gpu_kernel void perlane(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t sh[1024];
  uint32_t t = flat(), nt = nthreads(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id(), w = t / lanes;
  uint32_t g = group() * nt + t;
  sh[t] = in[g] ^ 0x55u;
  __gpu_sync_threads();
  uint32_t v = __gpu_shuffle_idx_u32(__gpu_lane_mask(), lane ^ 1, in[g], lanes);
  uint32_t a = 0, b = 0, c = 0;
  for (uint32_t k = 0; k < lane; k++)
    a += in[group() * nt + k];
  if (lane & 1)
    for (uint32_t k = 0; k < w; k++)
      b += in[group() * nt + k * 7 % nt];
  sh[nt + t] = v;
  for (uint32_t k = 0; k <= w; k++)
    c += sh[k];
  v = __gpu_shuffle_idx_u32(__gpu_lane_mask(), lane ^ 2, v + a + 3 * b + 5 * c, lanes);
  out[g] = v;
}
