// Math-heavy kernels on the CPU device: Black-Scholes option pricing (bench/kernels/blackscholes.h: exp,
// log, sqrt and a polynomial CNDF per option), each side in its own child process, timed in the same run:
//
//   make lib && bash bench/build.sh && build/bench/vmath
//
//   ours         the CPU device, nvptx64 bitcode (glibc's vector math through the JIT, src/jit/llvm/math.rs)
//   ours_scalar  the same with OFFLOAD_RS_JIT_VECTOR_MATH=0 (one scalar libm call per option)
//   hand         the hand-written loop, clang -O3 -march=native, scalar libm (math-errno, as C is by default)
//   hand_vec     the same loop with -fveclib=libmvec -fno-math-errno (glibc's vector math, by hand)
//   pocl         PoCL 3.1 on the same OpenCL C
// The hand loops run on as many threads as the CPU device has. Each side: 2 warm-ups, then ROUNDS x 10
// timed launch + sync; best / median / max in ms. Every side's prices are checked against a scalar
// double-precision reference (relative error 1e-3 or 1e-3 absolute).
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <pthread.h>

#include "bench.h"

#define N (4u << 20)
#define REPS 10
static const float RATE = 0.02f, VOL = 0.30f;

void bs_hand_scalar(const float *s, const float *x, const float *t, float *call, float *put, float r, float v,
                    uint32_t lo, uint32_t hi);
void bs_hand_vec(const float *s, const float *x, const float *t, float *call, float *put, float r, float v,
                 uint32_t lo, uint32_t hi);

static float *S, *X, *T, *CALL, *PUT;

static void inputs(void) {
  uint32_t seed = 12345;
  for (uint32_t i = 0; i < N; i++) {
    seed = seed * 1664525u + 1013904223u;
    S[i] = 5.0f + (float)(seed >> 8) / (1 << 24) * 25.0f;
    seed = seed * 1664525u + 1013904223u;
    X[i] = 1.0f + (float)(seed >> 8) / (1 << 24) * 99.0f;
    seed = seed * 1664525u + 1013904223u;
    T[i] = 0.25f + (float)(seed >> 8) / (1 << 24) * 9.75f;
  }
}

static double cnd(double d) { return 0.5 * erfc(-d / sqrt(2.0)); }

// Checks every 97th option against the exact formula in double precision; exits on a wrong price.
static void check(const char *side) {
  for (uint32_t i = 0; i < N; i += 97) {
    double s = S[i], x = X[i], t = T[i], r = RATE, v = VOL;
    double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt(t)), d2 = d1 - v * sqrt(t);
    double call = s * cnd(d1) - x * exp(-r * t) * cnd(d2), put = x * exp(-r * t) * cnd(-d2) - s * cnd(-d1);
    if (fabs(CALL[i] - call) > 1e-3 * fmax(1.0, fabs(call)) || fabs(PUT[i] - put) > 1e-3 * fmax(1.0, fabs(put))) {
      fprintf(stderr, "%s: option %u: call %g put %g, want %g %g\n", side, i, CALL[i], PUT[i], call, put);
      exit(5);
    }
  }
}

static void report(const char *key, double *v, int n) {
  double best = 1e30, worst = 0;
  for (int i = 0; i < n; i++) {
    best = v[i] < best ? v[i] : best;
    worst = v[i] > worst ? v[i] : worst;
  }
  printf("%s_best %.4f\n%s_median %.4f\n%s_max %.4f\n", key, best, key, median(v, n), key, worst);
}

static void alloc_host(void) {
  S = malloc(N * 4), X = malloc(N * 4), T = malloc(N * 4), CALL = malloc(N * 4), PUT = malloc(N * 4);
  inputs();
}

static void side_ours(const char *arg) {
  if (!strcmp(arg, "scalar"))
    setenv("OFFLOAD_RS_JIT_VECTOR_MATH", "0", 1);
  OL(olInit());
  ol_device_handle_t dev = find_cpu_device();
  ol_queue_handle_t q;
  OL(olCreateQueue(dev, &q));
  float **bufs[5] = {&S, &X, &T, &CALL, &PUT};
  for (int i = 0; i < 5; i++)
    OL(olMemAlloc(dev, OL_ALLOC_TYPE_MANAGED, N * 4, (void **)bufs[i]));
  inputs();
  char path[512];
  size_t sz;
  void *bc = read_file(kernel_path(path, sizeof path, "blackscholes.nvptx64.bc"), &sz);
  ol_program_handle_t prog;
  OL(olCreateProgram(dev, bc, sz, &prog));
  ol_symbol_handle_t k;
  OL(olGetSymbol(prog, "blackscholes", OL_SYMBOL_KIND_KERNEL, &k));
  struct {
    const float *s, *x, *t;
    float *call, *put;
    float r, v;
    uint32_t n;
  } args = {S, X, T, CALL, PUT, RATE, VOL, N};
  ol_kernel_launch_size_args_t la = {1, {N / 256, 1, 1}, {256, 1, 1}, 0};
  for (int i = 0; i < 2; i++)
    OL(olLaunchKernel(q, dev, k, &args, sizeof args, &la));
  OL(olSyncQueue(q));
  double v[REPS];
  for (int i = 0; i < REPS; i++) {
    double t0 = now_ns();
    OL(olLaunchKernel(q, dev, k, &args, sizeof args, &la));
    OL(olSyncQueue(q));
    v[i] = (now_ns() - t0) / 1e6;
  }
  check("ours");
  report("ms", v, REPS);
  uint32_t cu = 0;
  OL(olGetDeviceInfo(dev, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cu, &cu));
  printf("threads %u\n", cu);
  olShutDown();
}

