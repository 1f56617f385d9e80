/* olLaunchKernel vs a raw cuLaunchKernel, in one process, on the same driver, module and kernel.
 *
 *   cuda_launch <kernels.ptx> [launches]
 *
 * The PTX is ffi-tests/device/kernels.c compiled by clang (bench/build.sh writes build/bench/kernels.ptx).
 * Raw side: dlopen("libcuda.so.1"), the primary context of device 0, cuModuleLoadDataEx of the PTX, one
 * non-blocking stream, `saxpy` launched with kernelParams (how CUDA programs launch). Our side: the first
 * CUDA device of libLLVMOffload, olCreateProgram from the same PTX text, one queue, olLaunchKernel with
 * the argument struct. Both launch 1 group of 32 work-items with n = 0 (the kernel returns at once),
 * so the time is the launch path. Three rounds of: N launches then one sync (enqueue cost), and N
 * launch+sync pairs (round trip). Prints ns per launch and ours/raw.
 *
 * With a real GPU this is the "olLaunchKernel within 1.2x of a raw cuLaunchKernel". With
 * ffi-tests/fake_cuda (LD_LIBRARY_PATH=build/fake-cuda:build/lib) the driver's own cost is a queue
 * hand-off to a thread, far below a real driver's, so the ratio overstates our share; the difference
 * (ours - raw) is what our layer adds per launch. */
#include <dlfcn.h>

#include "bench.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuModuleUnload)(CUmodule);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuStreamDestroy)(CUstream);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void **, void **);

#define CU(call)                                                                                                   \
  do {                                                                                                             \
    CUresult r_ = (call);                                                                                          \
    if (r_) {                                                                                                      \
      fprintf(stderr, "%s failed: %d\n", #call, r_);                                                             \
      exit(1);                                                                                                     \
    }                                                                                                              \
  } while (0)

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "libcuda.so.1 lacks %s\n", name);
    exit(1);
  }
  return p;
}

struct saxpy_args {
  float a;
  const float *x;
  float *y;
  uint32_t n;
};

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s kernels.ptx [launches]\n", argv[0]);
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 20000;
  size_t len;
  char *ptx = read_file(argv[1], &len); // NUL-terminated: the PTX text is passed with its NUL

  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) {
    fprintf(stderr, "SKIP: no libcuda.so.1 (%s)\n", dlerror());
    return 0;
  }
  cuInit = sym(h, "cuInit");
  cuDeviceGet = sym(h, "cuDeviceGet");
  cuDevicePrimaryCtxRetain = sym(h, "cuDevicePrimaryCtxRetain");
  cuDevicePrimaryCtxRelease = sym(h, "cuDevicePrimaryCtxRelease_v2");
  cuCtxSetCurrent = sym(h, "cuCtxSetCurrent");
  cuModuleUnload = sym(h, "cuModuleUnload");
  cuModuleGetFunction = sym(h, "cuModuleGetFunction");
  cuStreamCreate = sym(h, "cuStreamCreate");
  cuStreamDestroy = sym(h, "cuStreamDestroy_v2");
  cuStreamSynchronize = sym(h, "cuStreamSynchronize");
  cuLaunchKernel = sym(h, "cuLaunchKernel");
  CUresult (*loadEx)(CUmodule *, const void *, unsigned, int *, void **) = sym(h, "cuModuleLoadDataEx");

  // ---- our side
  OL(olInit());
  ol_device_handle_t cuda_dev = find_device(OL_PLATFORM_BACKEND_CUDA);
  if (!cuda_dev) {
    fprintf(stderr, "SKIP: our library lists no CUDA device\n");
    return 0;
  }
  ol_program_handle_t prog;
  OL(olCreateProgram(cuda_dev, ptx, len + 1, &prog));
  ol_symbol_handle_t k;
  OL(olGetSymbol(prog, "saxpy", OL_SYMBOL_KIND_KERNEL, &k));
  ol_queue_handle_t q;
  OL(olCreateQueue(cuda_dev, &q));
  struct saxpy_args args = {2.0f, NULL, NULL, 0};
  ol_kernel_launch_size_args_t dims = {.Dimensions = 1,
                                       .NumGroups = {1, 1, 1},
                                       .GroupSize = {32, 1, 1},
                                       .DynSharedMemory = 0};

  // ---- raw side (the same primary context our library uses)
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUstream s;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CU(loadEx(&mod, ptx, 0, NULL, NULL));
  CU(cuModuleGetFunction(&fn, mod, "saxpy"));
  CU(cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */));
  float a = 2.0f;
  const float *x = NULL;
  float *y = NULL;
  uint32_t zero = 0;
  void *params[] = {&a, &x, &y, &zero};

  printf("launch path, %d launches per round (1 group x 32, saxpy with n = 0)\n", n);
  printf("%-28s %12s %12s %8s\n", "", "raw ns", "ours ns", "ours/raw");
  for (int round = 0; round < 3; round++) {
    // enqueue: n launches, one sync
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
      CU(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    CU(cuStreamSynchronize(s));
    double raw_enq = (now_ns() - t0) / n;
    t0 = now_ns();
    for (int i = 0; i < n; i++)
      OL(olLaunchKernel(q, cuda_dev, k, &args, sizeof args, &dims));
    OL(olSyncQueue(q));
    double ours_enq = (now_ns() - t0) / n;
    // round trip: launch + sync
    int m = n / 10 > 0 ? n / 10 : 1;
    t0 = now_ns();
    for (int i = 0; i < m; i++) {
      CU(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
      CU(cuStreamSynchronize(s));
    }
    double raw_rt = (now_ns() - t0) / m;
    t0 = now_ns();
    for (int i = 0; i < m; i++) {
      OL(olLaunchKernel(q, cuda_dev, k, &args, sizeof args, &dims));
      OL(olSyncQueue(q));
    }
    double ours_rt = (now_ns() - t0) / m;
    printf("round %d: launch (async)     %12.0f %12.0f %8.2f\n", round, raw_enq, ours_enq, ours_enq / raw_enq);
    printf("round %d: launch + sync      %12.0f %12.0f %8.2f\n", round, raw_rt, ours_rt, ours_rt / raw_rt);
  }

  CU(cuStreamDestroy(s));
  CU(cuModuleUnload(mod));
  CU(cuDevicePrimaryCtxRelease(dev));
  OL(olDestroyQueue(q));
  OL(olDestroyProgram(prog));
  OL(olShutDown());
  free(ptx);
  return 0;
}
