// Queues, events and host functions on the CPU device: real asynchrony with LLVM 22's ordering rules.
#include "ol_test.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static bool is_empty(ol_queue_handle_t q) {
  bool e = false;
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_EMPTY, sizeof e, &e));
  return e;
}
static bool is_complete(ol_event_handle_t ev) {
  bool c = false;
  OK(olGetEventInfo(ev, OL_EVENT_INFO_IS_COMPLETE, sizeof c, &c));
  return c;
}

static void enqueue_is_asynchronous(void) {
  NEED_CPU();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  CHECK(is_empty(q));
  ol_event_handle_t before = NULL, after = NULL;
  OK(olCreateEvent(q, &before)); // empty queue: complete forever
  CHECK(is_complete(before));
  struct gate g = GATE_INIT;
  OK(olLaunchHostFunction(q, gate_wait, &g)); // returns at once although the callback blocks
  unsigned char *buf = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, 4096, (void **)&buf));
  memset(buf, 0, 4096);
  unsigned char pat = 0x5a;
  OK(olMemFill(q, buf, 1, &pat, 4096)); // queued behind the gate
  OK(olCreateEvent(q, &after));
  usleep(50 * 1000);
  CHECK(!is_empty(q));
  CHECK(!is_complete(after));
  CHECK(buf[0] == 0 && buf[4095] == 0); // the fill has not run
  ol_queue_handle_t qinfo = NULL;
  OK(olGetEventInfo(after, OL_EVENT_INFO_QUEUE, sizeof qinfo, &qinfo));
  CHECK(qinfo == q);
  gate_open(&g);
  OK(olSyncEvent(after));
  CHECK(is_complete(after));
  CHECK(buf[0] == 0x5a && buf[4095] == 0x5a);
  OK(olSyncQueue(q));
  CHECK(is_empty(q));
  OK(olSyncEvent(after)); // repeated syncs are fine
  OK(olDestroyEvent(before));
  OK(olDestroyEvent(after));
  ERR(OL_ERRC_INVALID_EVENT, olSyncEvent(after));
  ERR(OL_ERRC_INVALID_EVENT, olDestroyEvent(after));
  OK(olMemFree(buf));
  OK(olDestroyQueue(q));
  ERR(OL_ERRC_INVALID_QUEUE, olSyncQueue(q));
  ERR(OL_ERRC_INVALID_QUEUE, olDestroyQueue(q));
  ERR(OL_ERRC_INVALID_QUEUE, olCreateEvent(q, &after));
}

static uint32_t seq_buf[16];
static void seq_step(void *p) {
  uintptr_t k = (uintptr_t)p;
  seq_buf[k] = k < 2 ? 1 : seq_buf[k - 1] + seq_buf[k - 2];
}

static void host_functions_in_order(void) {
  NEED_CPU();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  memset(seq_buf, 0, sizeof seq_buf);
  for (uintptr_t k = 0; k < 16; k++)
    OK(olLaunchHostFunction(q, seq_step, (void *)k));
  OK(olSyncQueue(q));
  for (int k = 2; k < 16; k++)
    CHECK(seq_buf[k] == seq_buf[k - 1] + seq_buf[k - 2] && seq_buf[k] > 0);
  ERR(OL_ERRC_INVALID_NULL_POINTER, olLaunchHostFunction(q, NULL, NULL));
  ERR(OL_ERRC_INVALID_NULL_HANDLE, olLaunchHostFunction(NULL, seq_step, NULL));
  OK(olDestroyQueue(q));
}

