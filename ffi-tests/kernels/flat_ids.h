// The flat ids of a 1-, 2- or 3-D launch, for the test kernels of warp collectives (warp_lanes.c,
// warp_loops.c): the work-item's in its group, the group's size, the group's in the grid.
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t flat(void) {
  return (__gpu_thread_id_z() * __gpu_num_threads_y() + __gpu_thread_id_y()) * __gpu_num_threads_x() +
         __gpu_thread_id_x();
}
static inline uint32_t nthreads(void) { return __gpu_num_threads_x() * __gpu_num_threads_y() * __gpu_num_threads_z(); }
static inline uint32_t group(void) {
  return (__gpu_block_id_z() * __gpu_num_blocks_y() + __gpu_block_id_y()) * __gpu_num_blocks_x() + __gpu_block_id_x();
}
