// Helpers for the program, kernel, queue and stress tests (C clients of libLLVMOffload.so.22.1 built against
// LLVM's own OffloadAPI.h).
#ifndef OL_TEST_H
#define OL_TEST_H
// The checks, skips and the closing line come from harness.h; this header adds the short names the
// program/kernel/queue tests use and their helpers (device lookup, kernels, memory, grids, 20 threads,
// device code loading).
#include "harness.h"
#include <pthread.h>

#define OK(call) CHECK_OK(call)
#define ERR(code, call) ((void)CHECK_ERR(code, call))

static int t_finish(void) { return harness_summary(); }

// ---- helpers -------------------------------------------------------------------------------------

static ol_device_handle_t t_cpu, t_host;

// Initialise and find the CPU device (backend 0x100) and the host device.
static void t_init(void) {
  if (olInit()) {
    fprintf(stderr, "olInit failed\n");
    exit(2);
  }
  t_cpu = harness_find_backend(HARNESS_BACKEND_CPU);
  t_host = harness_find_backend(OL_PLATFORM_BACKEND_HOST);
}

// Skips the test when there is no CPU device.
#define NEED_CPU()                                                                                  \
  if (!t_cpu)                                                                                       \
  SKIP("no CPU device")

// Kernel `name` of program `p` (NULL after a failed check).
HARNESS_UNUSED static ol_symbol_handle_t t_kernel(ol_program_handle_t p, const char *name) {
  ol_symbol_handle_t k = NULL;
  OK(olGetSymbol(p, name, OL_SYMBOL_KIND_KERNEL, &k));
  return k;
}

// n bytes of zeroed MANAGED memory on the CPU device (NULL after a failed check).
HARNESS_UNUSED static void *t_dalloc(size_t n) {
  void *p = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, n, &p));
  if (p)
    memset(p, 0, n);
  return p;
}

// A 3-D launch: gx x gy x gz groups of bx x by x bz work-items, `dyn` bytes of dynamic shared memory.
HARNESS_UNUSED static ol_kernel_launch_size_args_t t_grid(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                                          uint32_t by, uint32_t bz, size_t dyn) {
  ol_kernel_launch_size_args_t a = {3, {gx, gy, gz}, {bx, by, bz}, dyn};
  return a;
}

struct t_thread_queue {
  void (*body)(ol_queue_handle_t q);
  ol_device_handle_t dev;
  ol_queue_handle_t shared;
  int own;
};

static void *t_thread_queue_main(void *p) {
  struct t_thread_queue *a = (struct t_thread_queue *)p;
  ol_queue_handle_t q = a->shared;
  if (a->own)
    OK(olCreateQueue(a->dev, &q));
  a->body(q);
  if (a->own)
    OK(olDestroyQueue(q));
  return NULL;
}

// Runs body(q) on 20 threads at once (LLVM's tests submit from 20 threads) and joins them: q is `shared`,
// or with `own` a queue of `dev` each thread creates (and destroys) itself.
HARNESS_UNUSED static void t_twenty_threads(void (*body)(ol_queue_handle_t q), ol_device_handle_t dev,
                                            ol_queue_handle_t shared, int own) {
  pthread_t th[20];
  struct t_thread_queue a[20];
  for (int i = 0; i < 20; i++) {
    a[i] = (struct t_thread_queue){body, dev, shared, own};
    pthread_create(&th[i], NULL, t_thread_queue_main, &a[i]);
  }
  for (int i = 0; i < 20; i++)
    pthread_join(th[i], NULL);
}

// Read build/ffi-tests/device/<name>.<target>.bc (or $OFFLOAD_RS_DEVICE_CODE/...); exits if it is missing.
static void *t_load(const char *name, const char *target, size_t *size) {
  const char *dir = getenv("OFFLOAD_RS_DEVICE_CODE");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s.bc", dir ? dir : "build/ffi-tests/device", name, target);
  void *p = harness_read_file(path, size);
  if (!p) {
    fprintf(stderr, "cannot read %s (run ffi-tests/build-device.sh)\n", path);
    exit(2);
  }
  return p;
}

// A program on `dev` from device code `name` built for `target` (NULL after a failed check); the image is
// freed once it is created (the library must have copied what it needs).
HARNESS_UNUSED static ol_program_handle_t t_create(ol_device_handle_t dev, const char *name, const char *target) {
  size_t n;
  void *img = t_load(name, target, &n);
  ol_program_handle_t p = NULL;
  OK(olCreateProgram(dev, img, n, &p));
  free(img);
  return p;
}

HARNESS_UNUSED static const char *t_targets[] = {"nvptx64", "amdgcn"};

// A seed_a / seed_b program's global `which` (0xAAAA0001 / 0xBBBB0002), read through its address; its symbol
// in *g when g is not NULL.
HARNESS_UNUSED static uint32_t t_seed_global(ol_program_handle_t p, ol_symbol_handle_t *g) {
  ol_symbol_handle_t sym = NULL;
  void *addr = NULL;
  uint32_t v = 0;
  OK(olGetSymbol(p, "which", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &sym));
  OK(olGetSymbolInfo(sym, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  OK(olMemcpy(NULL, &v, t_host, addr, t_cpu, sizeof v));
  if (g)
    *g = sym;
  return v;
}

// The value a seed_a / seed_b program holds (0xAAAA0001 / 0xBBBB0002), read through its global and checked
// through its kernel: which image's code runs.
HARNESS_UNUSED static uint32_t t_seed_value(ol_program_handle_t p) {
  ol_symbol_handle_t k = NULL;
  uint32_t v = t_seed_global(p, NULL), out = 0;
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
