// Device code for ffi-tests/test_debug.c: a global constructor that prints and then fails an assertion
// (on the CPU device: olCreateProgram fails with the assertion; the process goes on), through a printf
// helper a kernel calls too.
#include <gpuintrin.h>
#include <stdint.h>

int printf(const char *, ...);
void __assert_fail(const char *, const char *, unsigned, const char *) __attribute__((noreturn));

volatile int ctor_assert_ready = 0;
// printf in a function both the constructor and a kernel call
__attribute__((noinline)) static void say(const char *what) { printf("ctor_assert: %s runs\n", what); }
__attribute__((constructor)) static void ctor_checks(void) {
  say("constructor");
  if (!ctor_assert_ready)
    __assert_fail("ctor_assert_ready", "ctor_assert.c", 12, __func__);
}
__gpu_kernel void ctor_assert_kernel(int *o) {
  say("kernel");
  o[0] = ctor_assert_ready;
}
