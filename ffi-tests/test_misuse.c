/* API misuse a GPU driver would report, on offload-rs's CPU device (issue 12, findings 1, 2, 5, 7): each
 * must be a clear error or the correct data, never silent corruption, a crash or a hang.
 *
 *   1. olMemFree while queued work still uses the memory: the block is not handed out again before that
 *      work is done; olMemUnregister returns only after the work queued before it is done.
 *   2. olMemcpy / olMemFill ranges that start inside an allocation (every type) or a registered host
 *      range and run past its end: INVALID_SIZE naming the allocation's base and size, nothing written.
 *   5. A host function that calls olSyncQueue of its own queue, olSyncEvent / olWaitEvents on its events,
 *      olMemUnregister or olShutDown: UNSUPPORTED, never a hang; olInit/olShutDown still work.
 *   7. olMemAlloc with type 77 behaves as LLVM 22 (allocated like MANAGED, OL_MEM_INFO_TYPE says 77);
 *      more than GLOBAL_MEM_SIZE (e.g. 64 TiB) is OUT_OF_RESOURCES.
 *
 * Without a CPU device every test is skipped. FFI_TESTS_PROGRAM: see test_cpu_device.c. */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_fixture.h"

static const ol_alloc_type_t types[] = {OL_ALLOC_TYPE_HOST, OL_ALLOC_TYPE_DEVICE, OL_ALLOC_TYPE_MANAGED};

/* ---- 1. frees and unregistrations behind queued work ------------------------------------------------ */

/* The scenario: a 1 MiB copy of 'Z' into `a` queued behind a kernel on a busy queue; olMemFree(a)
 * returns at once; the next 1 MiB allocation `b` is filled with 'B'; after olSyncQueue `b` still holds
 * 'B' (before the fix b == a and b held 'Z'). Every allocation type, a few rounds. The queue is kept busy
 * by a gate (a host function) in front of the kernel; under valgrind (OFFLOAD_RS_TESTS_SMALL) the kernel is
 * left out: the JIT's forked child fails there (valgrind's leak check at its exit). */
TEST(free_behind_queued_work_is_not_reused) {
  SETUP();
  enum { N = 1 << 20 };
  bool with_kernel = getenv("OFFLOAD_RS_TESTS_SMALL") == NULL;
  size_t n = 0;
  unsigned char *bc = with_kernel ? harness_read_file(FFI_TESTS_PROGRAM, &n) : NULL;
  if (with_kernel && !bc) {
    olShutDown();
    SKIP("%s not built", FFI_TESTS_PROGRAM);
  }
  ol_program_handle_t prog = NULL;
  ol_symbol_handle_t k = NULL;
  ol_queue_handle_t q = NULL;
  uint32_t *out = NULL;
  if (with_kernel) {
    REQUIRE_OK(olCreateProgram(cpu, bc, n, &prog));
    free(bc);
    REQUIRE_OK(olGetSymbol(prog, "fill_ids", OL_SYMBOL_KIND_KERNEL, &k));
  }
  REQUIRE_OK(olCreateQueue(cpu, &q));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_MANAGED, 128 * sizeof(uint32_t), (void **)&out));
  unsigned char *z = malloc(N);
  REQUIRE(z);
  memset(z, 'Z', N);
  ol_kernel_launch_size_args_t la = {1, {2, 1, 1}, {64, 1, 1}, 0};
  struct {
    uint32_t *out;
  } args = {out};
  for (int round = 0; round < 6; round++) {
    ol_alloc_type_t t = types[round % 3];
    struct gate g = GATE_INIT;
    unsigned char *a = NULL;
    REQUIRE_OK(olMemAlloc(cpu, t, N, (void **)&a));
    CHECK_OK(olLaunchHostFunction(q, gate_wait, &g)); /* the queue is busy until the gate opens */
    if (with_kernel) CHECK_OK(olLaunchKernel(q, cpu, k, &args, sizeof args, &la));
    harness_free_behind_queued_copy(cpu, host, q, t, a, z, N, &g, NULL, round);
  }
  for (int i = 0; with_kernel && i < 128; i++)
    CHECKF(out[i] == (uint32_t)(i % 64 + 100 * (i / 64)), "out[%d] = %u", i, out[i]);
  free(z);
  CHECK_OK(olMemFree(out));
  CHECK_OK(olDestroyQueue(q));
  if (prog) CHECK_OK(olDestroyProgram(prog));
  TEARDOWN();
}

