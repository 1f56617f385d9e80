// A C model of the order grid-stride kernels walk memory in on the CPU device, next to the orders that
// would walk it faster (BENCHMARKS.md, bench/classes' grid_stride and grid2d): no library, plain C loops
// on 2 threads, each order's best of 15, ms. The CPU device runs a kernel's groups one after the other,
// each with all its grid-stride steps ("group by group"): for grid2d (4001 x 3999 floats, out = in / 2 + 1,
// 8 x 8 groups of 32 x 8) each step of a group reads 128 bytes of each of 8 rows, and the next step of the
// same group is 1 KiB further on. Running a band's x-groups together ("x-groups merged": a work-group
// function that takes several consecutive x-groups as one, its work-item loop over all their columns)
// makes each step 1 KiB of contiguous columns per row; "whole rows" and the hand loop's contiguous rows are
// the limits. grid_stride: 16M floats, out = a * x + y, 128 groups of 256, merged 64 groups at a time.
//   build/bench/walk_order
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

enum { W = 4001, H = 3999, NBX = 8, NBY = 8, TX = 32, TY = 8, THREADS = 2 };
enum { N = 16 << 20, NB = 128, NT = 256 };

static float *in, *out, *x1d, *y1d, *o1d;
static int mode;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// rows r0 .. r0 + TY - 1, columns c0 .. c0 + cw - 1 of grid2d (clipped)
static void tile(uint32_t r0, uint32_t c0, uint32_t cw) {
  uint32_t ce = c0 + cw < W ? c0 + cw : W;
  for (uint32_t r = r0; r < r0 + TY && r < H; r++)
    for (uint32_t c = c0; c < ce; c++)
      out[(uint64_t)r * W + c] = in[(uint64_t)r * W + c] * 0.5f + 1.0f;
}

// grid_stride's elements [i0, i0 + len) (clipped)
static void piece(uint32_t i0, uint32_t len) {
  uint32_t e = i0 + len < N ? i0 + len : N;
  for (uint32_t i = i0; i < e; i++)
    o1d[i] = 2.0f * x1d[i] + y1d[i];
}

static void *run(void *arg) {
  uint32_t t = (uint32_t)(uintptr_t)arg;
  switch (mode) {
  case 0: // grid2d, group by group (x fastest), each group's row steps, then its 32-wide column steps
    for (uint32_t g = t * (NBX * NBY / THREADS); g < (t + 1) * (NBX * NBY / THREADS); g++)
      for (uint32_t r0 = g / NBX * TY; r0 < H; r0 += NBY * TY)
        for (uint32_t c0 = g % NBX * TX; c0 < W; c0 += NBX * TX)
          tile(r0, c0, TX);
    break;
  case 1: // grid2d, a band's x-groups merged: 256-wide column steps
    for (uint32_t by = t * (NBY / THREADS); by < (t + 1) * (NBY / THREADS); by++)
      for (uint32_t r0 = by * TY; r0 < H; r0 += NBY * TY)
        for (uint32_t c0 = 0; c0 < W; c0 += NBX * TX)
          tile(r0, c0, NBX * TX);
    break;
  case 2: // grid2d, a band's rows whole
    for (uint32_t by = t * (NBY / THREADS); by < (t + 1) * (NBY / THREADS); by++)
      for (uint32_t r0 = by * TY; r0 < H; r0 += NBY * TY)
        tile(r0, 0, W);
    break;
  case 3: // grid2d, the hand loop: each thread's contiguous rows
    for (uint32_t r = H * t / THREADS; r < H * (t + 1) / THREADS; r++)
      for (uint32_t c = 0; c < W; c++)
        out[(uint64_t)r * W + c] = in[(uint64_t)r * W + c] * 0.5f + 1.0f;
    break;
  case 4: // grid_stride, group by group
    for (uint32_t g = t * (NB / THREADS); g < (t + 1) * (NB / THREADS); g++)
      for (uint32_t i0 = g * NT; i0 < N; i0 += NB * NT)
        piece(i0, NT);
    break;
  case 5: // grid_stride, the thread's 64 groups merged
    for (uint32_t i0 = t * (NB / THREADS) * NT; i0 < N; i0 += NB * NT)
      piece(i0, NB / THREADS * NT);
    break;
  default: // grid_stride, the hand loop: each thread's contiguous half
    piece((uint32_t)((uint64_t)N * t / THREADS), N / THREADS);
  }
  return NULL;
}

static float *alloc(size_t bytes) {
  size_t huge = 2u << 20, len = (bytes + huge - 1) / huge * huge;
  float *p = aligned_alloc(huge, len);
  if (!p) {
    perror("aligned_alloc");
    exit(1);
  }
  madvise(p, len, MADV_HUGEPAGE);
  for (size_t i = 0; i < bytes / 4; i++)
    p[i] = (float)(i % 97);
  return p;
}

int main(void) {
  in = alloc((size_t)W * H * 4), out = alloc((size_t)W * H * 4);
  x1d = alloc((size_t)N * 4), y1d = alloc((size_t)N * 4), o1d = alloc((size_t)N * 4);
  static const char *const names[] = {
      "grid2d: group by group (ours today)", "grid2d: x-groups merged",          "grid2d: whole rows",
      "grid2d: hand (contiguous rows)",       "grid_stride: group by group (ours)", "grid_stride: 64 groups merged",
      "grid_stride: hand (contiguous halves)"};
  printf("%d threads, ms best of 15, two rounds\n", THREADS);
  for (int round = 0; round < 2; round++)
    for (mode = 0; mode < 7; mode++) {
      double best = 1e9;
      for (int k = 0; k < 15; k++) {
        pthread_t th[THREADS];
        double t0 = now_ms();
        for (uintptr_t i = 0; i < THREADS; i++)
          pthread_create(&th[i], NULL, run, (void *)i);
        for (int i = 0; i < THREADS; i++)
          pthread_join(th[i], NULL);
        double d = now_ms() - t0;
        best = d < best ? d : best;
      }
      printf("%-40s %7.2f\n", names[mode], best);
    }
  return 0;
}
