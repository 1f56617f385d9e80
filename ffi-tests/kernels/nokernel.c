// A device image with globals only and one parameterless kernel.
#include <gpuintrin.h>
#include <stdint.h>

[[gnu::visibility("default")]] const uint32_t answer = 42;
[[gnu::visibility("default")]] uint32_t slot;

__gpu_kernel void noargs(void) { slot = answer + __gpu_num_threads_x(); }
