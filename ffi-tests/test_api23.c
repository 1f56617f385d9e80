/* C client tests of the LLVM 23.1 ABI: compiled against include/offload-23/OffloadAPI.h (offload-tblgen's
 * header of 23.1.1) and linked with build/lib23/libLLVMOffload.so.23.1. Covers what 23.1 changed or added:
 * olInit(args) and OFFLOAD_RS_PLATFORMS, olCreateEvent flags + olGetEventElapsedTime, the 8-argument
 * olLaunchKernel (argument pointers/sizes, properties, cooperative grids with a grid barrier),
 * olGetKernelMaxCooperativeGroupCount, olMemAllocAligned, olMemPrefetch, olQueryQueue,
 * olMemRegister/olMemUnregister flags, olPlatformRegisterRPCCallback and the four new device infos.
 * Device code: ffi-tests/device/api23.c (build-device.sh). HARNESS_FILTER=name runs one test. */
#define HARNESS_NO_API_HELPERS
#include "harness.h"

#include <stdlib.h>

#define BACKEND_CPU 0x100u
#define DEVICE_CODE "build/ffi-tests/device/api23.nvptx64.bc"

static ol_device_handle_t cpu, host;

struct find { uint32_t backend; ol_device_handle_t dev; int count; };
static bool find_cb(ol_device_handle_t d, void *ud) {
  struct find *f = ud;
  ol_platform_handle_t p = NULL;
  uint32_t b = 0;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) || olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b))
    return true;
  if (b == f->backend) {
    if (!f->dev) f->dev = d;
    f->count++;
  }
  return true;
}
static ol_device_handle_t find_backend(uint32_t backend, int *count) {
  struct find f = {backend, NULL, 0};
  olIterateDevices(find_cb, &f);
  if (count) *count = f.count;
  return f.dev;
}

static void init_default(void) {
  if (olInit(NULL)) { fprintf(stderr, "olInit(NULL) failed\n"); exit(2); }
  cpu = find_backend(BACKEND_CPU, NULL);
  host = find_backend(OL_PLATFORM_BACKEND_HOST, NULL);
}

static ol_program_handle_t load_program(void) {
  size_t n = 0;
  unsigned char *img = harness_read_file(DEVICE_CODE, &n);
  ol_program_handle_t p = NULL;
  if (!img) { harness_fail(__FILE__, __LINE__, "cannot read %s (make -C ffi-tests tests)", DEVICE_CODE); return NULL; }
  CHECK_OK(olCreateProgram(cpu, img, n, &p));
  free(img);
  return p;
}

static ol_symbol_handle_t kernel(ol_program_handle_t p, const char *name) {
  ol_symbol_handle_t k = NULL;
  CHECK_OK(olGetSymbol(p, name, OL_SYMBOL_KIND_KERNEL, &k));
  return k;
}

/* olInit(args): NULL, OL_INIT_ARGS_INIT, a Platforms list (only those, the host always), bad arguments. */
TEST(init_args) {
  CHECK_OK(olShutDown());
  ol_init_args_t small = OL_INIT_ARGS_INIT;
  small.Size = 8;
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olInit(&small));
  ol_init_args_t nul = OL_INIT_ARGS_INIT;
  nul.NumPlatforms = 1;
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olInit(&nul));
  CHECK_ERR(OL_ERRC_UNINITIALIZED, olShutDown());

  ol_platform_backend_t only_cuda[] = {OL_PLATFORM_BACKEND_CUDA};
  ol_init_args_t a = OL_INIT_ARGS_INIT;
  a.NumPlatforms = 1;
  a.Platforms = only_cuda;
  CHECK_OK(olInit(&a));
  CHECK(find_backend(BACKEND_CPU, NULL) == NULL);
  CHECK(find_backend(OL_PLATFORM_BACKEND_HOST, NULL) != NULL);
  CHECK_OK(olShutDown());

  ol_platform_backend_t only_cpu[] = {(ol_platform_backend_t)BACKEND_CPU};
  a.Platforms = only_cpu;
  CHECK_OK(olInit(&a));
  CHECK(find_backend(BACKEND_CPU, NULL) != NULL);
  CHECK(find_backend(OL_PLATFORM_BACKEND_CUDA, NULL) == NULL);
  CHECK(find_backend(OL_PLATFORM_BACKEND_HOST, NULL) != NULL);
  CHECK_OK(olShutDown());

  ol_platform_backend_t bad[] = {(ol_platform_backend_t)77};
  a.Platforms = bad;
  CHECK_ERR(OL_ERRC_INVALID_ENUMERATION, olInit(&a));

  ol_init_args_t def = OL_INIT_ARGS_INIT;
  CHECK_OK(olInit(&def));
  CHECK_OK(olInit(&small)); /* a repeated call only counts */
  CHECK_OK(olShutDown());
  CHECK_OK(olShutDown());
  init_default();
}

