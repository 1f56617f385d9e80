// The CUDA platform through the C API: the acceptance test on a real NVIDIA GPU, and the rehearsal without
// one against the fake driver (ffi-tests/fake_cuda: LD_LIBRARY_PATH=build/fake-cuda:build/lib).
//
// It uses the first device whose platform backend is OL_PLATFORM_BACKEND_CUDA (none: "SKIP: no CUDA
// device", exit 0) and the nvptx64 bitcode of ffi-tests/device/kernels.c (the file the CPU device runs),
// so nothing here depends on the fake. Only the fake's counters (fakeCudaStats, found with dlopen NOLOAD
// when the loaded libcuda.so.1 has it) are fake-specific: they assert zero protocol violations (calls
// without a current context, calls from host callbacks, ...) and, after olShutDown, zero live objects.
#include "ol_test.h"

#include <dlfcn.h>
#include <unistd.h>

#include "device/mixed.h"
#include "fake_cuda/fake_cuda.h"

static ol_device_handle_t gpu;
static ol_program_handle_t prog, cpu_prog;
static ol_queue_handle_t queue;
static fake_cuda_stats_fn fake_stats;

#define NEED_GPU()                                                                                  \
  if (!gpu || !prog || !queue)                                                                      \
  SKIP("no CUDA device")

static void *galloc(ol_alloc_type_t type, size_t n) {
  void *p = NULL;
  OK(olMemAlloc(gpu, type, n, &p));
  return p;
}

// host -> device buffer (synchronous copy)
static void *to_gpu(const void *src, size_t n) {
  void *d = galloc(OL_ALLOC_TYPE_DEVICE, n);
  if (d)
    OK(olMemcpy(NULL, d, gpu, src, t_host, n));
  return d;
}

static void from_gpu(void *dst, const void *src, size_t n) { OK(olMemcpy(NULL, dst, t_host, src, gpu, n)); }

static void print_stats(const char *when) {
  if (!fake_stats)
    return;
  struct fake_cuda_stats s;
  fake_stats(&s, sizeof s);
  printf("  fake driver %s: live allocs %lld+%lld host, registrations %lld, modules %lld, streams %lld, events "
         "%lld; launches %lld, host fns %lld, copies %lld, memsets %lld\n",
         when, (long long)s.live_device_allocs, (long long)s.live_host_allocs, (long long)s.live_registrations,
         (long long)s.live_modules, (long long)s.live_streams, (long long)s.live_events, (long long)s.launches,
         (long long)s.host_fns, (long long)s.copies, (long long)s.memsets);
}

// ---- tests ---------------------------------------------------------------------------------------

static void device_info(void) {
  NEED_GPU();
  char name[256] = "", vendor[256] = "", driver[256] = "", uid[256] = "", pname[256] = "";
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_NAME, sizeof name, name));
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_VENDOR, sizeof vendor, vendor));
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_DRIVER_VERSION, sizeof driver, driver));
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_UID, sizeof uid, uid));
  printf("  device '%s', vendor '%s', driver '%s', uid '%s'\n", name, vendor, driver, uid);
  CHECK(name[0] && driver[0]);
  CHECK(strstr(vendor, "NVIDIA") != NULL);
  CHECK(strlen(uid) > 8);
  ol_device_type_t type = 0;
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  CHECK(type == OL_DEVICE_TYPE_GPU);
  uint32_t wg = 0, vendor_id = 0, cus = 0;
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE, sizeof wg, &wg));
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_VENDOR_ID, sizeof vendor_id, &vendor_id));
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cus, &cus));
  ol_dimensions_t dims = {0, 0, 0};
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION, sizeof dims, &dims));
  uint64_t mem = 0, local = 0;
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem));
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE, sizeof local, &local));
  printf("  max group %u {%u, %u, %u}, %u SMs, %llu MiB, %llu B shared per group\n", wg, dims.x, dims.y, dims.z, cus,
         (unsigned long long)(mem >> 20), (unsigned long long)local);
  CHECK(wg >= 1024 && dims.x >= 1024 && dims.y >= 1024 && dims.z >= 64);
  CHECK(vendor_id == 0x10de);
  CHECK(cus > 0 && mem >= (1ull << 30) && local >= 48 * 1024);
  ol_platform_handle_t plat = NULL;
  ol_platform_backend_t backend = 0;
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat));
  OK(olGetPlatformInfo(plat, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
  OK(olGetPlatformInfo(plat, OL_PLATFORM_INFO_NAME, sizeof pname, pname));
  CHECK(backend == OL_PLATFORM_BACKEND_CUDA);
  CHECK(!strcmp(pname, "CUDA"));
}

static void memory_kinds(void) {
  NEED_GPU();
  ol_alloc_type_t types[] = {OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_MANAGED};
  for (int t = 0; t < 3; t++) {
    void *p = galloc(types[t], 4096);
    REQUIRE(p);
    ol_device_handle_t dev = NULL;
    void *base = NULL;
    size_t size = 0;
    ol_alloc_type_t type = 99;
    char *inner = (char *)p + 100;
    OK(olGetMemInfo(inner, OL_MEM_INFO_DEVICE, sizeof dev, &dev));
    OK(olGetMemInfo(inner, OL_MEM_INFO_BASE, sizeof base, &base));
    OK(olGetMemInfo(inner, OL_MEM_INFO_SIZE, sizeof size, &size));
    OK(olGetMemInfo(inner, OL_MEM_INFO_TYPE, sizeof type, &type));
    CHECK(dev == gpu && base == p && size == 4096 && type == types[t]);
    if (types[t] != OL_ALLOC_TYPE_DEVICE) { // host and managed memory is host-accessible
      memset(p, 0x5a, 4096);
      CHECK(((unsigned char *)p)[4095] == 0x5a);
    }
    ERR(OL_ERRC_INVALID_ARGUMENT, olMemFree(inner));
    OK(olMemFree(p));
    ERR(OL_ERRC_INVALID_ARGUMENT, olMemFree(p));
    ERR(OL_ERRC_NOT_FOUND, olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof size, &size));
  }
  ERR(OL_ERRC_INVALID_SIZE, olMemAlloc(gpu, OL_ALLOC_TYPE_DEVICE, 0, &(void *){NULL}));
  // a big allocation and a registered host range
  void *big = galloc(OL_ALLOC_TYPE_DEVICE, (size_t)256 << 20);
  CHECK(big != NULL);
  if (big)
    OK(olMemFree(big));
  size_t n = 1 << 20;
  char *h = aligned_alloc(4096, n), *pinned = NULL;
  OK(olMemRegister(gpu, h, n, 0, (void **)&pinned));
  CHECK(pinned != NULL);
  if (pinned) {
    void *d = galloc(OL_ALLOC_TYPE_DEVICE, n);
    memset(h, 7, n);
    OK(olMemcpy(queue, d, gpu, pinned, t_host, n));
    OK(olMemFill(queue, pinned, 1, &(uint8_t){9}, n / 2));
    OK(olMemcpy(queue, pinned + n / 2, t_host, d, gpu, n / 2));
    OK(olSyncQueue(queue));
    CHECK(h[0] == 9 && h[n / 2 - 1] == 9 && h[n / 2] == 7 && h[n - 1] == 7);
    OK(olMemFree(d));
    OK(olMemUnregister(gpu, h));
  }
  free(h);
}

