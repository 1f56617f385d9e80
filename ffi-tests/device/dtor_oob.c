// Device code for ffi-tests/test_kmem.c: a global destructor that writes dtor_oob_n words of a 16-word
// global. Harmless as built (16); the test sets dtor_oob_n far past the end (olGetSymbol + olMemcpy)
// before olDestroyProgram, which under the kernel memory checker (OFFLOAD_RS_MEMCHECK=1) then fails with
// the checker's report.
#include <gpuintrin.h>
#include <stdint.h>

#define VISIBLE __attribute__((visibility("default")))

VISIBLE volatile uint32_t dtor_oob_n = 16;
VISIBLE uint32_t dtor_oob_out[16];
__attribute__((destructor)) static void dtor_oob(void) {
  for (uint32_t i = 0; i < dtor_oob_n; i++)
    dtor_oob_out[i] = i;
}
__gpu_kernel void read_dtor_oob(uint32_t *out) { out[__gpu_thread_id_x()] = dtor_oob_out[__gpu_thread_id_x()]; }
