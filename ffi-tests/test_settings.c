// The CPU device's settings as a client sees them: OFFLOAD_RS_CPU_TARGET (the JIT's CPU; a target this
// machine cannot run, an unknown CPU or feature is an error at olInit) and OFFLOAD_RS_CPU_THREADS (the
// threads running work-groups, NUM_COMPUTE_UNITS), read once at the first olInit, and
// OFFLOAD_RS_KERNEL_TIMEOUT (a bad value is an error at olInit). Each case runs in a
// child process of this program with the setting in its environment (the settings are per process).
// `test_settings --target-runs CPU` only says whether that target can run here (scripts/test.sh).
#include "ol_test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif
#ifndef TEST_UNDER_ASAN
#define TEST_UNDER_ASAN 0
#endif

// SETTINGS_NO_CALLOC_THREAD: a thread of the child on which every calloc fails (this program's calloc
// interposes glibc's, also for glibc's own calls): its first calls into the library must not register a
// thread-local destructor with glibc, whose registration ends the process when its calloc fails ("Fatal glibc
// error: failed to register TLS destructor: out of memory"), as it can under RLIMIT_AS or in a full cgroup.
#if !TEST_UNDER_ASAN
extern void *__libc_calloc(size_t, size_t);
static __thread int t_no_calloc;
void *calloc(size_t n, size_t size) {
  if (t_no_calloc) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_calloc(n, size);
}
static ol_program_handle_t g_calloc_prog;
static void *no_calloc_thread(void *arg) {
  (void)arg;
  t_no_calloc = 1;
  uint32_t cu = 0;
  ol_result_t r = olGetDeviceInfo(t_cpu, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cu, &cu);
  printf("THREAD_INFO %u\n", r ? (unsigned)r->Code : 0u);
  printf("THREAD_VALUE %x\n", t_seed_value(g_calloc_prog)); // a synchronous launch from this thread
  t_no_calloc = 0;
  return NULL;
}
#endif

static const char *TGT = "nvptx64";
static char g_self[1024];
static char g_root[256];

// ---- the child: olInit, then what the parent asks for, one line each on stdout --------------------------

// SETTINGS_AS_HEADROOM_MB=n: the child's address space limited (RLIMIT_AS) to what it maps now plus n MiB.
static void limit_address_space(void) {
  const char *h = getenv("SETTINGS_AS_HEADROOM_MB");
  if (!h)
    return;
  unsigned long kb = 0;
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = ((rlim_t)kb << 10) + ((rlim_t)strtoul(h, NULL, 10) << 20);
  setrlimit(RLIMIT_AS, &rl);
}

// Under limit_address_space: every call returns (success or an error, printed), never an abort.
static void run_under_limit(void) {
  void *p = NULL;
  ol_result_t r = olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 64 << 20, &p);
  printf("ALLOC %u %s\n", r ? (unsigned)r->Code : 0u, r ? r->Details : "");
  if (!r)
    olMemFree(p);
  size_t n = 0;
  void *img = t_load("seed_a", TGT, &n);
  ol_program_handle_t prog = NULL;
  r = olCreateProgram(t_cpu, img, n, &prog);
  free(img);
  printf("PROGRAM %u %s\n", r ? (unsigned)r->Code : 0u, r ? r->Details : "");
  ol_symbol_handle_t k = NULL;
  if (!r && !(r = olGetSymbol(prog, "get", OL_SYMBOL_KIND_KERNEL, &k))) {
    uint32_t *out = NULL;
    r = olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 4, (void **)&out);
    ol_queue_handle_t q = NULL;
    if (!r)
      r = olCreateQueue(t_cpu, &q);
    ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
    if (!r)
      r = olLaunchKernel(q, t_cpu, k, &out, sizeof out, &la);
    if (!r)
      r = olSyncQueue(q);
    printf("LAUNCH %u %s\n", r ? (unsigned)r->Code : 0u, r ? r->Details : "");
    if (!r)
      printf("VALUE %x\n", *out);
    if (q)
      olDestroyQueue(q);
    if (out)
      olMemFree(out);
  }
  if (prog)
    olDestroyProgram(prog);
  printf("DONE\n");
}