// olMemRegister keeps LLVM 22's table of disjoint ranges: the same range or a contained one adds a use, a
// range that overlaps a registered one without lying inside it is INVALID_ARGUMENT (upstream test
// olMemRegisterTest.PartialOverlapPtrRegister); unregistering takes any pointer into a range.
static void register_overlaps(void) {
  NEED_GPU();
  int arr[50], other[50];
  void *p1 = NULL, *p2 = NULL, *p3 = NULL;
  OK(olMemRegister(gpu, arr, sizeof arr, 0, &p1));
  CHECK(p1 == arr);
  OK(olMemRegister(gpu, arr, sizeof arr, 0, &p2));
  CHECK(p2 == arr);
  OK(olMemRegister(gpu, arr + 2, 16, 0, &p3)); // contained
  CHECK(p3 == arr + 2);
  ERR(OL_ERRC_INVALID_ARGUMENT, olMemRegister(gpu, arr + 2, sizeof arr, 0, &(void *){NULL})); // runs past the end
  ERR(OL_ERRC_INVALID_ARGUMENT, olMemUnregister(gpu, other));
  OK(olMemRegister(gpu, other, sizeof other, 0, &p3));
  OK(olMemUnregister(gpu, other + 49)); // interior pointer
  ERR(OL_ERRC_INVALID_ARGUMENT, olMemUnregister(gpu, other));
  OK(olMemUnregister(gpu, arr + 2));
  OK(olMemUnregister(gpu, p1));
  OK(olMemUnregister(gpu, p2));
  ERR(OL_ERRC_INVALID_ARGUMENT, olMemUnregister(gpu, arr)); // all three uses gone
}

static void memcpy_every_direction(void) {
  NEED_GPU();
  const size_t n = 3 << 20; // 3 MiB, not a power of two
  unsigned char *src = malloc(n), *back = malloc(n);
  for (size_t i = 0; i < n; i++)
    src[i] = (unsigned char)(i * 131 + 7);
  void *d1 = galloc(OL_ALLOC_TYPE_DEVICE, n), *d2 = galloc(OL_ALLOC_TYPE_DEVICE, n);
  void *hm = galloc(OL_ALLOC_TYPE_HOST, n), *mm = galloc(OL_ALLOC_TYPE_MANAGED, n);
  void *cpu = NULL;
  if (t_cpu)
    OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, n, &cpu));
  REQUIRE(d1 && d2 && hm && mm);
  for (int sync = 0; sync < 2; sync++) {
    ol_queue_handle_t q = sync ? NULL : queue;
    memset(back, 0, n);
    OK(olMemcpy(q, d1, gpu, src, t_host, n));          // host -> device
    OK(olMemcpy(q, d2, gpu, d1, gpu, n));              // device -> device
    OK(olMemcpy(q, hm, gpu, d2, gpu, n));              // device -> pinned host allocation
    OK(olMemcpy(q, mm, gpu, hm, gpu, n));              // pinned host -> managed
    if (cpu) {
      OK(olMemcpy(q, cpu, t_cpu, mm, gpu, n));         // CUDA managed -> CPU device
      OK(olMemcpy(q, d1, gpu, cpu, t_cpu, 1));         // (one byte, unaligned size)
      OK(olMemcpy(q, (char *)d1 + 1, gpu, (char *)cpu + 1, t_cpu, n - 1)); // CPU device -> CUDA device
    }
    OK(olMemcpy(q, back, t_host, d1, gpu, n));         // device -> host
    if (q)
      OK(olSyncQueue(q));
    CHECK(memcmp(src, back, n) == 0);
    CHECK(memcmp(src, mm, n) == 0 && memcmp(src, hm, n) == 0);
    // odd offsets and sizes
    memset(back, 0, n);
    OK(olMemcpy(q, (char *)d2 + 3, gpu, src + 5, t_host, 1001));
    OK(olMemcpy(q, back, t_host, (char *)d2 + 3, gpu, 1001));
    if (q)
      OK(olSyncQueue(q));
    CHECK(memcmp(back, src + 5, 1001) == 0);
  }
  ERR(OL_ERRC_INVALID_ARGUMENT, olMemcpy(queue, back, t_host, src, t_host, 16)); // host->host with a queue
  if (cpu) {
    // A CPU queue cannot reach GPU device memory: an error, not a write through a GPU address.
    ol_queue_handle_t cq = NULL;
    OK(olCreateQueue(t_cpu, &cq));
    ERR(OL_ERRC_UNSUPPORTED, olMemcpy(cq, cpu, t_cpu, d1, gpu, 16));
    ERR(OL_ERRC_UNSUPPORTED, olMemFill(cq, d1, 1, &(uint8_t){1}, 16));
    OK(olMemFill(cq, mm, 1, &(uint8_t){5}, 16)); // managed memory is host-addressable
    OK(olSyncQueue(cq));
    CHECK(((unsigned char *)mm)[15] == 5);
    OK(olDestroyQueue(cq));
  }
  OK(olMemFree(d1));
  OK(olMemFree(d2));
  OK(olMemFree(hm));
  OK(olMemFree(mm));
  if (cpu)
    OK(olMemFree(cpu));
  free(src);
  free(back);
}

static void fill_patterns(void) {
  NEED_GPU();
  size_t psizes[] = {1, 2, 4, 8, 3, 6, 12, 16, 5};
  const size_t n = 96 * 1024 + 480; // divisible by every pattern size above
  unsigned char *d = galloc(OL_ALLOC_TYPE_DEVICE, n + 16), *back = malloc(n + 16);
  REQUIRE(d);
  for (size_t k = 0; k < sizeof psizes / sizeof psizes[0]; k++)
    for (int off = 0; off < 2; off++) { // aligned and odd addresses
      size_t ps = psizes[k], fill = n / ps * ps;
      unsigned char pat[16];
      for (size_t i = 0; i < ps; i++)
        pat[i] = (unsigned char)(0x11 * (i + 1) + k);
      OK(olMemFill(queue, d, 1, &(uint8_t){0xee}, n + 16));
      OK(olMemFill(queue, d + off, ps, pat, fill));
      OK(olMemcpy(queue, back, t_host, d, gpu, n + 16));
      OK(olSyncQueue(queue));
      size_t bad = 0;
      for (size_t i = 0; i < fill; i++)
        bad += back[off + i] != pat[i % ps];
      bad += off && back[0] != 0xee;
      bad += back[off + fill] != 0xee;
      CHECKF(bad == 0, "pattern %zu bytes at offset %d: %zu wrong bytes", ps, off, bad);
    }
  OK(olMemFill(NULL, d, 4, &(uint32_t){0xdeadbeef}, 64)); // synchronous
  from_gpu(back, d, 64);
  CHECK(((uint32_t *)back)[15] == 0xdeadbeef);
  ERR(OL_ERRC_INVALID_SIZE, olMemFill(queue, d, 3, back, 64));
  OK(olMemFree(d));
  free(back);
}

