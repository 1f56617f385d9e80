/* Raw CUDA driver check and launch-latency baseline, independent of offload-rs.
 * No CUDA headers on the build machine: the few prototypes are declared by hand and resolved
 * with dlopen("libcuda.so.1"). Usage: rawcheck <kernels.ptx>
 * Prints the driver version, every device, then loads the PTX (JIT log on failure) and times
 * 10000 launches of the empty kernel `empty` (async then one sync) and 2000 launch+sync pairs. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDriverGetVersion)(int *);
static CUresult (*cuDeviceGetCount)(int *);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuGetErrorName)(CUresult, const char **);
static CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, CUstream, void **, void **);

static const char *ename(CUresult r) {
  const char *s = "?";
  if (cuGetErrorName)
    cuGetErrorName(r, &s);
  return s;
}
#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_) {                                                                                      \
      printf("rawcheck: %s failed: %d %s\n", #call, r_, ename(r_));                                \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define SYM(name, sym)                                                                             \
  do {                                                                                             \
    *(void **)&name = dlsym(lib, sym);                                                             \
    if (!name) {                                                                                   \
      printf("rawcheck: missing symbol %s\n", sym);                                                \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("rawcheck: dlopen(libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  SYM(cuGetErrorName, "cuGetErrorName");
  SYM(cuInit, "cuInit");
  SYM(cuDriverGetVersion, "cuDriverGetVersion");
  SYM(cuDeviceGetCount, "cuDeviceGetCount");
  SYM(cuDeviceGet, "cuDeviceGet");
  SYM(cuDeviceGetName, "cuDeviceGetName");
  SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  SYM(cuModuleGetFunction, "cuModuleGetFunction");
  SYM(cuStreamCreate, "cuStreamCreate");
  SYM(cuStreamSynchronize, "cuStreamSynchronize");
  SYM(cuLaunchKernel, "cuLaunchKernel");
  printf("rawcheck: cuFuncGetParamInfo %s\n", dlsym(lib, "cuFuncGetParamInfo") ? "present" : "ABSENT (< 12.4)");

  double t0 = now();
  CHECK(cuInit(0));
  printf("rawcheck: cuInit took %.3f s\n", now() - t0);
  int ver = 0, n = 0;
  CHECK(cuDriverGetVersion(&ver));
  CHECK(cuDeviceGetCount(&n));
  printf("rawcheck: driver API %d.%d, %d device(s)\n", ver / 1000, ver % 1000 / 10, n);
  for (int i = 0; i < n; i++) {
    CUdevice d;
    char name[256] = {0};
    int maj = 0, min = 0, sms = 0;
    size_t mem = 0;
    CHECK(cuDeviceGet(&d, i));
    CHECK(cuDeviceGetName(name, sizeof name, d));
    CHECK(cuDeviceGetAttribute(&maj, 75, d));
    CHECK(cuDeviceGetAttribute(&min, 76, d));
    CHECK(cuDeviceGetAttribute(&sms, 16, d));
    CHECK(cuDeviceTotalMem(&mem, d));
    printf("rawcheck: device %d: %s, sm_%d%d, %d SMs, %zu MiB\n", i, name, maj, min, sms, mem >> 20);
  }
  if (n == 0 || argc < 2)
    return n == 0;

  CUdevice d;
  CUcontext ctx;
  CHECK(cuDeviceGet(&d, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
  CHECK(cuCtxSetCurrent(ctx));
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    printf("rawcheck: cannot open %s\n", argv[1]);
    return 1;
  }
  static char ptx[1 << 20];
  size_t len = fread(ptx, 1, sizeof ptx - 1, f);
  fclose(f);
  ptx[len] = 0;
  static char log[16384];
  int opts[2] = {5 /* CU_JIT_ERROR_LOG_BUFFER */, 6 /* ..._SIZE_BYTES */};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule m;
  CUresult r = cuModuleLoadDataEx(&m, ptx, 2, opts, vals);
  if (r) {
    printf("rawcheck: cuModuleLoadDataEx failed: %d %s\n%s\n", r, ename(r), log);
    return 1;
  }
  CUfunction fn;
  CUstream s;
  CHECK(cuModuleGetFunction(&fn, m, "empty"));
  CHECK(cuStreamCreate(&s, 1));
  for (int i = 0; i < 100; i++)
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK(cuStreamSynchronize(s));
  const int N = 10000, M = 2000;
  double a = now();
  for (int i = 0; i < N; i++)
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  double b = now();
  CHECK(cuStreamSynchronize(s));
  double c = now();
  for (int i = 0; i < M; i++) {
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuStreamSynchronize(s));
  }
  double e = now();
  printf("rawcheck (C, raw driver): async enqueue %.2f us/launch, async total incl. sync %.2f us/launch, "
         "launch+sync %.2f us/launch\n",
         (b - a) * 1e6 / N, (c - a) * 1e6 / N, (e - c) * 1e6 / M);
  return 0;
}
