// Stress (issue: hardening): 20 threads for OFFLOAD_RS_STRESS_SECONDS (default 10; the full minute with
// `OFFLOAD_RS_STRESS_SECONDS=60 build/ffi-tests/test_stress`) creating and destroying programs from a few
// images while others launch kernels, copy and fill memory, and chain events across queues. Every result
// is checked; a watchdog fails the run instead of letting a deadlock hang CI. Then two races (issue 12
// findings 6 and 8): several threads destroying one handle at once (exactly one wins, for every kind), and
// the last olShutDown while other threads are in calls (each call completes or gets UNINITIALIZED).
#include "ol_test.h"
#include <signal.h>
#include <time.h>
#include <unistd.h>

#ifndef FFI_TESTS_PROGRAM // the smallest program (ffi-tests/programs/tiny.c); the Makefile passes its path
#define FFI_TESTS_PROGRAM "build/ffi-tests/tiny.nvptx64.bc"
#endif

static double seconds = 10;
static volatile int stop;
static void *img[2];
static size_t img_n[2];
static ol_program_handle_t kprog;
static ol_symbol_handle_t k_saxpy;
static long iterations[4];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *programs(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  for (long i = 0; !stop; i++) {
    int which = (int)((id + i) % 2);
    ol_program_handle_t p = NULL;
    OK(olCreateProgram(t_cpu, img[which], img_n[which], &p));
    if (!p)
      return NULL;
    ol_symbol_handle_t g = NULL, k = NULL;
    uint32_t v = t_seed_global(p, &g);
    CHECK(v == (which ? 0xBBBB0002u : 0xAAAA0001u));
    OK(olGetSymbol(p, "get", OL_SYMBOL_KIND_KERNEL, &k));
    uint32_t *out = NULL;
    OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 4, (void **)&out));
    ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
    OK(olLaunchKernel(NULL, t_cpu, k, &out, sizeof out, &la));
    CHECK(*out == v + (which ? 2u : 1u));
    OK(olMemFree(out));
    OK(olDestroyProgram(p));
    ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, 4, &v));
    __atomic_fetch_add(&iterations[0], 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void *launches(void *arg) {
  (void)arg;
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  const uint32_t n = 4096;
  float *x = NULL, *y = NULL;
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, n * 4, (void **)&x));
  OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, n * 4, (void **)&y));
  for (long i = 0; !stop && x && y; i++) {
    for (uint32_t j = 0; j < n; j++) {
      x[j] = (float)j;
      y[j] = (float)(i % 7);
    }
    struct {
      float a;
      float *x, *y;
      uint32_t n;
    } args = {3.0f, x, y, n};
    ol_kernel_launch_size_args_t la = {1, {n / 128, 1, 1}, {128, 1, 1}, 0};
    OK(olLaunchKernel(q, t_cpu, k_saxpy, &args, sizeof args, &la));
    OK(olSyncQueue(q));
    uint32_t bad = 0;
    for (uint32_t j = 0; j < n; j++)
      bad += y[j] != 3.0f * (float)j + (float)(i % 7);
    CHECK(bad == 0);
    __atomic_fetch_add(&iterations[1], 1, __ATOMIC_RELAXED);
  }
  OK(olMemFree(x));
  OK(olMemFree(y));
  OK(olDestroyQueue(q));
  return NULL;
}

static void *copies(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  for (long i = 0; !stop; i++) {
    size_t n = 1 + (size_t)(rand_r(&seed) % (1 << 20));
    n = (n + 3) & ~(size_t)3;
    unsigned char *a = NULL, *b = NULL, *h = malloc(n);
    OK(olMemAlloc(t_cpu, (ol_alloc_type_t)(i % 3), n, (void **)&a));
    OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, n, (void **)&b));
    if (!a || !b || !h)
      break;
    uint32_t pat = 0x01020304u * (uint32_t)(i + 1);
    OK(olMemFill(q, a, 4, &pat, n));
    OK(olMemcpy(q, b, t_cpu, a, t_cpu, n));
    OK(olMemcpy(q, h, t_host, b, t_cpu, n));
    OK(olSyncQueue(q));
    uint32_t w;
    int bad = 0;
    for (size_t j = 0; j < n; j += 4) {
      memcpy(&w, h + j, 4);
      bad |= w != pat;
    }
    CHECK(!bad);
    void *base = NULL;
    OK(olGetMemInfo(a + n / 2, OL_MEM_INFO_BASE, sizeof base, &base));
    CHECK(base == a);
    OK(olMemFree(a));
    OK(olMemFree(b));
    // (no double-free check here: another thread may already own the same address again; handles, unlike
    // addresses, are generation-checked, which the other threads' stale-handle checks exercise)
    free(h);
    __atomic_fetch_add(&iterations[2], 1, __ATOMIC_RELAXED);
  }
  OK(olDestroyQueue(q));
  return NULL;
}

