// Choices on the work-item id against a bound the same for the whole group (ol-range-split cuts the
// work-item loop there): unsigned and signed, strict and not, bounds below 0, inside the group and past
// it; in a kernel without barriers and in a Hillis-Steele scan with them.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void orders(const float *in, float *out, uint32_t *hits, int32_t b, uint32_t u) {
  uint32_t t = __gpu_thread_id_x();
  int32_t ts = (int32_t)t;
  uint32_t g = (__gpu_block_id_y() * __gpu_num_blocks_x() + __gpu_block_id_x()) * __gpu_num_threads_x() *
                   __gpu_num_threads_y() +
               __gpu_thread_id_y() * __gpu_num_threads_x() + t;
  float r = in[g];
  if (t >= u) // (the load may not run below u)
    r += in[g - u];
  if (ts < b)
    hits[g] = 1;
  else
    hits[g] = 2;
  if (ts <= b)
    hits[g] += 10;
  if (t > u)
    r *= 3.0f;
  out[g] = r;
}

__gpu_kernel void steps(const float *in, float *out, int32_t shift) {
  static __gpu_local float s[256];
  uint32_t t = __gpu_thread_id_x(), g = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  s[t] = in[g];
  __gpu_sync_threads();
  for (int32_t off = 1 + shift; off < (int32_t)__gpu_num_threads_x(); off <<= 1) {
    float v = (int32_t)t >= off ? s[t - off] : 0.0f;
    __gpu_sync_threads();
    s[t] += v;
    __gpu_sync_threads();
  }
  out[g] = s[t];
}
