// Minimal test harness for the C client tests that load libLLVMOffload.so.22.1 through LLVM's own
// OffloadAPI.h. Each test is a function; the run ends with one line `N passed, N failed, N skipped`.
#ifndef OL_TEST_H
#define OL_TEST_H
#include <stdbool.h>
#include <OffloadAPI.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_pass, t_fail, t_skip;
static const char *t_name;
static int t_failed, t_skipped;
static pthread_mutex_t t_lock = PTHREAD_MUTEX_INITIALIZER;

static void t_report(const char *file, int line, const char *what) {
  pthread_mutex_lock(&t_lock);
  fprintf(stderr, "FAIL %s (%s:%d): %s\n", t_name, file, line, what);
  t_failed = 1;
  pthread_mutex_unlock(&t_lock);
}

#define CHECK(c)                                                                                    \
  do {                                                                                              \
    if (!(c))                                                                                       \
      t_report(__FILE__, __LINE__, "CHECK(" #c ")");                                                \
  } while (0)

#define OK(call)                                                                                    \
  do {                                                                                              \
    ol_result_t r_ = (call);                                                                        \
    if (r_) {                                                                                       \
      char m_[1024];                                                                                \
      snprintf(m_, sizeof m_, "%s -> code %d: %s", #call, (int)r_->Code, r_->Details ? r_->Details : "(null)"); \
      t_report(__FILE__, __LINE__, m_);                                                             \
    }                                                                                               \
  } while (0)

// Expect an error with `code`; also checks that Details is a non-empty string.
#define ERR(code, call)                                                                             \
  do {                                                                                              \
    ol_result_t r_ = (call);                                                                        \
    char m_[1024];                                                                                  \
    if (!r_) {                                                                                      \
      snprintf(m_, sizeof m_, "%s succeeded, expected %s", #call, #code);                           \
      t_report(__FILE__, __LINE__, m_);                                                             \
    } else if (r_->Code != (code) || !r_->Details || !r_->Details[0]) {                             \
      snprintf(m_, sizeof m_, "%s -> code %d (%s), expected %s", #call, (int)r_->Code,              \
               r_->Details ? r_->Details : "(null)", #code);                                        \
      t_report(__FILE__, __LINE__, m_);                                                             \
    }                                                                                               \
  } while (0)

#define SKIP(msg)                                                                                   \
  do {                                                                                              \
    printf("SKIP %s: %s\n", t_name, msg);                                                           \
    t_skipped = 1;                                                                                  \
    return;                                                                                         \
  } while (0)

static void t_run(const char *name, void (*fn)(void)) {
  t_name = name;
  t_failed = t_skipped = 0;
  fn();
  if (t_failed)
    t_fail++;
  else if (t_skipped)
    t_skip++;
  else
    t_pass++;
  printf("%s %s\n", t_failed ? "FAIL" : t_skipped ? "skip" : "ok  ", name);
  fflush(stdout);
}
#define RUN(fn) t_run(#fn, fn)

static int t_finish(void) {
  printf("%d passed, %d failed, %d skipped\n", t_pass, t_fail, t_skip);
  return t_fail ? 1 : 0;
}

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
#endif