static void program_and_symbols(void) {
  NEED_GPU();
  bool valid = false;
  size_t n;
  void *img = t_load("kernels", "nvptx64", &n);
  OK(olIsValidBinary(gpu, img, n, &valid));
  CHECK(valid);
  free(img);
  unsigned char garbage[256];
  for (int i = 0; i < 256; i++)
    garbage[i] = (unsigned char)(i * 37 + 1);
  ol_program_handle_t bad = NULL;
  ERR(OL_ERRC_INVALID_BINARY, olCreateProgram(gpu, garbage, sizeof garbage, &bad));
  OK(olIsValidBinary(gpu, garbage, sizeof garbage, &valid));
  CHECK(!valid);
  const char *not_ptx = "this is text but not PTX\n";
  ERR(OL_ERRC_INVALID_BINARY, olCreateProgram(gpu, not_ptx, strlen(not_ptx) + 1, &bad));
  // Images the driver refuses: an error saying so (INVALID_BINARY or COMPILE_FAILURE), never UNKNOWN
  unsigned char fatbin[64] = {0x50, 0xed, 0x55, 0xba, 0xa7, 0x4a, 0x42, 0x43, 0xc0, 0x5e};
  const char *ptx_sm999 = ".version 6.0\n.target sm_990\n.address_size 64\n.visible .entry e() { ret; }\n";
  const void *refused[] = {fatbin, ptx_sm999};
  size_t refused_size[] = {sizeof fatbin, strlen(ptx_sm999) + 1};
  for (int i = 0; i < 2; i++) {
    ol_result_t r = olCreateProgram(gpu, refused[i], refused_size[i], &bad);
    CHECK(r && (r->Code == OL_ERRC_INVALID_BINARY || r->Code == OL_ERRC_COMPILE_FAILURE));
    if (r)
      printf("  refused image %d: code %d: %.200s\n", i, r->Code, r->Details);
  }
  // PTX: valid when its target and ISA are no newer than the device and its driver accept
  const char *ptx_old = ".version 6.0\n.target sm_50\n.address_size 64\n.visible .entry e() { ret; }\n";
  const char *ptx_future = ".version 6.0\n.target sm_990\n.address_size 64\n.visible .entry e() { ret; }\n";
  const char *isa_future = ".version 99.9\n.target sm_50\n.address_size 64\n.visible .entry e() { ret; }\n";
  OK(olIsValidBinary(gpu, ptx_old, strlen(ptx_old) + 1, &valid));
  CHECK(valid);
  OK(olIsValidBinary(gpu, ptx_future, strlen(ptx_future) + 1, &valid));
  CHECK(!valid);
  OK(olIsValidBinary(gpu, isa_future, strlen(isa_future) + 1, &valid));
  CHECK(!valid);
  // Images without a NUL at their end, in buffers of exactly their size (8-byte multiples): PTX, and the
  // fuzzer's fatbin-looking bytes that the driver's PTX reader walked up to a NUL (under ASan, a read past
  // the buffer is an error): the library hands the driver a copy with a NUL after it.
  unsigned char fuzz80[80] = {0x50, 0xed, 0x55, 0xba, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3d, 0x85, 0xff, 0xff};
  memset(fuzz80 + 16, 'm', 64);
  char *unterminated[2] = {malloc(80), malloc(80)};
  REQUIRE(unterminated[0] && unterminated[1]);
  memset(unterminated[0], ' ', 80);
  memcpy(unterminated[0], ptx_old, strlen(ptx_old));
  memcpy(unterminated[1], fuzz80, 80);
  for (int i = 0; i < 2; i++) {
    ol_program_handle_t p80 = NULL;
    ol_result_t r = olCreateProgram(gpu, unterminated[i], 80, &p80);
    CHECKF(i == 1 || r == OL_SUCCESS, "PTX without a NUL: %s", r ? r->Details : "");
    if (p80)
      OK(olDestroyProgram(p80));
    free(unterminated[i]);
  }
  // kernels and globals
  const char *kernels[] = {"saxpy", "reduce", "coords2d", "coords3d", "structarg", "read_ctor", "noargs"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    ol_symbol_kind_t kind = 99;
    OK(olGetSymbolInfo(t_kernel(prog, kernels[i]), OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
    CHECK(kind == OL_SYMBOL_KIND_KERNEL);
  }
  ol_symbol_handle_t s = NULL;
  ERR(OL_ERRC_NOT_FOUND, olGetSymbol(prog, "no_such_kernel", OL_SYMBOL_KIND_KERNEL, &s));
  ERR(OL_ERRC_NOT_FOUND, olGetSymbol(prog, "no_such_global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s));
  // a kernel is not a global variable (NVIDIA's driver answers cuModuleGetGlobal for a kernel's name)
  ERR(OL_ERRC_NOT_FOUND, olGetSymbol(prog, "saxpy", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s));
  ol_symbol_handle_t g = NULL;
  OK(olGetSymbol(prog, "ctor_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  REQUIRE(g);
  void *addr = NULL;
  size_t size = 0;
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size));
  CHECK(addr != NULL && size == 64 * 4);
  uint32_t v[64] = {0};
  if (addr)
    from_gpu(v, addr, sizeof v);
  // the constructors ran at load, in priority order: 40, *2, +20
  uint32_t bad_ctor = 0;
  for (int i = 0; i < 64; i++)
    bad_ctor += v[i] != 100;
  CHECKF(bad_ctor == 0, "ctor_var[0] = %u, want 100", v[0]);
}

// Constructors that run on the device at load (ffi-tests/device/ctors.c; kernels.c's are folded by LLVM).
static void constructors_run_at_load(void) {
  NEED_GPU();
  size_t n;
  void *img = t_load("ctors", "nvptx64", &n);
  uint32_t *out = galloc(OL_ALLOC_TYPE_DEVICE, 64 * 4), host[64];
  REQUIRE(out);
  for (int rep = 0; rep < 2; rep++) { // twice: a second load constructs its own globals again
    ol_program_handle_t p = NULL;
    OK(olCreateProgram(gpu, img, n, &p));
    if (!p)
      break;
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 64, 1, 1, 0);
    OK(olLaunchKernel(NULL, gpu, t_kernel(p, "read_ctor_out"), &args, sizeof args, &la));
    from_gpu(host, out, sizeof host);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < 64; i++)
      bad += host[i] != (3 + i) * 3;
    CHECKF(bad == 0, "load %d: ctor_out[1] = %u, want 12", rep, host[1]);
    OK(olDestroyProgram(p));
  }
  free(img);
  OK(olMemFree(out));
}

static void launch_saxpy(void) {
  NEED_GPU();
  const uint32_t n = 1000003;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = (float)(i % 1024);
    y[i] = 3.0f;
  }
  float *dx = to_gpu(x, n * 4), *dy = to_gpu(y, n * 4);
  REQUIRE(dx && dy);
  struct {
    float a;
    float *x, *y;
    uint32_t n;
  } args = {2.0f, dx, dy, n};
  ol_kernel_launch_size_args_t la = t_grid((n + 255) / 256, 1, 1, 256, 1, 1, 0);
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "saxpy"), &args, sizeof args, &la));
  OK(olSyncQueue(queue));
  from_gpu(y, dy, n * 4);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++)
    bad += y[i] != 2.0f * (float)(i % 1024) + 3.0f;
  CHECKF(bad == 0, "%u wrong results", bad);
  // the same arguments packed without padding (Unified Runtime's convention) are repacked
  unsigned char packed[24];
  args.a = 1.0f;
  memcpy(packed, &args.a, 4);
  memcpy(packed + 4, &args.x, 8);
  memcpy(packed + 12, &args.y, 8);
  memcpy(packed + 20, &args.n, 4);
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "saxpy"), packed, sizeof packed, &la));
  OK(olSyncQueue(queue));
  from_gpu(y, dy, n * 4);
  bad = 0;
  for (uint32_t i = 0; i < n; i++)
    bad += y[i] != 3.0f * (float)(i % 1024) + 3.0f;
  CHECKF(bad == 0, "packed: %u wrong results", bad);
  ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(queue, gpu, t_kernel(prog, "saxpy"), packed, 13, &la));
  OK(olMemFree(dx));
  OK(olMemFree(dy));
  free(x);
  free(y);
}

