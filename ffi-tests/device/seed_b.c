// Seed scenario image B (shared/seeds/: LLVM's JIT cache keyed by address returned the wrong program).
#include <gpuintrin.h>
#include <stdint.h>
__attribute__((visibility("default"))) uint32_t which = 0xBBBB0002;
__gpu_kernel void get(uint32_t *out) { out[0] = which + 2; }