struct counter {
  uint32_t value;
  uint32_t seen_ok;
};
static void bump(void *p) { __atomic_fetch_add(&((struct counter *)p)->value, 1, __ATOMIC_RELEASE); }
static void check_after(void *p) {
  struct counter *c = p;
  // runs on the second queue after olWaitEvents on the first queue's event: the bumps are done
  if (__atomic_load_n(&c->value, __ATOMIC_ACQUIRE) == 10)
    c->seen_ok = 1;
}

static void *events(void *arg) {
  (void)arg;
  ol_queue_handle_t q1 = NULL, q2 = NULL;
  OK(olCreateQueue(t_cpu, &q1));
  OK(olCreateQueue(t_cpu, &q2));
  while (!stop) {
    struct counter c = {0, 0};
    for (int k = 0; k < 10; k++)
      OK(olLaunchHostFunction(q1, bump, &c));
    ol_event_handle_t e1 = NULL, e2 = NULL;
    OK(olCreateEvent(q1, &e1));
    OK(olWaitEvents(q2, &e1, 1));
    OK(olLaunchHostFunction(q2, check_after, &c));
    OK(olCreateEvent(q2, &e2));
    OK(olSyncEvent(e2));
    CHECK(c.seen_ok == 1);
    bool done = false;
    OK(olGetEventInfo(e1, OL_EVENT_INFO_IS_COMPLETE, sizeof done, &done));
    CHECK(done);
    OK(olDestroyEvent(e1));
    OK(olDestroyEvent(e2));
    ERR(OL_ERRC_INVALID_EVENT, olSyncEvent(e1));
    __atomic_fetch_add(&iterations[3], 1, __ATOMIC_RELAXED);
  }
  OK(olDestroyQueue(q1));
  OK(olDestroyQueue(q2));
  return NULL;
}

static void watchdog(int sig) {
  (void)sig;
  static const char msg[] = "FAIL watchdog: the stress test did not finish in time (deadlock?)\n0 passed, 1 failed\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  _exit(3);
}

static void twenty_threads_mixed(void) {
  NEED_CPU();
  const char *s = getenv("OFFLOAD_RS_STRESS_SECONDS");
  if (s && atof(s) > 0)
    seconds = atof(s);
  signal(SIGALRM, watchdog);
  alarm((unsigned)seconds + 120);
  img[0] = t_load("seed_a", "nvptx64", &img_n[0]);
  img[1] = t_load("seed_b", "amdgcn", &img_n[1]);
  kprog = t_create(t_cpu, "kernels", "nvptx64");
  OK(olGetSymbol(kprog, "saxpy", OL_SYMBOL_KIND_KERNEL, &k_saxpy));
  void *(*kinds[4])(void *) = {programs, launches, copies, events};
  pthread_t t[20];
  double t0 = now();
  for (int i = 0; i < 20; i++)
    pthread_create(&t[i], NULL, kinds[i % 4], (void *)(uintptr_t)(i + 1));
  while (now() - t0 < seconds)
    usleep(100 * 1000);
  stop = 1;
  for (int i = 0; i < 20; i++)
    pthread_join(t[i], NULL);
  alarm(0);
  printf("  %.0f s: %ld program cycles, %ld launches, %ld copy rounds, %ld event chains\n", now() - t0,
         iterations[0], iterations[1], iterations[2], iterations[3]);
  CHECK(iterations[0] > 0 && iterations[1] > 0 && iterations[2] > 0 && iterations[3] > 0);
  OK(olDestroyProgram(kprog));
  free(img[0]);
  free(img[1]);
}

// ---- several threads destroy one handle at once: exactly one succeeds ------------------------------------

enum { RACERS = 4 };
static struct {
  pthread_barrier_t go, done;
  int kind; // 0 queue, 1 event, 2 program, -1 stop
  void *handle;
  int wins, losses, other;
} race;

static void *destroyer(void *arg) {
  (void)arg;
  for (;;) {
    pthread_barrier_wait(&race.go);
    if (race.kind < 0)
      return NULL;
    ol_result_t r;
    unsigned lost;
    if (race.kind == 0) {
      r = olDestroyQueue((ol_queue_handle_t)race.handle);
      lost = OL_ERRC_INVALID_QUEUE;
    } else if (race.kind == 1) {
      r = olDestroyEvent((ol_event_handle_t)race.handle);
      lost = OL_ERRC_INVALID_EVENT;
    } else {
      r = olDestroyProgram((ol_program_handle_t)race.handle);
      lost = OL_ERRC_INVALID_ARGUMENT;
    }
    __atomic_fetch_add(!r ? &race.wins : r->Code == lost ? &race.losses : &race.other, 1, __ATOMIC_RELAXED);
    pthread_barrier_wait(&race.done);
  }
}