/* Freed while work is still queued, then never synchronised by the user: olShutDown finishes the work and
 * releases the block (valgrind and ASan see no leak and no invalid access). Also after olDestroyQueue. */
TEST(free_behind_queued_work_then_shutdown) {
  SETUP();
  enum { N = 64 << 10 };
  struct gate g = GATE_INIT;
  ol_queue_handle_t q = NULL;
  unsigned char *a = NULL, *z = malloc(N);
  REQUIRE(z);
  memset(z, 'Z', N);
  REQUIRE_OK(olCreateQueue(cpu, &q));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, N, (void **)&a));
  CHECK_OK(olLaunchHostFunction(q, gate_wait, &g));
  CHECK_OK(olMemcpy(q, a, cpu, z, host, N));
  CHECK_OK(olMemFree(a));
  CHECK_OK(olDestroyQueue(q));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, gate_open_later, &g) == 0);
  TEARDOWN();
  pthread_join(t, NULL);
  free(z);
}

/* olMemUnregister returns only after the work queued before it is done, so the caller may free its host
 * memory right away: a 1 MiB copy into the registered buffer queued behind a gate (opened by another thread
 * while olMemUnregister waits) has completed when it returns. */
TEST(unregister_waits_for_queued_work) {
  SETUP();
  enum { N = 1 << 20 };
  ol_queue_handle_t q = NULL;
  unsigned char *a = NULL, *h = calloc(1, N);
  REQUIRE(h);
  REQUIRE_OK(olCreateQueue(cpu, &q));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, N, (void **)&a));
  harness_unregister_waits_for_queued_copy(cpu, host, q, a, h, N);
  bool empty = false;
  CHECK_OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty));
  CHECK(empty);
  CHECK_ERR_TEXT(OL_ERRC_INVALID_ARGUMENT, "cannot find locked buffer", olMemUnregister(cpu, h));
  free(h);
  CHECK_OK(olSyncQueue(q));
  CHECK_OK(olMemFree(a));
  CHECK_OK(olDestroyQueue(q));
  TEARDOWN();
}

/* ---- 2. ranges past the end of an allocation -------------------------------------------------------- */

/* "olMemcpy destination: 65536 bytes at 0x... run past the end of the device allocation at 0x... of 64
 * bytes": the details name the allocation's base and size. */
static void expect_past_end(const char *file, int line, const char *expr, ol_result_t r, const void *base,
                            size_t size) {
  char want[128];
  snprintf(want, sizeof want, "at %p of %zu bytes", base, size);
  harness_check_err(file, line, expr, r, OL_ERRC_INVALID_SIZE, 2, want);
}
#define PAST_END(base, size, call) expect_past_end(__FILE__, __LINE__, #call, (call), (base), (size))

