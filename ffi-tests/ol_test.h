// Helpers for the program, kernel, queue and stress tests (C clients of libLLVMOffload.so.22.1 built against
// LLVM's own OffloadAPI.h).
#ifndef OL_TEST_H
#define OL_TEST_H
// The checks, skips and the closing line come from harness.h; this header adds the short names the
// program/kernel/queue tests use and their helpers (device lookup, device code loading).
#include "harness.h"
#include <pthread.h>

#define OK(call) CHECK_OK(call)
#define ERR(code, call) ((void)CHECK_ERR(code, call))

static int t_finish(void) { return harness_summary(); }

// ---- helpers -------------------------------------------------------------------------------------

static ol_device_handle_t t_cpu, t_host;
static bool t_find(ol_device_handle_t d, void *u) {
  (void)u;
  ol_platform_handle_t p;
  uint32_t backend = 0;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) || olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend))
    return true;
  if (backend == 0x100 && !t_cpu)
    t_cpu = d;
  if (backend == OL_PLATFORM_BACKEND_HOST)
    t_host = d;
  return true;
}

// Initialise and find the CPU device (backend 0x100) and the host device.
static void t_init(void) {
  if (olInit()) {
    fprintf(stderr, "olInit failed\n");
    exit(2);
  }
  t_cpu = t_host = NULL;
  olIterateDevices(t_find, NULL);
}

// Read build/ffi-tests/device/<name>.<target>.bc (or $OFFLOAD_RS_DEVICE_CODE/...).
static void *t_load(const char *name, const char *target, size_t *size) {
  const char *dir = getenv("OFFLOAD_RS_DEVICE_CODE");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s.bc", dir ? dir : "build/ffi-tests/device", name, target);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s (run ffi-tests/build-device.sh)\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*size);
  if (fread(p, 1, *size, f) != *size)
    exit(2);
  fclose(f);
  return p;
}

__attribute__((unused)) static const char *t_targets[] = {"nvptx64", "amdgcn"};

// The value a seed_a / seed_b program holds (0xAAAA0001 / 0xBBBB0002), read through its global and checked
// through its kernel: which image's code runs.
__attribute__((unused)) static uint32_t t_seed_value(ol_program_handle_t p) {
  ol_symbol_handle_t g = NULL, k = NULL;
  void *addr = NULL;
  uint32_t v = 0, out = 0;
  OK(olGetSymbol(p, "which", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  OK(olMemcpy(NULL, &v, t_host, addr, t_cpu, sizeof v));
  // and through the kernel
  OK(olGetSymbol(p, "get", OL_SYMBOL_KIND_KERNEL, &k));
  uint32_t *dev = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 4, (void **)&dev));
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
  OK(olLaunchKernel(NULL, t_cpu, k, &dev, sizeof dev, &la));
  out = *dev;
  OK(olMemFree(dev));
  CHECK(out == v + (v == 0xAAAA0001 ? 1 : 2));
  return v;
}

#endif
