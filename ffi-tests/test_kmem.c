// Kernel memory on the CPU device (issue 12, findings 3 and 4, and the kernel memory checker), as a client
// sees it:
// * kernel code never runs on the caller's stack: a 1 MiB private array works when olSyncQueue (or a
//   synchronous launch) comes from a thread with a 512 KiB stack; more private memory than a kernel
//   thread's stack is OUT_OF_RESOURCES at launch, naming the kernel and both sizes;
// * shared memory is followed by guard pages: touching 4 KiB of dynamic shared memory launched with
//   DynSharedMemory = 64 faults (SIGSEGV, in a child process) or is an error, never silent corruption;
// * OFFLOAD_RS_MEMCHECK=1 (read at olInit; this program re-initialises with it set): an out-of-bounds
//   global store, static and dynamic shared-memory overruns (stores, and atomics, which the CPU device
//   makes plain code on shared memory) and a store to freed device memory are each
//   returned at the next sync naming the kernel, work-group, work-item, address, size and nearest
//   allocation; a program constructor writing past its global fails olCreateProgram with the checker's
//   report (a destructor's, olDestroyProgram); a store to memory freed while the kernel was still queued is a use after free; the library
//   stays usable and correct kernels report nothing.
// Device code: ffi-tests/device/kmem.c.
#include "ol_test.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static ol_program_handle_t progs[2], private_prog; // kmem.{nvptx64,amdgcn}, kmem_private.nvptx64
static ol_queue_handle_t queue;

static ol_symbol_handle_t kern(int t, const char *name) { return t_kernel(t < 0 ? private_prog : progs[t], name); }

static ol_kernel_launch_size_args_t grid1(uint32_t groups, uint32_t wg, size_t dyn) {
  ol_kernel_launch_size_args_t a = {1, {groups, 1, 1}, {wg, 1, 1}, dyn};
  return a;
}

static void setup(void) {
  t_init();
  if (!t_cpu)
    return;
  for (int t = 0; t < 2; t++)
    progs[t] = t_create(t_cpu, "kmem", t_targets[t]);
  private_prog = t_create(t_cpu, "kmem_private", "nvptx64");
  OK(olCreateQueue(t_cpu, &queue));
}

static void teardown(void) {
  if (!t_cpu)
    return;
  OK(olDestroyQueue(queue));
  for (int t = 0; t < 2; t++)
    OK(olDestroyProgram(progs[t]));
  OK(olDestroyProgram(private_prog));
  OK(olShutDown());
}

// ---- finding 3: private memory -----------------------------------------------------------------------

static uint32_t expected_1m(void) {
  uint32_t s = 0;
  for (uint32_t i = 0; i < (1u << 20); i += 4096)
    s += (uint8_t)(i >> 12);
  return s;
}

static void *small_stack_body(void *arg) {
  int *bad = arg;
  {
    int t = -1;
    uint32_t *out = t_dalloc(4 * 4);
    void *args = out;
    ol_kernel_launch_size_args_t la = grid1(4, 1, 0);
    for (int rep = 0; rep < 4; rep++) {
      out[0] = out[3] = 0;
      if (olLaunchKernel(queue, t_cpu, kern(t, "private_1m"), &args, sizeof args, &la) || olSyncQueue(queue))
        (*bad)++;
      *bad += out[0] != expected_1m() || out[3] != expected_1m();
    }
    // a launch without a queue runs before olLaunchKernel returns
    out[0] = 0;
    if (olLaunchKernel(NULL, t_cpu, kern(t, "private_1m"), &args, sizeof args, &la))
      (*bad)++;
    *bad += out[0] != expected_1m();
    OK(olMemFree(out));
  }
  return NULL;
}

static void run_on_small_stack(void *(*body)(void *), int *bad) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 512 << 10);
  pthread_t th;
  REQUIRE(pthread_create(&th, &a, body, bad) == 0);
  pthread_join(th, NULL);
  pthread_attr_destroy(&a);
}

static void private_1m_synced_from_a_512k_thread(void) {
  NEED_CPU();
  int bad = 0;
  run_on_small_stack(small_stack_body, &bad);
  CHECK(bad == 0);
}

