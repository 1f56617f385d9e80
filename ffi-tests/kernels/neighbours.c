// Neighbour indices `(t + 1) % n` and `(t + n - 1) % n` around barriers (src/jit/llvm/lower.cpp work-item
// loops). clang computes the modulo in i16 (the id is below 1024), and in a group-size specialisation
// with a power-of-two n it becomes a mask; the last work-item of a group must wrap to element 0.

#include <gpuintrin.h>
#include <stdint.h>

// Conditional shared-memory stores before the neighbour read: the value is kept per work-item across
// the barrier.
__gpu_kernel void cond_stores(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), base = __gpu_block_id_x() * n;
  s[t] = in[base + t];
  __gpu_sync_threads();
  uint32_t a = s[t];
  if (a & 1)
    s[t] = a * 3;
  uint32_t b = in[base + (t + 1) % n];
  if (b > a)
    s[t] = b;
  __gpu_sync_threads();
  out[base + t] = s[(t + 1) % n];
}

// Both neighbours, read from global memory and from shared memory, with no conditional store.
__gpu_kernel void ring(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), base = __gpu_block_id_x() * n;
  s[t] = in[base + (t + n - 1) % n] + 2 * in[base + (t + 1) % n];
  __gpu_sync_threads();
  out[base + t] = s[(t + 1) % n] * 5 + s[(t + n - 1) % n];
}

// A neighbour at a distance k given at launch: the modulo stays in 32 bits.
__gpu_kernel void shift(const uint32_t *in, uint32_t *out, uint32_t k) {
  static __gpu_local uint32_t s[1024];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), base = __gpu_block_id_x() * n;
  s[t] = in[base + (t + k) % n];
  __gpu_sync_threads();
  out[base + t] = s[(t + k) % n];
}
