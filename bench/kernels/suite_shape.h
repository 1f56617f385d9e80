// The classic-kernel suite's group shapes and constants, shared by the device code (suite.c), the host
// side (suite_ref.h) and, as -D options to clBuildProgram, the OpenCL C twins (suite.cl).
#ifndef OFFLOAD_RS_BENCH_SUITE_SHAPE_H
#define OFFLOAD_RS_BENCH_SUITE_SHAPE_H
#define SUITE_WG 256            // work-items of a 1-D group
#define SUITE_TILE 16           // a 2-D group is SUITE_TILE x SUITE_TILE
#define SUITE_BINS 256          // histogram bins
#define SUITE_HIST_PER_ITEM 16  // histogram elements per work-item
#define SUITE_CONV_R 2          // conv2d's filter radius: a (2r+1) x (2r+1) filter, a tile with an r-wide halo
#define SUITE_CONV_TAPS ((2 * SUITE_CONV_R + 1) * (2 * SUITE_CONV_R + 1))
#define SUITE_MANDEL_ITERS 256  // mandel's most iterations per pixel
#define SUITE_RADIX_BITS 4      // radix's digit width
#define SUITE_RADIX_DIGITS (1u << SUITE_RADIX_BITS)
#endif