// LLVM's olWaitEvents test: 16 queues, each waits on the previous one's event, kernel `sequence`.
static void cross_queue_wait_events(void) {
  NEED_CPU();
  ol_program_handle_t p = t_create(t_cpu, "kernels", "nvptx64");
  if (!p)
    return;
  ol_symbol_handle_t k = NULL;
  OK(olGetSymbol(p, "sequence", OL_SYMBOL_KIND_KERNEL, &k));
  for (int multi = 0; multi < 2; multi++) {
    uint32_t *data = NULL;
    OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 16 * 4, (void **)&data));
    memset(data, 0, 64);
    ol_queue_handle_t qs[16];
    ol_event_handle_t evs[16];
    struct gate g = GATE_INIT;
    ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
    for (uint32_t i = 0; i < 16; i++) {
      OK(olCreateQueue(t_cpu, &qs[i]));
      if (i == 0)
        OK(olLaunchHostFunction(qs[0], gate_wait, &g)); // hold the whole chain
      if (i > 0) {
        if (multi)
          OK(olWaitEvents(qs[i], evs, i));
        else
          OK(olWaitEvents(qs[i], &evs[i - 1], 1));
      }
      struct {
        uint32_t idx;
        uint32_t *mem;
      } args = {i, data};
      OK(olLaunchKernel(qs[i], t_cpu, k, &args, sizeof args, &la));
      OK(olCreateEvent(qs[i], &evs[i]));
    }
    usleep(20 * 1000);
    CHECK(!is_complete(evs[15])); // the waits did not block the caller, and nothing ran yet
    gate_open(&g);
    OK(olSyncEvent(evs[15]));
    for (int i = 2; i < 16; i++)
      CHECK(data[i] == data[i - 1] + data[i - 2]);
    CHECK(data[15] == 610);
    for (int i = 0; i < 16; i++) {
      OK(olDestroyEvent(evs[i]));
      OK(olDestroyQueue(qs[i]));
    }
    OK(olMemFree(data));
  }
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  ol_event_handle_t nul[1] = {NULL};
  ERR(OL_ERRC_INVALID_NULL_HANDLE, olWaitEvents(q, nul, 1));
  ERR(OL_ERRC_INVALID_NULL_POINTER, olWaitEvents(q, NULL, 1));
  ERR(OL_ERRC_INVALID_NULL_HANDLE, olWaitEvents(NULL, nul, 1));
  ol_event_handle_t stale = NULL;
  OK(olCreateEvent(q, &stale));
  OK(olDestroyEvent(stale));
  ERR(OL_ERRC_INVALID_EVENT, olWaitEvents(q, &stale, 1));
  ol_event_handle_t own = NULL;
  OK(olCreateEvent(q, &own));
  OK(olWaitEvents(q, &own, 1)); // an event of the same queue: a no-op
  OK(olDestroyEvent(own));
  OK(olDestroyQueue(q));
  OK(olDestroyProgram(p));
}

// olDestroyQueue never waits; the pending work still completes and its events stay usable.
static void destroy_with_pending_work(void) {
  NEED_CPU();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  struct gate g = GATE_INIT;
  OK(olLaunchHostFunction(q, gate_wait, &g));
  memset(seq_buf, 0, sizeof seq_buf);
  OK(olLaunchHostFunction(q, seq_step, (void *)(uintptr_t)0));
  ol_event_handle_t ev = NULL;
  OK(olCreateEvent(q, &ev));
  OK(olDestroyQueue(q)); // returns while the gate is closed
  CHECK(!is_complete(ev));
  gate_open(&g);
  OK(olSyncEvent(ev));
  CHECK(g.ran == 1 && seq_buf[0] == 1);
  OK(olDestroyEvent(ev));
}

// A host function still blocking a destroyed queue, as the UR adapter's urEventSetCallback does.
static void host_function_outlives_queue(void) {
  NEED_CPU();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  static struct gate g = GATE_INIT;
  OK(olLaunchHostFunction(q, gate_wait, &g));
  OK(olDestroyQueue(q));
  gate_open(&g);
  for (int i = 0; i < 200 && __atomic_load_n(&g.ran, __ATOMIC_ACQUIRE) == 0; i++)
    usleep(5000);
  CHECK(g.ran == 1);
}

static void async_memcpy_and_fill(void) {
  NEED_CPU();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  size_t n = 1 << 20;
  unsigned char *a = NULL, *b = NULL, *host = malloc(n);
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, n, (void **)&a));
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_HOST, n, (void **)&b));
  for (size_t i = 0; i < n; i++)
    host[i] = (unsigned char)(i * 13);
  OK(olMemcpy(q, a, t_cpu, host, t_host, n));
  OK(olMemcpy(q, b, t_cpu, a, t_cpu, n));
  uint32_t pat = 0xDEADBEEF;
  OK(olMemFill(q, a, 4, &pat, n / 2));
  OK(olSyncQueue(q));
  CHECK(!memcmp(b, host, n));
  uint32_t w;
  memcpy(&w, a + n / 2 - 4, 4);
  CHECK(w == 0xDEADBEEF);
  CHECK(a[n / 2] == host[n / 2]);
  ERR(OL_ERRC_INVALID_ARGUMENT, olMemcpy(q, host, t_host, host, t_host, 16));
  OK(olMemFree(a));
  OK(olMemFree(b));
  free(host);
  OK(olDestroyQueue(q));
}