/* OFFLOAD_RS_PLATFORMS, read at the first olInit: which platforms exist; a bad value is olInit's error. */
TEST(platforms_env) {
  CHECK_OK(olShutDown());
  setenv("OFFLOAD_RS_PLATFORMS", "host", 1);
  CHECK_OK(olInit(NULL));
  CHECK(find_backend(BACKEND_CPU, NULL) == NULL);
  CHECK(find_backend(OL_PLATFORM_BACKEND_HOST, NULL) != NULL);
  CHECK_OK(olShutDown());
  setenv("OFFLOAD_RS_PLATFORMS", "cpu, host", 1);
  CHECK_OK(olInit(NULL));
  CHECK(find_backend(BACKEND_CPU, NULL) != NULL);
  CHECK_OK(olShutDown());
  setenv("OFFLOAD_RS_PLATFORMS", "cpu,gpu", 1);
  CHECK_ERR_HAS(OL_ERRC_INVALID_VALUE, "unknown platform 'gpu'", olInit(NULL));
  unsetenv("OFFLOAD_RS_PLATFORMS");
  init_default();
}

/* The four device infos 23.1 appended, on the CPU device; 33 (LAST) stays invalid. */
TEST(device_infos) {
  if (!cpu) SKIP("no CPU device");
  bool single = false, dbl = false, coop = false, half = true;
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_SINGLE_FP_SUPPORT, sizeof single, &single));
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_DOUBLE_FP_SUPPORT, sizeof dbl, &dbl));
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_HALF_FP_SUPPORT, sizeof half, &half));
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT, sizeof coop, &coop));
  CHECK(single && dbl && coop);
  size_t sz = 0;
  CHECK_OK(olGetDeviceInfoSize(cpu, OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT, &sz));
  CHECK(sz == 1);
  CHECK_ERR(OL_ERRC_INVALID_ENUMERATION, olGetDeviceInfo(cpu, OL_DEVICE_INFO_LAST, sizeof coop, &coop));
  if (host) {
    CHECK_ERR(OL_ERRC_UNIMPLEMENTED, olGetDeviceInfo(host, OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT, sizeof coop, &coop));
  }
}

/* Profiling events measure the work between them; without profiling, or unfinished, a clear error. */
TEST(event_elapsed_time) {
  if (!cpu) SKIP("no CPU device");
  ol_queue_handle_t q = NULL;
  CHECK_OK(olCreateQueue(cpu, &q));
  ol_event_handle_t a = NULL, b = NULL, plain = NULL;
  CHECK_OK(olCreateEvent(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &a));
  ol_program_handle_t p = load_program();
  CHECK_OK(olCreateEvent(q, OL_EVENT_FLAGS_ENABLE_PROFILING, &b));
  CHECK_OK(olCreateEvent(q, OL_EVENT_FLAGS_NONE, &plain));
  CHECK_OK(olSyncEvent(b));
  float ms = -1.0f;
  CHECK_OK(olGetEventElapsedTime(a, b, &ms));
  CHECK(ms >= 0.0f);
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olGetEventElapsedTime(a, plain, &ms));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olGetEventElapsedTime(NULL, b, &ms));
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olGetEventElapsedTime(a, b, NULL));
  CHECK_OK(olDestroyEvent(a));
  CHECK_OK(olDestroyEvent(b));
  CHECK_OK(olDestroyEvent(plain));
  if (p) CHECK_OK(olDestroyProgram(p));
  CHECK_OK(olDestroyQueue(q));
}

