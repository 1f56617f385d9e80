/* Tests of offload-rs's CPU compute device (platform backend 0x100): memory, copies, fills, registration,
 * queues, events, programs and kernel launch, from many threads. Every test looks the device up first;
 * without it (before the CPU plugin is merged, or on a build without it) each test prints
 * `SKIP <name>: no CPU device` and counts as skipped.
 *
 * FFI_TESTS_PROGRAM is the path of a small nvptx64 bitcode program (ffi-tests/programs/tiny.c). */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>

#include "cpu_fixture.h"

static bool small_mode(void) { return getenv("OFFLOAD_RS_TESTS_SMALL") != NULL; }

TEST(cpu_device_info) {
  SETUP();
  ol_device_type_t t = 0;
  char name[256] = "";
  uint32_t cu = 0;
  uint64_t mem = 0;
  ol_platform_handle_t p = NULL;
  char pname[64] = "";
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_TYPE, sizeof t, &t));
  CHECK(t == OL_DEVICE_TYPE_CPU);
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_NAME, sizeof name, name));
  CHECK(name[0] != 0);
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cu, &cu));
  CHECK(cu >= 1);
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem));
  CHECK(mem > 0);
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_PLATFORM, sizeof p, &p));
  CHECK_OK(olGetPlatformInfo(p, OL_PLATFORM_INFO_NAME, sizeof pname, pname));
  CHECK(strcmp(pname, "CPU") == 0);
  CHECK(cpu != host);
  TEARDOWN();
}

TEST(mem_alloc_every_type_aligned_and_writable) {
  SETUP();
  for (int t = OL_ALLOC_TYPE_HOST; t <= OL_ALLOC_TYPE_MANAGED; t++) {
    void *p = NULL;
    CHECK_OK(olMemAlloc(cpu, (ol_alloc_type_t)t, 1024, &p));
    if (!p) continue;
    CHECKF(((uintptr_t)p & 63) == 0, "type %d: %p is not 64-byte aligned", t, p);
    memset(p, 0x5A, 1024);
    CHECK(((unsigned char *)p)[0] == 0x5A && ((unsigned char *)p)[1023] == 0x5A);
    CHECK_OK(olMemFree(p));
  }
  TEARDOWN();
}

TEST(mem_alloc_sizes) {
  SETUP();
  static const size_t sizes[] = {1, 2, 3, 7, 63, 64, 65, 4095, 4096, 4097, 1 << 20, (64u << 20) + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *p = NULL;
    size_t got = 0;
    CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, sizes[i], &p));
    if (!p) continue;
    CHECK(((uintptr_t)p & 63) == 0);
    ((volatile unsigned char *)p)[0] = 1;
    ((volatile unsigned char *)p)[sizes[i] - 1] = 2;
    CHECK_OK(olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof got, &got));
    CHECKF(got == sizes[i], "size %zu reported as %zu", sizes[i], got);
    CHECK_OK(olMemFree(p));
  }
  TEARDOWN();
}

TEST(mem_free_exact_base_only) {
  SETUP();
  void *p = NULL;
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, 256, &p));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ARGUMENT, "address is not a known allocation", olMemFree((char *)p + 1));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ARGUMENT, "address is not a known allocation", olMemFree((char *)p + 128));
  CHECK_OK(olMemFree(p));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ARGUMENT, "address is not a known allocation", olMemFree(p)); /* double free */
  TEARDOWN();
}