static int child(void) {
  limit_address_space();
  ol_result_t r = olInit();
  printf("INIT %u %s\n", r ? (unsigned)r->Code : 0u, r ? r->Details : "");
  if (r) {
    // the library stays usable: the same answer again, and calls before a successful olInit are refused
    ol_result_t again = olInit();
    printf("AGAIN %u %s\n", again ? (unsigned)again->Code : 0u, again && again->Details == r->Details ? "same" : "");
    ol_device_handle_t d = NULL;
    ol_result_t after = olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, 0, NULL);
    printf("AFTER %u\n", after ? (unsigned)after->Code : 0u);
    return 0;
  }
  t_cpu = harness_find_backend(HARNESS_BACKEND_CPU);
  t_host = harness_find_backend(OL_PLATFORM_BACKEND_HOST);
  if (t_cpu) {
    uint32_t cu = 0;
    if (!olGetDeviceInfo(t_cpu, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cu, &cu))
      printf("CU %u\n", cu);
    uint32_t vw_float = 0, vw_char = 0;
    if (!olGetDeviceInfo(t_cpu, OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT, sizeof vw_float, &vw_float) &&
        !olGetDeviceInfo(t_cpu, OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR, sizeof vw_char, &vw_char))
      printf("VW %u %u\n", vw_float, vw_char);
    if (getenv("SETTINGS_AS_HEADROOM_MB")) {
      run_under_limit();
#if !TEST_UNDER_ASAN
    } else if (getenv("SETTINGS_NO_CALLOC_THREAD")) {
      g_calloc_prog = t_create(t_cpu, "seed_a", TGT);
      pthread_t t;
      if (g_calloc_prog && pthread_create(&t, NULL, no_calloc_thread, NULL) == 0)
        pthread_join(t, NULL);
      fflush(stdout);
      if (g_calloc_prog)
        olDestroyProgram(g_calloc_prog);
#endif
    } else if (getenv("SETTINGS_RUN")) {
      ol_program_handle_t p = t_create(t_cpu, "seed_a", TGT);
      if (p) {
        printf("VALUE %x\n", t_seed_value(p));
        olDestroyProgram(p);
      }
    }
  }
  olShutDown();
  return 0;
}

// ---- the parent -----------------------------------------------------------------------------------------

// Runs the child with `var`=`value` (unset when NULL) and `run` (create and run a program); its stdout in
// `out` (one line per fact); the child's exit status.
static int run_child(const char *var, const char *value, bool run, char *out, size_t n) {
  static int seq;
  char path[512];
  snprintf(path, sizeof path, "%s/child%d.out", g_root, seq++);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  setenv("SETTINGS_CHILD", "1", 1);
  if (value)
    setenv(var, value, 1);
  else
    unsetenv(var);
  if (run)
    setenv("SETTINGS_RUN", "1", 1);
  char *argv[] = {g_self, NULL};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, g_self, &fa, NULL, argv, environ);
  unsetenv("SETTINGS_CHILD");
  unsetenv("SETTINGS_RUN");
  unsetenv(var);
  posix_spawn_file_actions_destroy(&fa);
  int st = 0;
  if (rc != 0 || waitpid(pid, &st, 0) != pid)
    return -1;
  size_t len = 0;
  char *text = (char *)harness_read_file(path, &len);
  snprintf(out, n, "%.*s", (int)len, text ? text : ""); // the file's bytes are not NUL-terminated
  free(text);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The rest of the line starting with `key ` in `out`, or NULL.
static const char *fact(const char *out, const char *key, char *buf, size_t n) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s ", key);
  for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, pat, strlen(pat)) == 0) {
      const char *v = p + strlen(pat), *e = strchr(v, '\n');
      size_t k = e ? (size_t)(e - v) : strlen(v);
      snprintf(buf, n, "%.*s", (int)(k < n - 1 ? k : n - 1), v);
      return buf;
    }
  return NULL;
}

