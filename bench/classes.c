// Kernel classes outside the suite (bench/kernels/classes.c) on the CPU device, next to hand-written loops
// of the same work (bench/kernels/classes_hand.c) in the same run:
//
//   make lib && bash bench/build.sh && build/bench/classes [nvptx64|amdgcn] [kernel,...]
//
//   csr_vector    CSR SpMV with a warp per row (lanes stride over the row, xor butterfly), 100003 rows of
//                 0-120 nonzeros; hand: a row at a time, the same partial sums per lane
//   warp_softmax  softmax with a warp per row, 4099 rows of 1000 (max, sum of exp, scale by butterflies)
//   keyed_count   warp-aggregated atomics: the lanes with the same key (match_any) elect one to add their
//                 count, 16M keys in 64 bins; hand: a private histogram per thread
//   conv1d        17-tap 1-D convolution through a shared tile with a halo, 16M floats
//   dmath         exp(-a) * log(b) + pow(b, 0.3) in double, 4M elements
//   guarded_wsum  a warp's sum behind a bounds guard (its last warp partial), 16M floats
//   grid_stride   out = a * x + y over 16M floats by a grid-stride loop (`int i`) on 128 groups of 256
//   median3x3     a 3x3 median filter over 4001 x 3999 floats, each window sorted in a private array
//   grid2d        out = in / 2 + 1 over 4001 x 3999 floats by a 2-D grid-stride loop on 8 x 8 groups of 32 x 8
//   grid_sum      the sum of 16M floats: a grid-stride loop on 128 groups of 256, a warp's butterfly, an atomic
//                 add per warp; hand: 16 partial sums per thread
// Threads: the CPU device's pool; the hand loops as many (the affinity mask). 2 warm-ups, then 15 timed
// runs (launch + sync); best / median / max ms, the ratio of the bests, and each result checked against
// the hand loop's (exactly, or within 1e-5 relative where the order of a float sum differs: softmax, the
// guarded sum). The kernels are read from $BENCH_KERNELS (default build/bench).
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>

#include "bench.h"

void h_csr(const uint32_t *, const uint32_t *, const float *, const float *, float *, uint32_t, uint32_t, uint32_t);
void h_softmax(const float *, float *, uint32_t, uint32_t, uint32_t);
void h_keyed(const uint32_t *, uint32_t *, uint32_t, uint32_t);
void h_conv(const float *, const float *, float *, uint32_t, uint32_t, uint32_t);
void h_dmath(const double *, const double *, double *, uint32_t, uint32_t);
void h_gsum(const float *, float *, uint32_t, uint32_t, uint32_t, uint32_t);
void h_gstride(const float *, const float *, float *, float, uint32_t, uint32_t);
void h_median(const float *, float *, uint32_t, uint32_t, uint32_t, uint32_t);
void h_grid2d(const float *, float *, uint32_t, uint32_t, uint32_t);
void h_gridsum(const float *, float *, uint32_t, uint32_t);

#define REPS 15
#define MAX_THREADS 256
enum { CSR, SMAX, KEYED, CONV, DMATH, GSUM, GSTRIDE, MEDIAN, GRID2D, GRIDSUM, NK };
static const char *const names[NK] = {"csr_vector", "warp_softmax", "keyed_count", "conv1d", "dmath", "guarded_wsum", "grid_stride", "median3x3", "grid2d", "grid_sum"};
static const uint32_t ROWS = 100003, SROWS = 4099, SCOLS = 1000, N = 16000077, DN = 4000003, MW = 4001, MH = 3999;
static uint32_t *rowp, *col, *keys, *hist;
static float *val, *x, *y, *sin_, *sout, *cin, *w, *cout, *gout, *gy, *gso;
static double *da, *db, *dout;
static uint32_t W;

struct job {
  int k;
  uint32_t lo, hi;
};

static void *work(void *p) {
  struct job *j = p;
  switch (j->k) {
  case CSR: h_csr(rowp, col, val, x, y, j->lo, j->hi, W); break;
  case SMAX: h_softmax(sin_, sout, SCOLS, j->lo, j->hi); break;
  case KEYED: h_keyed(keys, hist, j->lo, j->hi); break;
  case CONV: h_conv(cin, w, cout, N, j->lo, j->hi); break;
  case DMATH: h_dmath(da, db, dout, j->lo, j->hi); break;
  case GSUM: h_gsum(cin, gout, N - 5, j->lo, j->hi, W); break;
  case GSTRIDE: h_gstride(cin, gy, gso, 2.5f, j->lo, j->hi); break;
  case MEDIAN: h_median(cin, gso, MW, MH, j->lo, j->hi); break;
  case GRID2D: h_grid2d(cin, gso, MW, j->lo, j->hi); break;
  case GRIDSUM: h_gridsum(cin, gso, j->lo, j->hi); break;
  }
  return NULL;
}

// rows (CSR, softmax), warps (the guarded sum) or elements
static uint32_t count(int k) {
  return k == CSR ? ROWS : k == SMAX ? SROWS : k == DMATH ? DN : k == GSUM ? (N - 5 + W - 1) / W : k == MEDIAN ? MW * MH : k == GRID2D ? MH : N;
}

