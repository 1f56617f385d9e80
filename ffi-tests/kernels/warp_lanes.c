// Warp collectives between group barriers (ol-warp-lanes): shuffles under branches that differ between
// warps, gpuintrin's lane library (scan, sum, ballot, first lane), and shuffles in a loop whose trip
// count differs between warps inside a loop with group barriers. 1-, 2- and 3-D groups (flat ids).
#include "flat_ids.h"

// The group's sum: xor-butterfly shuffles in each warp (each lane's warp sum to wout), the warps' sums
// through shared memory, added by the first warp the same way.
__gpu_kernel void wsum(const uint32_t *in, uint32_t *out, uint32_t *wout) {
  static __gpu_local uint32_t part[64];
  uint32_t t = flat(), nt = nthreads(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id();
  uint32_t g = group() * nt + t;
  uint32_t v = in[g];
  for (uint32_t off = lanes / 2; off > 0; off >>= 1)
    v += __gpu_shuffle_idx_u32(__gpu_lane_mask(), lane ^ off, v, lanes);
  wout[g] = v;
  if (lane == 0)
    part[t / lanes] = v;
  __gpu_sync_threads();
  if (t < lanes) {
    uint32_t s = t < nt / lanes ? part[t] : 0;
    for (uint32_t off = lanes / 2; off > 0; off >>= 1)
      s += __gpu_shuffle_idx_u32(__gpu_lane_mask(), lane ^ off, s, lanes);
    if (t == 0)
      out[group()] = s;
  }
}

// gpuintrin's lane library: each lane's inclusive scan and its warp's sum, the odd values' ballot (the
// lanes below with one; the high half), the first lane's value.
__gpu_kernel void lib(const uint32_t *in, uint32_t *out) {
  uint32_t t = flat(), nt = nthreads();
  uint32_t g = group() * nt + t;
  uint64_t m = __gpu_lane_mask();
  uint32_t x = in[g];
  out[4 * g] = __gpu_lane_scan_u32(m, x);
  out[4 * g + 1] = __gpu_lane_sum_u32(m, x);
  uint64_t b = __gpu_ballot(m, x & 1);
  out[4 * g + 2] = (uint32_t)__builtin_popcountll(b & ((1ull << __gpu_lane_id()) - 1));
  out[4 * g + 3] = __gpu_read_first_lane_u32(m, x) + (uint32_t)(b >> 32);
}

// n rounds: each warp shuffles (w + r) % 3 + 1 times (a trip count per warp), then the group exchanges
// through shared memory between barriers.
__gpu_kernel void rounds(const uint32_t *in, uint32_t *out, uint32_t n) {
  static __gpu_local uint32_t sh[1024];
  uint32_t t = flat(), nt = nthreads(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id(), w = t / lanes;
  uint32_t g = group() * nt + t;
  uint32_t v = in[g];
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t k = 0; k <= (w + r) % 3; ++k)
      v += __gpu_shuffle_idx_u32(__gpu_lane_mask(), (lane + 1 + k) & (lanes - 1), v, lanes) * 3u;
    sh[t] = v;
    __gpu_sync_threads();
    v ^= sh[nt - 1 - t];
    __gpu_sync_threads();
  }
  out[g] = v;
}

// Shuffles at fixed lane distances (ol-lane-offset-reads): from 1 and 3 lanes down and up, W - 1 lanes
// on (source lanes mod W: these wrap around the warp), xor 1, 2 and W / 2, a source kept only where it
// did not wrap, a 64-bit and a float value.
__gpu_kernel void shifts(const uint32_t *in, uint32_t *out) {
  uint32_t t = flat(), nt = nthreads(), lanes = __gpu_num_lanes(), lane = __gpu_lane_id(), wm = lanes - 1;
  uint32_t g = group() * nt + t;
  uint64_t m = __gpu_lane_mask();
  uint32_t x = in[g], *o = out + 10 * g;
  o[0] = __gpu_shuffle_idx_u32(m, (lane - 1) & wm, x, lanes);
  o[1] = __gpu_shuffle_idx_u32(m, (lane + 3) & wm, x, lanes);
  o[2] = __gpu_shuffle_idx_u32(m, (lane + lanes - 1) & wm, x, lanes);
  o[3] = __gpu_shuffle_idx_u32(m, lane ^ 1, x, lanes);
  o[4] = __gpu_shuffle_idx_u32(m, lane ^ 2, x * 7u, lanes);
  o[5] = __gpu_shuffle_idx_u32(m, lane ^ (lanes / 2), x, lanes);
  uint32_t up = __gpu_shuffle_idx_u32(m, (lane - 3) & wm, x, lanes);
  o[6] = lane >= 3 ? up : x;
  uint64_t r = __gpu_shuffle_idx_u64(m, (lane + 5) & wm, ((uint64_t)x << 32) | (x ^ 0xabcdu), lanes);
  o[7] = (uint32_t)r;
  o[8] = (uint32_t)(r >> 32);
  o[9] = (uint32_t)__gpu_shuffle_idx_f32(m, (lane - 2) & wm, (float)(x & 0xffff), lanes);
}