TEST(mem_info_base_and_interior_pointers) {
  SETUP();
  static const ol_alloc_type_t types[] = {OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_MANAGED};
  for (int i = 0; i < 3; i++) {
    void *p = NULL;
    REQUIRE_OK(olMemAlloc(cpu, types[i], 1024, &p));
    const char *probes[] = {(char *)p, (char *)p + 1, (char *)p + 123, (char *)p + 1023};
    for (int k = 0; k < 4; k++) {
      ol_device_handle_t d = NULL;
      void *base = NULL;
      size_t size = 0, sz = 0;
      ol_alloc_type_t type = 99;
      CHECK_OK(olGetMemInfo(probes[k], OL_MEM_INFO_DEVICE, sizeof d, &d));
      CHECK(d == cpu);
      CHECK_OK(olGetMemInfo(probes[k], OL_MEM_INFO_BASE, sizeof base, &base));
      CHECK(base == p);
      CHECK_OK(olGetMemInfo(probes[k], OL_MEM_INFO_SIZE, sizeof size, &size));
      CHECK(size == 1024);
      CHECK_OK(olGetMemInfo(probes[k], OL_MEM_INFO_TYPE, sizeof type, &type));
      CHECK(type == types[i]);
      CHECK_OK(olGetMemInfoSize(probes[k], OL_MEM_INFO_DEVICE, &sz));
      CHECK(sz == 8);
      CHECK_OK(olGetMemInfoSize(probes[k], OL_MEM_INFO_BASE, &sz));
      CHECK(sz == 8);
      CHECK_OK(olGetMemInfoSize(probes[k], OL_MEM_INFO_SIZE, &sz));
      CHECK(sz == 8);
      CHECK_OK(olGetMemInfoSize(probes[k], OL_MEM_INFO_TYPE, &sz));
      CHECK(sz == 4);
    }
    size_t size;
    CHECK_ERR_TEXT(OL_ERRC_NOT_FOUND, "allocated memory information not found",
                   olGetMemInfo((char *)p + 1024, OL_MEM_INFO_SIZE, sizeof size, &size)); /* one past the end */
    CHECK_ERR_TEXT(OL_ERRC_INVALID_ENUMERATION, "olGetMemInfo enum '999' is invalid",
                   olGetMemInfo(p, (ol_mem_info_t)999, sizeof size, &size));
    CHECK_ERR_TEXT(OL_ERRC_INVALID_SIZE, "provided size is invalid", olGetMemInfo(p, OL_MEM_INFO_SIZE, 7, &size));
    CHECK_OK(olMemFree(p));
    CHECK_ERR(OL_ERRC_NOT_FOUND, olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof size, &size)); /* freed */
  }
  TEARDOWN();
}

TEST(mem_info_records_raw_type_7) {
  SETUP();
  void *p = NULL;
  uint32_t type = 0;
  REQUIRE_OK(olMemAlloc(cpu, (ol_alloc_type_t)7, 64, &p));
  CHECK_OK(olGetMemInfo(p, OL_MEM_INFO_TYPE, sizeof type, &type));
  CHECK(type == 7);
  memset(p, 1, 64);
  CHECK_OK(olMemFree(p));
  TEARDOWN();
}

static void fill_pattern(unsigned char *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 31 + seed);
}

TEST(memcpy_every_direction_synchronous) {
  SETUP();
  enum { N = 4096 };
  unsigned char src[N], back[N];
  void *a = NULL, *b = NULL;
  fill_pattern(src, N, 3);
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, N, &a));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, N, &b));
  /* host -> CPU device */
  CHECK_OK(olMemcpy(NULL, a, cpu, src, host, N));
  CHECK(memcmp(a, src, N) == 0);
  /* CPU device -> CPU device */
  CHECK_OK(olMemcpy(NULL, b, cpu, a, cpu, N));
  /* CPU device -> host */
  memset(back, 0, N);
  CHECK_OK(olMemcpy(NULL, back, host, b, cpu, N));
  CHECK(memcmp(back, src, N) == 0);
  /* host -> host through the host device, and an interior range */
  memset(back, 0, N);
  CHECK_OK(olMemcpy(NULL, back + 100, host, (char *)a + 100, host, 50));
  CHECK(memcmp(back + 100, src + 100, 50) == 0 && back[99] == 0 && back[150] == 0);
  /* size 0 */
  CHECK_OK(olMemcpy(NULL, b, cpu, a, cpu, 0));
  CHECK_OK(olMemFree(a));
  CHECK_OK(olMemFree(b));
  TEARDOWN();
}