static void launch_reduction(void) {
  NEED_GPU();
  uint32_t sizes[] = {64, 256, 1024, 32};
  for (int s = 0; s < 4; s++) {
    uint32_t wg = sizes[s], groups = 97, n = wg * groups;
    uint32_t *in = malloc(n * 4), *out = calloc(groups, 4);
    for (uint32_t i = 0; i < n; i++)
      in[i] = i * 7 + 1;
    uint32_t *din = to_gpu(in, n * 4), *dout = galloc(OL_ALLOC_TYPE_DEVICE, groups * 4);
    struct {
      uint32_t *in, *out;
    } args = {din, dout};
    ol_kernel_launch_size_args_t la = t_grid(groups, 1, 1, wg, 1, 1, 0);
    OK(olLaunchKernel(queue, gpu, t_kernel(prog, "reduce"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    from_gpu(out, dout, groups * 4);
    uint32_t bad = 0;
    for (uint32_t g = 0; g < groups; g++) {
      uint32_t want = 0;
      for (uint32_t k = 0; k < wg; k++)
        want += in[g * wg + k];
      bad += out[g] != want;
    }
    CHECKF(bad == 0, "group size %u: %u wrong sums", wg, bad);
    OK(olMemFree(din));
    OK(olMemFree(dout));
    free(in);
    free(out);
  }
}

static void launch_grids_2d_3d(void) {
  NEED_GPU();
  {
    uint32_t gx = 5, gy = 3, bx = 8, by = 4, w = gx * bx, h = gy * by;
    uint32_t *out = galloc(OL_ALLOC_TYPE_MANAGED, w * h * 8);
    REQUIRE(out);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(gx, gy, 1, bx, by, 1, 0);
    OK(olLaunchKernel(NULL, gpu, t_kernel(prog, "coords2d"), &args, sizeof args, &la));
    uint32_t bad = 0;
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++)
        bad += out[2 * (y * w + x)] != x || out[2 * (y * w + x) + 1] != y;
    CHECKF(bad == 0, "2-D: %u wrong", bad);
    OK(olMemFree(out));
  }
  {
    uint32_t g[3] = {3, 2, 4}, b[3] = {4, 3, 2};
    uint32_t w = g[0] * b[0], h = g[1] * b[1], d = g[2] * b[2];
    size_t bytes = (size_t)w * h * d * 32;
    uint32_t *dev = galloc(OL_ALLOC_TYPE_DEVICE, bytes), *out = malloc(bytes);
    void *args = dev;
    ol_kernel_launch_size_args_t la = t_grid(g[0], g[1], g[2], b[0], b[1], b[2], 0);
    OK(olLaunchKernel(queue, gpu, t_kernel(prog, "coords3d"), &args, sizeof args, &la));
    OK(olMemcpy(queue, out, t_host, dev, gpu, bytes));
    OK(olSyncQueue(queue));
    uint32_t bad = 0;
    for (uint32_t z = 0; z < d; z++)
      for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
          uint32_t *o = out + 8 * ((z * h + y) * w + x);
          bad += o[0] != x || o[1] != y || o[2] != z || o[3] != z % b[2] || o[4] != z / b[2] || o[5] != b[2] ||
                 o[6] != g[2] || o[7] != b[0] * b[1] * b[2];
        }
    CHECKF(bad == 0, "3-D: %u wrong", bad);
    OK(olMemFree(dev));
    free(out);
  }
  // dynamic shared memory
  uint32_t wg = 128, groups = 9;
  uint32_t *out = galloc(OL_ALLOC_TYPE_MANAGED, wg * groups * 4);
  void *args = out;
  ol_kernel_launch_size_args_t la = t_grid(groups, 1, 1, wg, 1, 1, wg * 4);
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "dynshared"), &args, sizeof args, &la));
  OK(olSyncQueue(queue));
  uint32_t bad = 0;
  for (uint32_t g = 0; g < groups; g++)
    for (uint32_t i = 0; i < wg; i++)
      bad += out[g * wg + i] != (g * wg + (wg - 1 - i)) * 3;
  CHECKF(bad == 0, "dynshared: %u wrong", bad);
  OK(olMemFree(out));
  // static (reduce: 4 KiB) + dynamic shared memory above 48 KiB needs the function's limit raised
  {
    uint32_t wg = 64, *in = galloc(OL_ALLOC_TYPE_MANAGED, wg * 4), *sum = galloc(OL_ALLOC_TYPE_MANAGED, 4);
    REQUIRE(in && sum);
    for (uint32_t i = 0; i < wg; i++)
      in[i] = i;
    struct {
      uint32_t *in, *out;
    } ra = {in, sum};
    ol_kernel_launch_size_args_t big = t_grid(1, 1, 1, wg, 1, 1, 46000);
    OK(olLaunchKernel(queue, gpu, t_kernel(prog, "reduce"), &ra, sizeof ra, &big));
    OK(olSyncQueue(queue));
    CHECK(*sum == wg * (wg - 1) / 2);
    OK(olMemFree(in));
    OK(olMemFree(sum));
  }
  ol_kernel_launch_size_args_t huge = t_grid(1, 1, 1, 4096, 1, 1, 0);
  ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(queue, gpu, t_kernel(prog, "noargs"), NULL, 0, &huge));
  OK(olSyncQueue(queue));
}