TEST(copies_and_fills_past_the_end_are_refused) {
  SETUP();
  enum { BIG = 1 << 20 };
  unsigned char *big = malloc(BIG), *big2 = malloc(BIG);
  REQUIRE(big && big2);
  memset(big, 'X', BIG);
  ol_queue_handle_t q = NULL;
  REQUIRE_OK(olCreateQueue(cpu, &q));
  for (size_t ti = 0; ti < 3; ti++) {
    unsigned char *d64 = NULL, *d4k = NULL;
    REQUIRE_OK(olMemAlloc(cpu, types[ti], 64, (void **)&d64));
    REQUIRE_OK(olMemAlloc(cpu, types[ti], 4096, (void **)&d4k));
    memset(d64, 7, 64);
    for (int i = 0; i < 4096; i++) d4k[i] = (unsigned char)i;
    unsigned char pat = 'F';
    uint32_t pat4 = 0xdeadbeef;
    /* the cases: 64 KiB into 64 bytes, a queued 1 MiB into 4 KiB, a 1 MiB fill into 64 bytes,
     * d+4000 <- d of 1000 bytes inside 4096 */
    PAST_END(d64, 64, olMemcpy(NULL, d64, cpu, big, host, 64 << 10));
    PAST_END(d4k, 4096, olMemcpy(q, d4k, cpu, big, host, BIG));
    PAST_END(d64, 64, olMemFill(q, d64, 1, &pat, BIG));
    PAST_END(d64, 64, olMemFill(NULL, d64, 1, &pat, BIG));
    PAST_END(d4k, 4096, olMemcpy(NULL, d4k + 4000, cpu, d4k, cpu, 1000));
    /* the source side, an interior start, one byte too many, a size that wraps the address space */
    PAST_END(d64, 64, olMemcpy(NULL, big2, host, d64, cpu, 64 << 10));
    PAST_END(d4k, 4096, olMemcpy(q, d64, cpu, d4k + 4090, cpu, 64));
    PAST_END(d4k, 4096, olMemcpy(NULL, big2, host, d4k, cpu, 4097));
    PAST_END(d4k, 4096, olMemFill(q, d4k + 4092, 4, &pat4, 8));
    PAST_END(d4k, 4096, olMemcpy(NULL, big2, host, d4k + 8, cpu, SIZE_MAX - 4));
    CHECK_OK(olSyncQueue(q)); /* nothing was enqueued, the queue is fine */
    CHECK(harness_all_bytes(d64, 7, 64));
    bool intact = true;
    for (int i = 0; i < 4096; i++) intact &= d4k[i] == (unsigned char)i;
    CHECKF(intact, "a refused copy or fill wrote into the allocation");
    /* ranges that end exactly at the end are fine */
    CHECK_OK(olMemcpy(NULL, d4k + 3096, cpu, d4k, cpu, 1000));
    CHECK(d4k[3096] == 0 && d4k[4095] == (unsigned char)999);
    CHECK_OK(olMemFill(q, d64, 4, &pat4, 64));
    CHECK_OK(olMemcpy(q, big2, host, d4k, cpu, 4096));
    CHECK_OK(olSyncQueue(q));
    CHECK(((uint32_t *)d64)[15] == 0xdeadbeef);
    CHECK_OK(olMemFree(d64));
    CHECK_OK(olMemFree(d4k));
  }
  /* a registered host range: a copy out of it must end inside it too */
  unsigned char *dev = NULL;
  void *pinned = NULL;
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, 16384, (void **)&dev));
  REQUIRE_OK(olMemRegister(cpu, big, 4096, 0, &pinned));
  harness_check_err(__FILE__, __LINE__, "copy 8192 out of a registered range of 4096",
                    olMemcpy(NULL, dev, cpu, pinned, host, 8192), OL_ERRC_INVALID_SIZE, 2,
                    "past the end of the registered host range");
  CHECK_OK(olMemcpy(NULL, dev, cpu, (char *)pinned + 96, host, 4000));
  CHECK_OK(olMemUnregister(cpu, big));
  /* memory in no known allocation stays the caller's business, as in LLVM */
  CHECK_OK(olMemcpy(NULL, dev, cpu, big, host, 8192));
  CHECK_OK(olMemcpy(NULL, big2, host, big, host, BIG));
  CHECK(harness_all_bytes(big2, 'X', BIG) && harness_all_bytes(dev, 'X', 8192));
  CHECK_OK(olMemFree(dev));
  CHECK_OK(olDestroyQueue(q));
  free(big);
  free(big2);
  TEARDOWN();
}

/* ---- 5. host functions that call back -------------------------------------------------------------- */

struct callback_results {
  ol_queue_handle_t q, other;
  ol_event_handle_t before, after;
  void *registered;
  ol_result_t sync_own, sync_event_after, sync_event_before, wait_after, unregister, shutdown, sync_other;
  ol_result_t alloc, free_;
};