static void queue_info_and_errors(void) {
  NEED_CPU();
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  ol_device_handle_t d = NULL;
  size_t sz = 0;
  OK(olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, sizeof d, &d));
  CHECK(d == t_cpu);
  OK(olGetQueueInfoSize(q, OL_QUEUE_INFO_EMPTY, &sz));
  CHECK(sz == 1);
  ERR(OL_ERRC_INVALID_ENUMERATION, olGetQueueInfo(q, OL_QUEUE_INFO_FORCE_UINT32, sizeof d, &d));
  ERR(OL_ERRC_INVALID_SIZE, olGetQueueInfo(q, OL_QUEUE_INFO_DEVICE, 7, &d));
  ol_event_handle_t ev = NULL;
  OK(olCreateEvent(q, &ev));
  OK(olGetEventInfoSize(ev, OL_EVENT_INFO_QUEUE, &sz));
  CHECK(sz == 8);
  ERR(OL_ERRC_INVALID_ENUMERATION, olGetEventInfo(ev, OL_EVENT_INFO_FORCE_UINT32, 8, &d));
  // wrong kinds
  ERR(OL_ERRC_INVALID_QUEUE, olSyncQueue((ol_queue_handle_t)ev));
  ERR(OL_ERRC_INVALID_EVENT, olSyncEvent((ol_event_handle_t)q));
  ERR(OL_ERRC_INVALID_QUEUE, olSyncQueue((ol_queue_handle_t)0xdeadbeef));
  ERR(OL_ERRC_UNSUPPORTED, olCreateQueue(t_host, &q));
  OK(olDestroyEvent(ev));
  OK(olDestroyQueue(q));
}

struct et {
  ol_queue_handle_t shared;
  int own;
  uint32_t counter;
};
static void bump(void *p) { __atomic_fetch_add((uint32_t *)p, 1, __ATOMIC_RELAXED); }

static void *enqueue_thread(void *arg) {
  struct et *e = arg;
  ol_queue_handle_t q = e->shared;
  if (e->own)
    OK(olCreateQueue(t_cpu, &q));
  uint32_t local = 0;
  for (int i = 0; i < 100; i++) {
    OK(olLaunchHostFunction(q, bump, &local));
    ol_event_handle_t ev = NULL;
    OK(olCreateEvent(q, &ev));
    if (i % 10 == 0)
      OK(olSyncEvent(ev));
    OK(olDestroyEvent(ev));
  }
  OK(olSyncQueue(q));
  CHECK(local == 100);
  if (e->own)
    OK(olDestroyQueue(q));
  return NULL;
}

static void twenty_threads_enqueueing(void) {
  NEED_CPU();
  ol_queue_handle_t shared = NULL;
  OK(olCreateQueue(t_cpu, &shared));
  for (int own = 0; own < 2; own++) {
    pthread_t t[20];
    struct et e[20];
    for (int i = 0; i < 20; i++) {
      e[i] = (struct et){shared, own, 0};
      pthread_create(&t[i], NULL, enqueue_thread, &e[i]);
    }
    for (int i = 0; i < 20; i++)
      pthread_join(t[i], NULL);
  }
  OK(olDestroyQueue(shared));
}

// Shutdown drains every queue, including destroyed ones with pending work.
static void shutdown_drains(void) {
  NEED_CPU();
  OK(olInit()); // a second reference: the last olShutDown below must drain
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  static uint32_t count;
  count = 0;
  for (int i = 0; i < 50; i++)
    OK(olLaunchHostFunction(q, bump, &count));
  OK(olShutDown());
  OK(olShutDown());
  CHECK(count == 50);
  t_init();
}

// ---- queue threads: a bounded set, however many queues have work ------------------------------------

// The process's thread count (/proc/self/status "Threads:"), or -1.
static int thread_count(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1)
      break;
  fclose(f);
  return n;
}

static int compute_units(void) {
  uint32_t units = 0;
  OK(olGetDeviceInfo(t_cpu, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof units, &units));
  return (int)units;
}

// The most threads the CPU device's queues use (README, "A guest in your process"): max(2, compute units)
// for work that does not block, plus 8 for host functions (and waits on other devices' events).
static int queue_thread_bound(void) { return (compute_units() > 2 ? compute_units() : 2) + 8; }

// Checks the thread count `most` seen while queues had work against the bound: at most the bound more than
// `base` (counted before), and at most the bound more than the main thread and the work-group pool's
// threads (compute units - 1) with a little slack (the queue threads of earlier tests may still be in
// `base`: they end after a second without work).
static void check_threads(int most, int base, int queues) {
  int bound = queue_thread_bound(), fixed = compute_units();
  CHECKF(most - base <= bound + 2, "%d queues with work: %d threads more than before (at most %d expected)", queues,
         most - base, bound);
  CHECKF(most <= fixed + bound + 4, "%d queues with work: %d threads (the main thread, %d pool threads and at most %d "
         "queue threads expected)", queues, most, fixed - 1, bound);
}