struct hand_arg {
  void (*fn)(const float *, const float *, const float *, float *, float *, float, float, uint32_t, uint32_t);
  uint32_t lo, hi;
};
static void *hand_worker(void *p) {
  struct hand_arg *a = p;
  a->fn(S, X, T, CALL, PUT, RATE, VOL, a->lo, a->hi);
  return NULL;
}

static void run_hand(struct hand_arg *base, int threads) {
  pthread_t th[64];
  struct hand_arg a[64];
  for (int i = 0; i < threads; i++) {
    a[i] = *base;
    a[i].lo = (uint32_t)((uint64_t)N * i / threads);
    a[i].hi = (uint32_t)((uint64_t)N * (i + 1) / threads);
    pthread_create(&th[i], NULL, hand_worker, &a[i]);
  }
  for (int i = 0; i < threads; i++)
    pthread_join(th[i], NULL);
}

static void side_hand(const char *arg) {
  alloc_host();
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
  struct hand_arg base = {!strcmp(arg, "vec") ? bs_hand_vec : bs_hand_scalar, 0, 0};
  for (int i = 0; i < 2; i++)
    run_hand(&base, threads);
  double v[REPS];
  for (int i = 0; i < REPS; i++) {
    double t0 = now_ns();
    run_hand(&base, threads);
    v[i] = (now_ns() - t0) / 1e6;
  }
  check(arg);
  report("ms", v, REPS);
}

static void side_pocl(const char *arg) {
  (void)arg;
  alloc_host();
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_open(&dev, &ctx, &q);
  char path[512], opts[600];
  size_t sz;
  const char *src = read_file(kernel_path(path, sizeof path, "blackscholes.cl"), &sz);
  cl_int err;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CL(err);
  snprintf(opts, sizeof opts, "-I%s", kernel_path(path, sizeof path, ""));
  if (clBuildProgram(prog, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
    char log[16384];
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "clBuildProgram: %s\n", log);
    exit(3);
  }
  cl_kernel k = clCreateKernel(prog, "blackscholes", &err);
  CL(err);
  cl_mem m[5];
  float *host[5] = {S, X, T, CALL, PUT};
  for (int i = 0; i < 5; i++) {
    m[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * 4, host[i], &err);
    CL(err);
    CL(clSetKernelArg(k, i, sizeof m[i], &m[i]));
  }
  float r = RATE, vol = VOL;
  cl_uint n = N;
  CL(clSetKernelArg(k, 5, sizeof r, &r));
  CL(clSetKernelArg(k, 6, sizeof vol, &vol));
  CL(clSetKernelArg(k, 7, sizeof n, &n));
  size_t global = N, local = 256;
  for (int i = 0; i < 2; i++)
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
  CL(clFinish(q));
  double v[REPS];
  for (int i = 0; i < REPS; i++) {
    double t0 = now_ns();
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CL(clFinish(q));
    v[i] = (now_ns() - t0) / 1e6;
  }
  for (int i = 3; i < 5; i++) {
    void *p = clEnqueueMapBuffer(q, m[i], CL_TRUE, CL_MAP_READ, 0, N * 4, 0, NULL, NULL, &err);
    CL(err);
    CL(clEnqueueUnmapMemObject(q, m[i], p, 0, NULL, NULL));
  }
  CL(clFinish(q));
  check("pocl");
  report("ms", v, REPS);
}

int main(int argc, char **argv) {
  static const struct side_mode modes[] = {
      {"ours", side_ours, "vector"}, {"hand", side_hand, "scalar"}, {"pocl", side_pocl, ""}};
  if (run_side_mode(argc, argv, modes, sizeof modes / sizeof modes[0]))
    return 0;
  int rounds = getenv("VMATH_ROUNDS") ? atoi(getenv("VMATH_ROUNDS")) : 3;
  rounds = rounds < 1 ? 1 : rounds > 20 ? 20 : rounds;
  const struct {
    const char *name, *mode, *arg;
  } sides[] = {{"ours", "ours", "vector"},
               {"ours_scalar", "ours", "scalar"},
               {"hand", "hand", "scalar"},
               {"hand_vec", "hand", "vec"},
               {"pocl", "pocl", ""}};
  enum { NS = sizeof sides / sizeof sides[0] };
  double best[NS], med[NS][20], worst[NS];
  for (int s = 0; s < NS; s++)
    best[s] = 1e30, worst[s] = 0;
  unsigned threads = 0;
  for (int round = 0; round < rounds; round++)
    for (int s = 0; s < NS; s++) {
      struct side out;
      int rc = run_child(argv[0], sides[s].mode, sides[s].arg, &out);
      if (rc != 0) {
        fprintf(stderr, "side %s failed (exit %d)\n", sides[s].name, rc);
        return 1;
      }
      double b = side_get(&out, "ms_best"), m = side_get(&out, "ms_median"), w = side_get(&out, "ms_max");
      best[s] = b < best[s] ? b : best[s];
      worst[s] = w > worst[s] ? w : worst[s];
      med[s][round] = m;
      if (side_get(&out, "threads") > 0)
        threads = (unsigned)side_get(&out, "threads");
    }
  printf("Black-Scholes, %u options (float): ms best / median / max over %d round(s) of %d launches, %u threads\n",
         N, rounds, REPS, threads);
  double m[NS];
  for (int s = 0; s < NS; s++) {
    m[s] = median(med[s], rounds);
    printf("%-12s %8.2f / %8.2f / %8.2f\n", sides[s].name, best[s], m[s], worst[s]);
  }
  printf("ours/hand (scalar libm) %.3f, ours/hand_vec %.3f, ours/pocl %.3f, ours/ours_scalar %.3f (medians)\n",
         m[0] / m[2], m[0] / m[3], m[0] / m[4], m[0] / m[1]);
  return 0;
}
