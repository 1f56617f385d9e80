// One kernel per libm function the CPU JIT vectorises through glibc's libmvec (src/jit/llvm/math.rs):
// o[i] = f(a[i]) (or f(a[i], b[i])), float and double. jit::tests::vector_math_stays_within_glibc_bounds
// compares every result with the host's scalar libm over many inputs.
#include <gpuintrin.h>
#include <stdint.h>

#define DECL1(n) extern float n##f(float); extern double n(double);
#define DECL2(n) extern float n##f(float, float); extern double n(double, double);
#define UNARY(n)                                                                                            \
  DECL1(n)                                                                                                 \
  __gpu_kernel void vm_##n##f(const float *a, const float *b, float *o, uint32_t len) {                    \
    uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();                         \
    (void)b;                                                                                               \
    if (i < len) o[i] = n##f(a[i]);                                                                        \
  }                                                                                                        \
  __gpu_kernel void vm_##n(const double *a, const double *b, double *o, uint32_t len) {                    \
    uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();                         \
    (void)b;                                                                                               \
    if (i < len) o[i] = n(a[i]);                                                                           \
  }
#define BINARY(n)                                                                                           \
  DECL2(n)                                                                                                 \
  __gpu_kernel void vm_##n##f(const float *a, const float *b, float *o, uint32_t len) {                    \
    uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();                         \
    if (i < len) o[i] = n##f(a[i], b[i]);                                                                  \
  }                                                                                                        \
  __gpu_kernel void vm_##n(const double *a, const double *b, double *o, uint32_t len) {                    \
    uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();                         \
    if (i < len) o[i] = n(a[i], b[i]);                                                                     \
  }

UNARY(exp) UNARY(exp2) UNARY(exp10) UNARY(expm1) UNARY(log) UNARY(log2) UNARY(log10) UNARY(log1p)
UNARY(sin) UNARY(cos) UNARY(tan) UNARY(asin) UNARY(acos) UNARY(atan) UNARY(sinh) UNARY(cosh) UNARY(tanh)
UNARY(asinh) UNARY(acosh) UNARY(atanh) UNARY(cbrt) UNARY(erf) UNARY(erfc) UNARY(sqrt)
BINARY(pow) BINARY(atan2) BINARY(hypot)
