/* A tiny test harness for the C client tests of offload-rs.
 *
 *   TEST(name) { ... CHECK(cond); CHECK_OK(call); CHECK_ERR(OL_ERRC_X, call);
 *                CHECK_ERR_TEXT(OL_ERRC_X, "exact details", call); CHECK_ERR_HAS(OL_ERRC_X, "substr", call);
 *                SKIP("reason"); }
 *   int main(int argc, char **argv) { RUN(name); ...; return harness_summary(); }
 *
 * A failing check records file:line, the expression, and (for ol_result_t checks) the returned error's
 * code and Details, then the test goes on (so one run shows every difference). Each test prints one line:
 * `PASS name`, `FAIL name` (after its failure lines) or `SKIP name: reason`. The last line printed by
 * harness_summary() is exactly `N passed, N failed, N skipped`; the exit status is 1 if anything failed.
 *
 * Compiled against LLVM 22's OffloadAPI.h (include <stdbool.h> first for C < C23).
 */
#ifndef OFFLOAD_RS_FFI_TESTS_HARNESS_H
#define OFFLOAD_RS_FFI_TESTS_HARNESS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <OffloadAPI.h>

#define HARNESS_UNUSED __attribute__((unused))

HARNESS_UNUSED static int harness_passed, harness_failed, harness_skipped;
HARNESS_UNUSED static int harness_cur_failures;
HARNESS_UNUSED static int harness_cur_skipped;
static const char *harness_cur_name = "";

static const char *harness_errc_name(unsigned code) {
  static const char *const names[] = {
      "OL_ERRC_SUCCESS", "OL_ERRC_UNKNOWN", "OL_ERRC_HOST_IO", "OL_ERRC_INVALID_BINARY",
      "OL_ERRC_INVALID_NULL_POINTER", "OL_ERRC_INVALID_ARGUMENT", "OL_ERRC_NOT_FOUND",
      "OL_ERRC_OUT_OF_RESOURCES", "OL_ERRC_INVALID_SIZE", "OL_ERRC_INVALID_ENUMERATION",
      "OL_ERRC_HOST_TOOL_NOT_FOUND", "OL_ERRC_INVALID_VALUE", "OL_ERRC_UNIMPLEMENTED",
      "OL_ERRC_UNSUPPORTED", "OL_ERRC_ASSEMBLE_FAILURE", "OL_ERRC_COMPILE_FAILURE",
      "OL_ERRC_LINK_FAILURE", "OL_ERRC_BACKEND_FAILURE", "OL_ERRC_UNINITIALIZED",
      "OL_ERRC_INVALID_NULL_HANDLE", "OL_ERRC_INVALID_PLATFORM", "OL_ERRC_INVALID_DEVICE",
      "OL_ERRC_INVALID_QUEUE", "OL_ERRC_INVALID_EVENT", "OL_ERRC_SYMBOL_KIND"};
  return code < sizeof names / sizeof names[0] ? names[code] : "(unknown code)";
}

HARNESS_UNUSED static void harness_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  __atomic_fetch_add(&harness_cur_failures, 1, __ATOMIC_RELAXED); /* checks may fail on several threads */
  fprintf(stdout, "  %s:%d: [%s] ", file, line, harness_cur_name);
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
  fflush(stdout);
}

/* Render a result for a failure message: "OL_SUCCESS" or "CODE (n): \"details\"". */
static const char *harness_describe(ol_result_t r, char *buf, size_t n) {
  if (!r) {
    snprintf(buf, n, "OL_SUCCESS");
  } else {
    snprintf(buf, n, "%s (%u): \"%s\"", harness_errc_name((unsigned)r->Code), (unsigned)r->Code,
             r->Details ? r->Details : "(Details is NULL)");
  }
  return buf;
}

/* mode: 0 = any details, 1 = exact details, 2 = details contain `text`. */
HARNESS_UNUSED static bool harness_check_err(const char *file, int line, const char *expr, ol_result_t r, unsigned code,
                              int mode, const char *text) {
  char got[1024];
  if (!r) {
    harness_fail(file, line, "%s: expected %s, got OL_SUCCESS", expr, harness_errc_name(code));
    return false;
  }
  if ((unsigned)r->Code != code) {
    harness_fail(file, line, "%s: expected %s, got %s", expr, harness_errc_name(code),
                 harness_describe(r, got, sizeof got));
    return false;
  }
  if (!r->Details) {
    harness_fail(file, line, "%s: Details is NULL", expr);
    return false;
  }
  if ((mode == 1 && strcmp(r->Details, text) != 0) || (mode == 2 && !strstr(r->Details, text))) {
    harness_fail(file, line, "%s: expected details %s\"%s\", got %s", expr, mode == 1 ? "" : "containing ", text,
                 harness_describe(r, got, sizeof got));
    return false;
  }
  return true;
}

#define CHECK(cond)                                                                                          \
  do {                                                                                                       \
    if (!(cond)) harness_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                                \
  } while (0)