// olInit with `var`=`value` fails with INVALID_VALUE, details containing `text`, and the library stays usable.
static void expect_init_error(const char *var, const char *value, const char *text) {
  char out[8192], b[4096];
  CHECKF(run_child(var, value, false, out, sizeof out) == 0, "child for %s=%s did not exit cleanly: %s", var, value,
         out);
  const char *init = fact(out, "INIT", b, sizeof b);
  char want[64];
  snprintf(want, sizeof want, "%u ", (unsigned)OL_ERRC_INVALID_VALUE);
  CHECKF(init && strncmp(init, want, strlen(want)) == 0 && strstr(init, text), "%s=%s: olInit gave \"%s\", want %s\"...%s...\"",
         var, value, init ? init : "(nothing)", want, text);
  CHECKF(fact(out, "AGAIN", b, sizeof b) && strncmp(b, want, strlen(want)) == 0 && strstr(b, "same"),
         "%s=%s: a second olInit: %s", var, value, b);
  char unin[64];
  snprintf(unin, sizeof unin, "%u", (unsigned)OL_ERRC_UNINITIALIZED);
  CHECKF(fact(out, "AFTER", b, sizeof b) && strcmp(b, unin) == 0, "%s=%s: a call after the failed olInit: %s", var,
         value, b);
}

TEST(bad_cpu_targets_fail_olinit_and_say_why) {
  NEED_CPU();
  expect_init_error("OFFLOAD_RS_CPU_TARGET", "pentium9", "OFFLOAD_RS_CPU_TARGET=pentium9: 'pentium9' is not a CPU LLVM knows");
  expect_init_error("OFFLOAD_RS_CPU_TARGET", "x86-64,+nosuchfeature", "'nosuchfeature' is not a feature LLVM knows");
  expect_init_error("OFFLOAD_RS_CPU_TARGET", "x86-64,avx2", "'avx2' is not +feature or -feature");
  expect_init_error("OFFLOAD_RS_CPU_TARGET", "+avx2", "expected a CPU name first");
  // XOP (AMD Bulldozer) is on no CPU made since 2017: code that needs it cannot run here
  expect_init_error("OFFLOAD_RS_CPU_TARGET", "x86-64,+xop", "lacks: ");
}

TEST(bad_cpu_thread_counts_fail_olinit_and_say_why) {
  NEED_CPU();
  const char *bad[] = {"0", "-1", "many", "4097"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want[128];
    snprintf(want, sizeof want, "OFFLOAD_RS_CPU_THREADS=%s: expected a number of threads from 1 to 4096", bad[i]);
    expect_init_error("OFFLOAD_RS_CPU_THREADS", bad[i], want);
  }
}

TEST(bad_kernel_timeouts_fail_olinit_and_say_why) {
  NEED_CPU();
  const char *bad[] = {"-1", "soon", "0.0001", "1e9", "nan", "inf"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want[128];
    snprintf(want, sizeof want, "OFFLOAD_RS_KERNEL_TIMEOUT=%s: expected the seconds a launch may run", bad[i]);
    expect_init_error("OFFLOAD_RS_KERNEL_TIMEOUT", bad[i], want);
  }
  // no limit and a limit both run kernels
  char out[8192], b[256];
  const char *good[] = {"0", "", "2.5", "604800"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    CHECK(run_child("OFFLOAD_RS_KERNEL_TIMEOUT", good[i], true, out, sizeof out) == 0);
    CHECKF(fact(out, "VALUE", b, sizeof b) && strcmp(b, "aaaa0001") == 0, "OFFLOAD_RS_KERNEL_TIMEOUT=%s: %s", good[i],
           out);
  }
}

