// Helpers shared by the CPU-device benchmarks (cpu_kernels.c, program_cache.c, suite.c): a clock, file
// loading, the CPU device lookup, error-checking wrappers, and running one side of a comparison in a
// child process of the same run (each side prints `key value` lines on stdout; the parent reads them).
#ifndef OFFLOAD_RS_BENCH_H
#define OFFLOAD_RS_BENCH_H

#include <stdbool.h>
#include <OffloadAPI.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// Sorts v.
static inline double median(double *v, int n) {
  qsort(v, n, sizeof(double), cmp_double);
  return v[n / 2];
}

// The whole file, NUL-terminated (for OpenCL C source); exits on error.
static inline void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
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

static inline bool find_cpu_cb(ol_device_handle_t d, void *out) {
  ol_platform_handle_t p;
  uint32_t backend = 0;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) == NULL &&
      olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) == NULL && backend == 0x100) {
    *(ol_device_handle_t *)out = d;
    return false;
  }
  return true;
}

// The CPU device (platform backend 0x100) after olInit; exits if there is none.
static inline ol_device_handle_t find_cpu_device(void) {
  ol_device_handle_t d = NULL;
  OL(olIterateDevices(find_cpu_cb, &d));
  if (!d) {
    fprintf(stderr, "no CPU device\n");
    exit(4);
  }
  return d;
}

#define SIDE_MAXK 96
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

// The value printed for key, or -1.
static inline double side_get(const struct side *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], key))
      return s->val[i];
  return -1;
}

#endif