/* The 8-argument olLaunchKernel: argument pointers and sizes laid out like the kernel's parameters. */
TEST(launch_args) {
  if (!cpu) SKIP("no CPU device");
  ol_program_handle_t p = load_program();
  if (!p) return;
  ol_symbol_handle_t k = kernel(p, "add_args");
  int64_t *out = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 16, (void **)&out));
  int32_t a = 5;
  int64_t b = 1000000000000LL;
  double c = 2.75;
  uint8_t d = 200;
  void *ptrs[] = {&a, &b, &c, &d, &out};
  size_t sizes[] = {sizeof a, sizeof b, sizeof c, sizeof d, sizeof out};
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
  CHECK_OK(olLaunchKernel(NULL, cpu, k, &la, NULL, 5, ptrs, sizes));
  CHECK(out[0] == 1000000000007LL && out[1] == 200);
  ol_kernel_launch_prop_t end[] = {OL_KERNEL_LAUNCH_PROP_END};
  CHECK_OK(olLaunchKernel(NULL, cpu, k, &la, end, 5, ptrs, sizes));
  /* bad input */
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(NULL, cpu, k, &la, NULL, 5, ptrs, NULL));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(NULL, cpu, k, &la, NULL, 5, NULL, NULL));
  CHECK_ERR_HAS(OL_ERRC_INVALID_ARGUMENT, "takes 5 arguments", olLaunchKernel(NULL, cpu, k, &la, NULL, 4, ptrs, sizes));
  size_t wrong[] = {sizeof a, sizeof b, 4, sizeof d, sizeof out};
  CHECK_ERR_HAS(OL_ERRC_INVALID_ARGUMENT, "ArgSizes[2] is 4", olLaunchKernel(NULL, cpu, k, &la, NULL, 5, ptrs, wrong));
  bool yes = true;
  ol_kernel_launch_prop_t unknown[] = {{(ol_kernel_launch_prop_type_t)7, &yes}, OL_KERNEL_LAUNCH_PROP_END};
  CHECK_ERR(OL_ERRC_INVALID_ENUMERATION, olLaunchKernel(NULL, cpu, k, &la, unknown, 5, ptrs, sizes));
  /* 23's order: the queue's device, then the symbol's kind, then the properties */
  ol_symbol_handle_t g = NULL;
  CHECK_OK(olGetSymbol(p, "api23_constant", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  CHECK_ERR(OL_ERRC_SYMBOL_KIND, olLaunchKernel(NULL, cpu, g, &la, unknown, 5, ptrs, sizes));
  ol_queue_handle_t hq = NULL;
  if (host && olCreateQueue(host, &hq) == OL_SUCCESS) {
    CHECK_ERR(OL_ERRC_INVALID_DEVICE, olLaunchKernel(hq, cpu, g, &la, unknown, 5, ptrs, sizes));
    CHECK_OK(olDestroyQueue(hq));
  }
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olLaunchKernel(NULL, cpu, k, NULL, NULL, 5, ptrs, sizes));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olLaunchKernel(NULL, NULL, k, &la, NULL, 5, ptrs, sizes));
  /* the library stays usable */
  out[0] = 0;
  CHECK_OK(olLaunchKernel(NULL, cpu, k, &la, NULL, 5, ptrs, sizes));
  CHECK(out[0] == 1000000000007LL);
  CHECK_OK(olMemFree(out));
  CHECK_OK(olDestroyProgram(p));
}