// A client under a tight address-space limit (RLIMIT_AS, as batch systems set): from no headroom at all
// to plenty, every call returns success or an error (OUT_OF_RESOURCES, "the JIT's compile helper could not
// start ... compiling in the process instead could abort it"), and the process exits normally; with
// enough headroom the kernel runs. (LLVM aborts a process whose allocation fails: before, a compile with
// no helper fell back to LLVM in the client and ended it with "LLVM ERROR: out of memory".)
TEST(a_tight_address_space_limit_gives_errors_never_an_abort) {
  NEED_CPU();
#if TEST_UNDER_ASAN
  SKIP("AddressSanitizer's own allocator aborts under RLIMIT_AS");
#endif
  const char *headroom[] = {"0", "8", "32", "64", "128", "1024"};
  char out[16384], b[4096];
  for (size_t i = 0; i < sizeof headroom / sizeof headroom[0]; i++) {
    int st = run_child("SETTINGS_AS_HEADROOM_MB", headroom[i], false, out, sizeof out);
    CHECKF(st == 0 && fact(out, "DONE", b, sizeof b) == NULL && strstr(out, "DONE\n"), "headroom %s MiB: exit %d: %s",
           headroom[i], st, out);
    const char *prog = fact(out, "PROGRAM", b, sizeof b);
    char oor[16];
    snprintf(oor, sizeof oor, "%u ", (unsigned)OL_ERRC_OUT_OF_RESOURCES);
    CHECKF(!prog || strcmp(prog, "0 ") == 0 || strncmp(prog, oor, strlen(oor)) == 0, "headroom %s MiB: %s",
           headroom[i], prog);
    printf("     headroom %s MiB: program: %s\n", headroom[i], prog ? prog : "(none)");
  }
  CHECKF(fact(out, "VALUE", b, sizeof b) && strcmp(b, "aaaa0002") == 0, "with 1 GiB of headroom (the kernel returns the global + 1): %s", out);
}

// A client thread on which no calloc succeeds (as under a tight RLIMIT_AS or a full memory cgroup) calls the
// library for the first time: its calls work, and the process is not ended by glibc ("failed to register TLS
// destructor": the library's per-thread values are pthread keys, src/threads.rs; before, SIGABRT).
TEST(a_thread_without_memory_for_a_tls_destructor_is_not_ended) {
  NEED_CPU();
#if TEST_UNDER_ASAN
  SKIP("AddressSanitizer replaces calloc itself");
#endif
  char out[8192], b[256];
  int st = run_child("SETTINGS_NO_CALLOC_THREAD", "1", false, out, sizeof out);
  CHECKF(st == 0, "the child exited with %d (134: SIGABRT): %s", st, out);
  CHECKF(fact(out, "THREAD_INFO", b, sizeof b) && strcmp(b, "0") == 0, "olGetDeviceInfo on that thread: %s", out);
  CHECKF(fact(out, "THREAD_VALUE", b, sizeof b) && strcmp(b, "aaaa0001") == 0, "a launch from that thread: %s", out);
}

TEST(cpu_threads_are_the_compute_units_and_kernels_run) {
  NEED_CPU();
  char out[8192], b[256];
  const char *counts[] = {"1", "3", "7"};
  for (size_t i = 0; i < 3; i++) {
    CHECK(run_child("OFFLOAD_RS_CPU_THREADS", counts[i], true, out, sizeof out) == 0);
    CHECKF(fact(out, "CU", b, sizeof b) && strcmp(b, counts[i]) == 0, "OFFLOAD_RS_CPU_THREADS=%s: CU %s", counts[i],
           fact(out, "CU", b, sizeof b) ? b : "(none)");
    CHECKF(fact(out, "VALUE", b, sizeof b) && strcmp(b, "aaaa0001") == 0, "threads %s: %s", counts[i], out);
  }
}

// Every directory entry of `dir` whose name is a cache entry's (64 hex digits).
static int cache_entries(const char *dir) {
  char cmd[600], out[64] = "";
  snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -cE '^[0-9a-f]{64}$'", dir);
  FILE *f = popen(cmd, "r");
  if (!f)
    return -1;
  if (!fgets(out, sizeof out, f))
    out[0] = 0;
  pclose(f);
  return atoi(out);
}

