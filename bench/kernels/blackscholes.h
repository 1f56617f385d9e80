// Black-Scholes European option pricing, one option per work-item (the classic CUDA/OpenCL SDK sample):
// exp, log, sqrt and a polynomial cumulative normal distribution. Shared by the gpuintrin kernel
// (blackscholes.c), its OpenCL C twin (blackscholes.cl) and the hand-written loops (blackscholes_hand.c,
// and the suite's in suite_hand.c); the includer defines BS_FN (function qualifiers) and BS_EXP, BS_LOG,
// BS_SQRT, BS_FABS.
#ifndef BLACKSCHOLES_H
#define BLACKSCHOLES_H

BS_FN float bs_cndf(float d) {
  const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
  const float rsqrt2pi = 0.39894228040143267794f;
  float k = 1.0f / (1.0f + 0.2316419f * BS_FABS(d));
  float c = rsqrt2pi * BS_EXP(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  return d > 0.0f ? 1.0f - c : c;
}

// The call and put prices of an option on stock price s, strike x, t years, rate r, volatility v.
BS_FN void bs_price(float s, float x, float t, float r, float v, float *call, float *put) {
  float sqrt_t = BS_SQRT(t);
  float d1 = (BS_LOG(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
  float d2 = d1 - v * sqrt_t;
  float cnd1 = bs_cndf(d1), cnd2 = bs_cndf(d2);
  float e = BS_EXP(-r * t);
  *call = s * cnd1 - x * e * cnd2;
  *put = x * e * (1.0f - cnd2) - s * (1.0f - cnd1);
}

#endif