/* A cooperative grid of the reported maximum runs every group at once: a grid barrier completes. */
TEST(cooperative_grid_barrier) {
  if (!cpu) SKIP("no CPU device");
  ol_program_handle_t p = load_program();
  if (!p) return;
  ol_symbol_handle_t k = kernel(p, "grid_barrier");
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {32, 1, 1}, 0};
  uint32_t max = 0;
  CHECK_OK(olGetKernelMaxCooperativeGroupCount(cpu, k, &la, &max));
  CHECK(max > 0);
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olGetKernelMaxCooperativeGroupCount(cpu, k, &la, NULL));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olGetKernelMaxCooperativeGroupCount(cpu, NULL, &la, &max));
  uint32_t groups = max;
  uint32_t *counter = NULL, *out = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 4, (void **)&counter));
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 4 * (size_t)(groups + 1), (void **)&out));
  bool yes = true;
  ol_kernel_launch_prop_t coop[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &yes}, OL_KERNEL_LAUNCH_PROP_END};
  void *ptrs[] = {&counter, &out, &groups};
  size_t sizes[] = {sizeof counter, sizeof out, sizeof groups};
  la.NumGroups.x = groups;
  ol_queue_handle_t q = NULL;
  CHECK_OK(olCreateQueue(cpu, &q));
  for (int round = 0; round < 2; round++) {
    *counter = 0;
    memset(out, 0, 4 * (size_t)groups);
    /* on a queue, then blocking (NULL queue) */
    CHECK_OK(olLaunchKernel(round ? NULL : q, cpu, k, &la, coop, 3, ptrs, sizes));
    if (!round) CHECK_OK(olSyncQueue(q));
    int all = 1;
    for (uint32_t g = 0; g < groups; g++) all &= out[g] == groups;
    CHECKF(all, "round %d: not every group of the cooperative grid saw all %u groups arrive", round, groups);
  }
  la.NumGroups.x = max + 1;
  CHECK_ERR_HAS(OL_ERRC_INVALID_ARGUMENT, "at most", olLaunchKernel(q, cpu, k, &la, coop, 3, ptrs, sizes));
  bool no = false;
  ol_kernel_launch_prop_t not_coop[] = {{OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE, &no}, OL_KERNEL_LAUNCH_PROP_END};
  ol_symbol_handle_t k2 = kernel(p, "add_args");
  int64_t *o2 = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 16, (void **)&o2));
  int32_t a = 1; int64_t b = 2; double c = 3; uint8_t d = 4;
  void *p2[] = {&a, &b, &c, &d, &o2};
  size_t s2[] = {4, 8, 8, 1, 8};
  la.NumGroups.x = 1000; /* not cooperative: any grid */
  CHECK_OK(olLaunchKernel(q, cpu, k2, &la, not_coop, 5, p2, s2));
  CHECK_OK(olSyncQueue(q));
  CHECK(o2[0] == 6);
  CHECK_OK(olDestroyQueue(q));
  CHECK_OK(olMemFree(o2));
  CHECK_OK(olMemFree(counter));
  CHECK_OK(olMemFree(out));
  CHECK_OK(olDestroyProgram(p));
}

TEST(mem_alloc_aligned) {
  if (!cpu) SKIP("no CPU device");
  for (size_t align = 1; align <= ((size_t)1 << 21); align <<= 1) {
    void *p = NULL;
    CHECK_OK(olMemAllocAligned(cpu, OL_ALLOC_TYPE_DEVICE, 100, align, &p));
    CHECKF(((uintptr_t)p % align) == 0, "%p is not aligned to %zu", p, align);
    size_t size = 0;
    CHECK_OK(olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof size, &size));
    CHECK(size == 100);
    CHECK_OK(olMemFree(p));
  }
  void *p = NULL;
  CHECK_OK(olMemAllocAligned(cpu, OL_ALLOC_TYPE_HOST, 1 << 20, 4096, &p));
  CHECK_OK(olMemFree(p));
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olMemAllocAligned(cpu, OL_ALLOC_TYPE_DEVICE, 0, 64, &p));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemAllocAligned(cpu, OL_ALLOC_TYPE_DEVICE, 64, 0, &p));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemAllocAligned(cpu, OL_ALLOC_TYPE_DEVICE, 64, 48, &p));
  CHECK_ERR(OL_ERRC_UNSUPPORTED, olMemAllocAligned(cpu, OL_ALLOC_TYPE_DEVICE, 64, (size_t)1 << 31, &p));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olMemAllocAligned(NULL, OL_ALLOC_TYPE_DEVICE, 64, 64, &p));
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olMemAllocAligned(cpu, OL_ALLOC_TYPE_DEVICE, 64, 64, NULL));
}

