// Equality guards on the global x index with uniform operands (src/jit/lower.cpp, splitAtEqualities):
// the x work-item loop is cut at each point, so the items between the points run without the checks.
// Guards at the first and last x (a stencil's border), at an argument c (a middle x, the group's
// ends, or outside the range), `!=`, on the local id, and a y guard left as it is; after an
// `x >= w` bounds check (narrowToGuards), so both splits combine.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void eq_guards(uint32_t *out, uint32_t w, uint32_t c) {
  uint32_t tx = __gpu_thread_id_x();
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + tx;
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t row = __gpu_num_blocks_x() * __gpu_num_threads_x();
  if (x >= w)
    return;
  uint32_t v = x * 3 + 1;
  if (x == 0 || x == w - 1)
    v += 1000;
  if (x != c)
    v += 20000;
  if (y == c)
    v += 300000;
  if (tx == c)
    v += 4000000;
  if (x + 2 == c)
    v += 50000000;
  out[y * row + x] = v;
}
