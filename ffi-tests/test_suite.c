// The classic-kernel suite (bench/kernels/suite.c) on the CPU device, from nvptx64 and from amdgcn bitcode,
// at small sizes (ragged edges and partial last groups included), every output compared with the host
// reference of bench/kernels/suite_ref.h: exactly, but for softmax and blackscholes (exp and log), within
// suite_tolerance's documented bounds. The timed version of the same kernels is bench/suite.c. A watchdog fails the
// run, naming the case, instead of letting a kernel that never finishes hang CI.
#include "ol_test.h"
#include <signal.h>
#include <unistd.h>

#include "../bench/kernels/suite_ref.h"

// One program per target, compiled once (the JIT of barrier kernels is the slow part of this test).
static ol_program_handle_t progs[2];
static ol_queue_handle_t queue;

// What is running and the summary line if it never finishes, for the watchdog (written before each
// step; the handler only write()s it).
static char running[512];

static void watchdog(int sig) {
  (void)sig;
  if (write(1, running, strlen(running)) < 0) {
  }
  _exit(3);
}

// Give the next step `seconds` (generous: ASan, a loaded machine) before the watchdog fires.
static void watch(unsigned seconds, const char *what, const char *target, const struct suite_case *c) {
  snprintf(running, sizeof running,
           "FAIL watchdog: %s %s %ux%u, groups of %ux%u (%s bitcode) did not finish in %u s\n"
           "%d passed, %d failed, %d skipped\n",
           what, c ? c->name : "", c ? c->w : 0, c ? c->h : 0, c ? c->local[0] : 0, c ? c->local[1] : 0, target,
           seconds, harness_passed, harness_failed + 1, harness_skipped);
  alarm(seconds);
}

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
    watch(120, "launching", t_targets[t], &c);
    CHECK_OK(olLaunchKernel(queue, t_cpu, kern, args, size, &la));
    CHECK_OK(olLaunchKernel(queue, t_cpu, kern, args, size, &la));
    CHECK_OK(olSyncQueue(queue));
    alarm(0);
    char why[256];
    size_t bad = suite_check(&c, bufs, 2, why, sizeof why);
    CHECKF(bad == 0, "%s bitcode: %zu elements differ, first: %s", t_targets[t], bad, why);
  }
  for (uint32_t b = 0; b < c.nbufs; b++)
    if (bufs[b])
      CHECK_OK(olMemFree(bufs[b]));
}

// Every {w, h, group x, group y} on both targets (a group size of 0: the suite's own shape). The launches
// with other group sizes run the same kernels at more shapes, as launch-time specialisation must allow.
static void run_sizes(enum suite_kernel k, const uint32_t (*sizes)[4], size_t n) {
  NEED_CPU();
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < n; i++) {
      const uint32_t *z = sizes[i];
      run_case(t, z[2] ? suite_case_shaped(k, z[0], z[1], z[2], z[3] ? z[3] : 1) : suite_case(k, z[0], z[1]));
    }
}

#define SIZES(k, ...)                                                                               \
  do {                                                                                              \
    static const uint32_t s_[][4] = {__VA_ARGS__};                                                  \
    run_sizes(k, s_, sizeof s_ / sizeof s_[0]);                                                     \
  } while (0)

