// The classic-kernel suite: the CPU device vs PoCL 3.1 vs hand-written work-group loops, in one run.
//
//   make lib && bash bench/build.sh && build/bench/suite
//
// Sides, each in its own child process (the two LLVMs never share an address space), one after another:
//   ours  our libLLVMOffload.so.22.1, CPU device, bench/kernels/suite.c as nvptx64 bitcode
//         (SUITE_TARGET=amdgcn: the amdgcn bitcode instead)
//   pocl  PoCL 3.1, bench/kernels/suite.cl
//   hand  bench/kernels/suite_hand.c, clang-22 -O3 -march=native with glibc's vector math, as many
//         threads as the CPU device (the CPUs of the affinity mask)
// Every kernel runs SUITE_WARMUP (2, the first one timed on its own: it pays any launch-time compile)
// times, then SUITE_REPS (10) timed launch + sync; every result is checked against the host reference
// (bench/kernels/suite_ref.h: exactly, but softmax and blackscholes within suite_tolerance). Prints
// best/median/max per side, ours/PoCL and ours/hand on the best times, their geometric means, round 1's
// first launches and program build (cold only when the JIT's disk cache starts empty:
// OFFLOAD_RS_JIT_CACHE_DIR=off or a fresh directory), the CPU model and vector ISA.
// SUITE_ROUNDS=3 runs the three sides three times in turn and keeps the best of all rounds;
// SUITE_KERNELS=reduce,scan runs a subset. The hand side also times a memcpy of the bytes each memory-bound
// kernel (saxpy, copy, transpose) reads and writes, on as many threads: their bandwidth as a share of memcpy's.
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <math.h>
#include <sched.h>

#include "bench.h"
#include "kernels/suite_ref.h"

// bench/kernels/suite_hand.c
void suite_hand_run(const struct suite_case *c, void *const bufs[], unsigned threads);

// The timed sizes: the hand-written loops take about 5 ms or more on a 2-core AVX2 machine (the reduction
// keeps the 16M floats of the figures).
static struct suite_case bench_case(enum suite_kernel k) {
  switch (k) {
  case SUITE_SAXPY:
    return suite_case(k, (16u << 20) - 3, 1); // not a whole number of groups: the bounds check matters
  case SUITE_COPY:
    return suite_case(k, (8u << 20) - 3, 1); // transpose's 32 MB, not a whole number of groups
  case SUITE_REDUCE:
  case SUITE_WREDUCE:
    return suite_case(k, 16u << 20, 1);
  case SUITE_SCAN:
  case SUITE_WSCAN:
    return suite_case(k, 6u << 20, 1);
  case SUITE_COMPACT:
    return suite_case(k, 16u << 20, 1);
  case SUITE_MATMUL:
    return suite_case(k, 512, 1);
  case SUITE_HISTOGRAM:
    return suite_case(k, 16u << 20, 1);
  case SUITE_TRANSPOSE:
  case SUITE_STENCIL:
    return suite_case(k, 4096, 2048);
  case SUITE_BITONIC:
    return suite_case(k, 1u << 20, 1);
  case SUITE_SOFTMAX:
    return suite_case(k, 1000, 4096); // rows of 1000: each group's last chunk is partial
  case SUITE_CONV2D:
    return suite_case(k, 2047, 1535); // partial tiles at the right and bottom edges
  case SUITE_MANDEL:
    return suite_case(k, 1023, 767);
  case SUITE_SPMV:
    return suite_case(k, (1u << 20) - 5, 1);
  case SUITE_RADIX:
    return suite_case(k, (4u << 20) - 7, 1);
  case SUITE_BLACKSCHOLES:
    return suite_case(k, (4u << 20) - 3, 1);
  case SUITE_NBODY:
  default:
    return suite_case(k, 5120, 1);
  }
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && atoi(v) > 0 ? atoi(v) : dflt;
}

