// Device code for ffi-tests/test_debug.c's time-limit tests (OFFLOAD_RS_KERNEL_TIMEOUT): kernels that
// never end (waiting for a flag nobody sets, an endless loop with no memory access at all), a work-group
// whose work-items wait for one that trapped, and a long loop that ends, whose result must be exact.
#include <gpuintrin.h>
#include <stdint.h>

// Waits for a flag nobody sets.
__gpu_kernel void spin_on_flag(volatile uint32_t *flag, uint32_t *out) {
  while (*flag == 0)
    ;
  out[__gpu_thread_id_x()] = 1;
}

// An endless loop that touches no memory (O3 leaves a branch to itself).
__gpu_kernel void spin_arith(uint32_t *out, uint32_t seed) {
  uint32_t x = seed;
  for (;;)
    x = x * 1664525u + 1013904223u;
  out[0] = x;
}

// Work-item `bad` of every group traps; the others wait for a flag only it would set.
__gpu_kernel void trap_while_peers_wait(volatile uint32_t *flag, uint32_t bad) {
  if (__gpu_thread_id_x() == bad)
    __builtin_trap();
  while (*flag == 0)
    ;
}

// A long loop that ends: out[i] = the sum over k < n of (k * k) ^ i, modulo 2^32.
__gpu_kernel void long_finite(uint32_t *out, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t s = 0;
  for (uint32_t k = 0; k < n; k++)
    s += (k * k) ^ i;
  out[i] = s;
}