TEST(saxpy) { SIZES(SUITE_SAXPY, {1000, 1, 0, 0}, {SUITE_WG * 3, 1, 0, 0}, {1, 1, 0, 0}, {1000, 1, 96, 0}); }
TEST(copy) { SIZES(SUITE_COPY, {1000, 1, 0, 0}, {SUITE_WG * 3, 1, 0, 0}, {1, 1, 0, 0}, {1000, 1, 96, 0}); }
TEST(reduce) { SIZES(SUITE_REDUCE, {SUITE_WG * 7, 1, 0, 0}, {SUITE_WG, 1, 0, 0}, {640, 1, 64, 0}, {96, 1, 32, 0}); }
TEST(scan) { SIZES(SUITE_SCAN, {SUITE_WG * 5, 1, 0, 0}, {512, 1, 128, 0}); }
TEST(matmul) { SIZES(SUITE_MATMUL, {48, 1, 0, 0}, {16, 1, 0, 0}); }
TEST(histogram) {
  SIZES(SUITE_HISTOGRAM, {10000, 1, 0, 0}, {SUITE_WG * SUITE_HIST_PER_ITEM * 2, 1, 0, 0}, {3, 1, 0, 0},
        {5000, 1, 100, 0});
}
TEST(transpose) { SIZES(SUITE_TRANSPOSE, {40, 24, 0, 0}, {48, 16, 0, 0}, {5, 37, 0, 0}); }
TEST(stencil) { SIZES(SUITE_STENCIL, {37, 21, 0, 0}, {32, 32, 0, 0}, {3, 3, 0, 0}, {70, 19, 32, 8}); }
TEST(bitonic) { SIZES(SUITE_BITONIC, {SUITE_WG * 6, 1, 0, 0}, {512, 1, 64, 0}); }
TEST(nbody) { SIZES(SUITE_NBODY, {SUITE_WG * 3, 1, 0, 0}, {384, 1, 128, 0}); }
// groups of a multiple of the warp width (64 covers both targets' widths), one warp or several
TEST(wreduce) { SIZES(SUITE_WREDUCE, {SUITE_WG * 7, 1, 0, 0}, {SUITE_WG, 1, 0, 0}, {640, 1, 64, 0}, {512, 1, 128, 0}); }
TEST(compact) { SIZES(SUITE_COMPACT, {SUITE_WG * 6, 1, 0, 0}, {512, 1, 128, 0}, {384, 1, 64, 0}); }
TEST(wscan) { SIZES(SUITE_WSCAN, {SUITE_WG * 5, 1, 0, 0}, {512, 1, 128, 0}, {320, 1, 64, 0}); }
// rows of {w} elements, {h} rows: the last chunk of each row partial, rows shorter than the group
TEST(softmax) {
  SIZES(SUITE_SOFTMAX, {1000, 7, 0, 0}, {SUITE_WG, 3, 0, 0}, {37, 5, 0, 0}, {300, 4, 64, 0}, {1, 2, 32, 0});
}
TEST(conv2d) { SIZES(SUITE_CONV2D, {37, 21, 0, 0}, {32, 32, 0, 0}, {3, 3, 0, 0}, {70, 19, 0, 0}); }
TEST(mandel) { SIZES(SUITE_MANDEL, {67, 45, 0, 0}, {32, 32, 0, 0}, {5, 3, 0, 0}, {70, 19, 32, 8}); }
TEST(spmv) { SIZES(SUITE_SPMV, {1000, 1, 0, 0}, {SUITE_WG * 2, 1, 0, 0}, {1, 1, 0, 0}, {777, 1, 96, 0}); }
TEST(radix) {
  SIZES(SUITE_RADIX, {1000, 1, 0, 0}, {SUITE_WG * 3, 1, 0, 0}, {5, 1, 0, 0}, {700, 1, 64, 0}, {200, 1, 16, 0});
}
TEST(blackscholes) {
  SIZES(SUITE_BLACKSCHOLES, {1000, 1, 0, 0}, {SUITE_WG * 2, 1, 0, 0}, {1, 1, 0, 0}, {777, 1, 96, 0});
}

int main(void) {
  signal(SIGALRM, watchdog);
  t_init();
  if (t_cpu) {
    for (int t = 0; t < 2; t++) {
      watch(300, "compiling the suite", t_targets[t], NULL);
      progs[t] = t_create(t_cpu, "suite", t_targets[t]);
      alarm(0);
    }
    CHECK_OK(olCreateQueue(t_cpu, &queue));
    if (!progs[0] || !progs[1] || !queue) {
      fprintf(stderr, "cannot set up the suite tests\n");
      return 1;
    }
  }
  RUN(saxpy);
  RUN(copy);
  RUN(reduce);
  RUN(scan);
  RUN(matmul);
  RUN(histogram);
  RUN(transpose);
  RUN(stencil);
  RUN(bitonic);
  RUN(nbody);
  RUN(wreduce);
  RUN(wscan);
  RUN(compact);
  RUN(softmax);
  RUN(conv2d);
  RUN(mandel);
  RUN(spmv);
  RUN(radix);
  RUN(blackscholes);
  if (t_cpu) {
    CHECK_OK(olDestroyQueue(queue));
    CHECK_OK(olDestroyProgram(progs[0]));
    CHECK_OK(olDestroyProgram(progs[1]));
  }
  olShutDown();
  return t_finish();
}