static bool selected(enum suite_kernel k) {
  const char *f = getenv("SUITE_KERNELS");
  if (!f || !*f)
    return true;
  size_t n = strlen(suite_names[k]);
  for (const char *p = f; (p = strstr(p, suite_names[k])) != NULL; p += n)
    if ((p == f || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
      return true;
  return false;
}

#define MAX_REPS 1000

// Print `<kernel>_best/_median/_max <ns>` and `<kernel>_bad <wrong elements>`.
static void report(const struct suite_case *c, double *v, int reps, size_t bad, const char *why) {
  if (bad)
    fprintf(stderr, "WRONG: %s (%zu elements differ)\n", why, bad);
  qsort(v, reps, sizeof *v, cmp_double);
  printf("%s_best %.0f\n%s_median %.0f\n%s_max %.0f\n%s_bad %zu\n", c->name, v[0], c->name, v[reps / 2], c->name,
         v[reps - 1], c->name, bad);
  fflush(stdout);
}

// ---------------------------------------------------------------------------------------------------
// ours

static void run_ours(const char *bc_path) {
  int warm = env_int("SUITE_WARMUP", 2), reps = env_int("SUITE_REPS", 10);
  reps = reps > MAX_REPS ? MAX_REPS : reps;
  OL(olInit());
  ol_device_handle_t dev = find_cpu_device();
  size_t sz;
  void *bc = read_file(bc_path, &sz);
  ol_program_handle_t prog;
  double t0 = now_ns();
  OL(olCreateProgram(dev, bc, sz, &prog));
  printf("compile_ns %.0f\n", now_ns() - t0);
  ol_queue_handle_t q;
  OL(olCreateQueue(dev, &q));
  for (int k = 0; k < SUITE_COUNT; k++) {
    if (!selected(k))
      continue;
    struct suite_case c = bench_case(k);
    void *bufs[SUITE_MAX_BUFS];
    for (uint32_t b = 0; b < c.nbufs; b++)
      OL(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, c.bytes[b], &bufs[b]));
    suite_fill(&c, bufs);
    ol_symbol_handle_t kern;
    OL(olGetSymbol(prog, c.name, OL_SYMBOL_KIND_KERNEL, &kern));
    unsigned char args[64];
    size_t args_size = suite_pack_args(&c, bufs, args);
    ol_kernel_launch_size_args_t la = {c.dims, {c.groups[0], c.groups[1], c.groups[2]},
                                       {c.local[0], c.local[1], c.local[2]}, 0};
    t0 = now_ns(); // the first launch pays any launch-time compile
    OL(olLaunchKernel(q, dev, kern, args, args_size, &la));
    OL(olSyncQueue(q));
    printf("%s_first %.0f\n", c.name, now_ns() - t0);
    for (int i = 1; i < warm; i++)
      OL(olLaunchKernel(q, dev, kern, args, args_size, &la));
    OL(olSyncQueue(q));
    double v[MAX_REPS];
    for (int i = 0; i < reps; i++) {
      t0 = now_ns();
      OL(olLaunchKernel(q, dev, kern, args, args_size, &la));
      OL(olSyncQueue(q));
      v[i] = now_ns() - t0;
    }
    char why[256];
    size_t bad = suite_check(&c, bufs, warm + reps, why, sizeof why);
    report(&c, v, reps, bad, why);
    for (uint32_t b = 0; b < c.nbufs; b++)
      OL(olMemFree(bufs[b]));
  }
  OL(olDestroyQueue(q));
  OL(olDestroyProgram(prog));
  OL(olShutDown());
  free(bc);
}

// ---------------------------------------------------------------------------------------------------
// PoCL

static void run_pocl(const char *cl_file) {
  int warm = env_int("SUITE_WARMUP", 2), reps = env_int("SUITE_REPS", 10);
  reps = reps > MAX_REPS ? MAX_REPS : reps;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_int err;
  cl_open(&dev, &ctx, &q);
  const char *src[2];
  cl_read_sources(cl_file, src);
  double t0 = now_ns();
  cl_program prog = cl_build(ctx, dev, src);
  printf("compile_ns %.0f\n", now_ns() - t0);
  for (int k = 0; k < SUITE_COUNT; k++) {
    if (!selected(k))
      continue;
    struct suite_case c = bench_case(k);
    void *bufs[SUITE_MAX_BUFS];
    cl_mem mem[SUITE_MAX_BUFS];
    for (uint32_t b = 0; b < c.nbufs; b++)
      bufs[b] = bench_alloc(c.bytes[b]);
    suite_fill(&c, bufs);
    for (uint32_t b = 0; b < c.nbufs; b++) {
      mem[b] = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR, c.bytes[b], bufs[b], &err);
      CL(err);
    }
    cl_kernel kern = clCreateKernel(prog, c.name, &err);
    CL(err);
    for (uint32_t a = 0; a < c.nargs; a++) {
      const struct suite_arg *x = &c.args[a];
      if (x->kind == SUITE_ARG_BUF)
        CL(clSetKernelArg(kern, a, sizeof(cl_mem), &mem[x->buf]));
      else
        CL(clSetKernelArg(kern, a, 4, x->kind == SUITE_ARG_U32 ? (const void *)&x->u32 : (const void *)&x->f32));
    }
    size_t global[3], local[3];
    for (int d = 0; d < 3; d++) {
      global[d] = (size_t)c.groups[d] * c.local[d];
      local[d] = c.local[d];
    }
    t0 = now_ns(); // PoCL compiles its work-group function for the local size at the first launch
    CL(clEnqueueNDRangeKernel(q, kern, c.dims, NULL, global, local, 0, NULL, NULL));
    CL(clFinish(q));
    printf("%s_first %.0f\n", c.name, now_ns() - t0);
    for (int i = 1; i < warm; i++)
      CL(clEnqueueNDRangeKernel(q, kern, c.dims, NULL, global, local, 0, NULL, NULL));
    CL(clFinish(q));
    double v[MAX_REPS];
    for (int i = 0; i < reps; i++) {
      t0 = now_ns();
      CL(clEnqueueNDRangeKernel(q, kern, c.dims, NULL, global, local, 0, NULL, NULL));
      CL(clFinish(q));
      v[i] = now_ns() - t0;
    }
    void *mapped[SUITE_MAX_BUFS];
    for (uint32_t b = 0; b < c.nbufs; b++) {
      mapped[b] = clEnqueueMapBuffer(q, mem[b], CL_TRUE, CL_MAP_READ, 0, c.bytes[b], 0, NULL, NULL, &err);
      CL(err);
    }
    char why[256];
    size_t bad = suite_check(&c, mapped, warm + reps, why, sizeof why);
    report(&c, v, reps, bad, why);
    for (uint32_t b = 0; b < c.nbufs; b++) {
      CL(clEnqueueUnmapMemObject(q, mem[b], mapped[b], 0, NULL, NULL));
      CL(clFinish(q));
      clReleaseMemObject(mem[b]);
      free(bufs[b]);
    }
    clReleaseKernel(kern);
  }
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
}

