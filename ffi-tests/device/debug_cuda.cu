// Device code for ffi-tests/test_debug.c in CUDA's form (clang -x cuda, nvptx64 only, no CUDA headers):
// printf becomes `vprintf(fmt, packed arguments)`, assert `__assertfail(msg, file, line, function,
// charSize)`, as nvcc and clang give them with CUDA's headers.
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
typedef unsigned int uint32_t;
#include "debug.h"
extern "C" __device__ int printf(const char *, ...);
extern "C" __device__ void __assertfail(const char *, const char *, unsigned, const char *, unsigned long)
    __attribute__((noreturn));
#define cassert(c) ((c) ? (void)0 : __assertfail(#c, "debug_cuda.cu", __LINE__, __func__, 1))

static __device__ uint32_t gid_x() {
  return __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
}

// The same line as print_all in debug.c (debug.h).
extern "C" __global__ void cuda_print_all(double d, const char *s, uint32_t *out) {
  uint32_t i = gid_x();
  printf(PRINT_ALL_FMT, PRINT_ALL_ARGS(i, d, s));
  out[i] = 1;
}

extern "C" __global__ void cuda_assert_at(uint32_t *out, uint32_t bad) {
  uint32_t i = gid_x();
  out[i] = 1;
  cassert(i != bad);
  out[i] = 2;
}