static void calls_back(void *p) {
  struct callback_results *r = p;
  r->sync_own = olSyncQueue(r->q);
  r->sync_event_after = olSyncEvent(r->after);
  r->sync_event_before = olSyncEvent(r->before);
  r->wait_after = olWaitEvents(r->other, &r->after, 1);
  r->unregister = olMemUnregister(cpu, r->registered);
  r->shutdown = olShutDown();
  r->sync_other = olSyncQueue(r->other);
  void *m = NULL;
  r->alloc = olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, 64, &m);
  r->free_ = m ? olMemFree(m) : NULL;
}

static void *init_and_shut_down(void *p) {
  ol_result_t *r = p;
  r[0] = olInit();
  r[1] = olShutDown();
  return NULL;
}

static void expect_refused(const char *file, int line, const char *what, ol_result_t r) {
  harness_check_err(file, line, what, r, OL_ERRC_UNSUPPORTED, 2, "called from a host function");
}
#define REFUSED(r) expect_refused(__FILE__, __LINE__, #r, (r))

TEST(host_function_calling_back_gets_errors_not_hangs) {
  SETUP();
  struct gate g = GATE_INIT;
  struct callback_results r;
  memset(&r, 0, sizeof r);
  unsigned char reg[256];
  void *pinned = NULL;
  REQUIRE_OK(olCreateQueue(cpu, &r.q));
  REQUIRE_OK(olCreateQueue(cpu, &r.other));
  REQUIRE_OK(olMemRegister(cpu, reg, sizeof reg, 0, &pinned));
  r.registered = reg;
  CHECK_OK(olLaunchHostFunction(r.q, gate_wait, &g));
  REQUIRE_OK(olCreateEvent(r.q, &r.before)); /* complete by the time calls_back runs */
  CHECK_OK(olLaunchHostFunction(r.q, calls_back, &r));
  REQUIRE_OK(olCreateEvent(r.q, &r.after)); /* after calls_back: waiting for it there would hang */
  gate_open(&g);
  CHECK_OK(olSyncQueue(r.q));
  REFUSED(r.sync_own);
  REFUSED(r.sync_event_after);
  REFUSED(r.sync_event_before); /* complete, but an event of the same queue all the same */
  REFUSED(r.wait_after);
  REFUSED(r.unregister);
  REFUSED(r.shutdown);
  CHECK_OK(r.sync_other);
  CHECK_OK(r.alloc);
  CHECK_OK(r.free_);
  /* the library is intact: the refused olShutDown did not drop a reference, init/shutdown from another
   * thread work, and so does everything the callback was refused */
  ol_result_t tr[2] = {NULL, NULL};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, init_and_shut_down, tr) == 0);
  pthread_join(t, NULL);
  CHECK_OK(tr[0]);
  CHECK_OK(tr[1]);
  CHECK_OK(olSyncEvent(r.after));
  CHECK_OK(olWaitEvents(r.other, &r.after, 1));
  CHECK_OK(olSyncQueue(r.other));
  CHECK_OK(olMemUnregister(cpu, reg));
  CHECK_OK(olDestroyEvent(r.before));
  CHECK_OK(olDestroyEvent(r.after));
  CHECK_OK(olDestroyQueue(r.q));
  CHECK_OK(olDestroyQueue(r.other));
  TEARDOWN();
  /* and after the last olShutDown, a new olInit from another thread */
  REQUIRE(pthread_create(&t, NULL, init_and_shut_down, tr) == 0);
  pthread_join(t, NULL);
  CHECK_OK(tr[0]);
  CHECK_OK(tr[1]);
}

/* The same through another queue: q2 is made (from the main thread) to wait for an event of q1 recorded
 * after the host function; the host function then syncs q2 or an event of q2: UNSUPPORTED, not a hang.
 * Once with q2's thread already waiting, once with the wait still queued behind a gate on q2. */
struct through_other {
  ol_queue_handle_t other;
  ol_event_handle_t other_after;
  ol_result_t sync_other, sync_other_event;
};
static void syncs_other(void *p) {
  struct through_other *c = p;
  c->sync_other = olSyncQueue(c->other);
  c->sync_other_event = olSyncEvent(c->other_after);
}

