// Warp/lane operations: lane id, lane count, first-lane broadcast, ballot, shuffle.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void lanes(uint32_t *out, uint64_t *ballots, uint64_t *wide) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  uint64_t mask = __gpu_lane_mask();
  uint32_t lane = __gpu_lane_id();
  uint32_t first = __gpu_read_first_lane_u32(mask, i * 3u);
  uint64_t b = __gpu_ballot(mask, (i & 1u) != 0);
  uint32_t nl = __gpu_num_lanes();
  uint32_t sh = __gpu_shuffle_idx_u32(mask, (lane + 1) % nl, i * 10u, nl);
  out[4 * i + 0] = lane;
  out[4 * i + 1] = first;
  out[4 * i + 2] = sh;
  out[4 * i + 3] = nl;
  ballots[i] = b;
  uint64_t w = ((uint64_t)i << 33) | i;
  wide[2 * i] = __gpu_read_first_lane_u64(mask, w);
  wide[2 * i + 1] = __gpu_shuffle_idx_u64(mask, (lane + 3) % nl, w, nl);
}
