// CPU device vs PoCL: the same kernels, measured in the same run (each side in its own child process so
// that the two LLVMs never share an address space). Prints a table of times and ratios.
//
//   bench/build.sh && build/bench/cpu_kernels           (after `make lib`)
//
// Sides: "offload" = our libLLVMOffload.so.22.1 (CPU device, nvptx64 bitcode JIT), "pocl" = PoCL 3.1
// (OpenCL C), "memcpy" = two threads of memcpy over the same bytes (bandwidth ceiling), and "offload" again
// with OFFLOAD_RS_MEMCHECK=1 (the kernel memory checker's cost; the first offload side runs with it unset).
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <pthread.h>

#include "bench.h"

#define N (16u * 1024u * 1024u)
#define WG ((uint32_t)SUITE_WG) // reduce's group size (saxpy_reduce.h)
#define REPS 15
#define LAT_REPS 2000
#define PIPE_REPS 10000

static void init_data(float *x, float *y) {
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)(i % 1000);
    y[i] = 1.0f;
  }
}

static int check_saxpy(const float *x, const float *y, int launches) {
  // y = a*x + y applied `launches` times with a = 2: y = 1 + 2*x*launches (exact for these ranges)
  for (uint32_t i = 0; i < N; i += 997)
    if (y[i] != 1.0f + 2.0f * x[i] * launches) {
      fprintf(stderr, "saxpy mismatch at %u: %f\n", i, y[i]);
      return 1;
    }
  return 0;
}

// ---------------------------------------------------------------------------------------------------
// offload-rs