TEST(host_function_waiting_for_itself_through_another_queue_gets_an_error) {
  SETUP();
  for (int gated = 0; gated < 2; gated++) {
    struct gate g1 = GATE_INIT, g2 = GATE_INIT;
    struct through_other c;
    memset(&c, 0, sizeof c);
    ol_queue_handle_t q1 = NULL;
    ol_event_handle_t ev1 = NULL;
    REQUIRE_OK(olCreateQueue(cpu, &q1));
    REQUIRE_OK(olCreateQueue(cpu, &c.other));
    CHECK_OK(olLaunchHostFunction(q1, gate_wait, &g1));
    CHECK_OK(olLaunchHostFunction(q1, syncs_other, &c));
    REQUIRE_OK(olCreateEvent(q1, &ev1));
    if (gated) CHECK_OK(olLaunchHostFunction(c.other, gate_wait, &g2));
    CHECK_OK(olWaitEvents(c.other, &ev1, 1));
    REQUIRE_OK(olCreateEvent(c.other, &c.other_after));
    gate_open(&g1);
    CHECK_OK(olSyncQueue(q1));
    harness_check_err(__FILE__, __LINE__, "olSyncQueue(other)", c.sync_other, OL_ERRC_UNSUPPORTED, 2,
                      "called from a host function");
    harness_check_err(__FILE__, __LINE__, "olSyncEvent(other_after)", c.sync_other_event, OL_ERRC_UNSUPPORTED, 2,
                      "called from a host function");
    gate_open(&g2);
    CHECK_OK(olSyncQueue(c.other));
    CHECK_OK(olDestroyEvent(ev1));
    CHECK_OK(olDestroyEvent(c.other_after));
    CHECK_OK(olDestroyQueue(q1));
    CHECK_OK(olDestroyQueue(c.other));
  }
  TEARDOWN();
}

/* ---- 7. allocation arguments ------------------------------------------------------------------------- */

/* LLVM 22 does not validate the type: values outside the enum are allocated like MANAGED and
 * OL_MEM_INFO_TYPE reports the raw value. We do the same (a drop-in must accept what LLVM accepts). */
TEST(alloc_type_77_is_allocated_like_managed_as_in_llvm22) {
  SETUP();
  unsigned char *p = NULL;
  uint32_t type = 0;
  REQUIRE_OK(olMemAlloc(cpu, (ol_alloc_type_t)77, 4096, (void **)&p));
  CHECK_OK(olGetMemInfo(p + 100, OL_MEM_INFO_TYPE, sizeof type, &type));
  CHECK(type == 77);
  memset(p, 3, 4096); /* host-accessible like MANAGED memory */
  unsigned char pat = 9;
  CHECK_OK(olMemFill(NULL, p, 1, &pat, 4096));
  CHECK(harness_all_bytes(p, 9, 4096));
  CHECK_OK(olMemFree(p));
  TEARDOWN();
}

TEST(alloc_larger_than_global_mem_is_out_of_resources) {
  SETUP();
  uint64_t global = 0;
  CHECK_OK(olGetDeviceInfo(cpu, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof global, &global));
  for (size_t ti = 0; ti < 4; ti++) {
    ol_alloc_type_t t = ti < 3 ? types[ti] : (ol_alloc_type_t)77;
    void *p = (void *)0x1;
    CHECK_ERR_HAS(OL_ERRC_OUT_OF_RESOURCES, "GLOBAL_MEM_SIZE", olMemAlloc(cpu, t, (size_t)64 << 40, &p));
    CHECK(p == (void *)0x1); /* nothing written */
    CHECK_ERR_HAS(OL_ERRC_OUT_OF_RESOURCES, "GLOBAL_MEM_SIZE", olMemAlloc(cpu, t, (size_t)global + 1, &p));
    CHECK_ERR(OL_ERRC_OUT_OF_RESOURCES, olMemAlloc(cpu, t, SIZE_MAX, &p));
  }
  void *p = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, 64, &p)); /* still usable */
  CHECK_OK(olMemFree(p));
  TEARDOWN();
}