TEST(memcpy_on_a_queue) {
  SETUP();
  enum { N = 1 << 16 };
  static unsigned char src[N], back[N];
  void *a = NULL, *b = NULL;
  ol_queue_handle_t q = NULL;
  fill_pattern(src, N, 9);
  REQUIRE_OK(olCreateQueue(cpu, &q));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, N, &a));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, N, &b));
  memset(back, 0, N);
  CHECK_OK(olMemcpy(q, a, cpu, src, host, N));
  CHECK_OK(olMemcpy(q, b, cpu, a, cpu, N));
  CHECK_OK(olMemcpy(q, back, host, b, cpu, N));
  CHECK_OK(olSyncQueue(q));
  CHECK(memcmp(back, src, N) == 0);
  bool empty = false;
  CHECK_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  CHECK(empty);
  /* host <-> host with a queue: LLVM 22's text, typo included */
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ARGUMENT,
                 "ane of DstDevice and SrcDevice must be a non-host device if queue is specified",
                 olMemcpy(q, back, host, src, host, 16));
  CHECK_OK(olMemFree(a));
  CHECK_OK(olMemFree(b));
  CHECK_OK(olDestroyQueue(q));
  TEARDOWN();
}

static void check_fill(ol_queue_handle_t q, const void *pattern, size_t psize, size_t fill) {
  unsigned char *p = NULL;
  if (olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, fill + 16, (void **)&p) || !p) {
    harness_fail(__FILE__, __LINE__, "alloc for fill of %zu failed", fill);
    return;
  }
  memset(p, 0xEE, fill + 16);
  CHECK_OK(olMemFill(q, p, psize, pattern, fill));
  if (q) CHECK_OK(olSyncQueue(q));
  for (size_t i = 0; i < fill; i++) {
    if (p[i] != ((const unsigned char *)pattern)[i % psize]) {
      harness_fail(__FILE__, __LINE__, "pattern %zu, fill %zu, queue %p: byte %zu is 0x%02x", psize, fill, (void *)q, i,
                   p[i]);
      break;
    }
  }
  CHECKF(p[fill] == 0xEE, "pattern %zu: wrote past FillSize", psize);
  CHECK_OK(olMemFree(p));
}

TEST(mem_fill_patterns) {
  SETUP();
  ol_queue_handle_t q = NULL;
  unsigned char p17[17];
  uint8_t p1 = 0x42;
  uint16_t p2 = 0x4243;
  uint32_t p4 = 0xDEADBEEF;
  uint64_t p16[2] = {UINT64_MAX, 0x0102030405060708ull};
  fill_pattern(p17, sizeof p17, 5);
  REQUIRE_OK(olCreateQueue(cpu, &q));
  for (int withq = 0; withq < 2; withq++) {
    ol_queue_handle_t qq = withq ? q : NULL; /* NULL queue: synchronous (LLVM 22 crashes) */
    check_fill(qq, &p1, 1, 1024);
    check_fill(qq, &p1, 1, 1023);
    check_fill(qq, &p2, 2, 1022);
    check_fill(qq, &p4, 4, 1024);
    check_fill(qq, p16, 16, 1024);
    check_fill(qq, p17, 17, 17 * 64);
    check_fill(qq, &p4, 4, 4);
  }
  void *m = NULL;
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 2048, &m));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_SIZE, "validation failure: FillSize % PatternSize != 0", olMemFill(q, m, 2, &p2, 1025));
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olMemFill(q, m, 0, &p2, 1024));
  CHECK_OK(olMemFill(q, m, 4, &p4, 0));
  CHECK_OK(olMemFree(m));
  CHECK_OK(olDestroyQueue(q));
  TEARDOWN();
}

TEST(mem_register_rules) {
  SETUP();
  int arr[50], other[50];
  void *pinned = NULL, *pinned2 = NULL, *p3 = NULL;
  CHECK_OK(olMemRegister(cpu, arr, sizeof arr, 0, &pinned));
  CHECK(pinned != NULL);
  /* the same range twice is fine (two uses) */
  CHECK_OK(olMemRegister(cpu, arr, sizeof arr, 0, &pinned2));
  CHECK(pinned2 != NULL);
  /* a contained sub-range is fine too */
  CHECK_OK(olMemRegister(cpu, arr + 2, 16, 0, &p3));
  /* partial overlap is not */
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemRegister(cpu, arr + 2, sizeof arr, 0, &p3));
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olMemRegister(cpu, other, 0, 0, &p3));
  /* unregistered memory */
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemUnregister(cpu, other));
  CHECK_OK(olMemUnregister(cpu, arr + 2));
  CHECK_OK(olMemUnregister(cpu, pinned));
  CHECK_OK(olMemUnregister(cpu, pinned2));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemUnregister(cpu, arr)); /* all uses gone */
  /* registered memory is usable as a copy endpoint */
  unsigned char a[64], b[64];
  fill_pattern(a, 64, 1);
  memset(b, 0, 64);
  void *pa = NULL;
  CHECK_OK(olMemRegister(cpu, a, sizeof a, 0, &pa));
  CHECK_OK(olMemcpy(NULL, b, host, pa, cpu, 64));
  CHECK(memcmp(a, b, 64) == 0);
  CHECK_OK(olMemUnregister(cpu, pa));
  TEARDOWN();
}