TEST(mem_prefetch_and_query_queue) {
  if (!cpu) SKIP("no CPU device");
  ol_queue_handle_t q = NULL;
  CHECK_OK(olCreateQueue(cpu, &q));
  unsigned char *m = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 4096, (void **)&m));
  const void *mems[] = {m, m + 100};
  size_t sizes[] = {4096, 10};
  CHECK_OK(olMemPrefetch(q, 2, mems, sizes, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE));
  CHECK_OK(olMemPrefetch(q, 1, mems, sizes, OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST));
  CHECK_OK(olMemPrefetch(q, 0, NULL, NULL, OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE));
  CHECK_ERR(OL_ERRC_INVALID_ENUMERATION, olMemPrefetch(q, 1, mems, sizes, 4));
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olMemPrefetch(q, 1, NULL, sizes, 1));
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olMemPrefetch(q, 1, mems, NULL, 1));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olMemPrefetch(NULL, 1, mems, sizes, 1));
  size_t past[] = {4097};
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olMemPrefetch(q, 1, mems, past, 1));
  int local = 0;
  const void *outside[] = {&local};
  CHECK_ERR_HAS(OL_ERRC_INVALID_ARGUMENT, "not inside an allocation", olMemPrefetch(q, 1, outside, sizes + 1, 1));
  CHECK_OK(olSyncQueue(q));
  bool done = false;
  CHECK_OK(olQueryQueue(q, &done));
  CHECK(done);
  CHECK_OK(olQueryQueue(q, NULL));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olQueryQueue(NULL, &done));
  CHECK_OK(olMemFree(m));
  CHECK_OK(olDestroyQueue(q));
}

TEST(mem_register_flags) {
  if (!cpu) SKIP("no CPU device");
  static unsigned char buf[8192];
  void *pinned = NULL;
  CHECK_OK(olMemRegister(cpu, buf, sizeof buf, 0, &pinned));
  CHECK(pinned != NULL);
  CHECK_OK(olMemUnregister(cpu, buf, 0));
  CHECK_OK(olMemRegister(cpu, buf, sizeof buf, OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY, &pinned));
  CHECK_OK(olMemUnregister(cpu, buf, OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemUnregister(cpu, buf, 0));
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olMemUnregister(cpu, NULL, 0));
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olMemRegister(cpu, buf, 0, 0, &pinned));
}

static unsigned rpc_cb(void *port, unsigned lanes) { (void)port; return lanes; }

TEST(rpc_callback) {
  if (!cpu) SKIP("no CPU device");
  ol_platform_handle_t plat = NULL;
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat));
  CHECK_OK(olPlatformRegisterRPCCallback(plat, rpc_cb));
  CHECK_OK(olPlatformRegisterRPCCallback(plat, rpc_cb));
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olPlatformRegisterRPCCallback(NULL, rpc_cb));
  CHECK_ERR(OL_ERRC_INVALID_NULL_POINTER, olPlatformRegisterRPCCallback(plat, NULL));
}

int main(void) {
  init_default();
  RUN(init_args);
  RUN(platforms_env);
  RUN(device_infos);
  RUN(event_elapsed_time);
  RUN(launch_args);
  RUN(cooperative_grid_barrier);
  RUN(mem_alloc_aligned);
  RUN(mem_prefetch_and_query_queue);
  RUN(mem_register_flags);
  RUN(rpc_callback);
  olShutDown();
  return harness_summary();
}
