// Device code for the program, kernel and queue tests (ffi-tests/test_{programs,kernels,queues}.c).
// Compiled by ffi-tests/build-device.sh with clang-22 to nvptx64 and amdgcn LLVM bitcode; the same
// bitcode runs on the CPU device (and on a CUDA GPU for the nvptx64 build).
#include <gpuintrin.h>
#include <stdint.h>

#include "mixed.h"

#define VISIBLE __attribute__((visibility("default")))

static inline uint32_t gid_x(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

__gpu_kernel void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t i = gid_x();
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// Tree reduction over static shared memory with barriers: out[block] = sum of in[block's items].
__gpu_kernel void reduce(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  s[t] = in[gid_x()];
  __gpu_sync_threads();
  for (uint32_t k = n / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] += s[t + k];
    __gpu_sync_threads();
  }
  if (t == 0)
    out[__gpu_block_id_x()] = s[0];
}

// Every work-item of a 2-D grid writes its global (x, y).
__gpu_kernel void coords2d(uint32_t *out) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t w = __gpu_num_blocks_x() * __gpu_num_threads_x();
  out[2 * (y * w + x) + 0] = x;
  out[2 * (y * w + x) + 1] = y;
}

// Every work-item of a 3-D grid writes thread id, block id and counts of all three dimensions.
__gpu_kernel void coords3d(uint32_t *out) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  uint32_t z = __gpu_block_id_z() * __gpu_num_threads_z() + __gpu_thread_id_z();
  uint32_t w = __gpu_num_blocks_x() * __gpu_num_threads_x();
  uint32_t h = __gpu_num_blocks_y() * __gpu_num_threads_y();
  uint32_t *o = out + 8 * ((z * h + y) * w + x);
  o[0] = x;
  o[1] = y;
  o[2] = z;
  o[3] = __gpu_thread_id_z();
  o[4] = __gpu_block_id_z();
  o[5] = __gpu_num_threads_z();
  o[6] = __gpu_num_blocks_z();
  o[7] = __gpu_num_threads_x() * __gpu_num_threads_y() * __gpu_num_threads_z();
}

// Dynamic shared memory (LaunchSizeArgs.DynSharedMemory): reverse within the group.
extern __gpu_local uint32_t dyn_shared[];
__gpu_kernel void dynshared(uint32_t *out) {
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  dyn_shared[t] = gid_x() * 3;
  __gpu_sync_threads();
  out[gid_x()] = dyn_shared[n - 1 - t];
}

// Atomics across work-groups.
__gpu_kernel void atomics(uint32_t *counter, uint32_t *maxv, uint64_t *sum) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
  uint32_t g = gid_x();
  uint32_t cur = __atomic_load_n(maxv, __ATOMIC_RELAXED);
  while (cur < g && !__atomic_compare_exchange_n(maxv, &cur, g, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
  __atomic_fetch_add(sum, (uint64_t)g, __ATOMIC_RELAXED);
}

// A struct argument of mixed sizes passed by value (struct mixed), plus scalars around it.
__gpu_kernel void structarg(char c0, struct mixed m, short s2, int64_t *out) {
  if (gid_x() != 0)
    return;
  out[0] = c0;
  out[1] = m.c;
  out[2] = (int64_t)(m.d * 4);
  out[3] = m.s;
  out[4] = *m.p;
  out[5] = (int64_t)(m.f * 2);
  out[6] = s2;
}

// Divergent control flow, no barrier.
__gpu_kernel void divergent(uint32_t *out) {
  uint32_t g = gid_x(), t = __gpu_thread_id_x();
  uint32_t v;
  if (t % 3 == 0) {
    v = g * 2;
  } else if (t % 3 == 1) {
    v = 0;
    for (uint32_t i = 0; i < t; i++)
      v += i;
  } else {
    v = g ^ 0x5a5a;
  }
  out[g] = v;
}

// Global variable, read and written by kernels and through olMemcpy.
VISIBLE uint32_t global_var[64];
__gpu_kernel void write_global(void) { global_var[__gpu_thread_id_x()] = 2 * __gpu_thread_id_x(); }
__gpu_kernel void read_global(uint32_t *out) { out[gid_x()] = global_var[__gpu_thread_id_x()]; }

// Device global constructors, run in priority order at load: 40, *2, +20 = 100.
VISIBLE uint32_t ctor_var[64];
__attribute__((constructor(200))) static void ctor_a(void) {
  for (int i = 0; i < 64; i++)
    ctor_var[i] = 40;
}
__attribute__((constructor(201))) static void ctor_b(void) {
  for (int i = 0; i < 64; i++)
    ctor_var[i] *= 2;
}
__attribute__((constructor(202))) static void ctor_c(void) {
  for (int i = 0; i < 64; i++)
    ctor_var[i] += 20;
}
__gpu_kernel void read_ctor(uint32_t *out) { out[__gpu_thread_id_x()] = ctor_var[__gpu_thread_id_x()] + __gpu_thread_id_x(); }

// LLVM's olWaitEvents test kernel: a Fibonacci sequence built one launch at a time.
__gpu_kernel void sequence(uint32_t idx, uint32_t *inout) {
  if (idx == 0)
    inout[idx] = 0;
  else if (idx == 1)
    inout[idx] = 1;
  else
    inout[idx] = inout[idx - 1] + inout[idx - 2];
}

// out[tid] = tid, like LLVM's foo.
__gpu_kernel void foo(uint32_t *out) { out[__gpu_thread_id_x()] = __gpu_thread_id_x(); }

__gpu_kernel void noargs(void) {}

// Work-items with an odd id leave early; the others still write.
__gpu_kernel void early_exit(uint32_t *out) {
  uint32_t g = gid_x();
  if (g & 1)
    __gpu_exit();
  out[g] = 7;
}

// A long-running kernel (for asynchrony tests): spins `iters` times per work-item.
__gpu_kernel void spin(uint64_t iters, uint64_t *out) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < iters; i++)
    acc = acc * 6364136223846793005ull + 1442695040888963407ull;
  if (gid_x() == 0)
    out[0] = acc | 1;
}
