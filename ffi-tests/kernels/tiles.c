// 2-D tile kernels on 16 x 16 groups (ol-prefetch-next-group prefetches what the next group along x reads
// and writes where that is rows away, src/jit/llvm/prefetch_next_group.cpp): a transpose through a shared
// tile (the next group writes 16 rows further down `out`), an element-wise sum on a grid whose x goes down
// the rows (as CUDA code often maps blockIdx.x), and a 5-point stencil, whose next group is the next piece
// of the same rows (left alone). Integer data: the host's reference is exact.
#include <gpuintrin.h>
#include <stdint.h>

#define T 16

// out (w rows of h) = the transpose of in (h rows of w)
__gpu_kernel void transpose(const uint32_t *in, uint32_t *out, uint32_t w, uint32_t h) {
  static __gpu_local uint32_t tile[T][T + 1];
  uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y();
  uint32_t x = __gpu_block_id_x() * T + tx, y = __gpu_block_id_y() * T + ty;
  if (x < w && y < h)
    tile[ty][tx] = in[y * w + x];
  __gpu_sync_threads();
  x = __gpu_block_id_y() * T + tx;
  y = __gpu_block_id_x() * T + ty;
  if (x < h && y < w)
    out[y * h + x] = tile[tx][ty];
}

// c = a + b, rows x cols; the grid's x goes down the rows, its y along them
__gpu_kernel void add_rows(const uint32_t *a, const uint32_t *b, uint32_t *c, uint32_t rows, uint32_t cols) {
  uint32_t r = __gpu_block_id_x() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t k = __gpu_block_id_y() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (r < rows && k < cols)
    c[r * cols + k] = a[r * cols + k] + b[r * cols + k];
}

// out = 4 in - its four neighbours inside, in on the border (w x h)
__gpu_kernel void stencil(const uint32_t *in, uint32_t *out, uint32_t w, uint32_t h) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  if (x >= w || y >= h)
    return;
  uint32_t i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
    out[i] = in[i];
  else
    out[i] = 4 * in[i] - in[i - w] - in[i + w] - in[i - 1] - in[i + 1];
}
