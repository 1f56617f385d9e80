// Equality guards on the global x index with uniform operands (src/jit/llvm/lower.cpp, splitAtEqualities):
// the x work-item loop is cut at each point, so the items between the points run without the checks.
// Only guards that decide a branch split (the ones here that load `out`, which the caller fills with 9);
// the others are selects.
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
    v += 1000 + out[y * row + x];
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

// size_t index arithmetic (CUDA style): the guards compare 64-bit values built on the zero-extended id.
__gpu_kernel void eq_guards64(uint32_t *out, uint64_t w, uint64_t c) {
  uint64_t x = (uint64_t)__gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint64_t y = (uint64_t)__gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint64_t row = (uint64_t)__gpu_num_blocks_x() * __gpu_num_threads_x();
  if (x >= w)
    return;
  uint32_t v = (uint32_t)x * 3 + 1;
  if (x == 0 || x == w - 1)
    v += 1000 + out[y * row + x];
  if (x != c)
    v += 20000;
  if (y == c)
    v += 300000;
  if (x + 2 == c)
    v += 50000000 + out[y * row + x];
  out[y * row + x] = v;
}

// With a barrier: the guards sit in the region loop after it (a tile's borders, the grid's last column,
// an argument c).
__gpu_kernel void eq_guards_bar(const uint32_t *in, uint32_t *out, uint32_t w, uint32_t c) {
  static __gpu_local uint32_t s[1024];
  uint32_t tx = __gpu_thread_id_x(), nx = __gpu_num_threads_x();
  uint32_t f = tx + __gpu_thread_id_y() * nx;
  uint32_t x = __gpu_block_id_x() * nx + tx;
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t row = __gpu_num_blocks_x() * nx;
  s[f] = in[y * row + x];
  __gpu_sync_threads();
  uint32_t v = s[f];
  if (tx == 0 || tx == nx - 1)
    v += 1000 + in[y * row + x];
  if (x == c)
    v += 20000;
  if (x + 2 == c)
    v += 300000;
  if (x == w - 1)
    v += 4000000 + in[y * row + x];
  out[y * row + x] = v;
}
