// Benchmark kernels for the CPU device (compiled to nvptx64 bitcode by bench/build.sh): saxpy and reduce
// (saxpy_reduce.h, shared with the classic-kernel suite) and an empty kernel for launch latency. The OpenCL C
// twins for PoCL are saxpy_reduce.cl and bench.cl.
#include <gpuintrin.h>
#include <stdint.h>

#include "saxpy_reduce.h"

__gpu_kernel void empty(void) {}