/* CHECK with a printf-style explanation on failure. */
#define CHECKF(cond, ...)                                                                                    \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      char harness_msg_[4096];                                                                                \
      snprintf(harness_msg_, sizeof harness_msg_, __VA_ARGS__);                                              \
      harness_fail(__FILE__, __LINE__, "CHECK(%s) failed: %s", #cond, harness_msg_);                         \
    }                                                                                                        \
  } while (0)

#define CHECK_OK(call)                                                                                       \
  do {                                                                                                       \
    ol_result_t harness_r_ = (call);                                                                         \
    if (harness_r_) {                                                                                        \
      char harness_buf_[1024];                                                                               \
      harness_fail(__FILE__, __LINE__, "%s: expected OL_SUCCESS, got %s", #call,                             \
                   harness_describe(harness_r_, harness_buf_, sizeof harness_buf_));                         \
    }                                                                                                        \
  } while (0)

/* Like CHECK_OK but ends the test on failure (for set-up steps later checks depend on). */
#define REQUIRE_OK(call)                                                                                     \
  do {                                                                                                       \
    int harness_before_ = harness_cur_failures;                                                              \
    CHECK_OK(call);                                                                                          \
    if (harness_cur_failures != harness_before_) return;                                                     \
  } while (0)

#define REQUIRE(cond)                                                                                        \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      harness_fail(__FILE__, __LINE__, "REQUIRE(%s) failed", #cond);                                         \
      return;                                                                                                \
    }                                                                                                        \
  } while (0)

#define CHECK_ERR(code, call) harness_check_err(__FILE__, __LINE__, #call, (call), (unsigned)(code), 0, NULL)
#define CHECK_ERR_TEXT(code, text, call)                                                                     \
  harness_check_err(__FILE__, __LINE__, #call, (call), (unsigned)(code), 1, (text))
#define CHECK_ERR_HAS(code, text, call)                                                                      \
  harness_check_err(__FILE__, __LINE__, #call, (call), (unsigned)(code), 2, (text))

/* Mark the current test skipped and return from it. */
#define SKIP(...)                                                                                            \
  do {                                                                                                       \
    harness_cur_skipped = 1;                                                                                 \
    printf("SKIP %s: ", harness_cur_name);                                                                   \
    printf(__VA_ARGS__);                                                                                     \
    printf("\n");                                                                                            \
    return;                                                                                                  \
  } while (0)

#define TEST(name) static void name(void)
#define RUN(name) harness_run(#name, name)

/* HARNESS_FILTER=name1,name2: run only those tests (e.g. to run a subset against LLVM's own library). */
HARNESS_UNUSED static bool harness_selected(const char *name) {
  const char *f = getenv("HARNESS_FILTER");
  size_t n = strlen(name);
  if (!f || !*f) return true;
  for (const char *p = f; (p = strstr(p, name)) != NULL; p += n)
    if ((p == f || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
  return false;
}

HARNESS_UNUSED static void harness_run(const char *name, void (*fn)(void)) {
  if (!harness_selected(name)) return;
  harness_cur_name = name;
  harness_cur_failures = 0;
  harness_cur_skipped = 0;
  fflush(stdout);
  if (getenv("HARNESS_VERBOSE")) /* which test a hang is in (scripts/gpu-check.sh) */
    fprintf(stderr, "---- %s\n", name);
  fn();
  if (harness_cur_failures) {
    harness_failed++;
    printf("FAIL %s\n", name);
  } else if (harness_cur_skipped) {
    harness_skipped++;
  } else {
    harness_passed++;
    printf("PASS %s\n", name);
  }
  fflush(stdout);
}

HARNESS_UNUSED static int harness_summary(void) {
  printf("%d passed, %d failed, %d skipped\n", harness_passed, harness_failed, harness_skipped);
  fflush(stdout);
  return harness_failed ? 1 : 0;
}

/* A host function that blocks its queue until released (LLVM's ManuallyTriggeredTask):
 * `struct gate g = GATE_INIT; olLaunchHostFunction(q, gate_wait, &g); ... gate_open(&g);` */
struct gate {
  pthread_mutex_t m;
  pthread_cond_t c;
  int open;
  int ran;
};
#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}
HARNESS_UNUSED static void gate_wait(void *p) {
  struct gate *g = (struct gate *)p;
  pthread_mutex_lock(&g->m);
  while (!g->open) pthread_cond_wait(&g->c, &g->m);
  g->ran++;
  pthread_mutex_unlock(&g->m);
}
HARNESS_UNUSED static void gate_open(struct gate *g) {
  pthread_mutex_lock(&g->m);
  g->open = 1;
  pthread_cond_broadcast(&g->c);
  pthread_mutex_unlock(&g->m);
}

/* A thread body that opens the gate `p` after 20 ms (while the thread that started it is blocked in a call
 * that must wait for the gated work). */
HARNESS_UNUSED static void *gate_open_later(void *p) {
  usleep(20000);
  gate_open((struct gate *)p);
  return NULL;
}

/* Whether the n bytes at p all equal v. */
HARNESS_UNUSED static bool harness_all_bytes(const void *p, unsigned char v, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != v) return false;
  return true;
}

/* The whole file at `path` in a malloc'ed buffer the caller frees (its size in *size), or NULL. */
HARNESS_UNUSED static unsigned char *harness_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)malloc(n > 0 ? (size_t)n : 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return b;
}

/* ---- helpers shared by the tests (they call the API: define HARNESS_NO_API_HELPERS to leave them out) - */
#ifndef HARNESS_NO_API_HELPERS

typedef struct {
  ol_device_handle_t devices[64];
  size_t count;
} harness_device_list_t;

HARNESS_UNUSED static bool harness_collect_cb(ol_device_handle_t d, void *ud) {
  harness_device_list_t *l = (harness_device_list_t *)ud;
  if (l->count < 64) l->devices[l->count++] = d;
  return true;
}

/* Every device, in iteration order (requires olInit). */
HARNESS_UNUSED static harness_device_list_t harness_devices(void) {
  harness_device_list_t l;
  memset(&l, 0, sizeof l);
  olIterateDevices(harness_collect_cb, &l);
  return l;
}

HARNESS_UNUSED static uint32_t harness_backend_of(ol_device_handle_t d) {
  ol_platform_handle_t p = NULL;
  uint32_t backend = 0;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p)) return 0;
  if (olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend)) return 0;
  return backend;
}

