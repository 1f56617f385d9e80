// 2-D and 3-D grids writing their coordinates.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void coords2d(uint32_t *out, uint32_t width) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  out[2 * (y * width + x)] = x;
  out[2 * (y * width + x) + 1] = y;
}

__gpu_kernel void coords3d(uint32_t *out) {
  uint32_t w = __gpu_num_blocks_x() * __gpu_num_threads_x();
  uint32_t h = __gpu_num_blocks_y() * __gpu_num_threads_y();
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t z = __gpu_block_id_z() * __gpu_num_threads_z() + __gpu_thread_id_z();
  uint32_t idx = (z * h + y) * w + x;
  out[4 * idx + 0] = x;
  out[4 * idx + 1] = y;
  out[4 * idx + 2] = z;
  out[4 * idx + 3] = __gpu_num_blocks_z() * 1000u + __gpu_num_threads_z();
}
