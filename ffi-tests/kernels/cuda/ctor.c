// Device global constructors/destructors (the upstream GlobalCtor test: 40, *2, +20 -> 100).
// `seed` is volatile so that the optimiser cannot evaluate the constructors at compile time.
#include <gpuintrin.h>
#include <stdint.h>

volatile int seed = 0;
int value;
int dtor_ran;

__attribute__((constructor(202))) void add20(void) { value += 20 + seed; }
__attribute__((constructor(200))) void set40(void) { value = 40 + seed; }
__attribute__((constructor(201))) void twice(void) { value *= 2 + seed; }
__attribute__((destructor)) void fini(void) { dtor_ran = 1 + seed; }

__gpu_kernel void get_value(int *out) { *out = value; }
