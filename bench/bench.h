// Helpers shared by the benchmarks that link our library (cpu_kernels.c, program_cache.c, suite.c,
// jit_process.c, cuda_launch.c): a clock, file and kernel loading, the device lookup, error-checking
// wrappers, and running one side of a comparison in a child process of the same run (each side prints
// `key value` lines on stdout; the parent reads them), and the memcpy ceiling of the memory-bound kernels.
// offload_calls.c dlopen()s the libraries it compares
// and so keeps to itself.
#ifndef OFFLOAD_RS_BENCH_H
#define OFFLOAD_RS_BENCH_H

#include <stdbool.h>
#include <OffloadAPI.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels/suite_shape.h"

#define BENCH_STR_(x) #x
#define BENCH_STR(x) BENCH_STR_(x)
// The -D options that give the OpenCL C kernels suite_shape.h's shapes (SUITE_WG, ...).
#define SUITE_CL_OPTIONS                                                                            \
  "-DSUITE_WG=" BENCH_STR(SUITE_WG) " -DSUITE_TILE=" BENCH_STR(SUITE_TILE) " -DSUITE_BINS=" BENCH_STR(   \
      SUITE_BINS) " -DSUITE_HIST_PER_ITEM=" BENCH_STR(SUITE_HIST_PER_ITEM) " -DSUITE_CONV_R=" BENCH_STR(  \
      SUITE_CONV_R) " -DSUITE_MANDEL_ITERS=" BENCH_STR(SUITE_MANDEL_ITERS) " -DSUITE_RADIX_BITS=" BENCH_STR( \
      SUITE_RADIX_BITS)

#define OL(call)                                                                                    \
  do {                                                                                              \
    ol_result_t r_ = (call);                                                                        \
    if (r_) {                                                                                       \
      fprintf(stderr, "%s failed: %d %s\n", #call, r_->Code, r_->Details);                          \
      exit(3);                                                                                      \
    }                                                                                               \
  } while (0)

// For OpenCL sides (include <CL/cl.h> first).
#define CL(call)                                                                                    \
  do {                                                                                              \
    cl_int e_ = (call);                                                                             \
    if (e_ != CL_SUCCESS) {                                                                         \
      fprintf(stderr, "%s failed: %d\n", #call, e_);                                                \
      exit(3);                                                                                      \
    }                                                                                               \
  } while (0)

#ifdef CL_SUCCESS
// The first OpenCL device (PoCL's CPU device here), a context on it and an in-order queue.
static inline void cl_open(cl_device_id *dev, cl_context *ctx, cl_command_queue *q) {
  cl_platform_id plat;
  cl_int err;
  CL(clGetPlatformIDs(1, &plat, NULL));
  CL(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, dev, NULL));
  *ctx = clCreateContext(NULL, 1, dev, NULL, NULL, &err);
  CL(err);
  *q = clCreateCommandQueue(*ctx, *dev, 0, &err);
  CL(err);
}
#endif

static inline double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// Host memory for the peers' buffers (hand loops, PoCL's host pointers, memcpy) like the CPU device's own
// from 2 MiB on (src/plugin/cpu/memory.rs): on a 2 MiB boundary and marked for transparent huge pages, so
// that a comparison measures code, not page sizes. Freed with free().
static inline void *bench_alloc(size_t bytes) {
  enum { HUGE = 2 << 20 };
  if (bytes < HUGE)
    return aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  size_t len = (bytes + HUGE - 1) / HUGE * HUGE;
  void *p = aligned_alloc(HUGE, len);
  if (p)
    madvise(p, len, MADV_HUGEPAGE); // a hint: without transparent huge pages, small pages
  return p;
}

// One thread's part of bench_copy.
struct bench_copy_part {
  char *d;
  const char *s;
  size_t n;
};

static inline void *bench_copy_thread(void *arg) {
  struct bench_copy_part *p = arg;
  memcpy(p->d, p->s, p->n);
  return NULL;
}

// memcpy of `bytes` from `s` to `d` split over `threads` threads (at most 256, whole cache lines each),
// thread start included; returns the nanoseconds it took.
static inline double bench_copy(char *d, const char *s, size_t bytes, unsigned threads) {
  enum { MAX_THREADS = 256 };
  threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
  struct bench_copy_part parts[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  size_t chunk = (bytes / threads + 63) / 64 * 64;
  for (unsigned t = 0; t < threads; t++) {
    size_t lo = chunk * t < bytes ? chunk * t : bytes, hi = lo + chunk < bytes ? lo + chunk : bytes;
    parts[t] = (struct bench_copy_part){d + lo, s + lo, hi - lo};
  }
  double t0 = now_ns();
  for (unsigned t = 0; t < threads; t++)
    pthread_create(&tid[t], NULL, bench_copy_thread, &parts[t]);
  for (unsigned t = 0; t < threads; t++)
    pthread_join(tid[t], NULL);
  return now_ns() - t0;
}

// "AVX-512" / "AVX2" / "SSE" and FMA, from the flags line of /proc/cpuinfo; the model name.
static inline void cpu_info(char *model, size_t msize, char *isa, size_t isize) {
  snprintf(model, msize, "unknown");
  snprintf(isa, isize, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[8192];
  bool have_model = false, have_flags = false;
  while (fgets(line, sizeof line, f) && !(have_model && have_flags)) {
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    char *val = colon + 2 <= line + strlen(line) ? colon + 2 : colon + 1;
    val[strcspn(val, "\n")] = 0;
    if (!have_model && !strncmp(line, "model name", 10)) {
      snprintf(model, msize, "%s", val);
      have_model = true;
    } else if (!have_flags && !strncmp(line, "flags", 5)) {
      char padded[8200];
      snprintf(padded, sizeof padded, " %s ", val);
      bool avx512 = strstr(padded, " avx512f ") != NULL, avx2 = strstr(padded, " avx2 ") != NULL;
      bool fma = strstr(padded, " fma ") != NULL;
      snprintf(isa, isize, "%s%s", avx512 ? "AVX-512" : avx2 ? "AVX2" : "SSE (no AVX2)",
               fma ? " + FMA" : "");
      if (!avx512)
        snprintf(isa + strlen(isa), isize - strlen(isa), ", no AVX-512");
      have_flags = true;
    }
  }
  fclose(f);
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// Sorts v.
static inline double median(double *v, int n) {
  qsort(v, n, sizeof(double), cmp_double);
  return v[n / 2];
}

// The whole file, NUL-terminated (for OpenCL C and PTX source); exits on error.
static inline void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    fprintf(stderr, "(run bench/build.sh first)\n");
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*size + 1);
  if (fread(p, 1, *size, f) != *size)
    exit(2);
  ((char *)p)[*size] = 0;
  fclose(f);
  return p;
}

// The file `name` of the benchmark kernels' directory: $BENCH_KERNELS, default build/bench (bench/build.sh
// puts the bitcode there and copies the OpenCL C beside it).
static inline const char *kernel_path(char *buf, size_t n, const char *name) {
  const char *dir = getenv("BENCH_KERNELS");
  snprintf(buf, n, "%s/%s", dir ? dir : "build/bench", name);
  return buf;
}

#ifdef CL_SUCCESS
// The OpenCL C sources of a program made of saxpy_reduce.cl and `file` (bench.cl or suite.cl), in
// kernel_path's directory, for clCreateProgramWithSource(ctx, 2, src, ...) and SUITE_CL_OPTIONS.
static inline void cl_read_sources(const char *file, const char *src[2]) {
  char path[512];
  size_t sz;
  src[0] = read_file(kernel_path(path, sizeof path, "saxpy_reduce.cl"), &sz);
  src[1] = read_file(kernel_path(path, sizeof path, file), &sz);
}

// The program of cl_read_sources' `src`, built for dev with SUITE_CL_OPTIONS and kernel_path's directory
// on the include path (suite.cl includes blackscholes.cl); exits with the build log on failure.
static inline cl_program cl_build(cl_context ctx, cl_device_id dev, const char *src[2]) {
  cl_int err;
  cl_program prog = clCreateProgramWithSource(ctx, 2, src, NULL, &err);
  CL(err);
  char dir[512], opts[1024];
  snprintf(opts, sizeof opts, "%s -I%s", SUITE_CL_OPTIONS, kernel_path(dir, sizeof dir, ""));
  err = clBuildProgram(prog, 1, &dev, opts, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[16384];
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "clBuildProgram: %d\n%s\n", err, log);
    exit(3);
  }
  return prog;
}
#endif

struct find_backend {
  uint32_t backend;
  ol_device_handle_t dev;
};

static inline bool find_backend_cb(ol_device_handle_t d, void *ud) {
  struct find_backend *f = ud;
  ol_platform_handle_t p;
  uint32_t backend = 0;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) == NULL &&
      olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) == NULL && backend == f->backend) {
    f->dev = d;
    return false;
  }
  return true;
}

