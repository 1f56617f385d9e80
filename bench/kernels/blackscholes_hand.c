// Black-Scholes (blackscholes.h) as a hand-written loop over [lo, hi), built twice by bench/build.sh:
// BS_HAND=bs_hand_scalar at clang -O3 -march=native (libm's scalar functions, one call per option), and
// BS_HAND=bs_hand_vec with -fveclib=libmvec -fno-math-errno as well (what a person can get from the
// compiler: glibc's vector math).
#include <math.h>
#include <stdint.h>

#define BS_FN static inline
#define BS_EXP expf
#define BS_LOG logf
#define BS_SQRT sqrtf
#define BS_FABS fabsf
#include "blackscholes.h"

void BS_HAND(const float *s, const float *x, const float *t, float *call, float *put, float r, float v, uint32_t lo,
             uint32_t hi) {
  for (uint32_t i = lo; i < hi; i++)
    bs_price(s[i], x[i], t[i], r, v, &call[i], &put[i]);
}