static void private_17m_is_out_of_resources(void) {
  NEED_CPU();
  {
    int t = -1;
    uint32_t *out = t_dalloc(4);
    struct {
      uint32_t *out;
      uint32_t i;
    } args = {out, 5};
    ol_kernel_launch_size_args_t la = grid1(1, 1, 0);
    ol_result_t r = olLaunchKernel(queue, t_cpu, kern(t, "private_17m"), &args, sizeof args, &la);
    CHECKF(r && r->Code == OL_ERRC_OUT_OF_RESOURCES, "got %s", r ? r->Details : "success");
    if (r) {
      CHECKF(strstr(r->Details, "private_17m") && strstr(r->Details, "bytes of stack"), "%s", r->Details);
      CHECKF(strstr(r->Details, "16515072"), "the available size: %s", r->Details);
    }
    OK(olSyncQueue(queue));
    OK(olMemFree(out));
  }
}

// ---- finding 4: guard pages (child process: a fault ends it) ------------------------------------------

// 0: the overrun went unnoticed (the failure); 3: an error was returned; killed by a signal: it faulted.
static int dyn_overrun_child(void) {
  setup();
  if (!t_cpu)
    return 4;
  uint32_t *out = t_dalloc(64);
  struct {
    uint32_t n;
    uint32_t *out;
  } args = {4096, out};
  ol_kernel_launch_size_args_t la = grid1(2, 32, 64);
  ol_result_t r = olLaunchKernel(queue, t_cpu, kern(0, "dyn_touch"), &args, sizeof args, &la);
  if (!r)
    r = olSyncQueue(queue);
  if (r) {
    printf("     the overrun was an error: %s\n", r->Details);
    return 3;
  }
  return 0;
}

static void dyn_shared_overrun_faults_or_errors(void) {
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0)
    _exit(dyn_overrun_child());
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
    SKIP("no CPU device");
  if (WIFSIGNALED(st))
    printf("     the overrun faulted (signal %d), as documented\n", WTERMSIG(st));
  else if (WIFEXITED(st) && WEXITSTATUS(st) != 3)
    printf("     the overrun faulted (the sanitizer report above, exit status %d), as documented\n", WEXITSTATUS(st));
  // a sanitizer runtime in this test program turns the fault into its own report and exit status
  CHECKF(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0), "the overrun went unnoticed (status %#x)", st);
}

// ---- the memory checker ---------------------------------------------------------------------------------

static void expect_report(ol_result_t r, const char *kernel, const char *where, const char *what, const char *near) {
  CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE, "got %s", r ? r->Details : "success");
  if (!r)
    return;
  CHECKF(strstr(r->Details, "memcheck:") && strstr(r->Details, kernel), "%s", r->Details);
  CHECKF(strstr(r->Details, where), "want '%s' in: %s", where, r->Details);
  CHECKF(strstr(r->Details, what), "want '%s' in: %s", what, r->Details);
  CHECKF(strstr(r->Details, near), "want '%s' in: %s", near, r->Details);
  printf("     %s\n", r->Details);
}

// Launches kernel `name` of target t (kern's numbering) on the shared queue and returns the sync's result.
static ol_result_t launch_sync(int t, const char *name, const void *args, size_t size, ol_kernel_launch_size_args_t la) {
  OK(olLaunchKernel(queue, t_cpu, kern(t, name), args, size, &la));
  return olSyncQueue(queue);
}

// Launches store_at ({p, n, which}: the work-item with global id `which` stores 7 at p[n]) on `groups` groups
// of `wg` and returns the sync's result.
static ol_result_t store_at(int t, uint32_t *p, uint32_t n, uint32_t which, uint32_t groups, uint32_t wg) {
  struct {
    uint32_t *p;
    uint32_t n, which;
  } args = {p, n, which};
  return launch_sync(t, "store_at", &args, sizeof args, grid1(groups, wg, 0));
}

