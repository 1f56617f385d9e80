// The struct argument of kernels.c's `structarg` kernel, passed by value: one definition for the device code
// and the host tests that build it (test_kernels, test_cuda), so both sides agree on its layout.
#ifndef OFFLOAD_RS_FFI_TESTS_MIXED_H
#define OFFLOAD_RS_FFI_TESTS_MIXED_H

struct mixed {
  char c;
  double d;
  short s;
  int *p;
  float f;
};

#endif
