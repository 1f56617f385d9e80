// Device code for ffi-tests/test_kmem.c: a global constructor that writes far past the end of a global
// (its bound is read from a volatile global, so the optimiser keeps the loop). Loaded only under the kernel
// memory checker (OFFLOAD_RS_MEMCHECK=1), where olCreateProgram fails with the checker's report; without it
// the write faults, as on a GPU.
#include <gpuintrin.h>
#include <stdint.h>

#define VISIBLE __attribute__((visibility("default")))

VISIBLE volatile uint32_t ctor_oob_n = 1u << 24;
VISIBLE uint32_t ctor_oob_out[16];
__attribute__((constructor)) static void ctor_oob(void) {
  for (uint32_t i = 0; i < ctor_oob_n; i++)
    ctor_oob_out[i] = i;
}
__gpu_kernel void read_ctor_oob(uint32_t *out) { out[__gpu_thread_id_x()] = ctor_oob_out[__gpu_thread_id_x()]; }