/* The last olShutDown called from a host function while another thread is in olSyncQueue of that queue
 * (the host function waits until the syncing thread has had time to enter the sync): refused like every
 * olShutDown from a host function, never a hang or a deadlock; the sync returns, and the library is
 * intact (the main thread's own olShutDown, the last, then works). A watchdog fails instead of hanging. */
struct shutdown_in_host_fn {
  struct gate *g;
  ol_result_t shutdown;
};
static void shuts_down_after_gate(void *p) {
  struct shutdown_in_host_fn *s = p;
  gate_wait(s->g);
  usleep(20000); /* let the main thread get into olSyncQueue */
  s->shutdown = olShutDown();
}

TEST(last_shutdown_from_host_function_while_another_thread_syncs) {
  SETUP();
  struct gate g = GATE_INIT;
  struct shutdown_in_host_fn s = {&g, NULL};
  ol_queue_handle_t q = NULL;
  REQUIRE_OK(olCreateQueue(cpu, &q));
  CHECK_OK(olLaunchHostFunction(q, shuts_down_after_gate, &s));
  alarm(120); /* a hang fails the test instead of blocking CI */
  gate_open(&g);
  CHECK_OK(olSyncQueue(q));
  alarm(0);
  REFUSED(s.shutdown);
  /* the refused olShutDown dropped no reference: the queue still works */
  void *m = NULL;
  CHECK_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, 64, &m));
  CHECK_OK(olMemFree(m));
  CHECK_OK(olDestroyQueue(q));
  TEARDOWN();
}


/* ---- issue 22: a CUDA habit ------------------------------------------------------------------------------ */

/* A host-to-device copy from pageable memory (a std::vector, malloc) behind a busy queue, the source
 * overwritten and freed right after olMemcpy returns, as UR's conformance tests do: CUDA takes the data
 * before cuMemcpyHtoDAsync returns, and so do we (valgrind: no read of freed memory). Also on an idle
 * queue, and from memory we allocated (queued as is: the caller keeps it until the copy has run). */
TEST(queued_copy_from_pageable_memory_takes_the_data_before_returning) {
  SETUP();
  enum { N = 256 << 10 };
  ol_queue_handle_t q = NULL;
  unsigned char *dev = NULL;
  REQUIRE_OK(olCreateQueue(cpu, &q));
  REQUIRE_OK(olMemAlloc(cpu, OL_ALLOC_TYPE_DEVICE, N, (void **)&dev));
  for (int busy = 0; busy < 2; busy++) {
    struct gate g = GATE_INIT;
    if (busy)
      CHECK_OK(olLaunchHostFunction(q, gate_wait, &g));
    unsigned char *src = malloc(N);
    REQUIRE(src);
    memset(src, 'A' + busy, N);
    CHECK_OK(olMemcpy(q, dev, cpu, src, host, N));
    memset(src, 'x', N); /* the client reuses its vector ... */
    free(src);           /* ... and frees it */
    if (busy)
      gate_open(&g);
    CHECK_OK(olSyncQueue(q));
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += dev[i] != 'A' + busy;
    CHECKF(bad == 0, "%s queue: %d of %d bytes are not what the source held at olMemcpy", busy ? "busy" : "idle",
           bad, N);
  }
  CHECK_OK(olMemFree(dev));
  CHECK_OK(olDestroyQueue(q));
  TEARDOWN();
}

/* ---- issue 22: memory in a cgroup ----------------------------------------------------------------------- */

/* Where this test can make a cgroup with its own memory limit: v1's memory hierarchy (this process's own
 * group; *v2 = false), or else v2's (*v2 = true): the parent of this process's group, whose children get the
 * memory controller when this group has it (a child of this group would not: v2 lets a group with processes
 * in it give controllers to its children only at the root), or the root group when this process is in it.
 * From /proc/self/cgroup and /proc/self/mountinfo; false when neither exists or v2's group has no memory
 * controller. */