static void concurrent_destroys_exactly_one_wins(void) {
  NEED_CPU();
  const int rounds = getenv("OFFLOAD_RS_TESTS_SMALL") ? 100 : 1000;
  FILE *f = fopen(FFI_TESTS_PROGRAM, "rb"); // the smallest program there is: this is about handles
  CHECK(f != NULL);
  if (!f)
    return;
  static char image[1 << 16];
  size_t n = fread(image, 1, sizeof image, f);
  fclose(f);
  ol_program_handle_t keep = NULL; // keeps the compiled code cached: every create below is a cache hit
  OK(olCreateProgram(t_cpu, image, n, &keep));
  ol_queue_handle_t q = NULL;
  OK(olCreateQueue(t_cpu, &q));
  pthread_barrier_init(&race.go, NULL, RACERS + 1);
  pthread_barrier_init(&race.done, NULL, RACERS + 1);
  pthread_t t[RACERS];
  for (int i = 0; i < RACERS; i++)
    pthread_create(&t[i], NULL, destroyer, NULL);
  static const char *const kinds[] = {"queues", "events", "programs"};
  for (int kind = 0; kind < 3; kind++) {
    race.wins = race.losses = race.other = 0;
    for (int i = 0; i < rounds; i++) {
      void *h = NULL;
      if (kind == 0)
        OK(olCreateQueue(t_cpu, (ol_queue_handle_t *)&h));
      else if (kind == 1)
        OK(olCreateEvent(q, (ol_event_handle_t *)&h));
      else
        OK(olCreateProgram(t_cpu, image, n, (ol_program_handle_t *)&h));
      race.kind = kind;
      race.handle = h;
      pthread_barrier_wait(&race.go);
      pthread_barrier_wait(&race.done);
    }
    printf("  %s: %d rounds of %d concurrent destroys: %d succeeded, %d got the destroyed-handle code, %d other\n",
           kinds[kind], rounds, RACERS, race.wins, race.losses, race.other);
    CHECK(race.wins == rounds);
    CHECK(race.losses == rounds * (RACERS - 1));
    CHECK(race.other == 0);
  }
  race.kind = -1;
  pthread_barrier_wait(&race.go);
  for (int i = 0; i < RACERS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&race.go);
  pthread_barrier_destroy(&race.done);
  OK(olDestroyQueue(q));
  OK(olDestroyProgram(keep));
}

// ---- the last olShutDown while other threads are in calls ----------------------------------------------

static struct {
  ol_device_handle_t cpu, host;
  ol_platform_handle_t platform;
  int running, unexpected, completed;
} busy;

static int expected(ol_result_t r) {
  if (!r || r->Code == OL_ERRC_UNINITIALIZED) {
    if (!r)
      __atomic_fetch_add(&busy.completed, 1, __ATOMIC_RELAXED);
    return 1;
  }
  fprintf(stderr, "  unexpected result racing olShutDown: code %u: %s\n", r->Code, r->Details);
  __atomic_fetch_add(&busy.unexpected, 1, __ATOMIC_RELAXED);
  return 0;
}

// Calls every kind of entry point until the library says UNINITIALIZED.
static void *caller(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  __atomic_fetch_add(&busy.running, 1, __ATOMIC_RELEASE);
  for (;;) {
    char name[64];
    ol_result_t r = olGetDeviceInfo(busy.host, OL_DEVICE_INFO_NAME, sizeof name, name);
    expected(r);
    if (r)
      break;
    uint32_t backend;
    expected(olGetPlatformInfo(busy.platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend));
    void *p = NULL;
    if (expected(olMemAlloc(busy.cpu, OL_ALLOC_TYPE_HOST, 64 + id, &p)) && p)
      expected(olMemFree(p));
    ol_queue_handle_t q = NULL;
    if (expected(olCreateQueue(busy.cpu, &q)) && q) {
      ol_event_handle_t e = NULL;
      if (expected(olCreateEvent(q, &e)) && e) {
        expected(olSyncEvent(e));
        expected(olDestroyEvent(e));
      }
      expected(olSyncQueue(q));
      expected(olDestroyQueue(q));
    }
  }
  return NULL;
}

static void shutdown_waits_for_calls_in_flight(void) {
  NEED_CPU();
  enum { CALLERS = 8 };
  const int rounds = getenv("OFFLOAD_RS_TESTS_SMALL") ? 3 : 20;
  OK(olShutDown()); // the reference t_init took: each round's olShutDown below is the last one
  for (int round = 0; round < rounds; round++) {
    t_init();
    busy.cpu = t_cpu;
    busy.host = t_host;
    OK(olGetDeviceInfo(t_cpu, OL_DEVICE_INFO_PLATFORM, sizeof busy.platform, &busy.platform));
    busy.running = 0;
    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++)
      pthread_create(&t[i], NULL, caller, (void *)(uintptr_t)i);
    while (__atomic_load_n(&busy.running, __ATOMIC_ACQUIRE) < CALLERS)
      usleep(1000);
    usleep(20 * 1000);
    OK(olShutDown());
    for (int i = 0; i < CALLERS; i++)
      pthread_join(t[i], NULL);
  }
  printf("  %d rounds: %d calls completed around the last olShutDown, %d unexpected results\n", rounds,
         busy.completed, busy.unexpected);
  CHECK(busy.unexpected == 0);
  CHECK(busy.completed > 0);
  t_init(); // main's olShutDown
}

int main(void) {
  t_init();
  RUN(twenty_threads_mixed);
  RUN(concurrent_destroys_exactly_one_wins);
  RUN(shutdown_waits_for_calls_in_flight);
  OK(olShutDown());
  return t_finish();
}