struct in_order {
  uint32_t *out; // 4 words the queue's launch writes
  int state;     // 1: the fill had run before the launch, 2: the launch after it
};
static void after_fill(void *p) {
  struct in_order *o = p;
  if (o->state == 0 && o->out[0] == 0xFFFFFFFFu && o->out[3] == 0xFFFFFFFFu)
    o->state = 1;
}
static void after_launch(void *p) {
  struct in_order *o = p;
  if (o->state == 1 && o->out[0] == 0 && o->out[1] == 1 && o->out[2] == 2 && o->out[3] == 3)
    o->state = 2;
}

// 2000 queues, each with a host function blocked on one gate, then a fill, a host function, a launch and
// a host function that check the order. The library used one thread per queue with work (2000 threads);
// now the queues share at most queue_thread_bound() threads, and all of it runs, in order, after the gate.
static void busy_queues_share_a_bounded_set_of_threads(void) {
  NEED_CPU();
  ol_program_handle_t p = t_create(t_cpu, "kernels", "nvptx64");
  if (!p)
    return;
  ol_symbol_handle_t foo = t_kernel(p, "foo");
  const int N = getenv("OFFLOAD_RS_TESTS_SMALL") ? 400 : 2000; // valgrind: fewer
  ol_queue_handle_t *qs = calloc(N, sizeof *qs);
  struct in_order *o = calloc(N, sizeof *o);
  uint32_t *mem = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, (size_t)N * 16, (void **)&mem));
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {4, 1, 1}, 0};
  {
    // the work-group pool's threads start at the first launch: before the count
    struct { uint32_t *out; } a = {mem};
    OK(olLaunchKernel(NULL, t_cpu, foo, &a, sizeof a, &la));
  }
  int base = thread_count(), most = base;
  CHECK(base > 0);
  struct gate g = GATE_INIT;
  uint32_t ones = 0xFFFFFFFFu;
  for (int i = 0; i < N; i++) {
    o[i].out = mem + 4 * i;
    struct { uint32_t *out; } a = {o[i].out};
    OK(olCreateQueue(t_cpu, &qs[i]));
    OK(olLaunchHostFunction(qs[i], gate_wait, &g));
    OK(olMemFill(qs[i], o[i].out, 4, &ones, 16));
    OK(olLaunchHostFunction(qs[i], after_fill, &o[i]));
    OK(olLaunchKernel(qs[i], t_cpu, foo, &a, sizeof a, &la));
    OK(olLaunchHostFunction(qs[i], after_launch, &o[i]));
    if (i % 100 == 99) {
      int n = thread_count();
      most = n > most ? n : most;
    }
  }
  usleep(50 * 1000);
  int n = thread_count();
  most = n > most ? n : most;
  check_threads(most, base, N);
  printf("     %d busy queues: %d threads before, at most %d while they waited (queue threads: at most %d)\n", N, base,
         most, queue_thread_bound());
  gate_open(&g);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    OK(olSyncQueue(qs[i]));
    bad += o[i].state != 2;
    OK(olDestroyQueue(qs[i]));
  }
  CHECKF(bad == 0, "%d of %d queues ran their work out of order", bad, N);
  CHECK(g.ran == N);
  OK(olMemFree(mem));
  OK(olDestroyProgram(p));
  free(qs);
  free(o);
}

struct seen_after {
  int *flag;
  int seen; // 1: the flag was set when it ran
};
static void set_flag(void *p) { __atomic_store_n((int *)p, 1, __ATOMIC_RELEASE); }
static void check_flag(void *p) {
  struct seen_after *s = p;
  s->seen = __atomic_load_n(s->flag, __ATOMIC_ACQUIRE) ? 1 : -1;
}
struct syncer {
  ol_queue_handle_t q;
  ol_result_t r;
};
static void *sync_queue_thread(void *p) {
  struct syncer *s = p;
  s->r = olSyncQueue(s->q);
  return NULL;
}