static bool memcg_parent_dir(char *out, size_t n, bool *v2) {
  char line[1024], v1path[512] = "", v2path[512] = "", v1mnt[512] = "", v2mnt[512] = "";
  FILE *f = fopen("/proc/self/cgroup", "r");
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *c = strchr(line, ':'), *p = c ? strchr(c + 1, ':') : NULL;
    if (p && strncmp(c + 1, "memory:", 7) == 0)
      snprintf(v1path, sizeof v1path, "%s", p + 1);
    if (p && strncmp(line, "0::", 3) == 0)
      snprintf(v2path, sizeof v2path, "%s", p + 1);
  }
  if (f)
    fclose(f);
  f = fopen("/proc/self/mountinfo", "r");
  while (f && fgets(line, sizeof line, f)) {
    char root[512], point[512];
    if (sscanf(line, "%*s %*s %*s %511s %511s", root, point) != 2 || strcmp(root, "/") != 0)
      continue;
    char *dash = strstr(line, " - cgroup ");
    if (dash && strstr(dash, "memory"))
      snprintf(v1mnt, sizeof v1mnt, "%s", point);
    if (strstr(line, " - cgroup2 "))
      snprintf(v2mnt, sizeof v2mnt, "%s", point);
  }
  if (f)
    fclose(f);
  if (v1path[0] && v1mnt[0]) {
    *v2 = false;
    snprintf(out, n, "%s%s", v1mnt, v1path);
    return true;
  }
  if (!v2path[0] || !v2mnt[0])
    return false;
  char own[1100], ctl[1200], have[256] = "";
  snprintf(own, sizeof own, "%s%s", v2mnt, strcmp(v2path, "/") == 0 ? "" : v2path);
  snprintf(ctl, sizeof ctl, "%s/cgroup.controllers", own);
  f = fopen(ctl, "r");
  bool mem = f && fgets(have, sizeof have, f) && strstr(have, "memory");
  if (f)
    fclose(f);
  if (!mem)
    return false;
  if (strcmp(v2path, "/") != 0)
    *strrchr(own, '/') = 0; /* the parent */
  *v2 = true;
  snprintf(out, n, "%s", own[0] ? own : "/");
  return true;
}

static bool write_file(const char *dir, const char *name, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f)
    return false;
  bool ok = fputs(text, f) >= 0;
  return (fclose(f) == 0) && ok;
}

enum { MIB = 1 << 20 };
static volatile int g_gate_open;
static void gate_fn(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&g_gate_open, __ATOMIC_ACQUIRE))
    usleep(1000);
}
static void *open_gate_later(void *arg) {
  (void)arg;
  usleep(300 * 1000);
  __atomic_store_n(&g_gate_open, 1, __ATOMIC_RELEASE);
  return NULL;
}
static int g_hostfn_rc = -1;
static void alloc_free_in_host_fn(void *arg) {
  ol_device_handle_t dev = arg;
  g_hostfn_rc = 0;
  for (int i = 0; i < 12; i++) {
    void *m = NULL;
    ol_result_t r = olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, 300 * MIB, &m);
    if (r) {
      g_hostfn_rc = r->Code == OL_ERRC_OUT_OF_RESOURCES ? 1 : 2; /* 1: the bound, as an error */
      return;
    }
    memset(m, i, 300 * MIB);
    olMemFree(m);
  }
}

/* In the 1.5 GiB cgroup, never more than 700 MiB live: GLOBAL_MEM_SIZE is the limit; blocks of many sizes
 * freed (the reuse cache), frees behind a busy queue (deferral), alloc/free in a host function. */
