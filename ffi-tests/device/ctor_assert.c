// Device code for ffi-tests/test_debug.c: a global constructor that prints and then fails an assertion
// (on the CPU device: olCreateProgram fails with the assertion; the process goes on).
#include <gpuintrin.h>
#include <stdint.h>

int printf(const char *, ...);
void __assert_fail(const char *, const char *, unsigned, const char *) __attribute__((noreturn));

volatile int ctor_assert_ready = 0;
__attribute__((constructor)) static void ctor_checks(void) {
  printf("ctor_assert: constructor runs\n");
  if (!ctor_assert_ready)
    __assert_fail("ctor_assert_ready", "ctor_assert.c", 12, __func__);
}
__gpu_kernel void ctor_assert_kernel(int *o) { o[0] = ctor_assert_ready; }