TEST(queues_and_events_lifecycle) {
  SETUP();
  ol_queue_handle_t q = NULL;
  ol_event_handle_t ev = NULL;
  ol_device_handle_t d = NULL;
  ol_queue_handle_t evq = NULL;
  bool b = false;
  size_t sz = 0;
  REQUIRE_OK(olCreateQueue(cpu, &q));
  CHECK_OK(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d, &d));
  CHECK(d == cpu);
  CHECK_OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_DEVICE, &sz));
  CHECK(sz == 8);
  CHECK_OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_EMPTY, &sz));
  CHECK(sz == 1);
  CHECK_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof b, &b));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ENUMERATION, "olGetQueueInfo enum '2' is invalid",
                 olGetQueueInfo(q, OL_QUEUE_INFO_LAST, sizeof d, &d));
  CHECK_ERR(OL_ERRC_INVALID_SIZE, olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, 7, &d));
  REQUIRE_OK(olCreateEvent(q, &ev));
  CHECK(ev != NULL);
  CHECK_OK(olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, sizeof evq, &evq));
  CHECK(evq == q);
  CHECK_OK(olGetEventInfoSize(ev, OL_EVENT_INFO_IS_COMPLETE, &sz));
  CHECK(sz == 1);
  CHECK_OK(olSyncEvent(ev));
  CHECK_OK(olSyncEvent(ev));
  CHECK_OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof b, &b));
  CHECK(b);
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ENUMERATION, "olGetEventInfo enum '2147483647' is invalid",
                 olGetEventInfo(ev, OL_EVENT_INFO_FORCE_UINT32, sizeof b, &b));
  CHECK_OK(olWaitEvents(q, &ev, 1));
  CHECK_OK(olWaitEvents(q, &ev, 0));
  ol_event_handle_t evs[2] = {ev, NULL};
  CHECK_ERR(OL_ERRC_INVALID_NULL_HANDLE, olWaitEvents(q, evs, 2));
  /* destroyed handles: the kind's code, also for double destroy */
  CHECK_OK(olDestroyEvent(ev));
  CHECK_ERR(OL_ERRC_INVALID_EVENT, olDestroyEvent(ev));
  CHECK_ERR(OL_ERRC_INVALID_EVENT, olSyncEvent(ev));
  CHECK_ERR(OL_ERRC_INVALID_EVENT, olGetEventInfo(ev, OL_EVENT_INFO_QUEUE, sizeof evq, &evq));
  CHECK_ERR(OL_ERRC_INVALID_EVENT, olWaitEvents(q, &ev, 1));
  CHECK_OK(olDestroyQueue(q));
  CHECK_ERR(OL_ERRC_INVALID_QUEUE, olDestroyQueue(q));
  CHECK_ERR(OL_ERRC_INVALID_QUEUE, olSyncQueue(q));
  CHECK_ERR(OL_ERRC_INVALID_QUEUE, olCreateEvent(q, &ev));
  CHECK_ERR(OL_ERRC_INVALID_QUEUE, olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d, &d));
  TEARDOWN();
}

static void fib_step(void *ud) {
  uint32_t *v = (uint32_t *)ud;
  v[1] = v[0] + v[-1];
}

TEST(host_functions_run_in_queue_order) {
  SETUP();
  ol_queue_handle_t q = NULL;
  uint32_t buf[16];
  for (int i = 0; i < 16; i++) buf[i] = 1;
  REQUIRE_OK(olCreateQueue(cpu, &q));
  for (int k = 1; k < 15; k++) CHECK_OK(olLaunchHostFunction(q, fib_step, &buf[k]));
  CHECK_OK(olSyncQueue(q));
  for (int i = 2; i < 16; i++) CHECKF(buf[i] == buf[i - 1] + buf[i - 2], "buf[%d] = %u", i, buf[i]);
  CHECK_OK(olDestroyQueue(q));
  TEARDOWN();
}