// Launches kernel `name` ({out, idx}) on 2 groups of 64 and returns the sync's result.
static ol_result_t launch_out_idx(int t, const char *name, uint32_t *out, uint32_t idx) {
  struct {
    uint32_t *out;
    uint32_t idx;
  } args = {out, idx};
  return launch_sync(t, name, &args, sizeof args, grid1(2, 64, 0));
}

// Launches dyn_touch ({n, out}: touches n bytes of 64 bytes of dynamic shared memory) on 2 groups of 32.
static ol_result_t dyn_touch(int t, uint32_t n, uint32_t *out) {
  struct {
    uint32_t n;
    uint32_t *out;
  } args = {n, out};
  return launch_sync(t, "dyn_touch", &args, sizeof args, grid1(2, 32, 64));
}

static void memcheck_oob_global_store(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t *p = t_dalloc(64);
    char near[128];
    snprintf(near, sizeof near, "nearest allocation: 64 bytes of CPU device memory at %p", (void *)p);
    char addr[64];
    snprintf(addr, sizeof addr, "4-byte write at %p", (void *)(p + 16));
    expect_report(store_at(t, p, 16, 37, 3, 32), "'store_at'", "work-group (1, 0, 0), work-item (5, 0, 0)", addr,
                  near);
    // the library goes on: an in-bounds launch succeeds
    OK(store_at(t, p, 3, 37, 3, 32));
    CHECK(p[3] == 7);
    OK(olMemFree(p));
  }
}

static void memcheck_static_shared_overrun(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t *out = t_dalloc(64 * 4);
    expect_report(launch_out_idx(t, "static_overrun", out, 16), "'static_overrun'", "work-item (0, 0, 0)",
                  "4-byte write at", "64 bytes of static shared memory");
    OK(launch_out_idx(t, "static_overrun", out, 15));
    CHECK(out[15] == 1 && out[3] == 3);
    OK(olMemFree(out));
  }
}

// A shared-memory atomic (made plain code by the CPU device) past the end is reported as one.
static void memcheck_static_shared_atomic_overrun(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t *out = t_dalloc(64 * 4);
    expect_report(launch_out_idx(t, "static_atomic_overrun", out, 16), "'static_atomic_overrun'",
                  "work-item (0, 0, 0)", "4-byte atomic access at", "64 bytes of static shared memory");
    OK(launch_out_idx(t, "static_atomic_overrun", out, 3));
    // word w gets w + (w + 16) + (w + 32) + (w + 48), word 3 another 100
    CHECK(out[0] == 96 && out[3] == 108 + 100 && out[15] == 156);
    OK(olMemFree(out));
  }
}

static void memcheck_dyn_shared_overrun(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t *out = t_dalloc(64);
    expect_report(dyn_touch(t, 4096, out), "'dyn_touch'", "work-item (0, 0, 0)", "byte write at",
                  "64 bytes of dynamic shared memory");
    OK(dyn_touch(t, 64, out));
    CHECK(out[0] == 63 && out[1] == 63);
    OK(olMemFree(out));
  }
}

static void memcheck_store_to_freed_memory(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t size = 1 << 20;
    uint32_t *p = t_dalloc(size);
    OK(olMemFree(p));
    char freed[160];
    snprintf(freed, sizeof freed, "inside %zu bytes of CPU device memory at %p that were freed", size, (void *)p);
    expect_report(store_at(t, p, 100, 0, 1, 1), "'store_at'", "work-group (0, 0, 0), work-item (0, 0, 0)", "4-byte write",
                  freed);
  }
}

static void memcheck_private_memory_is_allowed(void) {
  NEED_CPU();
  int bad = 0;
  run_on_small_stack(small_stack_body, &bad);
  CHECK(bad == 0);
}

