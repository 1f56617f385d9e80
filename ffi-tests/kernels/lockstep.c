// Barrier-free kernels whose work-items run a loop a different number of times, with no memory access
// in it (ol-lockstep-loops runs such loops in lockstep over chunks of work-items): an escape-time loop
// in floats, a capped Collatz walk in integers, and a divergent loop around a uniform inner loop with a
// second exit, in a 2-D group.
#include <gpuintrin.h>
#include <stdint.h>

// Escape time of z -> z^2 + c from c = (cx[i], cy[i]), at most 200 steps; one operation per statement,
// so that no compiler contracts an FMA and the host computes the same floats.
__gpu_kernel void escape(uint32_t *out, const float *cx, const float *cy, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i >= n)
    return;
  float cr = cx[i], ci = cy[i], zr = 0.0f, zi = 0.0f;
  uint32_t k = 0;
  for (; k < 200; k++) {
    float zr2 = zr * zr, zi2 = zi * zi, zri = zr * zi;
    float m = zr2 + zi2;
    if (m > 4.0f)
      break;
    zr = zr2 - zi2;
    zr = zr + cr;
    zi = zri + zri;
    zi = zi + ci;
  }
  out[i] = k;
}

// Steps of the Collatz walk from in[i] to 1, at most 500 (then 500 + the value reached).
__gpu_kernel void collatz(uint32_t *out, const uint32_t *in, uint32_t n) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i >= n)
    return;
  uint32_t v = in[i], s = 0;
  while (v > 1 && s < 500) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    s++;
  }
  out[i] = s < 500 ? s : 500 + v;
}

// A 2-D group: per work-item a walk whose length is its value's, each step a uniform inner loop of 3
// mixing rounds, leaving early when the hash has its top bit set.
__gpu_kernel void mixes(uint32_t *out, const uint32_t *in, uint32_t w, uint32_t h) {
  uint32_t x = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y();
  if (x >= w || y >= h)
    return;
  uint32_t v = in[y * w + x], hsh = v, steps = v % 37;
  for (uint32_t s = 0; s < steps; s++) {
    for (uint32_t r = 0; r < 3; r++)
      hsh = (hsh ^ (hsh >> 13)) * 0x5bd1e995u + r;
    if (hsh >> 31)
      break;
  }
  out[y * w + x] = hsh;
}