// The starvation case of a bounded set of threads: queue A waits for an event of queue G, whose host
// function blocks on a gate, then runs a host function, then event E; many more queues than the library
// has queue threads wait for E. Waiting queues hold no thread, so A still runs when the gate opens, and
// then all of them. Once with another thread syncing A meanwhile: it runs A's wait itself and hands the
// host function after it to the library's threads.
static void waiting_queues_never_starve_the_queue_they_wait_for(void) {
  NEED_CPU();
  int bound = queue_thread_bound();
  int n = 4 * bound + 16;
  ol_queue_handle_t *qs = calloc(n, sizeof *qs);
  struct seen_after *s = calloc(n, sizeof *s);
  for (int syncing = 0; syncing < 2; syncing++) {
    int base = thread_count();
    struct gate g = GATE_INIT;
    int a_ran = 0;
    ol_queue_handle_t gq = NULL, aq = NULL;
    ol_event_handle_t f = NULL, e = NULL;
    OK(olCreateQueue(t_cpu, &gq));
    OK(olLaunchHostFunction(gq, gate_wait, &g));
    OK(olCreateEvent(gq, &f));
    OK(olCreateQueue(t_cpu, &aq));
    OK(olWaitEvents(aq, &f, 1));
    OK(olLaunchHostFunction(aq, set_flag, &a_ran));
    OK(olCreateEvent(aq, &e));
    struct syncer sy = {aq, NULL};
    pthread_t t;
    if (syncing)
      CHECK(pthread_create(&t, NULL, sync_queue_thread, &sy) == 0);
    for (int i = 0; i < n; i++) {
      s[i] = (struct seen_after){&a_ran, 0};
      OK(olCreateQueue(t_cpu, &qs[i]));
      OK(olWaitEvents(qs[i], &e, 1));
      OK(olLaunchHostFunction(qs[i], check_flag, &s[i]));
    }
    usleep(20 * 1000);
    CHECK(!is_complete(e));
    CHECK(!is_empty(qs[n - 1]));
    check_threads(thread_count(), base, n);
    gate_open(&g);
    int bad = 0;
    for (int i = 0; i < n; i++) {
      OK(olSyncQueue(qs[i]));
      bad += s[i].seen != 1;
      OK(olDestroyQueue(qs[i]));
    }
    CHECKF(bad == 0, "%d of %d waiting queues ran before the queue they waited for", bad, n);
    if (syncing) {
      pthread_join(t, NULL);
      OK(sy.r);
    }
    OK(olSyncQueue(aq));
    CHECK(a_ran == 1);
    OK(olDestroyEvent(e));
    OK(olDestroyEvent(f));
    OK(olDestroyQueue(aq));
    OK(olDestroyQueue(gq));
  }
  free(qs);
  free(s);
}

// The queue threads are counted per process: a fork()ed child (which has none of its parent's threads)
// starts its own for its queues' work (host functions never run on a syncing thread, so without a queue
// thread of its own the child's sync would wait for ever). The parent's queue threads are idle (parked,
// holding no lock) when it forks.
static void queues_work_in_a_forked_child(void) {
  NEED_CPU();
  if (getenv("OFFLOAD_RS_TESTS_SMALL")) // valgrind follows the fork and fails the child's exit status with
    SKIP("under valgrind the parent's threads are the forked child's leaks"); // their thread data
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  static uint32_t count;
  count = 0;
  for (int i = 0; i < 20; i++)
    OK(olLaunchHostFunction(q, bump, &count));
  OK(olSyncQueue(q));
  CHECK(count == 20);
  usleep(20 * 1000);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    ol_queue_handle_t cq = NULL;
    int ok = olCreateQueue(t_cpu, &cq) == NULL;
    for (int i = 0; ok && i < 20; i++)
      ok = olLaunchHostFunction(cq, bump, &count) == NULL;
    ok = ok && olSyncQueue(cq) == NULL && count == 40 && olSyncQueue(q) == NULL;
    _exit(ok ? 0 : 1);
  }
  CHECK(pid > 0);
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < 3000 && pid > 0 && (r = waitpid(pid, &status, WNOHANG)) == 0; i++)
    usleep(10 * 1000);
  if (pid > 0 && r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECKF(0, "the forked child's queue never ran its host functions (killed after 30 s)");
  } else if (pid > 0) {
    CHECKF(r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child's queue work failed (status %d)",
           status);
  }
  OK(olDestroyQueue(q));
}

int main(void) {
  t_init();
  RUN(enqueue_is_asynchronous);
  RUN(host_functions_in_order);
  RUN(cross_queue_wait_events);
  RUN(destroy_with_pending_work);
  RUN(host_function_outlives_queue);
  RUN(async_memcpy_and_fill);
  RUN(queue_info_and_errors);
  RUN(twenty_threads_enqueueing);
  RUN(shutdown_drains);
  RUN(busy_queues_share_a_bounded_set_of_threads);
  RUN(waiting_queues_never_starve_the_queue_they_wait_for);
  RUN(queues_work_in_a_forked_child);
  olShutDown();
  return t_finish();
}