TEST(program_kernel_launch_and_destroyed_handles) {
  SETUP();
  size_t n = 0;
  unsigned char *bc = harness_read_file(FFI_TESTS_PROGRAM, &n);
  if (!bc) {
    olShutDown();
    SKIP("%s not built", FFI_TESTS_PROGRAM);
  }
  bool valid = false;
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t k = NULL, k2 = NULL, g = NULL;
  CHECK_OK(olIsValidBinary(cpu, bc, n, &valid));
  CHECK(valid);
  CHECK_OK(olIsValidBinary(cpu, "garbage!", 8, &valid));
  CHECK(!valid);
  CHECK_ERR(OL_ERRC_INVALID_BINARY, olCreateProgram(cpu, "garbage!", 8, &prog));
  REQUIRE_OK(olCreateProgram(cpu, bc, n, &prog));
  free(bc);
  REQUIRE_OK(olGetSymbol(prog, "fill_ids", OL_SYMBOL_KIND_KERNEL, &k));
  CHECK_OK(olGetSymbol(prog, "fill_ids", OL_SYMBOL_KIND_KERNEL, &k2));
  CHECK(k == k2);
  CHECK_ERR(OL_ERRC_NOT_FOUND, olGetSymbol(prog, "invalid_kernel_name", OL_SYMBOL_KIND_KERNEL, &k2));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ENUMERATION, "getSymbol kind enum '2147483647' is invalid",
                 olGetSymbol(prog, "fill_ids", OL_SYMBOL_KIND_FORCE_UINT32, &k2));
  CHECK_OK(olGetSymbol(prog, "global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  ol_symbol_kind_t kind = 99;
  size_t gsize = 0;
  CHECK_OK(olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  CHECK(kind == OL_SYMBOL_KIND_KERNEL);
  CHECK_ERR_TEXT(OL_ERRC_SYMBOL_KIND,
                 "OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE: Expected a symbol of Kind OL_SYMBOL_KIND_GLOBAL_VARIABLE but "
                 "given a symbol of Kind OL_SYMBOL_KIND_KERNEL",
                 olGetSymbolInfo(k, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof gsize, &gsize));
  if (g) {
    CHECK_OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof gsize, &gsize));
    CHECK(gsize == 256);
  }
  /* launch: 2 groups of 64 */
  uint32_t *out = NULL;
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 128 * sizeof(uint32_t), (void **)&out));
  memset(out, 0xFF, 128 * sizeof(uint32_t));
  struct {
    void *out;
  } args = {out};
  ol_kernel_launch_size_args_t la = {1, {2, 1, 1}, {64, 1, 1}, 0};
  CHECK_OK(olLaunchKernel(NULL, cpu, k, &args, sizeof args, &la));
  for (int i = 0; i < 128; i++) {
    uint32_t want = (uint32_t)(i % 64 + 100 * (i / 64));
    if (out[i] != want) {
      harness_fail(__FILE__, __LINE__, "out[%d] = %u, expected %u", i, out[i], want);
      break;
    }
  }
  ol_queue_handle_t q = NULL;
  REQUIRE_OK(olCreateQueue(cpu, &q));
  memset(out, 0, 128 * sizeof(uint32_t));
  CHECK_OK(olLaunchKernel(q, cpu, k, &args, sizeof args, &la));
  CHECK_OK(olSyncQueue(q));
  CHECK(out[127] == 63 + 100);
  CHECK_ERR_TEXT(OL_ERRC_INVALID_DEVICE, "device specified does not match the device of the given queue",
                 olLaunchKernel(q, host, k, &args, sizeof args, &la));
  if (g) CHECK_ERR(OL_ERRC_SYMBOL_KIND, olLaunchKernel(q, cpu, g, NULL, 0, &la));
  CHECK_OK(olDestroyQueue(q));
  CHECK_OK(olMemFree(out));
  /* destroyed program: its handle and its symbols are stale */
  CHECK_OK(olDestroyProgram(prog));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olDestroyProgram(prog));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbol(prog, "fill_ids", OL_SYMBOL_KIND_KERNEL, &k2));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbolInfo(k, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(NULL, cpu, k, &args, sizeof args, &la));
  TEARDOWN();
}