// ---------------------------------------------------------------------------------------------------
// hand-written work-group loops

// The memory-bound kernels' ceiling (issue 23: at least 0.9x the bandwidth a memcpy of the same bytes gets):
// a copy of half the bytes the kernel reads and writes (a copy reads each byte and writes it), split over
// the hand loops' threads; 0 for the other kernels.
static size_t copy_bytes(const struct suite_case *c) {
  switch (c->kernel) {
  case SUITE_SAXPY:
    return (size_t)c->w * 12 / 2; // x and y read, y written
  case SUITE_COPY:
    return (size_t)c->w * 4;
  case SUITE_TRANSPOSE:
    return (size_t)c->w * c->h * 4; // each element read once and written once
  default:
    return 0;
  }
}

// Times `warm` + `reps` copies of `bytes` on `threads` threads; prints `<kernel>_memcpy_best/_median/_max`.
static void time_copy(const struct suite_case *c, size_t bytes, unsigned threads, int warm, int reps) {
  char *s = bench_alloc(bytes), *d = bench_alloc(bytes);
  memset(s, 1, bytes);
  memset(d, 2, bytes);
  double v[MAX_REPS];
  for (int i = -warm; i < reps; i++) {
    double t = bench_copy(d, s, bytes, threads);
    if (i >= 0)
      v[i] = t;
  }
  char name[64];
  snprintf(name, sizeof name, "%s_memcpy", c->name);
  struct suite_case m = *c;
  m.name = name;
  report(&m, v, reps, 0, "");
  free(s);
  free(d);
}

