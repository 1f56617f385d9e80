// The line print_all (debug.c) and cuda_print_all (debug_cuda.cu) print per work-item, shared with
// ffi-tests/test_debug.c, which formats it with the host's snprintf to compare. i: the work-item's global id
// (uint32_t), d a double, s a string.
#ifndef FFI_TESTS_DEVICE_DEBUG_H
#define FFI_TESTS_DEVICE_DEBUG_H
#define PRINT_ALL_FMT                                                                                        \
  "wi %u: %d %i %u %x %X %o %c %s %p %f %e %g %a [%5d|%-5d|%05d|%+d] %.3f %10.2e %-8.1g %ld %lld %lx %llu "  \
  "%hd %hhu %5s|%.2s|%-4c| %#x %#o %%\n"
#define PRINT_ALL_ARGS(i, d, s)                                                                              \
  (i), (int)(i) - 100, ((int)(i) - 100) * 3, (i) * 7u, (i) * 0x1111u, (i) * 0xABCu, (i) * 9u,              \
      'a' + (int)((i) % 26), (s), (void *)(unsigned long)(0x1000 + (i)), (d) * (i), (d) / ((i) + 1),       \
      (d) * (i) * 1e6, (d) + (i), (int)(i), (int)(i) - 100, (int)(i), (int)(i) - 100, (d) * 0.5, (d) * 1e10, \
      (d) / 3, (long)((int)(i) - 100) * 1000003L, (long long)((int)(i) - 100) * (1ll << 33),                \
      (unsigned long)(i) << 40, (unsigned long long)(i) * 0x100000001ull, (short)(((int)(i) - 100) * 300), \
      (unsigned char)((i) * 3), (s), (s), 'A' + (int)((i) % 26), (i), (i)
#endif
