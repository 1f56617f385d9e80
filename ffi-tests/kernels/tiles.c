// A 2-D tile kernel whose next group along x is rows away (ol-prefetch-next-group prefetches what the next
// group reads and writes, src/jit/llvm/prefetch_next_group.cpp): an element-wise sum on 16 x 16 groups of a
// grid whose x goes down the rows, as CUDA code often maps blockIdx.x. The pass's other shapes are the
// suite's (bench/kernels/suite.c): its transpose, where it fires, and its stencil, where it does not.
#include <gpuintrin.h>
#include <stdint.h>

// c = a + b, rows x cols
__gpu_kernel void add_rows(const uint32_t *a, const uint32_t *b, uint32_t *c, uint32_t rows, uint32_t cols) {
  uint32_t r = __gpu_block_id_x() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t k = __gpu_block_id_y() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (r < rows && k < cols)
    c[r * cols + k] = a[r * cols + k] + b[r * cols + k];
}

// out = a * s[row] + v[col] on the same kind of grid: a scale per row and a bias per column (another shape
// ol-group-order runs y fastest: two matrices and two vectors, floats)
__gpu_kernel void bias_rows(const float *a, const float *s, const float *v, float *out, uint32_t rows,
                            uint32_t cols) {
  uint32_t r = __gpu_block_id_x() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t k = __gpu_block_id_y() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (r < rows && k < cols)
    out[r * cols + k] = a[r * cols + k] * s[r] + v[k];
}