static void launch_struct_argument(void) {
  NEED_GPU();
  int64_t *out = galloc(OL_ALLOC_TYPE_MANAGED, 8 * 8);
  int *pv = galloc(OL_ALLOC_TYPE_MANAGED, 4);
  REQUIRE(out && pv);
  *pv = -12345;
  memset(out, 0, 64);
  struct {
    char c0;
    struct mixed m;
    short s2;
    int64_t *out;
  } args = {-7, {'q', 2.25, -300, pv, 1.5f}, 4242, out};
  ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 32, 1, 1, 0);
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "structarg"), &args, sizeof args, &la));
  OK(olSyncQueue(queue));
  CHECK(out[0] == -7 && out[1] == 'q' && out[2] == 9 && out[3] == -300 && out[4] == -12345 && out[5] == 3 &&
        out[6] == 4242);
  OK(olMemFree(out));
  OK(olMemFree(pv));
}

static void launch_globals(void) {
  NEED_GPU();
  uint32_t *out = galloc(OL_ALLOC_TYPE_DEVICE, 64 * 4), host[64];
  ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 64, 1, 1, 0);
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "write_global"), NULL, 0, &la));
  void *args = out;
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "read_global"), &args, sizeof args, &la));
  OK(olMemcpy(queue, host, t_host, out, gpu, sizeof host));
  OK(olSyncQueue(queue));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < 64; i++)
    bad += host[i] != 2 * i;
  CHECK(bad == 0);
  // write the global through its address, read it back in a kernel
  ol_symbol_handle_t g = NULL;
  void *addr = NULL;
  OK(olGetSymbol(prog, "global_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
  REQUIRE(addr);
  for (uint32_t i = 0; i < 64; i++)
    host[i] = 1000 + i;
  OK(olMemcpy(queue, addr, gpu, host, t_host, sizeof host));
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "read_global"), &args, sizeof args, &la));
  OK(olMemcpy(queue, host, t_host, out, gpu, sizeof host));
  OK(olSyncQueue(queue));
  bad = 0;
  for (uint32_t i = 0; i < 64; i++)
    bad += host[i] != 1000 + i;
  CHECK(bad == 0);
  OK(olLaunchKernel(NULL, gpu, t_kernel(prog, "read_ctor"), &args, sizeof args, &la));
  from_gpu(host, out, sizeof host);
  bad = 0;
  for (uint32_t i = 0; i < 64; i++)
    bad += host[i] != 100 + i;
  CHECK(bad == 0);
  // a second program from the same bytes has its own globals, constructed again
  ol_program_handle_t p2 = t_create(gpu, "kernels", "nvptx64");
  if (p2) {
    OK(olLaunchKernel(queue, gpu, t_kernel(p2, "read_global"), &args, sizeof args, &la));
    OK(olMemcpy(queue, host, t_host, out, gpu, sizeof host));
    OK(olSyncQueue(queue));
    CHECK(host[5] == 0); // fresh global_var
    OK(olDestroyProgram(p2));
  }
  OK(olMemFree(out));
}

// ---- queues, events, host functions ---------------------------------------------------------------

static int order[64];
static int norder;
static void record_cb(void *p) { order[__atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST)] = (int)(intptr_t)p; }