static void run_hand(const char *unused) {
  (void)unused;
  int warm = env_int("SUITE_WARMUP", 2), reps = env_int("SUITE_REPS", 10);
  reps = reps > MAX_REPS ? MAX_REPS : reps;
  // As many threads as the CPU device's pool uses (Rust's available_parallelism: the affinity mask).
  cpu_set_t set;
  long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
  unsigned threads = cpus > 0 ? (unsigned)cpus : 1;
  printf("threads %u\n", threads);
  for (int k = 0; k < SUITE_COUNT; k++) {
    if (!selected(k))
      continue;
    struct suite_case c = bench_case(k);
    void *bufs[SUITE_MAX_BUFS];
    for (uint32_t b = 0; b < c.nbufs; b++)
      bufs[b] = bench_alloc(c.bytes[b]);
    suite_fill(&c, bufs);
    for (int i = 0; i < warm; i++)
      suite_hand_run(&c, bufs, threads);
    double v[MAX_REPS];
    for (int i = 0; i < reps; i++) {
      double t0 = now_ns();
      suite_hand_run(&c, bufs, threads);
      v[i] = now_ns() - t0;
    }
    char why[256];
    size_t bad = suite_check(&c, bufs, warm + reps, why, sizeof why);
    report(&c, v, reps, bad, why);
    for (uint32_t b = 0; b < c.nbufs; b++)
      free(bufs[b]);
    if (copy_bytes(&c))
      time_copy(&c, copy_bytes(&c), threads, warm, reps);
  }
}

// ---------------------------------------------------------------------------------------------------

static void size_text(const struct suite_case *c, char *buf, size_t n) {
  if (c->kernel == SUITE_MATMUL)
    snprintf(buf, n, "%ux%u", c->w, c->w);
  else if (c->h > 1)
    snprintf(buf, n, "%ux%u", c->w, c->h);
  else
    snprintf(buf, n, "%u", c->w);
}

#define MAX_ROUNDS 20

// A figure over the rounds of one side: the least best (and first launch, compile), the greatest max, the
// median of the medians, the sum of the wrong elements; -1 if a round lacks it.
static double key_of(const struct side *rounds, int n, const char *kernel, const char *what) {
  char key[64];
  snprintf(key, sizeof key, "%s%s%s", kernel, *kernel ? "_" : "", what);
  double v[MAX_ROUNDS], acc = 0;
  for (int r = 0; r < n; r++) {
    v[r] = side_get(&rounds[r], key);
    if (v[r] < 0)
      return -1;
    acc = r == 0 ? v[r] : !strcmp(what, "max") ? fmax(acc, v[r]) : !strcmp(what, "bad") ? acc + v[r] : fmin(acc, v[r]);
  }
  return strcmp(what, "median") ? acc : median(v, n);
}

