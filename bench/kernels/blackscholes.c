// Black-Scholes (blackscholes.h) as a gpuintrin kernel for the CPU device: bench/vmath.c builds it alone,
// the classic-kernel suite (suite.c) includes it as its option pricer.
#include <gpuintrin.h>
#include <stdint.h>

extern float expf(float);
extern float logf(float);
extern float sqrtf(float);
extern float fabsf(float);
#define BS_FN static inline
#define BS_EXP expf
#define BS_LOG logf
#define BS_SQRT sqrtf
#define BS_FABS fabsf
#include "blackscholes.h"

__gpu_kernel void blackscholes(const float *s, const float *x, const float *t, float *call, float *put, float r,
                               float v, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i < n)
    bs_price(s[i], x[i], t[i], r, v, &call[i], &put[i]);
}