// The first device whose platform backend is `backend` (after olInit), or NULL.
static inline ol_device_handle_t find_device(uint32_t backend) {
  struct find_backend f = {backend, NULL};
  OL(olIterateDevices(find_backend_cb, &f));
  return f.dev;
}

// The CPU device (platform backend 0x100) after olInit; exits if there is none. Unless the caller says
// otherwise, a kernel's version for a group shape that does not compile fails its launch
// (OFFLOAD_RS_JIT_SPECIALISE=require, read at the first compile): a benchmark must not time the generic code
// in its place unnoticed.
static inline ol_device_handle_t find_cpu_device(void) {
  setenv("OFFLOAD_RS_JIT_SPECIALISE", "require", 0);
  ol_device_handle_t d = find_device(0x100);
  if (!d) {
    fprintf(stderr, "no CPU device\n");
    exit(4);
  }
  return d;
}

#define SIDE_MAXK 128
struct side {
  char key[SIDE_MAXK][48];
  double val[SIDE_MAXK];
  int n;
};

// Run `self mode arg` and collect the `key value` lines it prints; returns its exit status (128: killed).
static inline int run_child(const char *self, const char *mode, const char *arg, struct side *out) {
  int fd[2];
  out->n = 0;
  if (pipe(fd))
    return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    execl(self, self, mode, arg, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  FILE *f = fdopen(fd[0], "r");
  while (out->n < SIDE_MAXK && fscanf(f, "%47s %lf", out->key[out->n], &out->val[out->n]) == 2)
    out->n++;
  fclose(f);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// One side of a comparison: `self <name> <arg>` (what run_child starts) runs run(arg); without <arg>, arg
// is `dflt`.
struct side_mode {
  const char *name;
  void (*run)(const char *arg);
  const char *dflt;
};

// Runs the side argv[1] names and returns true (a child of run_child, or a side run by hand); false when
// argv[1] names none (the parent).
static inline bool run_side_mode(int argc, char **argv, const struct side_mode *modes, size_t n) {
  for (size_t i = 0; argc > 1 && i < n; i++)
    if (!strcmp(argv[1], modes[i].name)) {
      modes[i].run(argc > 2 ? argv[2] : modes[i].dflt);
      return true;
    }
  return false;
}

// The value printed for key, or -1.
static inline double side_get(const struct side *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], key))
      return s->val[i];
  return -1;
}

#endif