static void hand(int k, unsigned threads) {
  if (k == KEYED)
    memset(hist, 0, 256);
  pthread_t t[MAX_THREADS];
  struct job j[MAX_THREADS];
  for (unsigned i = 0; i < threads; i++) {
    j[i] = (struct job){k, (uint32_t)((uint64_t)count(k) * i / threads), (uint32_t)((uint64_t)count(k) * (i + 1) / threads)};
    if (i && pthread_create(&t[i], NULL, work, &j[i]))
      abort();
  }
  work(&j[0]);
  for (unsigned i = 1; i < threads; i++)
    pthread_join(t[i], NULL);
}

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static void stats(double *v, double *out) {
  qsort(v, REPS, sizeof *v, cmp_double);
  out[0] = v[0] / 1e6, out[1] = v[REPS / 2] / 1e6, out[2] = v[REPS - 1] / 1e6;
}

int main(int argc, char **argv) {
  const char *target = argc > 1 ? argv[1] : "nvptx64";
  W = strcmp(target, "amdgcn") ? 32 : 64;
  cpu_set_t set;
  long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  unsigned threads = cpus > 0 ? (cpus > MAX_THREADS ? MAX_THREADS : (unsigned)cpus) : 1;
  uint64_t s = 42;
  rowp = bench_alloc(4 * (ROWS + 1));
  rowp[0] = 0;
  for (uint32_t r = 0; r < ROWS; r++)
    rowp[r + 1] = rowp[r] + rnd(&s) % 121;
  uint32_t nnz = rowp[ROWS];
  col = bench_alloc(4ull * nnz), val = bench_alloc(4ull * nnz), x = bench_alloc(4 * ROWS), y = bench_alloc(4 * ROWS);
  for (uint32_t j = 0; j < nnz; j++)
    col[j] = rnd(&s) % ROWS, val[j] = (float)(rnd(&s) % 1000) / 500.0f - 1;
  for (uint32_t r = 0; r < ROWS; r++)
    x[r] = (float)(rnd(&s) % 1000) / 250.0f;
  sin_ = bench_alloc(4ull * SROWS * SCOLS), sout = bench_alloc(4ull * SROWS * SCOLS);
  for (uint64_t i = 0; i < (uint64_t)SROWS * SCOLS; i++)
    sin_[i] = (float)(rnd(&s) % 2000) / 100.0f - 10;
  keys = bench_alloc(4ull * N), hist = bench_alloc(256);
  for (uint32_t i = 0; i < N; i++) // (runs of a key, one in 8 random: a few keys per warp)
    keys[i] = rnd(&s) % 8 == 0 ? rnd(&s) % 64 : (i / 1000) % 64;
  cin = bench_alloc(4ull * N), cout = bench_alloc(4ull * N), w = bench_alloc(17 * 4), gout = bench_alloc(4ull * N);
  gy = bench_alloc(4ull * N), gso = bench_alloc(4ull * N);
  for (uint32_t i = 0; i < N; i++)
    cin[i] = (float)(rnd(&s) % 1000) / 100.0f, gy[i] = (float)(i % 1000) / 7.0f;
  for (int j = 0; j < 17; j++)
    w[j] = (float)(j + 1) / 17.0f;
  da = bench_alloc(8ull * DN), db = bench_alloc(8ull * DN), dout = bench_alloc(8ull * DN);
  for (uint32_t i = 0; i < DN; i++)
    da[i] = (rnd(&s) % 10000) / 1000.0, db[i] = (rnd(&s) % 10000) / 100.0 + 0.01;

  char model[256], isa[64];
  cpu_info(model, sizeof model, isa, sizeof isa);
  printf("%s, %s; %s, %u threads; ms best / median / max\n", model, isa, target, threads);
  OL(olInit());
  ol_device_handle_t dev = find_cpu_device();
  ol_queue_handle_t q;
  OL(olCreateQueue(dev, &q));
  char path[512], bcname[64];
  snprintf(bcname, sizeof bcname, "classes.%s.bc", target);
  size_t sz;
  void *bc = read_file(kernel_path(path, sizeof path, bcname), &sz);
  ol_program_handle_t prog;
  OL(olCreateProgram(dev, bc, sz, &prog));
  free(bc);
  // the hand loop's results, to check ours against
  float *ry = bench_alloc(4 * ROWS), *rs = bench_alloc(4ull * SROWS * SCOLS), *rc = bench_alloc(4ull * N);
  float *rg = bench_alloc(4ull * N);
  uint32_t *rh = bench_alloc(256);
  double *rd = bench_alloc(8ull * DN);
  int bad = 0;
  for (int k = 0; k < NK; k++) {
    if (argc > 2 && !strstr(argv[2], names[k]))
      continue;
    double vh[REPS], vo[REPS], h[3], o[3], first = 0;
    for (int i = 0; i < 2; i++)
      hand(k, threads);
    for (int i = 0; i < REPS; i++) {
      double t0 = now_ns();
      hand(k, threads);
      vh[i] = now_ns() - t0;
    }
    if (k == CSR)
      memcpy(ry, y, 4 * ROWS), memset(y, 0, 4 * ROWS);
    if (k == SMAX)
      memcpy(rs, sout, 4ull * SROWS * SCOLS), memset(sout, 0, 4ull * SROWS * SCOLS);
    if (k == KEYED)
      memcpy(rh, hist, 256);
    if (k == CONV)
      memcpy(rc, cout, 4ull * N), memset(cout, 0, 4ull * N);
    if (k == DMATH)
      memcpy(rd, dout, 8ull * DN), memset(dout, 0, 8ull * DN);
    if (k == GSUM)
      memcpy(rg, gout, 4ull * count(GSUM)), memset(gout, 0, 4ull * count(GSUM));
    if (k == GSTRIDE || k == MEDIAN || k == GRID2D)
      memcpy(rc, gso, 4ull * N), memset(gso, 0, 4ull * N);
    if (k == GRIDSUM) { // (the threads' partial sums, where hand() left them)
      rc[0] = 0;
      for (unsigned i = 0; i < threads; i++)
        rc[0] += gso[(uint64_t)N * i / threads];
    }
    ol_symbol_handle_t kern;
    OL(olGetSymbol(prog, names[k], OL_SYMBOL_KIND_KERNEL, &kern));
    struct { void *a, *b, *c, *d, *e; uint32_t n; } a5 = {rowp, col, val, x, y, ROWS};
    struct { void *a, *b; uint32_t r, c; } a2 = {sin_, sout, SROWS, SCOLS};
    struct { void *a, *b; uint32_t n; } ak = {keys, hist, N}, ag = {cin, gout, N - 5};
    struct { void *a, *b, *c; uint32_t n; } a3 = {cin, w, cout, N}, ad = {da, db, dout, DN};
    struct { void *x, *y, *o; float a; int32_t n; } as = {cin, gy, gso, 2.5f, (int32_t)N};
    struct { void *i, *o; uint32_t w, h; } am = {cin, gso, MW, MH};
    struct { void *x, *o; uint32_t n; } asum = {cin, gout, N};
    const void *args[NK] = {&a5, &a2, &ak, &a3, &ad, &ag, &as, &am, &am, &asum};
    size_t asz[NK] = {sizeof a5, sizeof a2, sizeof ak, sizeof a3, sizeof ad, sizeof ag, sizeof as, sizeof am, sizeof am, sizeof asum};
    uint64_t items = k == CSR ? (uint64_t)ROWS * W : k == SMAX ? (uint64_t)SROWS * W : k == DMATH ? DN : k == MEDIAN ? (uint64_t)MW * MH : N;
    ol_kernel_launch_size_args_t la = {1, {(uint32_t)((items + 255) / 256), 1, 1}, {256, 1, 1}, 0};
    if (k == GSTRIDE || k == GRIDSUM) // (a grid of a few groups, as CUDA code sizes one from the multiprocessor count)
      la.NumGroups.x = 128;
    if (k == GRID2D)
      la = (ol_kernel_launch_size_args_t){2, {8, 8, 1}, {32, 8, 1}, 0};
    for (int i = 0; i < REPS + 2; i++) {
      if (k == KEYED)
        memset(hist, 0, 256);
      if (k == GRIDSUM)
        gout[0] = 0;
      double t0 = now_ns();
      OL(olLaunchKernel(q, dev, kern, args[k], asz[k], &la));
      OL(olSyncQueue(q));
      double t = now_ns() - t0;
      if (i == 0)
        first = t / 1e6;
      if (i >= 2)
        vo[i - 2] = t;
    }
    size_t wrong = 0;
#define CMP(got, ref, n, tol)                                                                                   \
  for (uint64_t i = 0; i < (n); i++)                                                                           \
    wrong += fabs((double)(got)[i] - (double)(ref)[i]) > (tol) * fabs((double)(ref)[i]);
    if (k == CSR)
      CMP(y, ry, ROWS, 0)
    if (k == SMAX)
      CMP(sout, rs, (uint64_t)SROWS * SCOLS, 1e-5)
    if (k == KEYED)
      CMP(hist, rh, 64, 0)
    if (k == CONV)
      CMP(cout, rc, N, 0)
    if (k == DMATH)
      CMP(dout, rd, DN, 0)
    if (k == GSTRIDE)
      CMP(gso, rc, N, 1e-6)
    if (k == MEDIAN || k == GRID2D)
      CMP(gso, rc, (uint64_t)MW * MH, 0)
    if (k == GRIDSUM)
      CMP(gout, rc, 1, 1e-4)
    if (k == GSUM) // (the last warp: amdgcn's shuffle reads lanes outside the guard, undefined on a GPU)
      CMP(gout, rg, count(GSUM) - 1, 1e-5)
    bad |= wrong != 0;
    stats(vh, h);
    stats(vo, o);
    printf("%-13s hand %7.2f / %7.2f / %7.2f   ours %7.2f / %7.2f / %7.2f (first launch %6.1f)   ratio %.2f  %s\n",
           names[k], h[0], h[1], h[2], o[0], o[1], o[2], first, o[0] / h[0], wrong ? "WRONG" : "ok");
  }
  return bad;
}
