// Kernels whose work-items each run a loop over a stretch of memory (ol-prefetch-streams prefetches the
// loops' streams ahead, src/jit/llvm/prefetch_streams.cpp): ragged segments one after another (CSR rows
// without the gather), rows of a dense matrix against a vector, and a sliding window of taps whose data
// the next work-item reads again. Integer data: the host's reference is exact.
#include <gpuintrin.h>
#include <stdint.h>

#define G (__gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x())

// out[i] = v[off[i]] + ... + v[off[i + 1] - 1]
__gpu_kernel void segments(const uint32_t *off, const uint32_t *v, uint32_t *out, uint32_t n) {
  uint32_t i = G;
  if (i >= n)
    return;
  uint32_t s = 0;
  for (uint32_t k = off[i]; k < off[i + 1]; k++)
    s += v[k];
  out[i] = s;
}

// out[i] = a[i * cols ..] . x
__gpu_kernel void rows(const uint32_t *a, const uint32_t *x, uint32_t *out, uint32_t n, uint32_t cols) {
  uint32_t i = G;
  if (i >= n)
    return;
  uint32_t s = 0;
  for (uint32_t k = 0; k < cols; k++)
    s += a[(uint64_t)i * cols + k] * x[k];
  out[i] = s;
}

// out[i] = w[0] in[i] + ... + w[taps - 1] in[i + taps - 1]
__gpu_kernel void window(const uint32_t *in, const uint32_t *w, uint32_t *out, uint32_t n, uint32_t taps) {
  uint32_t i = G;
  if (i >= n)
    return;
  uint32_t s = 0;
  for (uint32_t t = 0; t < taps; t++)
    s += w[t] * in[i + t];
  out[i] = s;
}