static void queues_events_host_functions(void) {
  NEED_GPU();
  uint64_t *spin_out = galloc(OL_ALLOC_TYPE_MANAGED, 8);
  REQUIRE(spin_out);
  *spin_out = 0;
  norder = 0;
  struct {
    uint64_t iters;
    uint64_t *out;
  } sargs = {2000000, spin_out};
  ol_kernel_launch_size_args_t one = t_grid(1, 1, 1, 1, 1, 1, 0);
  OK(olLaunchHostFunction(queue, record_cb, (void *)1));
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "spin"), &sargs, sizeof sargs, &one));
  OK(olLaunchHostFunction(queue, record_cb, (void *)2));
  ol_event_handle_t ev = NULL;
  OK(olCreateEvent(queue, &ev));
  OK(olLaunchHostFunction(queue, record_cb, (void *)3));
  REQUIRE(ev);
  OK(olSyncEvent(ev));
  bool done = false;
  OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
  CHECK(done);
  CHECK(*spin_out != 0); // the kernel before the event has finished
  OK(olSyncQueue(queue));
  CHECK(norder == 3 && order[0] == 1 && order[1] == 2 && order[2] == 3);
  ol_queue_handle_t eq = NULL;
  OK(olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, sizeof eq, &eq));
  CHECK(eq == queue);
  bool empty = false;
  OK(olGetQueueInfo(queue, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  CHECK(empty);
  OK(olDestroyEvent(ev));
  ERR(OL_ERRC_INVALID_EVENT, olSyncEvent(ev));
  ERR(OL_ERRC_INVALID_EVENT, olDestroyEvent(ev));

  // Fibonacci across two CUDA queues, each step waiting for the other queue's event
  ol_queue_handle_t q2 = NULL;
  OK(olCreateQueue(gpu, &q2));
  uint32_t *fib = galloc(OL_ALLOC_TYPE_MANAGED, 32 * 4);
  REQUIRE(q2 && fib);
  ol_queue_handle_t qs[2] = {queue, q2};
  ol_event_handle_t prev = NULL;
  for (uint32_t i = 0; i < 24; i++) {
    ol_queue_handle_t q = qs[i % 2];
    if (prev) {
      OK(olWaitEvents(q, &prev, 1));
      OK(olDestroyEvent(prev));
    }
    if (i % 2) // make the dependency real: the other queue is slow
      OK(olLaunchKernel(q, gpu, t_kernel(prog, "spin"), &sargs, sizeof sargs, &one));
    struct {
      uint32_t idx;
      uint32_t *p;
    } a = {i, fib};
    OK(olLaunchKernel(q, gpu, t_kernel(prog, "sequence"), &a, sizeof a, &one));
    prev = NULL;
    OK(olCreateEvent(q, &prev));
  }
  OK(olSyncEvent(prev));
  OK(olDestroyEvent(prev));
  uint32_t a0 = 0, a1 = 1, bad = 0;
  for (uint32_t i = 0; i < 24; i++) {
    uint32_t want = i == 0 ? 0 : i == 1 ? 1 : a0 + a1;
    if (i >= 2) {
      a0 = a1;
      a1 = want;
    }
    bad += fib[i] != want;
  }
  CHECKF(bad == 0, "fib[23] = %u", fib[23]);
  OK(olSyncQueue(q2));
  OK(olDestroyQueue(q2));
  ERR(OL_ERRC_INVALID_QUEUE, olSyncQueue(q2));
  ERR(OL_ERRC_INVALID_QUEUE, olLaunchKernel(q2, gpu, t_kernel(prog, "noargs"), NULL, 0, &one));
  OK(olMemFree(fib));
  OK(olMemFree(spin_out));
}

static uint32_t *volatile snap_src, *volatile snap_dst;
static void snapshot_cb(void *unused) {
  (void)unused;
  memcpy(snap_dst, snap_src, 64 * 4);
}

// Events across devices: CPU queue -> CUDA queue and CUDA queue -> CPU queue.
static void events_across_cpu_and_cuda(void) {
  NEED_GPU();
  if (!t_cpu || !cpu_prog)
    SKIP("no CPU device");
  ol_queue_handle_t cq = NULL;
  OK(olCreateQueue(t_cpu, &cq));
  uint32_t *buf = galloc(OL_ALLOC_TYPE_MANAGED, 64 * 4); // written by the CPU device, then read by the GPU
  uint64_t *slow = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 8, (void **)&slow));
  REQUIRE(cq && buf && slow);
  memset(buf, 0xff, 64 * 4);
  ol_kernel_launch_size_args_t one = t_grid(1, 1, 1, 1, 1, 1, 0), g64 = t_grid(1, 1, 1, 64, 1, 1, 0);
  // CPU queue: slow kernel, then foo writes buf[i] = i; event
  struct {
    uint64_t iters;
    uint64_t *out;
  } sargs = {20000000, slow};
  OK(olLaunchKernel(cq, t_cpu, t_kernel(cpu_prog, "spin"), &sargs, sizeof sargs, &one));
  void *fargs = buf;
  OK(olLaunchKernel(cq, t_cpu, t_kernel(cpu_prog, "foo"), &fargs, sizeof fargs, &g64));
  ol_event_handle_t cev = NULL;
  OK(olCreateEvent(cq, &cev));
  // CUDA queue waits for it, then copies buf to device memory and back
  uint32_t *d = galloc(OL_ALLOC_TYPE_DEVICE, 64 * 4), host[64];
  OK(olWaitEvents(queue, &cev, 1));
  OK(olMemcpy(queue, d, gpu, buf, gpu, 64 * 4));
  OK(olMemcpy(queue, host, t_host, d, gpu, 64 * 4));
  OK(olSyncQueue(queue));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < 64; i++)
    bad += host[i] != i;
  CHECKF(bad == 0, "the CUDA queue did not wait for the CPU queue's event");
  // the other way: CUDA queue spins then writes; CPU queue waits, then copies on the CPU device
  uint64_t *gslow = galloc(OL_ALLOC_TYPE_MANAGED, 8);
  struct {
    uint64_t iters;
    uint64_t *out;
  } gargs = {5000000, gslow};
  OK(olLaunchKernel(queue, gpu, t_kernel(prog, "spin"), &gargs, sizeof gargs, &one));
  OK(olMemFill(queue, buf, 4, &(uint32_t){77}, 64 * 4));
  ol_event_handle_t gev = NULL;
  OK(olCreateEvent(queue, &gev));
  uint32_t *cpubuf = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 64 * 4, (void **)&cpubuf));
  OK(olWaitEvents(cq, &gev, 1));
  snap_src = buf; // (the CPU device cannot address CUDA memory: a host function reads the managed buffer)
  snap_dst = cpubuf;
  OK(olLaunchHostFunction(cq, snapshot_cb, NULL));
  OK(olSyncQueue(cq));
  bad = 0;
  for (uint32_t i = 0; cpubuf && i < 64; i++)
    bad += cpubuf[i] != 77;
  CHECKF(bad == 0, "the CPU queue did not wait for the CUDA queue's event");
  OK(olDestroyEvent(cev));
  OK(olDestroyEvent(gev));
  OK(olDestroyQueue(cq));
  OK(olMemFree(cpubuf));
  OK(olMemFree(slow));
  OK(olMemFree(gslow));
  OK(olMemFree(buf));
  OK(olMemFree(d));
}

static void stale_handles(void) {
  NEED_GPU();
  ol_program_handle_t p = t_create(gpu, "kernels", "nvptx64");
  REQUIRE(p);
  ol_symbol_handle_t k = t_kernel(p, "noargs");
  OK(olDestroyProgram(p));
  ol_kernel_launch_size_args_t one = t_grid(1, 1, 1, 1, 1, 1, 0);
  ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(queue, gpu, k, NULL, 0, &one));
  ERR(OL_ERRC_INVALID_ARGUMENT, olDestroyProgram(p));
  ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbol(p, "noargs", OL_SYMBOL_KIND_KERNEL, &k));
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(gpu, &q));
  OK(olDestroyQueue(q));
  ERR(OL_ERRC_INVALID_QUEUE, olDestroyQueue(q));
  ERR(OL_ERRC_INVALID_QUEUE, olLaunchKernel(q, gpu, t_kernel(prog, "noargs"), NULL, 0, &one));
  // a queue destroyed with work pending finishes that work
  uint32_t *out = galloc(OL_ALLOC_TYPE_MANAGED, 64 * 4);
  uint64_t *slow = galloc(OL_ALLOC_TYPE_MANAGED, 8);
  OK(olCreateQueue(gpu, &q));
  struct {
    uint64_t iters;
    uint64_t *out;
  } sargs = {2000000, slow};
  OK(olLaunchKernel(q, gpu, t_kernel(prog, "spin"), &sargs, sizeof sargs, &one));
  void *args = out;
  ol_kernel_launch_size_args_t g64 = t_grid(1, 1, 1, 64, 1, 1, 0);
  OK(olLaunchKernel(q, gpu, t_kernel(prog, "foo"), &args, sizeof args, &g64));
  ol_event_handle_t ev = NULL;
  OK(olCreateEvent(q, &ev));
  OK(olDestroyQueue(q)); // does not wait (LLVM 22); its event stays valid
  if (ev) {
    OK(olSyncEvent(ev));
    OK(olDestroyEvent(ev));
  }
  CHECK(out[63] == 63);
  OK(olMemFree(out));
  OK(olMemFree(slow));
}