// A constructor writing far past its global (device/ctor_oob.c): the load fails with the checker's report
// (without the checker it faults, as on a GPU); the library goes on.
static void memcheck_constructor_oob_write_fails_the_load(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t n;
    void *img = t_load("ctor_oob", t_targets[t], &n);
    ol_program_handle_t p = NULL;
    ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
    free(img);
    CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE, "got %s", r ? r->Details : "success");
    CHECK(p == NULL);
    if (r) {
      CHECKF(strstr(r->Details, "memcheck: the program's constructors: invalid 4-byte write at"), "%s", r->Details);
      CHECKF(strstr(r->Details, "the program's globals"), "%s", r->Details);
      printf("     %s\n", r->Details);
    }
    uint32_t *out = t_dalloc(64 * 4);
    OK(launch_out_idx(t, "static_overrun", out, 15));
    CHECK(out[15] == 1 && out[3] == 3);
    OK(olMemFree(out));
  }
}

// A kernel queued behind a host function, its buffer freed before it runs (olMemFree defers the release
// behind the queued work): its store is a use after free, reported at the sync; the free itself works.
static void memcheck_store_to_memory_freed_behind_queued_work(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t size = 1 << 20;
    uint32_t *p = t_dalloc(size);
    struct gate g = GATE_INIT;
    OK(olLaunchHostFunction(queue, gate_wait, &g));
    struct {
      uint32_t *p;
      uint32_t n, which;
    } args = {p, 100, 0};
    ol_kernel_launch_size_args_t la = grid1(1, 1, 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "store_at"), &args, sizeof args, &la));
    OK(olMemFree(p));
    gate_open(&g);
    char freed[160];
    snprintf(freed, sizeof freed, "inside %zu bytes of CPU device memory at %p that were freed", size, (void *)p);
    expect_report(olSyncQueue(queue), "'store_at'", "work-group (0, 0, 0), work-item (0, 0, 0)", "4-byte write",
                  freed);
    // the library goes on: a new allocation and an in-bounds store
    uint32_t *q = t_dalloc(64);
    args.p = q;
    args.n = 3;
    OK(olLaunchKernel(queue, t_cpu, kern(t, "store_at"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    CHECK(q[3] == 7);
    OK(olMemFree(q));
  }
}

// A destructor writing far past its global (device/dtor_oob.c, its bound set before the destroy):
// olDestroyProgram returns the checker's report; the program is destroyed all the same.
static void memcheck_destructor_oob_write_fails_the_destroy(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t n;
    void *img = t_load("dtor_oob", t_targets[t], &n);
    ol_program_handle_t p = NULL;
    OK(olCreateProgram(t_cpu, img, n, &p));
    free(img);
    ol_symbol_handle_t g = NULL;
    OK(olGetSymbol(p, "dtor_oob_n", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
    void *addr = NULL;
    OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
    uint32_t far = 1u << 24;
    OK(olMemcpy(NULL, addr, t_cpu, &far, t_host, sizeof far));
    ol_result_t r = olDestroyProgram(p);
    CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE, "got %s", r ? r->Details : "success");
    if (r) {
      CHECKF(strstr(r->Details, "memcheck: the program's destructors: invalid 4-byte write at"), "%s", r->Details);
      printf("     %s\n", r->Details);
    }
    r = olDestroyProgram(p);
    CHECKF(r && r->Code == OL_ERRC_INVALID_ARGUMENT, "destroyed twice: %s", r ? r->Details : "success");
  }
}

int main(void) {
  // first, before this process has any thread: the child that faults
  RUN(dyn_shared_overrun_faults_or_errors);
  unsetenv("OFFLOAD_RS_MEMCHECK");
  setup();
  RUN(private_1m_synced_from_a_512k_thread);
  RUN(private_17m_is_out_of_resources);
  teardown();
  setenv("OFFLOAD_RS_MEMCHECK", "1", 1);
  setup();
  RUN(memcheck_oob_global_store);
  RUN(memcheck_static_shared_overrun);
  RUN(memcheck_static_shared_atomic_overrun);
  RUN(memcheck_dyn_shared_overrun);
  RUN(memcheck_store_to_freed_memory);
  RUN(memcheck_private_memory_is_allowed);
  RUN(memcheck_constructor_oob_write_fails_the_load);
  RUN(memcheck_store_to_memory_freed_behind_queued_work);
  RUN(memcheck_destructor_oob_write_fails_the_destroy);
  RUN(private_17m_is_out_of_resources);
  teardown();
  return t_finish();
}