int main(int argc, char **argv) {
  const char *target = getenv("SUITE_TARGET") ? getenv("SUITE_TARGET") : "nvptx64";
  char bc[512], name[64];
  snprintf(name, sizeof name, "suite.%s.bc", target);
  kernel_path(bc, sizeof bc, name);
  const char *cl = "suite.cl";
  const struct side_mode modes[] = {{"ours", run_ours, bc}, {"pocl", run_pocl, cl}, {"hand", run_hand, ""}};
  if (run_side_mode(argc, argv, modes, sizeof modes / sizeof *modes))
    return 0;
  // SUITE_ROUNDS rounds of the three sides one after another, so that a noisy period hits all three.
  int rounds = env_int("SUITE_ROUNDS", 1);
  rounds = rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
  static struct side o[MAX_ROUNDS], p[MAX_ROUNDS], h[MAX_ROUNDS];
  int ro = 0, rp = 0, rh = 0;
  for (int r = 0; r < rounds; r++) {
    ro |= run_child("/proc/self/exe", "ours", bc, &o[r]);
    rp |= run_child("/proc/self/exe", "pocl", cl, &p[r]);
    rh |= run_child("/proc/self/exe", "hand", "", &h[r]);
  }

  char model[256], isa[128];
  cpu_info(model, sizeof model, isa, sizeof isa);
  printf("Classic-kernel suite: offload-rs CPU device (%s bitcode) vs PoCL 3.1 vs hand-written work-group loops\n",
         target);
  printf("CPU: %s, %ld online CPUs, vector ISA: %s; hand loops on %.0f threads\n", model,
         sysconf(_SC_NPROCESSORS_ONLN), isa, side_get(&h[0], "threads"));
  printf("command:");
  const char *vars[] = {"SUITE_TARGET", "SUITE_KERNELS", "SUITE_ROUNDS", "SUITE_REPS", "SUITE_WARMUP", "BENCH_KERNELS"};
  for (unsigned i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i]))
      printf(" %s=%s", vars[i], getenv(vars[i]));
  printf(" build/bench/suite\n%d round(s) of %d timed launch + sync after %d warm-ups; ms best / median / max "
         "(median: of the rounds' medians)\n",
         rounds, env_int("SUITE_REPS", 10), env_int("SUITE_WARMUP", 2));
  printf("%-12s %-10s %-24s %-24s %-24s %9s %9s\n", "kernel", "size", "ours", "PoCL", "hand", "ours/PoCL",
         "ours/hand");
  double log_p = 0, log_h = 0;
  int n_p = 0, n_h = 0, wrong = 0;
  for (int k = 0; k < SUITE_COUNT; k++) {
    if (!selected(k))
      continue;
    struct suite_case c = bench_case(k);
    char sz[32], col[3][64];
    size_text(&c, sz, sizeof sz);
    const struct side *sides[3] = {o, p, h};
    double best[3];
    for (int s = 0; s < 3; s++) {
      best[s] = key_of(sides[s], rounds, c.name, "best");
      double bad = key_of(sides[s], rounds, c.name, "bad");
      if (best[s] < 0)
        snprintf(col[s], sizeof col[s], "(failed)");
      else
        snprintf(col[s], sizeof col[s], "%.2f / %.2f / %.2f%s", best[s] / 1e6,
                 key_of(sides[s], rounds, c.name, "median") / 1e6, key_of(sides[s], rounds, c.name, "max") / 1e6,
                 bad != 0 ? " WRONG" : "");
      if (bad != 0)
        wrong++;
    }
    double rp_ = best[0] > 0 && best[1] > 0 ? best[0] / best[1] : -1;
    double rh_ = best[0] > 0 && best[2] > 0 ? best[0] / best[2] : -1;
    if (rp_ > 0)
      log_p += log(rp_), n_p++;
    if (rh_ > 0)
      log_h += log(rh_), n_h++;
    printf("%-12s %-10s %-24s %-24s %-24s %9.3f %9.3f\n", c.name, sz, col[0], col[1], col[2], rp_, rh_);
  }
  printf("%-12s %-10s %-24s %-24s %-24s %9.3f %9.3f\n", "geomean", "", "", "", "", n_p ? exp(log_p / n_p) : -1.0,
         n_h ? exp(log_h / n_h) : -1.0);
  // The memory-bound kernels' bandwidth against a copy of the same bytes, best times (issue 23's target: at
  // least 0.9).
  bool any_copy = false;
  for (int k = 0; k < SUITE_COUNT; k++) {
    struct suite_case c = bench_case(k);
    char key[64];
    snprintf(key, sizeof key, "%s_memcpy", c.name);
    double cp = selected(k) && copy_bytes(&c) ? key_of(h, rounds, key, "best") : -1;
    if (cp <= 0)
      continue;
    if (!any_copy)
      printf("bandwidth as a share of a %.0f-thread memcpy of the same bytes (memcpy best / kernel best):",
             side_get(&h[0], "threads"));
    any_copy = true;
    printf(" %s memcpy %.2f ms, ours %.3f, PoCL %.3f, hand %.3f;", c.name, cp / 1e6,
           cp / key_of(o, rounds, c.name, "best"), cp / key_of(p, rounds, c.name, "best"),
           cp / key_of(h, rounds, c.name, "best"));
  }
  if (any_copy)
    printf("\n");
  // The first launch and the program build are round 1's: later rounds find the program (and the
  // specialisations) in the JIT's disk cache, so they are cold only when round 1 starts with it empty
  // (OFFLOAD_RS_JIT_CACHE_DIR=off or a fresh directory).
  printf("first launch + sync in round 1, ms (ours / PoCL):");
  for (int k = 0; k < SUITE_COUNT; k++)
    if (selected(k))
      printf(" %s %.1f / %.1f;", suite_names[k], key_of(o, 1, suite_names[k], "first") / 1e6,
             key_of(p, 1, suite_names[k], "first") / 1e6);
  printf("\n");
  printf("program build in round 1: ours %.0f ms (olCreateProgram, JIT; cold only with an empty disk cache), PoCL %.0f ms "
         "(clBuildProgram; its on-disk cache may be warm)\n",
         key_of(o, 1, "", "compile_ns") / 1e6, key_of(p, 1, "", "compile_ns") / 1e6);
  if (ro || rp || rh || wrong) {
    fprintf(stderr, "FAILED: ours=%d pocl=%d hand=%d, %d wrong results\n", ro, rp, rh, wrong);
    return 1;
  }
  return 0;
}