TEST(each_cpu_target_has_its_own_cache_entry) {
  NEED_CPU();
  char dir[512], out[8192], b[256];
  snprintf(dir, sizeof dir, "%s/cache", g_root);
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", dir, 1);
  setenv("OFFLOAD_RS_JIT_SPECIALISE", "0", 1); // one compile per program: one entry per target
  // x86-64-v2 (SSE4.2) runs on every x86-64 machine of the last 15 years; native is this machine
  const char *targets[] = {"x86-64-v2", "native", "x86-64-v2"};
  int want[] = {1, 2, 2};
  for (int i = 0; i < 3; i++) {
    CHECK(run_child("OFFLOAD_RS_CPU_TARGET", targets[i], true, out, sizeof out) == 0);
    CHECKF(fact(out, "VALUE", b, sizeof b) && strcmp(b, "aaaa0001") == 0, "target %s: %s", targets[i], out);
    int n = cache_entries(dir);
    CHECKF(n == want[i], "after a program for %s: %d cache entries, want %d", targets[i], n, want[i]);
  }
  unsetenv("OFFLOAD_RS_JIT_SPECIALISE");
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
}

// The native vector widths are those of the code the JIT makes: OFFLOAD_RS_CPU_TARGET's, not the host's.
TEST(native_vector_widths_follow_the_cpu_target) {
  NEED_CPU();
  char out[8192], b[256];
  struct { const char *target; const char *want; } cases[] = {
      {"x86-64-v2", "4 16"},       // SSE: 4 floats, 16 chars
      {"x86-64-v3", "8 32"},       // AVX2
      {"x86-64-v3,-avx2", "8 16"}, // AVX without AVX2: 256-bit floats, 128-bit integers
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK(run_child("OFFLOAD_RS_CPU_TARGET", cases[i].target, false, out, sizeof out) == 0);
    if (!fact(out, "INIT", b, sizeof b) || strcmp(b, "0 ") != 0) {
      printf("  (%s does not run here: %s)\n", cases[i].target, b);
      continue;
    }
    CHECKF(fact(out, "VW", b, sizeof b) && strcmp(b, cases[i].want) == 0, "OFFLOAD_RS_CPU_TARGET=%s: VW %s, want %s",
           cases[i].target, fact(out, "VW", b, sizeof b) ? b : "(none)", cases[i].want);
  }
}

// `test_settings --target-runs CPU`: whether the JIT can compile for OFFLOAD_RS_CPU_TARGET=CPU here (exit 0;
// else 1 and the reason on stdout): scripts/test.sh's target matrix skips the targets this machine cannot run.
static int target_runs(const char *cpu) {
  setenv("OFFLOAD_RS_CPU_TARGET", cpu, 1);
  ol_result_t r = olInit();
  if (r) {
    printf("%s\n", r->Details);
    return 1;
  }
  olShutDown();
  return 0;
}

int main(int argc, char **argv) {
  if (getenv("SETTINGS_CHILD"))
    return child();
  if (argc == 3 && strcmp(argv[1], "--target-runs") == 0)
    return target_runs(argv[2]);
  ssize_t k = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (k <= 0)
    return 2;
  g_self[k] = 0;
  snprintf(g_root, sizeof g_root, "%s", "/tmp/offload-rs-settings-XXXXXX");
  if (!mkdtemp(g_root))
    return 2;
  t_init();
  RUN(bad_cpu_targets_fail_olinit_and_say_why);
  RUN(bad_cpu_thread_counts_fail_olinit_and_say_why);
  RUN(bad_kernel_timeouts_fail_olinit_and_say_why);
  RUN(a_tight_address_space_limit_gives_errors_never_an_abort);
  RUN(a_thread_without_memory_for_a_tls_destructor_is_not_ended);
  RUN(cpu_threads_are_the_compute_units_and_kernels_run);
  RUN(each_cpu_target_has_its_own_cache_entry);
  RUN(native_vector_widths_follow_the_cpu_target);
  olShutDown();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", g_root);
  return t_finish();
}