static void run_offload(const char *bc_path) {
  OL(olInit());
  ol_device_handle_t cpu_dev = find_cpu_device();
  size_t sz;
  void *bc = read_file(bc_path, &sz);
  ol_program_handle_t prog;
  double t0 = now_ns();
  OL(olCreateProgram(cpu_dev, bc, sz, &prog));
  printf("program_create_cold_ns %.0f\n", now_ns() - t0);
  ol_symbol_handle_t saxpy, reduce, empty;
  OL(olGetSymbol(prog, "saxpy", OL_SYMBOL_KIND_KERNEL, &saxpy));
  OL(olGetSymbol(prog, "reduce", OL_SYMBOL_KIND_KERNEL, &reduce));
  OL(olGetSymbol(prog, "empty", OL_SYMBOL_KIND_KERNEL, &empty));
  float *x, *y, *part;
  OL(olMemAlloc(cpu_dev, OL_ALLOC_TYPE_DEVICE, N * sizeof(float), (void **)&x));
  OL(olMemAlloc(cpu_dev, OL_ALLOC_TYPE_DEVICE, N * sizeof(float), (void **)&y));
  OL(olMemAlloc(cpu_dev, OL_ALLOC_TYPE_DEVICE, (N / WG) * sizeof(float), (void **)&part));
  init_data(x, y);
  ol_queue_handle_t q;
  OL(olCreateQueue(cpu_dev, &q));

  struct {
    float a;
    const float *x;
    float *y;
    uint32_t n;
  } sargs = {2.0f, x, y, N};
  ol_kernel_launch_size_args_t big = {1, {N / WG, 1, 1}, {WG, 1, 1}, 0};
  double v[REPS];
  for (int i = 0; i < 3; i++)
    OL(olLaunchKernel(q, cpu_dev, saxpy, &sargs, sizeof sargs, &big));
  OL(olSyncQueue(q));
  for (int i = 0; i < REPS; i++) {
    t0 = now_ns();
    OL(olLaunchKernel(q, cpu_dev, saxpy, &sargs, sizeof sargs, &big));
    OL(olSyncQueue(q));
    v[i] = now_ns() - t0;
  }
  printf("saxpy_ns %.0f\n", median(v, REPS));
  if (check_saxpy(x, y, 3 + REPS))
    exit(5);

  struct {
    const float *in;
    float *out;
  } rargs = {x, part};
  for (int i = 0; i < 3; i++)
    OL(olLaunchKernel(q, cpu_dev, reduce, &rargs, sizeof rargs, &big));
  OL(olSyncQueue(q));
  for (int i = 0; i < REPS; i++) {
    t0 = now_ns();
    OL(olLaunchKernel(q, cpu_dev, reduce, &rargs, sizeof rargs, &big));
    OL(olSyncQueue(q));
    v[i] = now_ns() - t0;
  }
  printf("reduce_ns %.0f\n", median(v, REPS));
  for (uint32_t g = 0; g < N / WG; g += 101) {
    float want = 0;
    for (uint32_t k = 0; k < WG; k++)
      want += x[g * WG + k];
    if (part[g] != want) {
      fprintf(stderr, "reduce mismatch at group %u: %f vs %f\n", g, part[g], want);
      exit(5);
    }
  }

  ol_kernel_launch_size_args_t one = {1, {1, 1, 1}, {1, 1, 1}, 0};
  for (int i = 0; i < 100; i++)
    OL(olLaunchKernel(q, cpu_dev, empty, NULL, 0, &one));
  OL(olSyncQueue(q));
  t0 = now_ns();
  for (int i = 0; i < LAT_REPS; i++) {
    OL(olLaunchKernel(q, cpu_dev, empty, NULL, 0, &one));
    OL(olSyncQueue(q));
  }
  printf("empty_launch_sync_ns %.0f\n", (now_ns() - t0) / LAT_REPS);
  t0 = now_ns();
  for (int i = 0; i < PIPE_REPS; i++)
    OL(olLaunchKernel(q, cpu_dev, empty, NULL, 0, &one));
  double enq = now_ns() - t0;
  OL(olSyncQueue(q));
  printf("enqueue_ns %.0f\n", enq / PIPE_REPS);
  printf("pipelined_launch_ns %.0f\n", (now_ns() - t0) / PIPE_REPS);
  t0 = now_ns();
  for (int i = 0; i < LAT_REPS; i++) {
    ol_event_handle_t e;
    OL(olLaunchKernel(q, cpu_dev, empty, NULL, 0, &one));
    OL(olCreateEvent(q, &e));
    OL(olSyncEvent(e));
    OL(olDestroyEvent(e));
  }
  printf("launch_event_sync_ns %.0f\n", (now_ns() - t0) / LAT_REPS);

  OL(olDestroyQueue(q));
  OL(olMemFree(x));
  OL(olMemFree(y));
  OL(olMemFree(part));
  t0 = now_ns();
  ol_program_handle_t prog2;
  OL(olCreateProgram(cpu_dev, bc, sz, &prog2)); // same bytes while prog is alive: cache hit
  printf("program_create_warm_ns %.0f\n", now_ns() - t0);
  OL(olDestroyProgram(prog2));
  OL(olDestroyProgram(prog));
  OL(olShutDown());
}

// ---------------------------------------------------------------------------------------------------
// PoCL