/* offload-rs's CPU compute platform backend (an extension of LLVM's enum). */
#define HARNESS_BACKEND_CPU 0x100u

/* The first device whose platform backend is `backend`, or NULL. */
HARNESS_UNUSED static ol_device_handle_t harness_find_backend(uint32_t backend) {
  harness_device_list_t l = harness_devices();
  for (size_t i = 0; i < l.count; i++)
    if (harness_backend_of(l.devices[i]) == backend) return l.devices[i];
  return NULL;
}

/* One round of "olMemFree while queued work still uses the memory" (issue 12, finding 1), on any device. The
 * caller has allocated `a` (n bytes of `type` on dev) and keeps q busy until gate g opens. A copy of the n
 * bytes at z into `a` is queued and `a` freed at once (from then on it is unknown: a second free is
 * INVALID_ARGUMENT); the next allocation `b` must not be `a`, and after g opens and q syncs, b still holds the
 * 'B's it was filled with (read in place, or into `back` with olMemcpy when b may not be host memory). */
HARNESS_UNUSED static void harness_free_behind_queued_copy(ol_device_handle_t dev, ol_device_handle_t host,
                                                           ol_queue_handle_t q, ol_alloc_type_t type, void *a,
                                                           const void *z, size_t n, struct gate *g,
                                                           unsigned char *back, int round) {
  unsigned char *b = NULL, pat = 'B';
  CHECK_OK(olMemcpy(q, a, dev, z, host, n));
  CHECK_OK(olMemFree(a));
  CHECK_ERR(OL_ERRC_INVALID_ARGUMENT, olMemFree(a));
  REQUIRE_OK(olMemAlloc(dev, type, n, (void **)&b));
  CHECKF(b != a, "round %d: the freed block %p was handed out again while a copy into it was queued", round, a);
  CHECK_OK(olMemFill(NULL, b, 1, &pat, n));
  gate_open(g);
  CHECK_OK(olSyncQueue(q));
  if (back) CHECK_OK(olMemcpy(NULL, back, host, b, dev, n));
  CHECKF(harness_all_bytes(back ? back : b, 'B', n), "round %d: the new allocation was overwritten by the queued copy",
         round);
  CHECK_OK(olMemFree(b));
}

/* olMemUnregister returns only after the work queued before it is done (issue 12, finding 1), on any device:
 * device memory `d` (n bytes on dev) is filled with 'Z', the zeroed host memory h registered, and a copy of d
 * into the registered range queued on q behind a gate that another thread opens 20 ms later; when
 * olMemUnregister returns, the copy has landed. */
HARNESS_UNUSED static void harness_unregister_waits_for_queued_copy(ol_device_handle_t dev, ol_device_handle_t host,
                                                                    ol_queue_handle_t q, void *d, unsigned char *h,
                                                                    size_t n) {
  struct gate g = GATE_INIT;
  unsigned char pat = 'Z';
  void *pinned = NULL;
  CHECK_OK(olMemFill(NULL, d, 1, &pat, n));
  REQUIRE_OK(olMemRegister(dev, h, n, 0, &pinned));
  CHECK_OK(olLaunchHostFunction(q, gate_wait, &g));
  CHECK_OK(olMemcpy(q, pinned, host, d, dev, n));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, gate_open_later, &g) == 0);
  CHECK_OK(olMemUnregister(dev, h));
  CHECKF(harness_all_bytes(h, 'Z', n), "olMemUnregister returned before the queued copy into the range was done");
  pthread_join(t, NULL);
}

#endif /* HARNESS_NO_API_HELPERS */

#endif