/* 20 threads, each allocating, filling, copying back, checking and freeing 200 times at once. */
typedef struct {
  int id;
  int errors;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = (worker_t *)arg;
  int iters = small_mode() ? 20 : 200;
  for (int i = 0; i < iters; i++) {
    size_t size = 64 + (size_t)((w->id * 37 + i * 13) % 4000) * 4;
    void *p = NULL;
    uint32_t pattern = (uint32_t)(w->id << 16 | i);
    uint32_t back[4100];
    if (olMemAlloc(cpu, (ol_alloc_type_t)(i % 3), size, &p) || !p) {
      w->errors++;
      continue;
    }
    if (olMemFill(NULL, p, 4, &pattern, size)) w->errors++;
    if (olMemcpy(NULL, back, host, p, cpu, size)) w->errors++;
    for (size_t k = 0; k < size / 4; k++) {
      if (back[k] != pattern) {
        w->errors++;
        break;
      }
    }
    void *base = NULL;
    if (olGetMemInfo((char *)p + size / 2, OL_MEM_INFO_BASE, sizeof base, &base) || base != p) w->errors++;
    if (olMemFree(p)) w->errors++;
  }
  return NULL;
}

TEST(twenty_threads_alloc_fill_copy_free) {
  SETUP();
  pthread_t t[20];
  worker_t w[20];
  for (int i = 0; i < 20; i++) {
    w[i].id = i;
    w[i].errors = 0;
    pthread_create(&t[i], NULL, worker, &w[i]);
  }
  int errors = 0;
  for (int i = 0; i < 20; i++) {
    pthread_join(t[i], NULL);
    errors += w[i].errors;
  }
  CHECKF(errors == 0, "%d failed operations", errors);
  TEARDOWN();
}

TEST(alloc_many_999) {
  SETUP();
  static void *ptrs[1000];
  size_t unit = small_mode() ? 64 : 1024;
  int failed = 0;
  for (int i = 1; i < 1000; i++) {
    ptrs[i] = NULL;
    ol_alloc_type_t t = i % 3 == 1 ? OL_ALLOC_TYPE_MANAGED : i % 3 == 2 ? OL_ALLOC_TYPE_HOST : OL_ALLOC_TYPE_DEVICE;
    if (olMemAlloc(cpu, t, unit * (size_t)i, &ptrs[i]) || !ptrs[i]) failed++;
  }
  CHECKF(failed == 0, "%d of 999 allocations failed", failed);
  for (int i = 1; i < 1000; i++)
    if (ptrs[i]) CHECK_OK(olMemFree(ptrs[i]));
  TEARDOWN();
}

TEST(shutdown_frees_what_was_not_freed) {
  SETUP();
  void *p = NULL;
  ol_queue_handle_t q = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, 4096, &p));
  CHECK_OK(olCreateQueue(cpu, &q));
  TEARDOWN();
  REQUIRE_OK(olInit());
  size_t sz;
  CHECK_ERR(OL_ERRC_NOT_FOUND, olGetMemInfo(p, OL_MEM_INFO_SIZE, sizeof sz, &sz));
  CHECK_ERR(OL_ERRC_INVALID_QUEUE, olSyncQueue(q));
  CHECK_OK(olShutDown());
}

int main(void) {
  RUN(cpu_device_info);
  RUN(mem_alloc_every_type_aligned_and_writable);
  RUN(mem_alloc_sizes);
  RUN(mem_free_exact_base_only);
  RUN(mem_info_base_and_interior_pointers);
  RUN(mem_info_records_raw_type_7);
  RUN(memcpy_every_direction_synchronous);
  RUN(memcpy_on_a_queue);
  RUN(mem_fill_patterns);
  RUN(mem_register_rules);
  RUN(queues_and_events_lifecycle);
  RUN(host_functions_run_in_queue_order);
  RUN(program_kernel_launch_and_destroyed_handles);
  RUN(twenty_threads_alloc_fill_copy_free);
  RUN(alloc_many_999);
  RUN(shutdown_frees_what_was_not_freed);
  return harness_summary();
}