static void run_pocl(const char *cl_file) {
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_int err;
  cl_open(&dev, &ctx, &q);
  const char *src[2];
  cl_read_sources(cl_file, src);
  double t0 = now_ns();
  cl_program prog = cl_build(ctx, dev, src);
  printf("program_create_cold_ns %.0f\n", now_ns() - t0);
  cl_kernel saxpy = clCreateKernel(prog, "saxpy", &err);
  CL(err);
  cl_kernel reduce = clCreateKernel(prog, "reduce", &err);
  CL(err);
  cl_kernel empty = clCreateKernel(prog, "empty", &err);
  CL(err);
  float *x = bench_alloc(N * sizeof(float)), *y = bench_alloc(N * sizeof(float));
  float *part = bench_alloc((N / WG) * sizeof(float));
  init_data(x, y);
  cl_mem bx = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR, N * sizeof(float), x, &err);
  CL(err);
  cl_mem by = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR, N * sizeof(float), y, &err);
  CL(err);
  cl_mem bp = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR, (N / WG) * sizeof(float), part, &err);
  CL(err);
  float a = 2.0f;
  cl_uint n = N;
  CL(clSetKernelArg(saxpy, 0, sizeof a, &a));
  CL(clSetKernelArg(saxpy, 1, sizeof bx, &bx));
  CL(clSetKernelArg(saxpy, 2, sizeof by, &by));
  CL(clSetKernelArg(saxpy, 3, sizeof n, &n));
  size_t g = N, l = WG;
  double v[REPS];
  for (int i = 0; i < 3; i++)
    CL(clEnqueueNDRangeKernel(q, saxpy, 1, NULL, &g, &l, 0, NULL, NULL));
  CL(clFinish(q));
  for (int i = 0; i < REPS; i++) {
    t0 = now_ns();
    CL(clEnqueueNDRangeKernel(q, saxpy, 1, NULL, &g, &l, 0, NULL, NULL));
    CL(clFinish(q));
    v[i] = now_ns() - t0;
  }
  printf("saxpy_ns %.0f\n", median(v, REPS));
  void *m = clEnqueueMapBuffer(q, by, CL_TRUE, CL_MAP_READ, 0, N * sizeof(float), 0, NULL, NULL, &err);
  CL(err);
  if (check_saxpy(x, m, 3 + REPS))
    exit(5);
  CL(clEnqueueUnmapMemObject(q, by, m, 0, NULL, NULL));
  CL(clSetKernelArg(reduce, 0, sizeof bx, &bx));
  CL(clSetKernelArg(reduce, 1, sizeof bp, &bp));
  for (int i = 0; i < 3; i++)
    CL(clEnqueueNDRangeKernel(q, reduce, 1, NULL, &g, &l, 0, NULL, NULL));
  CL(clFinish(q));
  for (int i = 0; i < REPS; i++) {
    t0 = now_ns();
    CL(clEnqueueNDRangeKernel(q, reduce, 1, NULL, &g, &l, 0, NULL, NULL));
    CL(clFinish(q));
    v[i] = now_ns() - t0;
  }
  printf("reduce_ns %.0f\n", median(v, REPS));
  size_t one = 1;
  for (int i = 0; i < 100; i++)
    CL(clEnqueueNDRangeKernel(q, empty, 1, NULL, &one, &one, 0, NULL, NULL));
  CL(clFinish(q));
  t0 = now_ns();
  for (int i = 0; i < LAT_REPS; i++) {
    CL(clEnqueueNDRangeKernel(q, empty, 1, NULL, &one, &one, 0, NULL, NULL));
    CL(clFinish(q));
  }
  printf("empty_launch_sync_ns %.0f\n", (now_ns() - t0) / LAT_REPS);
  t0 = now_ns();
  for (int i = 0; i < PIPE_REPS; i++)
    CL(clEnqueueNDRangeKernel(q, empty, 1, NULL, &one, &one, 0, NULL, NULL));
  double enq = now_ns() - t0;
  CL(clFinish(q));
  printf("enqueue_ns %.0f\n", enq / PIPE_REPS);
  printf("pipelined_launch_ns %.0f\n", (now_ns() - t0) / PIPE_REPS);
  t0 = now_ns();
  for (int i = 0; i < LAT_REPS; i++) {
    cl_event e;
    CL(clEnqueueNDRangeKernel(q, empty, 1, NULL, &one, &one, 0, NULL, NULL));
    CL(clEnqueueMarkerWithWaitList(q, 0, NULL, &e));
    CL(clWaitForEvents(1, &e));
    CL(clReleaseEvent(e));
  }
  printf("launch_event_sync_ns %.0f\n", (now_ns() - t0) / LAT_REPS);
  t0 = now_ns();
  cl_program prog2 = cl_build(ctx, dev, src);
  printf("program_create_warm_ns %.0f\n", now_ns() - t0);
  clReleaseProgram(prog2);
}

// ---------------------------------------------------------------------------------------------------
// memcpy ceiling: two threads copying the saxpy working set's worth of bytes

