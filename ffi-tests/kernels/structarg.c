// A by-value struct argument of mixed sizes, surrounded by scalars.
#include <gpuintrin.h>
#include <stdint.h>

struct Mixed {
  char c;
  int32_t *p;
  short s;
  double d;
  char c2;
};

__gpu_kernel void structarg(char pre, struct Mixed m, short post, double *out) {
  if (__gpu_thread_id_x() == 0 && __gpu_block_id_x() == 0) {
    out[0] = m.c;
    out[1] = (double)*m.p;
    out[2] = m.s;
    out[3] = m.d;
    out[4] = m.c2;
    out[5] = pre;
    out[6] = post;
    *m.p = 77;
  }
}
