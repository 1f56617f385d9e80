// Global constructors with priorities run in order: 40, *2, +20 -> 100.
#include <gpuintrin.h>
#include <stdint.h>

[[gnu::visibility("default")]] volatile int ctor_value = 0;
[[gnu::visibility("default")]] volatile int dtor_seen = 0;

__attribute__((constructor(202))) static void third(void) { ctor_value = ctor_value + 20; }
__attribute__((constructor(200))) static void first(void) { ctor_value = 40; }
__attribute__((constructor(201))) static void second(void) { ctor_value = ctor_value * 2; }
[[gnu::visibility("default")]] int *dtor_flag;

__attribute__((destructor(200))) static void fini(void) {
  dtor_seen = 1;
  if (dtor_flag)
    *dtor_flag = 1234;
}

__gpu_kernel void read_ctor(int *out) { out[0] = ctor_value; }