static void run_memcpy(const char *unused) {
  (void)unused;
  size_t bytes = (size_t)N * sizeof(float) * 3 / 2; // copy moves 2 bytes of traffic per byte: 3*N*4 total
  char *s = bench_alloc(bytes), *d = bench_alloc(bytes);
  memset(s, 1, bytes);
  memset(d, 2, bytes);
  double v[REPS];
  for (int r = 0; r < REPS; r++)
    v[r] = bench_copy(d, s, bytes, 2);
  printf("saxpy_ns %.0f\n", median(v, REPS));
}

// ---------------------------------------------------------------------------------------------------

// The checker is read at olInit: the plain side runs with it unset, the second side with it on.
static void run_offload_plain(const char *bc_path) {
  unsetenv("OFFLOAD_RS_MEMCHECK");
  run_offload(bc_path);
}

static void run_offload_memcheck(const char *bc_path) {
  setenv("OFFLOAD_RS_MEMCHECK", "1", 1);
  run_offload(bc_path);
}

int main(int argc, char **argv) {
  char bc[512];
  kernel_path(bc, sizeof bc, "bench.nvptx64.bc");
  const struct side_mode modes[] = {{"offload", run_offload_plain, bc},
                                    {"offload-memcheck", run_offload_memcheck, bc},
                                    {"pocl", run_pocl, "bench.cl"},
                                    {"memcpy", run_memcpy, ""}};
  if (run_side_mode(argc, argv, modes, sizeof modes / sizeof *modes))
    return 0;
  struct side o, p, m, c;
  int ro = run_child("/proc/self/exe", "offload", bc, &o);
  int rp = run_child("/proc/self/exe", "pocl", "bench.cl", &p);
  int rm = run_child("/proc/self/exe", "memcpy", "", &m);
  int rc = run_child("/proc/self/exe", "offload-memcheck", bc, &c);
  printf("CPU device (offload-rs) vs PoCL 3.1, %u floats, work-groups of %u, %ld cores\n", N, WG,
         sysconf(_SC_NPROCESSORS_ONLN));
  printf("%-24s %14s %14s %10s\n", "measure", "offload-rs", "PoCL", "ours/PoCL");
  const char *keys[] = {"saxpy_ns", "reduce_ns", "empty_launch_sync_ns", "enqueue_ns", "pipelined_launch_ns",
                        "launch_event_sync_ns", "program_create_cold_ns", "program_create_warm_ns"};
  for (unsigned i = 0; i < sizeof keys / sizeof *keys; i++) {
    double a = side_get(&o, keys[i]), b = side_get(&p, keys[i]);
    printf("%-24s %14.0f %14.0f %10.3f\n", keys[i], a, b, (a > 0 && b > 0) ? a / b : -1.0);
  }
  double ms = side_get(&m, "saxpy_ns"), os = side_get(&o, "saxpy_ns");
  printf("%-24s %14.0f %14s %10s\n", "memcpy_2threads_ns", ms, "-", "-");
  if (ms > 0 && os > 0)
    printf("saxpy bandwidth / 2-thread memcpy bandwidth (same bytes): %.3f\n", ms / os);
  printf("kernel memory checker (OFFLOAD_RS_MEMCHECK=1), same run:\n");
  printf("%-24s %14s %14s %10s\n", "measure", "off", "on", "on/off");
  const char *ckeys[] = {"saxpy_ns", "reduce_ns", "empty_launch_sync_ns"};
  for (unsigned i = 0; i < sizeof ckeys / sizeof *ckeys; i++) {
    double a = side_get(&o, ckeys[i]), b = side_get(&c, ckeys[i]);
    printf("%-24s %14.0f %14.0f %10.2f\n", ckeys[i], a, b, (a > 0 && b > 0) ? b / a : -1.0);
  }
  if (ro || rp || rm || rc) {
    fprintf(stderr, "a side failed: offload=%d pocl=%d memcpy=%d offload-memcheck=%d\n", ro, rp, rm, rc);
    return 1;
  }
  return 0;
}