static void saxpy_on(ol_queue_handle_t q) {
  const uint32_t n = 4096;
  for (int rep = 0; rep < 5; rep++) {
    float *x = galloc(OL_ALLOC_TYPE_DEVICE, n * 4), *y = galloc(OL_ALLOC_TYPE_DEVICE, n * 4);
    float hx[4096], hy[4096];
    for (uint32_t i = 0; i < n; i++) {
      hx[i] = (float)i;
      hy[i] = (float)rep;
    }
    OK(olMemcpy(q, x, gpu, hx, t_host, n * 4));
    OK(olMemcpy(q, y, gpu, hy, t_host, n * 4));
    struct {
      float a;
      float *x, *y;
      uint32_t n;
    } args = {0.5f, x, y, n};
    ol_kernel_launch_size_args_t la = t_grid(n / 128, 1, 1, 128, 1, 1, 0);
    OK(olLaunchKernel(q, gpu, t_kernel(prog, "saxpy"), &args, sizeof args, &la));
    OK(olMemcpy(q, hy, t_host, y, gpu, n * 4));
    OK(olSyncQueue(q));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
      bad += hy[i] != 0.5f * (float)i + (float)rep;
    CHECK(bad == 0);
    OK(olMemFree(x));
    OK(olMemFree(y));
  }
}

static void twenty_threads(void) {
  NEED_GPU();
  for (int own = 1; own >= 0; own--) {
    t_twenty_threads(saxpy_on, gpu, queue, own);
    printf("  20 threads %s: done\n", own ? "each with its own queue" : "on one queue");
  }
}

// ---- misuse a GPU driver reports (issue 12): an error or the correct data ---------------------------------

// olMemFree while a 1 MiB copy into the block is still queued behind a kernel and a gate: the next
// allocation is not that block, and the copy does not land in it (harness_free_behind_queued_copy, which
// test_misuse runs on the CPU device). NVIDIA's cuMemFree synchronises; the fake's frees at once, so here
// the library's deferred free is what keeps the queued copy away.
static void free_behind_queued_work(void) {
  NEED_GPU();
  enum { N = 1 << 20 };
  unsigned char *z = malloc(N), *back = malloc(N);
  uint64_t *spin_out = galloc(OL_ALLOC_TYPE_MANAGED, 8);
  REQUIRE(z && back && spin_out);
  memset(z, 'Z', N);
  struct {
    uint64_t iters;
    uint64_t *out;
  } sargs = {100000, spin_out};
  ol_kernel_launch_size_args_t one = t_grid(1, 1, 1, 1, 1, 1, 0);
  ol_alloc_type_t types[] = {OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_MANAGED};
  for (int t = 0; t < 3; t++) {
    struct gate g = GATE_INIT;
    unsigned char *a = galloc(types[t], N);
    REQUIRE(a);
    OK(olLaunchKernel(queue, gpu, t_kernel(prog, "spin"), &sargs, sizeof sargs, &one));
    OK(olLaunchHostFunction(queue, gate_wait, &g));
    harness_free_behind_queued_copy(gpu, t_host, queue, types[t], a, z, N, &g, back, t);
  }
  OK(olMemFree(spin_out));
  free(z);
  free(back);
}

// olMemUnregister returns only after the work queued before it is done: a copy into the registered range
// queued behind a gate (opened by another thread meanwhile) has landed when it returns.
static void unregister_waits_for_queued_work(void) {
  NEED_GPU();
  enum { N = 1 << 20 };
  unsigned char *h = calloc(1, N), *d = galloc(OL_ALLOC_TYPE_DEVICE, N);
  REQUIRE(h && d);
  harness_unregister_waits_for_queued_copy(gpu, t_host, queue, d, h, N);
  OK(olSyncQueue(queue));
  OK(olMemFree(d));
  free(h);
}

// Ranges that start inside an allocation or a registered host range must end inside it: INVALID_SIZE
// naming the allocation (the driver would say CUDA_ERROR_INVALID_VALUE, or fault on the GPU).
static void copies_and_fills_past_the_end(void) {
  NEED_GPU();
  enum { BIG = 1 << 20 };
  unsigned char *big = calloc(1, BIG);
  REQUIRE(big);
  ol_alloc_type_t types[] = {OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_MANAGED};
  for (int t = 0; t < 3; t++) {
    unsigned char *d64 = galloc(types[t], 64), *d4k = galloc(types[t], 4096);
    REQUIRE(d64 && d4k);
    char want64[96], want4k[96];
    snprintf(want64, sizeof want64, "at %p of 64 bytes", (void *)d64);
    snprintf(want4k, sizeof want4k, "at %p of 4096 bytes", (void *)d4k);
    CHECK_ERR_HAS(OL_ERRC_INVALID_SIZE, want64, olMemcpy(NULL, d64, gpu, big, t_host, 64 << 10));
    CHECK_ERR_HAS(OL_ERRC_INVALID_SIZE, want4k, olMemcpy(queue, d4k, gpu, big, t_host, BIG));
    CHECK_ERR_HAS(OL_ERRC_INVALID_SIZE, want64, olMemFill(queue, d64, 1, &(uint8_t){1}, BIG));
    CHECK_ERR_HAS(OL_ERRC_INVALID_SIZE, want4k, olMemcpy(NULL, d4k + 4000, gpu, d4k, gpu, 1000));
    CHECK_ERR_HAS(OL_ERRC_INVALID_SIZE, want64, olMemcpy(NULL, big, t_host, d64, gpu, 65));
    OK(olMemcpy(NULL, d4k + 3096, gpu, d4k, gpu, 1000));
    OK(olMemFill(queue, d64, 4, &(uint32_t){7}, 64));
    OK(olSyncQueue(queue));
    OK(olMemFree(d64));
    OK(olMemFree(d4k));
  }
  unsigned char *d = galloc(OL_ALLOC_TYPE_DEVICE, 16384);
  void *pinned = NULL;
  REQUIRE(d);
  OK(olMemRegister(gpu, big, 4096, 0, &pinned));
  CHECK_ERR_HAS(OL_ERRC_INVALID_SIZE, "registered host range", olMemcpy(queue, d, gpu, pinned, t_host, 8192));
  OK(olMemUnregister(gpu, big));
  OK(olMemcpy(queue, d, gpu, big, t_host, 8192)); // unknown host memory: the caller's business
  OK(olSyncQueue(queue));
  OK(olMemFree(d));
  free(big);
}

// A host function on a CUDA queue calling olSyncQueue of that queue, olSyncEvent on its event or
// olShutDown: UNSUPPORTED without reaching the driver (fake_driver_clean checks no driver call came from a
// callback), never a hang.
struct cuda_callback {
  ol_queue_handle_t q;
  ol_event_handle_t after;
  ol_result_t sync_own, sync_event, shutdown;
};
static void cuda_calls_back(void *p) {
  struct cuda_callback *r = p;
  r->sync_own = olSyncQueue(r->q);
  r->sync_event = olSyncEvent(r->after);
  r->shutdown = olShutDown();
}

