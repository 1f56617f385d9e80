// OpenCL C twin of bench.c's own kernel, for PoCL; saxpy and reduce come first, from saxpy_reduce.cl.

__kernel void empty(void) {}
