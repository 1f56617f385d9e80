// Device code for ffi-tests/test_debug.c: printf, assert and traps in kernels (C, so clang emits the
// variadic `printf` and C's `__assert_fail` on both targets; the CUDA forms are in debug_cuda.cu). Built
// with the other device code by build-device.sh.
#include <gpuintrin.h>
#include <stdint.h>

#include "debug.h"

int printf(const char *, ...);
void __assert_fail(const char *, const char *, unsigned, const char *) __attribute__((noreturn));
// C's assert, without the host's headers (-ffreestanding)
#define dassert(c) ((c) ? (void)0 : __assert_fail(#c, "debug.c", __LINE__, __func__))

static inline uint32_t gid_x(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// One line per work-item with every conversion (debug.h); the values depend on the work-item's global id.
__gpu_kernel void print_all(double d, const char *s, uint32_t *out) {
  uint32_t i = gid_x();
  printf(PRINT_ALL_FMT, PRINT_ALL_ARGS(i, d, s));
  out[i] = 1;
}

// Two printf calls per work-item, around a barrier: each call's line comes out whole.
__gpu_kernel void print_two(uint32_t *out) {
  uint32_t i = gid_x();
  printf("first %u of group %u\n", i, __gpu_block_id_x());
  __gpu_sync_threads();
  printf("second %u\n", i);
  out[i] = 2;
}

// Work-item `bad` (global id) fails an assertion; every work-item writes out[i] = 1 before.
__gpu_kernel void assert_at(uint32_t *out, uint32_t bad) {
  uint32_t i = gid_x();
  out[i] = 1;
  dassert(i != bad);
  out[i] = 2;
}

// Work-item `bad` fails an assertion between two barriers of a shared-memory exchange; the others go on.
__gpu_kernel void assert_in_barriers(uint32_t *out, uint32_t bad) {
  static __gpu_local uint32_t sh[64];
  uint32_t t = __gpu_thread_id_x(), i = gid_x();
  sh[t] = i;
  out[i] = 1;
  __gpu_sync_threads();
  dassert(i != bad);
  uint32_t v = sh[(t + 1) % __gpu_num_threads_x()];
  __gpu_sync_threads();
  out[i] = 2 + v;
}

// Work-item `bad` traps.
__gpu_kernel void trap_at(uint32_t *out, uint32_t bad) {
  uint32_t i = gid_x();
  out[i] = 1;
  if (i == bad)
    __builtin_trap();
  out[i] = 2;
}

// Stores through p (NULL or wild: under OFFLOAD_RS_MEMCHECK=1 the checker's error).
__gpu_kernel void store_to(uint32_t *p) { p[__gpu_thread_id_x()] = 1; }

// Prints the string at s (an invalid pointer: under the checker, its report).
__gpu_kernel void print_str(const char *s) { printf("str %s\n", s); }

// The kernel test_debug.c's gdb session stops in (built with -g as debug_g.nvptx64.bc): a local kept in
// memory (volatile), which gdb prints.
__gpu_kernel void gdb_target(uint32_t *out, uint32_t n) {
  uint32_t i = gid_x();
  volatile uint32_t local = i * 3 + n;
  out[i] = local;
}
