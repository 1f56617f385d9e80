// The classic-kernel suite's group shapes and constants, shared by the device code (suite.c), the host
// side (suite_ref.h) and, as -D options to clBuildProgram, the OpenCL C twins (suite.cl).
#ifndef OFFLOAD_RS_BENCH_SUITE_SHAPE_H
#define OFFLOAD_RS_BENCH_SUITE_SHAPE_H
#define SUITE_WG 256            // work-items of a 1-D group
#define SUITE_TILE 16           // a 2-D group is SUITE_TILE x SUITE_TILE
#define SUITE_BINS 256          // histogram bins
#define SUITE_HIST_PER_ITEM 16  // histogram elements per work-item
#endif