static void host_function_calling_back(void) {
  NEED_GPU();
  struct gate g = GATE_INIT;
  struct cuda_callback r = {queue, NULL, NULL, NULL, NULL};
  OK(olLaunchHostFunction(queue, gate_wait, &g));
  OK(olLaunchHostFunction(queue, cuda_calls_back, &r));
  OK(olCreateEvent(queue, &r.after));
  gate_open(&g);
  OK(olSyncQueue(queue));
  CHECK_ERR_HAS(OL_ERRC_UNSUPPORTED, "called from a host function", r.sync_own);
  CHECK_ERR_HAS(OL_ERRC_UNSUPPORTED, "called from a host function", r.sync_event);
  CHECK_ERR_HAS(OL_ERRC_UNSUPPORTED, "called from a host function", r.shutdown);
  if (r.after) {
    OK(olSyncEvent(r.after));
    OK(olDestroyEvent(r.after));
  }
}

// Type 77 is allocated like MANAGED (LLVM 22); DEVICE memory beyond GLOBAL_MEM_SIZE is OUT_OF_RESOURCES.
static void allocation_arguments(void) {
  NEED_GPU();
  void *p = NULL;
  uint32_t type = 0;
  OK(olMemAlloc(gpu, (ol_alloc_type_t)77, 4096, &p));
  REQUIRE(p);
  OK(olGetMemInfo(p, OL_MEM_INFO_TYPE, sizeof type, &type));
  CHECK(type == 77);
  memset(p, 1, 4096); // managed memory is host-accessible
  OK(olMemFree(p));
  uint64_t global = 0;
  OK(olGetDeviceInfo(gpu, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof global, &global));
  CHECK_ERR_HAS(OL_ERRC_OUT_OF_RESOURCES, "GLOBAL_MEM_SIZE", olMemAlloc(gpu, OL_ALLOC_TYPE_DEVICE, (size_t)64 << 40, &p));
  CHECK_ERR_HAS(OL_ERRC_OUT_OF_RESOURCES, "GLOBAL_MEM_SIZE", olMemAlloc(gpu, OL_ALLOC_TYPE_DEVICE, global + 1, &p));
}

static void fake_driver_clean(void) {
  if (!fake_stats)
    SKIP("not the fake driver (no fakeCudaStats)");
  struct fake_cuda_stats s;
  fake_stats(&s, sizeof s);
  CHECKF(s.no_context_calls == 0, "%lld driver calls without a current context", (long long)s.no_context_calls);
  CHECKF(s.wrong_context_calls == 0, "%lld calls with the wrong context", (long long)s.wrong_context_calls);
  CHECKF(s.calls_from_host_fn == 0, "%lld driver calls from host callbacks", (long long)s.calls_from_host_fn);
  CHECKF(s.invalid_handles == 0, "%lld stale driver handles used", (long long)s.invalid_handles);
  CHECKF(s.bad_frees == 0, "%lld bad frees", (long long)s.bad_frees);
  CHECKF(s.kernel_faults == 0, "%lld kernel faults", (long long)s.kernel_faults);
  CHECKF(s.unsupported_kernels == 0, "%lld launches the fake could not emulate", (long long)s.unsupported_kernels);
  CHECK(s.launches > 0 && s.host_fns > 0);
  CHECKF(s.ptxas_rejects == 0, "NVIDIA's ptxas rejected %lld modules", (long long)s.ptxas_rejects);
  CHECKF(s.pageable_stalls == 0,
         "%lld copies with pageable memory, or host to host, queued behind work (a hang on NVIDIA's driver)",
         (long long)s.pageable_stalls);
  CHECKF(s.implicit_sync_stalls == 0, "%lld frees while queued work waited (a hang on NVIDIA's driver)",
         (long long)s.implicit_sync_stalls);
  const char *ptxas = getenv("FAKE_CUDA_PTXAS");
  if (ptxas && *ptxas) { /* set but empty is unset, as the fake driver reads it */
    CHECK(s.ptxas_runs > 0);
    printf("  NVIDIA's ptxas assembled all %lld PTX modules the library loaded\n", (long long)s.ptxas_runs);
  }
}

int main(void) {
  t_init();
  gpu = harness_find_backend(OL_PLATFORM_BACKEND_CUDA);
  if (!gpu) {
    printf("SKIP: no CUDA device\n");
    olShutDown();
    harness_skipped++;
    return t_finish(); // "0 passed, 0 failed, 1 skipped", exit 0
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h)
    fake_stats = (fake_cuda_stats_fn)dlsym(h, "fakeCudaStats");
  printf("  driver: %s\n", fake_stats ? "the fake libcuda.so.1 (ffi-tests/fake_cuda)" : "NVIDIA's libcuda.so.1");
  size_t n;
  void *img = t_load("kernels", "nvptx64", &n);
  OK(olCreateProgram(gpu, img, n, &prog));
  if (t_cpu)
    OK(olCreateProgram(t_cpu, img, n, &cpu_prog));
  free(img);
  OK(olCreateQueue(gpu, &queue));
  RUN(device_info);
  RUN(memory_kinds);
  RUN(register_overlaps);
  RUN(memcpy_every_direction);
  RUN(fill_patterns);
  RUN(program_and_symbols);
  RUN(constructors_run_at_load);
  RUN(launch_saxpy);
  RUN(launch_reduction);
  RUN(launch_grids_2d_3d);
  RUN(launch_struct_argument);
  RUN(launch_globals);
  RUN(queues_events_host_functions);
  RUN(events_across_cpu_and_cuda);
  RUN(stale_handles);
  RUN(twenty_threads);
  RUN(free_behind_queued_work);
  RUN(unregister_waits_for_queued_work);
  RUN(copies_and_fills_past_the_end);
  RUN(host_function_calling_back);
  RUN(allocation_arguments);
  RUN(fake_driver_clean);
  print_stats("before olShutDown");
  if (queue)
    OK(olDestroyQueue(queue));
  if (prog)
    OK(olDestroyProgram(prog));
  if (cpu_prog)
    OK(olDestroyProgram(cpu_prog));
  OK(olShutDown());
  if (fake_stats) {
    // after the last olShutDown every driver object of ours is gone, the primary context released
    struct fake_cuda_stats s;
    fake_stats(&s, sizeof s);
    print_stats("after olShutDown");
    harness_cur_name = "fake_driver_nothing_left";
    harness_cur_failures = 0;
    CHECKF(s.live_device_allocs == 0 && s.live_host_allocs == 0 && s.live_registrations == 0,
           "allocations left: %lld device, %lld host, %lld registrations", (long long)s.live_device_allocs,
           (long long)s.live_host_allocs, (long long)s.live_registrations);
    CHECKF(s.live_modules == 0, "%lld modules left loaded", (long long)s.live_modules);
    CHECKF(s.live_streams == 0, "%lld streams left", (long long)s.live_streams);
    CHECKF(s.live_events == 0, "%lld events left", (long long)s.live_events);
    CHECKF(s.primary_ctx_retains == 0, "%lld primary context retains left", (long long)s.primary_ctx_retains);
    if (harness_cur_failures) {
      harness_failed++;
      printf("FAIL fake_driver_nothing_left\n");
    } else {
      harness_passed++;
      printf("PASS fake_driver_nothing_left\n");
    }
  }
  return t_finish();
}
