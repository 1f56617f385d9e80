// A private array indexed by run-time values: it stays in memory (on amdgcn an addrspace(5) alloca with
// lifetime markers; 64 floats, since clang promotes smaller ones to vector registers).
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void private_array(const uint32_t *idx, float *out, uint32_t n, uint32_t m) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  if (i >= n)
    return;
  float a[64];
  for (uint32_t k = 0; k < m; ++k)
    a[k] = (float)(i + k);
  float s = 0;
  for (uint32_t k = 0; k < m; ++k)
    s += a[idx[(i + k) % n] % m] * (float)(k + 1);
  out[i] = s;
}
