// Barrier-free kernels with a loop whose trip count is the same for every work-item but not a constant,
// behind a bounds guard (ol-full-groups' copy for full groups, where ol-implicit-loop-barriers puts the
// work-item loop inside the loop; src/jit/llvm/tests.rs uniform_loops_match_the_host): column sums, a
// transposed matrix times a vector, and two loops inside `if (c < cols) { ... }`.
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// a work-item per column: the sum of its rows, in order
__gpu_kernel void colsum(const float *m, float *out, uint32_t rows, uint32_t cols) {
  uint32_t c = gid();
  if (c >= cols)
    return;
  float s = 0.0f;
  for (uint32_t r = 0; r < rows; r++)
    s += m[(uint64_t)r * cols + c];
  out[c] = s;
}

// y = A^T x in integers (wrapping)
__gpu_kernel void gemv_t(const uint32_t *a, const uint32_t *x, uint32_t *y, uint32_t rows, uint32_t cols) {
  uint32_t c = gid();
  if (c >= cols)
    return;
  uint32_t s = 0;
  for (uint32_t r = 0; r < rows; r++)
    s += a[(uint64_t)r * cols + c] * x[r];
  y[c] = s;
}

// the loops inside the guard's block: the largest of a column and its row, then a second loop
__gpu_kernel void guarded(const uint32_t *a, uint32_t *y, uint32_t rows, uint32_t cols) {
  uint32_t c = gid();
  if (c < cols) {
    uint32_t mx = 0, k = 0;
    for (uint32_t r = 0; r < rows; r++) {
      uint32_t v = a[(uint64_t)r * cols + c];
      if (v > mx)
        mx = v, k = r;
    }
    for (uint32_t r = 0; r < rows / 2; r++)
      mx ^= a[(uint64_t)(rows - 1 - r) * cols + c] >> 3;
    y[c] = mx + k;
  }
}
