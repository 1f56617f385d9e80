// The classic-kernel suite (bench/kernels/suite.c) on the CPU device, from nvptx64 and from amdgcn bitcode,
// at small sizes (ragged edges included), every output compared exactly with the host reference of
// bench/kernels/suite_ref.h. The timed version of the same kernels is bench/suite.c.
#include "ol_test.h"

#include "../bench/kernels/suite_ref.h"

#define NEED_CPU()                                                                                  \
  if (!t_cpu)                                                                                       \
  SKIP("no CPU device")

// One program per target, compiled once (the JIT of barrier kernels is the slow part of this test).
static ol_program_handle_t progs[2];
static ol_queue_handle_t queue;

// Launch case c twice on target t (saxpy and histogram accumulate; the others must give the same result
// again) and compare with the host reference.
static void run_case(int t, struct suite_case c) {
  void *bufs[SUITE_MAX_BUFS] = {0};
  bool ok = true;
  for (uint32_t b = 0; b < c.nbufs; b++) {
    CHECK_OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, c.bytes[b], &bufs[b]));
    ok = ok && bufs[b];
  }
  ol_symbol_handle_t kern = NULL;
  CHECK_OK(olGetSymbol(progs[t], c.name, OL_SYMBOL_KIND_KERNEL, &kern));
  if (ok && kern) {
    suite_fill(&c, bufs);
    unsigned char args[64];
    size_t size = suite_pack_args(&c, bufs, args);
    ol_kernel_launch_size_args_t la = {c.dims, {c.groups[0], c.groups[1], c.groups[2]},
                                       {c.local[0], c.local[1], c.local[2]}, 0};
    CHECK_OK(olLaunchKernel(queue, t_cpu, kern, args, size, &la));
    CHECK_OK(olLaunchKernel(queue, t_cpu, kern, args, size, &la));
    CHECK_OK(olSyncQueue(queue));
    char why[256];
    size_t bad = suite_check(&c, bufs, 2, why, sizeof why);
    CHECKF(bad == 0, "%s bitcode: %zu elements differ, first: %s", t_targets[t], bad, why);
  }
  for (uint32_t b = 0; b < c.nbufs; b++)
    if (bufs[b])
      CHECK_OK(olMemFree(bufs[b]));
}

// Every size on both targets.
static void run_sizes(enum suite_kernel k, const uint32_t (*sizes)[2], size_t n) {
  NEED_CPU();
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < n; i++)
      run_case(t, suite_case(k, sizes[i][0], sizes[i][1]));
}

#define SIZES(k, ...)                                                                               \
  do {                                                                                              \
    static const uint32_t s_[][2] = {__VA_ARGS__};                                                  \
    run_sizes(k, s_, sizeof s_ / sizeof s_[0]);                                                     \
  } while (0)

TEST(saxpy) { SIZES(SUITE_SAXPY, {1000, 1}, {SUITE_WG * 3, 1}, {1, 1}); }
TEST(reduce) { SIZES(SUITE_REDUCE, {SUITE_WG * 7, 1}, {SUITE_WG, 1}); }
TEST(scan) { SIZES(SUITE_SCAN, {SUITE_WG * 5, 1}); }
TEST(matmul) { SIZES(SUITE_MATMUL, {48, 1}, {16, 1}); }
TEST(histogram) { SIZES(SUITE_HISTOGRAM, {10000, 1}, {SUITE_WG * SUITE_HIST_PER_ITEM * 2, 1}, {3, 1}); }
TEST(transpose) { SIZES(SUITE_TRANSPOSE, {40, 24}, {48, 16}, {5, 37}); }
TEST(stencil) { SIZES(SUITE_STENCIL, {37, 21}, {32, 32}, {3, 3}); }
TEST(bitonic) { SIZES(SUITE_BITONIC, {SUITE_WG * 6, 1}); }
TEST(nbody) { SIZES(SUITE_NBODY, {SUITE_WG * 3, 1}); }

int main(void) {
  t_init();
  if (t_cpu) {
    for (int t = 0; t < 2; t++) {
      size_t n;
      void *img = t_load("suite", t_targets[t], &n);
      CHECK_OK(olCreateProgram(t_cpu, img, n, &progs[t]));
      free(img);
    }
    CHECK_OK(olCreateQueue(t_cpu, &queue));
    if (!progs[0] || !progs[1] || !queue) {
      fprintf(stderr, "cannot set up the suite tests\n");
      return 1;
    }
  }
  RUN(saxpy);
  RUN(reduce);
  RUN(scan);
  RUN(matmul);
  RUN(histogram);
  RUN(transpose);
  RUN(stencil);
  RUN(bitonic);
  RUN(nbody);
  if (t_cpu) {
    CHECK_OK(olDestroyQueue(queue));
    CHECK_OK(olDestroyProgram(progs[0]));
    CHECK_OK(olDestroyProgram(progs[1]));
  }
  olShutDown();
  return t_finish();
}
