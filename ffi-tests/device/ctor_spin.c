// Device code for ffi-tests/test_debug.c: a global constructor that waits for a flag nobody sets (under
// OFFLOAD_RS_KERNEL_TIMEOUT olCreateProgram fails at the time limit; the process goes on).
#include <gpuintrin.h>
#include <stdint.h>

volatile int ctor_spin_go = 0;
__attribute__((constructor)) static void ctor_spin(void) {
  while (!ctor_spin_go)
    ;
}
__gpu_kernel void ctor_spin_kernel(int *o) { o[0] = ctor_spin_go; }
