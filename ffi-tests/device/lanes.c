// Lane (warp) functions of <gpuintrin.h>; the CPU device documents its warp width.
#include <gpuintrin.h>
#include <stdint.h>
__gpu_kernel void lanes(uint32_t *out) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t *o = out + 4 * t;
  o[0] = __gpu_num_lanes();
  o[1] = __gpu_lane_id();
  o[2] = __gpu_shuffle_idx_u32(__gpu_lane_mask(), 0, t, __gpu_num_lanes());
  o[3] = (uint32_t)__builtin_popcountll(__gpu_ballot(__gpu_lane_mask(), 1));
}