static int cgroup_child(void) {
  if (olInit())
    return 10;
  ol_device_handle_t dev = harness_find_backend(HARNESS_BACKEND_CPU);
  if (!dev)
    return 11;
  uint64_t mem = 0;
  if (olGetDeviceInfo(dev, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem) || mem > 1536ull * MIB) {
    fprintf(stderr, "GLOBAL_MEM_SIZE %llu in a 1.5 GiB cgroup\n", (unsigned long long)mem);
    return 12;
  }
  /* the reuse cache: freed blocks of other sizes */
  for (size_t s = 100; s <= 700; s += 40) {
    void *m = NULL;
    if (olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, s * MIB, &m))
      return 13;
    memset(m, 1, s * MIB);
    olMemFree(m);
  }
  /* frees behind a busy queue */
  ol_queue_handle_t q = NULL;
  if (olCreateQueue(dev, &q) || olLaunchHostFunction(q, gate_fn, NULL))
    return 14;
  pthread_t t;
  pthread_create(&t, NULL, open_gate_later, NULL);
  for (int i = 0; i < 12; i++) {
    void *m = NULL;
    if (olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, 300 * MIB, &m))
      return 15;
    memset(m, 2, 300 * MIB);
    olMemFree(m);
  }
  pthread_join(t, NULL);
  /* alloc/free inside a host function (its own queue stays busy while it runs) */
  if (olLaunchHostFunction(q, alloc_free_in_host_fn, dev) || olSyncQueue(q))
    return 16;
  if (g_hostfn_rc == 2)
    return 17;
  olDestroyQueue(q);
  return olShutDown() ? 18 : 0;
}

TEST(memory_cgroup_job_with_half_its_limit_live_is_not_oom_killed) {
  if (getenv("OFFLOAD_RS_TESTS_SMALL"))
    SKIP("gigabytes of memset under valgrind");
  char dir[1024], cg[1100], self[1024];
  bool v2 = false;
  if (geteuid() != 0 || !memcg_parent_dir(dir, sizeof dir, &v2))
    SKIP("cannot create a memory cgroup (needs root and a memory controller, cgroup v1 or v2)");
  snprintf(cg, sizeof cg, "%s/offload-rs-test-%d", dir, (int)getpid());
  if (mkdir(cg, 0700) != 0 || !write_file(cg, v2 ? "memory.max" : "memory.limit_in_bytes", "1610612736")) {
    rmdir(cg);
    SKIP("cannot create a memory cgroup (v%d) at %s", v2 ? 2 : 1, cg);
  }
  /* no swapping out of it, where swap is accounted */
  if (v2)
    write_file(cg, "memory.swap.max", "0");
  else
    write_file(cg, "memory.memsw.limit_in_bytes", "1610612736");
  printf("  a 1.5 GiB memory cgroup (v%d): %s\n", v2 ? 2 : 1, cg);
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(k > 0);
  self[k > 0 ? k : 0] = 0;
  char procs[1200], ld[2048];
  snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
  snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
  pid_t pid = fork();
  if (pid == 0) {
    /* only async-signal-safe calls between fork and exec */
    int fd = open(procs, O_WRONLY);
    if (fd < 0 || write(fd, "0", 1) != 1) /* "0": the writing process */
      _exit(40);
    close(fd);
    char *argv[] = {self, NULL}, *envp[] = {"MISUSE_CGROUP_CHILD=1", ld, NULL};
    execve(self, argv, envp);
    _exit(41);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  rmdir(cg);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the job in a 1.5 GiB memory cgroup %s %d",
         WIFSIGNALED(st) ? "was killed by signal" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

int main(void) {
  if (getenv("MISUSE_CGROUP_CHILD"))
    return cgroup_child();
  RUN(free_behind_queued_work_is_not_reused);
  RUN(free_behind_queued_work_then_shutdown);
  RUN(unregister_waits_for_queued_work);
  RUN(copies_and_fills_past_the_end_are_refused);
  RUN(host_function_calling_back_gets_errors_not_hangs);
  RUN(host_function_waiting_for_itself_through_another_queue_gets_an_error);
  RUN(alloc_type_77_is_allocated_like_managed_as_in_llvm22);
  RUN(alloc_larger_than_global_mem_is_out_of_resources);
  RUN(last_shutdown_from_host_function_while_another_thread_syncs);
  RUN(queued_copy_from_pageable_memory_takes_the_data_before_returning);
  RUN(memory_cgroup_job_with_half_its_limit_live_is_not_oom_killed);
  return harness_summary();
}
