// Black-Scholes (blackscholes.h) in OpenCL C, for PoCL: bench/vmath.c builds it alone, the classic-kernel
// suite (suite.cl) includes it.
#define BS_FN inline
#define BS_EXP exp
#define BS_LOG log
#define BS_SQRT sqrt
#define BS_FABS fabs
#include "blackscholes.h"

__kernel void blackscholes(__global const float *s, __global const float *x, __global const float *t,
                           __global float *call, __global float *put, float r, float v, uint n) {
  uint i = get_global_id(0);
  float c, p;
  if (i < n) {
    bs_price(s[i], x[i], t[i], r, v, &c, &p);
    call[i] = c;
    put[i] = p;
  }
}
