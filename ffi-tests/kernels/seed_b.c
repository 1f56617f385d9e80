// Seed scenario, image B: writes 222.
#include <gpuintrin.h>
#include <stdint.h>
__gpu_kernel void seed(uint32_t *out) { out[__gpu_thread_id_x()] = 222u; }
