// Device global constructors that the optimiser cannot evaluate at compile time (they read a volatile
// global), so that loading the program really runs them through nvptx$device$init (kernels.c's
// constructors are folded into ctor_var's initial value by LLVM's GlobalOpt). Used by test_cuda.c.
#include <gpuintrin.h>
#include <stdint.h>

#define VISIBLE __attribute__((visibility("default")))

VISIBLE volatile uint32_t ctor_seed = 3;
VISIBLE uint32_t ctor_out[64];
__attribute__((constructor(101))) static void ctor_first(void) {
  for (uint32_t i = 0; i < 64; i++)
    ctor_out[i] = ctor_seed + i;
}
__attribute__((constructor(102))) static void ctor_second(void) {
  for (uint32_t i = 0; i < 64; i++)
    ctor_out[i] *= ctor_seed;
}
// out[i] = (3 + i) * 3 when both constructors ran, in priority order
__gpu_kernel void read_ctor_out(uint32_t *out) { out[__gpu_thread_id_x()] = ctor_out[__gpu_thread_id_x()]; }
