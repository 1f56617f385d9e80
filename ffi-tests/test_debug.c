// Debugging kernels on the CPU device (issue 25, and issue 22 finding 4), as a client sees it:
// * printf in kernels, for nvptx64 and amdgcn bitcode from C (variadic printf) and nvptx64 from CUDA
//   (vprintf with CUDA's packed buffer): every conversion prints what the host's printf prints for the
//   same arguments, one whole line per call from 512 work-items at once, all present, on stdout by the time
//   olSyncQueue returns; two calls around a barrier each give a whole line; output past
//   OFFLOAD_RS_PRINTF_BUFFER is dropped whole with a note on stderr;
// * assert (C's __assert_fail, CUDA's __assertfail): CUDA's message on stderr, the launch stops, the next
//   sync returns OL_ERRC_BACKEND_FAILURE naming kernel, file, line, block and thread; __builtin_trap the
//   same without the text; the process, the next launch and other queues go on (no signal);
// * a global constructor's failed assert fails olCreateProgram (printf works in constructors);
// * under OFFLOAD_RS_MEMCHECK=1: NULL and wild stores are errors at sync, not crashes; a %s of an invalid
//   pointer is the checker's report; a trap still ends the launch with an error;
// * OFFLOAD_RS_PERF_MAP=1: perf's map /tmp/perf-<pid>.map names every kernel's work-group function;
// * under OFFLOAD_RS_KERNEL_TIMEOUT=0.5: endless kernels (a flag nobody sets, a loop without memory) end
//   with the limit's error at sync, on both targets, and the queue goes on; a group waiting for a
//   work-item that trapped ends with the trap's error; a long finite loop is exact; an endless
//   constructor fails olCreateProgram; olShutDown with an endless kernel still queued returns; the
//   earlier printf and assert tests still pass with the stop points in the code.
// Device code: ffi-tests/device/debug.c, debug_cuda.cu, debug.h, spin.c, ctor_spin.c.
#include "ol_test.h"

#include "device/debug.h"

#include <fcntl.h>

static ol_program_handle_t progs[3]; // debug.nvptx64, debug.amdgcn, debug_cuda.nvptx64
static ol_queue_handle_t queue, queue2;
static const char *prog_names[3] = {"debug nvptx64", "debug amdgcn", "debug_cuda nvptx64"};

static void setup(void) {
  t_init();
  if (!t_cpu)
    return;
  for (int t = 0; t < 2; t++)
    progs[t] = t_create(t_cpu, "debug", t_targets[t]);
  progs[2] = t_create(t_cpu, "debug_cuda", "nvptx64");
  OK(olCreateQueue(t_cpu, &queue));
  OK(olCreateQueue(t_cpu, &queue2));
}

static void teardown(void) {
  if (!t_cpu)
    return;
  OK(olDestroyQueue(queue));
  OK(olDestroyQueue(queue2));
  for (int t = 0; t < 3; t++)
    OK(olDestroyProgram(progs[t]));
  OK(olShutDown());
}

// ---- capturing stdout / stderr -------------------------------------------------------------------------

struct capture {
  int fd, saved;
  FILE *file;
};

static struct capture capture_begin(int fd) {
  struct capture c = {fd, -1, tmpfile()};
  fflush(stdout);
  fflush(stderr);
  if (!c.file)
    return c;
  c.saved = dup(fd);
  dup2(fileno(c.file), fd);
  return c;
}

// What was written to the fd since capture_begin (malloc'ed, NUL-terminated).
static char *capture_end(struct capture c) {
  fflush(stdout);
  fflush(stderr);
  if (!c.file)
    return strdup("");
  dup2(c.saved, c.fd);
  close(c.saved);
  long n = ftell(c.file);
  if (n < 0)
    n = lseek(fileno(c.file), 0, SEEK_END);
  char *buf = calloc((size_t)n + 1, 1);
  rewind(c.file);
  size_t got = fread(buf, 1, (size_t)n, c.file);
  buf[got] = 0;
  fclose(c.file);
  return buf;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Splits text into lines (in place); returns the count, lines in *out (malloc'ed array).
static size_t split_lines(char *text, char ***out) {
  size_t n = 0, cap = 1024;
  char **v = malloc(cap * sizeof *v);
  for (char *p = text; *p;) {
    char *e = strchr(p, '\n');
    if (n == cap)
      v = realloc(v, (cap *= 2) * sizeof *v);
    v[n++] = p;
    if (!e)
      break;
    *e = 0;
    p = e + 1;
  }
  *out = v;
  return n;
}

// ---- printf ----------------------------------------------------------------------------------------------

#define GROUPS 8
#define WG 64
#define N (GROUPS * WG)

static void printf_matches_host(int t, const char *kernel) {
  NEED_CPU();
  uint32_t *out = t_dalloc(N * 4);
  char *s = t_dalloc(16);
  strcpy(s, "gpu-text");
  struct {
    double d;
    const char *s;
    uint32_t *out;
  } args = {1.25, s, out};
  ol_kernel_launch_size_args_t la = {1, {GROUPS, 1, 1}, {WG, 1, 1}, 0};
  struct capture c = capture_begin(1);
  ol_result_t r = olLaunchKernel(queue, t_cpu, t_kernel(progs[t], kernel), &args, sizeof args, &la);
  ol_result_t r2 = r ? NULL : olSyncQueue(queue);
  char *text = capture_end(c);
  CHECKF(!r && !r2, "%s: %s", prog_names[t], r ? r->Details : r2 ? r2->Details : "");
  char **lines;
  size_t n = split_lines(text, &lines);
  CHECKF(n == N, "%s: %zu lines, want %d", prog_names[t], n, N);
  // the host's printf of the same arguments, every line once
  char **want = malloc(N * sizeof *want);
  for (uint32_t i = 0; i < N; i++) {
    char buf[1024];
    snprintf(buf, sizeof buf, PRINT_ALL_FMT, PRINT_ALL_ARGS(i, args.d, s));
    buf[strlen(buf) - 1] = 0; // the newline
    want[i] = strdup(buf);
  }
  qsort(lines, n, sizeof *lines, cmp_str);
  qsort(want, N, sizeof *want, cmp_str);
  size_t bad = 0;
  for (size_t i = 0; i < N && i < n; i++)
    if (strcmp(lines[i], want[i]) != 0 && bad++ < 3)
      CHECKF(0, "%s: got  '%s'\n      want '%s'", prog_names[t], lines[i], want[i]);
  CHECKF(bad == 0, "%s: %zu lines differ from the host's printf", prog_names[t], bad);
  uint32_t ran = 0;
  for (uint32_t i = 0; i < N; i++)
    ran += out[i] == 1;
  CHECK(ran == N);
  if (n > 0)
    printf("     %s, e.g.: %s\n", prog_names[t], want[N - 1]);
  for (uint32_t i = 0; i < N; i++)
    free(want[i]);
  free(want);
  free(lines);
  free(text);
  OK(olMemFree(out));
  OK(olMemFree(s));
}

static void printf_every_conversion_nvptx64(void) { printf_matches_host(0, "print_all"); }
static void printf_every_conversion_amdgcn(void) { printf_matches_host(1, "print_all"); }
static void printf_every_conversion_cuda_vprintf(void) { printf_matches_host(2, "cuda_print_all"); }

// Host-triple bitcode's plain printf (debug_host.c): formatted by the CPU device like a kernel's, one line
// per work-group, flushed by the sync.
static void printf_from_host_bitcode(void) {
  NEED_CPU();
  ol_program_handle_t p = t_create(t_cpu, "debug_host", "x86_64");
  ol_kernel_launch_size_args_t la = {1, {3, 1, 1}, {1, 1, 1}, 0};
  char dummy[8] = {0};
  struct capture c = capture_begin(1);
  ol_result_t r = olLaunchKernel(queue, t_cpu, t_kernel(p, "host_print"), dummy, sizeof dummy, &la);
  ol_result_t r2 = r ? NULL : olSyncQueue(queue);
  char *text = capture_end(c);
  CHECKF(!r && !r2, "%s", r ? r->Details : r2 ? r2->Details : "");
  char **lines;
  size_t n = split_lines(text, &lines);
  CHECKF(n == 3, "%zu lines: %s", n, text);
  int seen[3] = {0};
  for (size_t i = 0; i < n; i++) {
    char want[128];
    for (unsigned g = 0; g < 3; g++) {
      snprintf(want, sizeof want, "host group %u: %d %s %.2f %lx|%-3c|", g, 42, "str", 1.5, 0xabcdefUL, 'z');
      seen[g] += strcmp(lines[i], want) == 0;
    }
  }
  CHECKF(seen[0] == 1 && seen[1] == 1 && seen[2] == 1, "got: %s", text);
  free(lines);
  free(text);
  OK(olDestroyProgram(p));
}

// Two calls per work-item around a barrier, 4 groups of 32 on both targets: each line whole and once, the
// first of a work-item before its second.
static void printf_two_calls_around_a_barrier(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t *out = t_dalloc(128 * 4);
    void *args = out;
    ol_kernel_launch_size_args_t la = {1, {4, 1, 1}, {32, 1, 1}, 0};
    struct capture c = capture_begin(1);
    ol_result_t r = olLaunchKernel(queue, t_cpu, t_kernel(progs[t], "print_two"), &args, sizeof args, &la);
    ol_result_t r2 = r ? NULL : olSyncQueue(queue);
    char *text = capture_end(c);
    CHECK(!r && !r2);
    char **lines;
    size_t n = split_lines(text, &lines);
    CHECKF(n == 256, "%s: %zu lines", prog_names[t], n);
    int first[128], second[128];
    for (int i = 0; i < 128; i++)
      first[i] = second[i] = -1;
    size_t odd = 0;
    for (size_t k = 0; k < n; k++) {
      unsigned i, g;
      if (sscanf(lines[k], "first %u of group %u", &i, &g) == 2 && i < 128 && g == i / 32 && first[i] < 0)
        first[i] = (int)k;
      else if (sscanf(lines[k], "second %u", &i) == 1 && i < 128 && second[i] < 0 &&
               strlen(lines[k]) == (size_t)snprintf(NULL, 0, "second %u", i))
        second[i] = (int)k;
      else
        odd++;
    }
    CHECKF(odd == 0, "%s: %zu torn, repeated or unexpected lines", prog_names[t], odd);
    int order = 0;
    for (int i = 0; i < 128; i++)
      order += first[i] < 0 || second[i] < first[i];
    CHECKF(order == 0, "%s: %d work-items miss a line or print them out of order", prog_names[t], order);
    free(lines);
    free(text);
    OK(olMemFree(out));
  }
}

// ---- assert and trap -----------------------------------------------------------------------------------

// Launches `kernel` with 4 groups of 16 where global id 19 (block 1, thread 3) fails; checks the sync's
// error, the stderr text, and that the queue, the program and another queue go on.
static void failing_launch(int t, const char *kernel, const char *stderr_has, const char *details_has) {
  uint32_t *out = t_dalloc(64 * 4);
  struct {
    uint32_t *out;
    uint32_t bad;
  } args = {out, 19};
  ol_kernel_launch_size_args_t la = {1, {4, 1, 1}, {16, 1, 1}, 0};
  ol_symbol_handle_t k = t_kernel(progs[t], kernel);
  struct capture c = capture_begin(2);
  ol_result_t r = olLaunchKernel(queue, t_cpu, k, &args, sizeof args, &la);
  ol_result_t r2 = r ? NULL : olSyncQueue(queue);
  char *err = capture_end(c);
  CHECKF(!r, "%s: launch: %s", prog_names[t], r ? r->Details : "");
  CHECKF(r2 && r2->Code == OL_ERRC_BACKEND_FAILURE, "%s: sync: %s", prog_names[t], r2 ? r2->Details : "success");
  if (r2) {
    CHECKF(strstr(r2->Details, kernel) && strstr(r2->Details, details_has) &&
               strstr(r2->Details, "block [1,0,0], thread [3,0,0]"),
           "%s: %s", prog_names[t], r2->Details);
    printf("     %s: %s\n", prog_names[t], r2->Details);
  }
  CHECKF(!stderr_has || strstr(err, stderr_has), "%s: stderr: '%s'", prog_names[t], err);
  if (stderr_has && strstr(err, stderr_has))
    printf("     stderr: %s", err);
  // (the work-item ran up to the failure and stopped; clang drops a store before a trap, not before
  // __assert_fail, an external call)
  CHECKF(stderr_has ? out[19] == 1 : out[19] != 2, "the failing work-item went on (%u)", out[19]);
  // the queue and the program go on: a launch where nobody fails completes
  OK(olSyncQueue(queue));
  args.bad = 1000;
  memset(out, 0, 64 * 4);
  OK(olLaunchKernel(queue, t_cpu, k, &args, sizeof args, &la));
  OK(olSyncQueue(queue));
  uint32_t done = 0;
  for (int i = 0; i < 64; i++)
    done += out[i] >= 2;
  CHECK(done == 64);
  // another queue is not affected by a failure on this one
  args.bad = 5;
  c = capture_begin(2);
  OK(olLaunchKernel(queue, t_cpu, k, &args, sizeof args, &la));
  struct {
    uint32_t *out;
    uint32_t bad;
  } args2 = {t_dalloc(64 * 4), 1000};
  OK(olLaunchKernel(queue2, t_cpu, k, &args2, sizeof args2, &la));
  OK(olSyncQueue(queue2));
  r2 = olSyncQueue(queue);
  free(capture_end(c));
  CHECK(r2 && r2->Code == OL_ERRC_BACKEND_FAILURE);
  free(err);
  OK(olMemFree(out));
  OK(olMemFree(args2.out));
}

static void assert_c_nvptx64(void) {
  NEED_CPU();
  failing_launch(0, "assert_at", ": assert_at: block: [1,0,0], thread: [3,0,0] Assertion `i != bad` failed.\n",
                 "`i != bad` failed at debug.c:");
}
static void assert_c_amdgcn(void) {
  NEED_CPU();
  failing_launch(1, "assert_at", ": assert_at: block: [1,0,0], thread: [3,0,0] Assertion `i != bad` failed.\n",
                 "`i != bad` failed at debug.c:");
}
static void assert_between_barriers(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++)
    failing_launch(t, "assert_in_barriers",
                   ": assert_in_barriers: block: [1,0,0], thread: [3,0,0] Assertion `i != bad` failed.\n",
                   "`i != bad` failed at debug.c:");
}
static void assert_cuda_assertfail(void) {
  NEED_CPU();
  failing_launch(2, "cuda_assert_at",
                 "debug_cuda.cu:", "`i != bad` failed at debug_cuda.cu:");
}
static void trap_nvptx64(void) {
  NEED_CPU();
  failing_launch(0, "trap_at", NULL, "stopped by a trap");
}
static void trap_amdgcn(void) {
  NEED_CPU();
  failing_launch(1, "trap_at", NULL, "stopped by a trap");
}

// A global constructor's failed assert (device/ctor_assert.c): printf in it works, the constructor stops,
// olCreateProgram fails with the assertion and the process goes on.
static void constructor_assert_fails_the_load(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t n;
    void *img = t_load("ctor_assert", t_targets[t], &n);
    ol_program_handle_t p = NULL;
    struct capture c = capture_begin(1), e = capture_begin(2);
    ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
    char *err = capture_end(e);
    char *out = capture_end(c);
    free(img);
    CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE &&
               strstr(r->Details, "the program's constructors stopped at a device-side assertion: "
                                  "`ctor_assert_ready` failed at ctor_assert.c:12 in function 'ctor_checks'"),
           "%s: %s", t_targets[t], r ? r->Details : "success");
    CHECKF(strcmp(out, "ctor_assert: constructor runs\n") == 0, "stdout: '%s'", out);
    CHECKF(strstr(err, "ctor_assert.c:12: ctor_checks: block: [0,0,0], thread: [0,0,0] Assertion `ctor_assert_ready` "
                       "failed."),
           "stderr: '%s'", err);
    if (r && t == 0)
      printf("     %s\n", r->Details);
    free(out);
    free(err);
  }
}

// ---- under the memory checker ------------------------------------------------------------------------------

static void memcheck_null_and_wild_stores_are_errors(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    void *ptrs[2] = {NULL, (void *)(uintptr_t)0x7000deadbeef};
    for (int p = 0; p < 2; p++) {
      void *args = ptrs[p];
      ol_kernel_launch_size_args_t la = {1, {2, 1, 1}, {8, 1, 1}, 0};
      OK(olLaunchKernel(queue, t_cpu, t_kernel(progs[t], "store_to"), &args, sizeof args, &la));
      ol_result_t r = olSyncQueue(queue);
      CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE && strstr(r->Details, "memcheck: kernel 'store_to'"), "%s: %s",
             prog_names[t], r ? r->Details : "success");
      if (r && t == 0)
        printf("     %s\n", r->Details);
    }
  }
}

static void memcheck_invalid_percent_s_is_a_report(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    void *args = (void *)(uintptr_t)0x40;
    ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
    struct capture c = capture_begin(1);
    ol_result_t r = olLaunchKernel(queue, t_cpu, t_kernel(progs[t], "print_str"), &args, sizeof args, &la);
    ol_result_t r2 = r ? NULL : olSyncQueue(queue);
    char *text = capture_end(c);
    CHECKF(r2 && r2->Code == OL_ERRC_BACKEND_FAILURE && strstr(r2->Details, "memcheck: kernel 'print_str'") &&
               strstr(r2->Details, "invalid 1-byte read at 0x40"),
           "%s: %s", prog_names[t], r2 ? r2->Details : "success");
    CHECKF(strcmp(text, "str (invalid string)\n") == 0, "%s: printed '%s'", prog_names[t], text);
    free(text);
  }
}

static void memcheck_trap_is_an_error(void) {
  NEED_CPU();
  failing_launch(0, "trap_at", NULL, "stopped by a trap");
  failing_launch(1, "assert_at", "Assertion `i != bad` failed.", "`i != bad` failed at debug.c:");
}

// ---- the time limit (OFFLOAD_RS_KERNEL_TIMEOUT=0.5) ---------------------------------------------------------

static ol_program_handle_t spin[2]; // spin.nvptx64, spin.amdgcn

// Launches `kernel` of spin[t] with `args` on `q` and syncs: the error, which must be BACKEND_FAILURE
// with `details_has` (NULL: success expected).
static void spin_launch(int t, ol_queue_handle_t q, const char *kernel, void *args, size_t size, uint32_t groups,
                        uint32_t wg, const char *details_has) {
  ol_kernel_launch_size_args_t la = {1, {groups, 1, 1}, {wg, 1, 1}, 0};
  ol_result_t r = olLaunchKernel(q, t_cpu, t_kernel(spin[t], kernel), args, size, &la);
  CHECKF(!r, "%s %s: launch: %s", t_targets[t], kernel, r ? r->Details : "");
  ol_result_t r2 = r ? NULL : olSyncQueue(q);
  if (!details_has) {
    CHECKF(!r2, "%s %s: %s", t_targets[t], kernel, r2 ? r2->Details : "");
    return;
  }
  CHECKF(r2 && r2->Code == OL_ERRC_BACKEND_FAILURE && strstr(r2->Details, kernel) && strstr(r2->Details, details_has),
         "%s %s: %s", t_targets[t], kernel, r2 ? r2->Details : "success");
  if (r2 && t == 0)
    printf("     %s\n", r2->Details);
}

static void time_limit_stops_endless_kernels(void) {
  NEED_CPU();
  uint32_t *flag = t_dalloc(4), *out = t_dalloc(64 * 4);
  *flag = 0;
  for (int t = 0; t < 2; t++) {
    spin[t] = t_create(t_cpu, "spin", t_targets[t]);
    struct {
      uint32_t *flag, *out;
    } a = {flag, out};
    // many groups (more than threads) and one
    spin_launch(t, queue, "spin_on_flag", &a, sizeof a, 64, 32, "ran longer than OFFLOAD_RS_KERNEL_TIMEOUT (0.5 s)");
    spin_launch(t, queue2, "spin_on_flag", &a, sizeof a, 1, 1, "CUDA_ERROR_LAUNCH_TIMEOUT");
    struct {
      uint32_t *out;
      uint32_t seed;
    } b = {out, 7};
    spin_launch(t, queue, "spin_arith", &b, sizeof b, 4, 64, "ran longer than OFFLOAD_RS_KERNEL_TIMEOUT");
    // the queue goes on: the flag set, the same kernel ends
    *flag = 1;
    memset(out, 0, 64 * 4);
    spin_launch(t, queue, "spin_on_flag", &a, sizeof a, 2, 32, NULL);
    CHECKF(out[31] == 1, "%s: out[31] = %u", t_targets[t], out[31]);
    *flag = 0;
  }
  OK(olMemFree(flag));
  OK(olMemFree(out));
}

// A work-item traps while the rest of its group waits for it: the launch ends with the trap's error (the
// waiting work-items stop at their next stop point, not at the limit). The trapping one is work-item 0:
// the CPU device runs a group's work-items one after the other between barriers, so one that waits for a
// later one without a barrier waits for ever (GPUs without independent thread scheduling do the same).
// As spinning on a flag nobody sets, that ends at the limit.
static void time_limit_ends_a_group_waiting_for_a_trap(void) {
  NEED_CPU();
  uint32_t *flag = t_dalloc(4);
  *flag = 0;
  for (int t = 0; t < 2; t++) {
    struct {
      uint32_t *flag;
      uint32_t bad;
    } a = {flag, 0};
    spin_launch(t, queue, "trap_while_peers_wait", &a, sizeof a, 8, 64, "stopped by a trap");
    a.bad = 3;
    spin_launch(t, queue, "trap_while_peers_wait", &a, sizeof a, 1, 64, "ran longer than OFFLOAD_RS_KERNEL_TIMEOUT");
  }
  OK(olMemFree(flag));
}

static void long_finite_loops_are_exact(void) {
  NEED_CPU();
  enum { WI = 128, LEN = 200000 };
  uint32_t *out = t_dalloc(WI * 4);
  for (int t = 0; t < 2; t++) {
    memset(out, 0, WI * 4);
    struct {
      uint32_t *out;
      uint32_t n;
    } a = {out, LEN};
    spin_launch(t, queue, "long_finite", &a, sizeof a, WI / 32, 32, NULL);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < WI; i++) {
      uint32_t s = 0;
      for (uint32_t k = 0; k < LEN; k++)
        s += (k * k) ^ i;
      bad += out[i] != s;
    }
    CHECKF(bad == 0, "%s: %u of %d wrong", t_targets[t], bad, WI);
  }
  OK(olMemFree(out));
}

static void time_limit_stops_an_endless_constructor(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t n;
    void *img = t_load("ctor_spin", t_targets[t], &n);
    ol_program_handle_t p = NULL;
    ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
    free(img);
    CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE &&
               strstr(r->Details, "the program's constructors stopped at the time limit: they ran longer than "
                                  "OFFLOAD_RS_KERNEL_TIMEOUT (0.5 s)"),
           "%s: %s", t_targets[t], r ? r->Details : "success");
    if (r && t == 0)
      printf("     %s\n", r->Details);
  }
}

// The last test of its phase: olShutDown with an endless kernel still queued returns (after the limit).
static void shutdown_with_an_endless_kernel_returns(void) {
  NEED_CPU();
  uint32_t *flag = t_dalloc(4), *out = t_dalloc(4);
  *flag = 0;
  struct {
    uint32_t *flag, *out;
  } a = {flag, out};
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
  OK(olLaunchKernel(queue, t_cpu, t_kernel(spin[0], "spin_on_flag"), &a, sizeof a, &la));
  for (int t = 0; t < 2; t++)
    OK(olDestroyProgram(spin[t]));
  // the queue, program and memory go with the shutdown, which drains the queue and returns its error (as
  // LLVM's joins the errors of the queues it drains)
  ol_result_t r = olShutDown();
  CHECKF(r && r->Code == OL_ERRC_BACKEND_FAILURE && strstr(r->Details, "ran longer than OFFLOAD_RS_KERNEL_TIMEOUT"),
         "%s", r ? r->Details : "success");
  // the library is shut down and starts again
  ERR(OL_ERRC_UNINITIALIZED, olShutDown());
  setup(); // (olInit again, for the phase's teardown)
}

// ---- the printf buffer bound ------------------------------------------------------------------------------

static void printf_buffer_is_bounded(void) {
  NEED_CPU();
  uint32_t *out = t_dalloc(N * 4);
  char *s = t_dalloc(16);
  strcpy(s, "x");
  struct {
    double d;
    const char *s;
    uint32_t *out;
  } args = {1.0, s, out};
  ol_kernel_launch_size_args_t la = {1, {GROUPS, 1, 1}, {WG, 1, 1}, 0};
  struct capture c = capture_begin(1), e = capture_begin(2);
  ol_result_t r = olLaunchKernel(queue, t_cpu, t_kernel(progs[0], "print_all"), &args, sizeof args, &la);
  ol_result_t r2 = r ? NULL : olSyncQueue(queue);
  char *err = capture_end(e);
  char *text = capture_end(c);
  CHECK(!r && !r2);
  char **lines;
  size_t n = split_lines(text, &lines);
  // 4096 bytes hold some whole lines, never a part of one
  CHECKF(n > 0 && n < N && strlen(text) <= 4096, "%zu lines", n);
  size_t torn = 0;
  for (size_t i = 0; i < n; i++)
    torn += strncmp(lines[i], "wi ", 3) != 0 || lines[i][strlen(lines[i]) - 1] != '%';
  CHECK(torn == 0);
  CHECKF(strstr(err, "printf calls (") && strstr(err, "dropped") && strstr(err, "OFFLOAD_RS_PRINTF_BUFFER"),
         "stderr: %s", err);
  printf("     %s", err);
  free(lines);
  free(text);
  free(err);
  OK(olMemFree(out));
  OK(olMemFree(s));
}

// ---- perf's JIT map ----------------------------------------------------------------------------------------

// OFFLOAD_RS_PERF_MAP=1 (set by main before the first load): /tmp/perf-<pid>.map has a parsable line per
// function of every loaded program, the work-group functions named by their kernels: `k [offload-rs]` for
// generic code, `k [offload-rs WxHxD]` for a version specialised for one group shape (the only code of a
// launched kernel whose program deferred its generic code), `k [offload-rs WxHxD quick]` for the quick
// version of a first launch.
static void perf_map_names_kernels(void) {
  NEED_CPU();
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  size_t n = 0;
  char *text = (char *)harness_read_file(path, &n);
  REQUIRE(text);
  char *t = realloc(text, n + 1);
  REQUIRE(t);
  t[n] = 0;
  char **lines;
  size_t count = split_lines(t, &lines), bad = 0;
  const char *want[] = {"print_all [offload-rs", "print_two [offload-rs", "assert_at [offload-rs",
                        "trap_at [offload-rs", "cuda_print_all [offload-rs", "cuda_assert_at [offload-rs"};
  int found[6] = {0};
  for (size_t i = 0; i < count; i++) {
    unsigned long long start, size;
    int off = 0;
    if (sscanf(lines[i], "%llx %llx %n", &start, &size, &off) != 2 || off == 0 || !lines[i][off] || !size ||
        !start) {
      bad++;
      continue;
    }
    for (int k = 0; k < 6; k++)
      found[k] += strncmp(lines[i] + off, want[k], strlen(want[k])) == 0 &&
                  (lines[i][off + strlen(want[k])] == ']' || lines[i][off + strlen(want[k])] == ' ');
  }
  CHECKF(bad == 0, "%zu of %zu lines do not parse", bad, count);
  for (int k = 0; k < 6; k++)
    CHECKF(found[k] >= 1, "no line for '%s'", want[k]);
  printf("     %zu lines, e.g. %s\n", count, count ? lines[0] : "");
  free(lines);
  free(t);
}

// ---- gdb ------------------------------------------------------------------------------------------------

// What scripts/test.sh's gdb session runs (HARNESS_FILTER=gdb_session, under gdb -batch; skipped otherwise):
// gdb_target of debug_g.nvptx64 (built with -g) on one work-item; gdb stops in it by name and prints `local`
// (3 * 0 + 41 = 41).
static void gdb_session(void) {
  NEED_CPU();
  if (!getenv("TEST_DEBUG_UNDER_GDB"))
    SKIP("run by scripts/test.sh under gdb");
  ol_program_handle_t p = t_create(t_cpu, "debug_g", "nvptx64");
  uint32_t *out = t_dalloc(4);
  struct {
    uint32_t *out;
    uint32_t n;
  } args = {out, 41};
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
  OK(olLaunchKernel(queue, t_cpu, t_kernel(p, "gdb_target"), &args, sizeof args, &la));
  OK(olSyncQueue(queue));
  CHECK(out[0] == 41);
  OK(olMemFree(out));
  OK(olDestroyProgram(p));
}

int main(void) {
  char perf_map[64];
  snprintf(perf_map, sizeof perf_map, "/tmp/perf-%d.map", (int)getpid());
  setenv("OFFLOAD_RS_PERF_MAP", "1", 1);
  unsetenv("OFFLOAD_RS_MEMCHECK");
  unsetenv("OFFLOAD_RS_PRINTF_BUFFER");
  setup();
  RUN(printf_every_conversion_nvptx64);
  RUN(printf_every_conversion_amdgcn);
  RUN(printf_every_conversion_cuda_vprintf);
  RUN(printf_two_calls_around_a_barrier);
  RUN(printf_from_host_bitcode);
  RUN(assert_c_nvptx64);
  RUN(assert_c_amdgcn);
  RUN(assert_between_barriers);
  RUN(assert_cuda_assertfail);
  RUN(trap_nvptx64);
  RUN(trap_amdgcn);
  RUN(constructor_assert_fails_the_load);
  RUN(perf_map_names_kernels);
  RUN(gdb_session);
  teardown();
  setenv("OFFLOAD_RS_PRINTF_BUFFER", "4096", 1);
  setup();
  RUN(printf_buffer_is_bounded);
  teardown();
  unsetenv("OFFLOAD_RS_PRINTF_BUFFER");
  setenv("OFFLOAD_RS_MEMCHECK", "1", 1);
  setup();
  RUN(memcheck_null_and_wild_stores_are_errors);
  RUN(memcheck_invalid_percent_s_is_a_report);
  RUN(memcheck_trap_is_an_error);
  teardown();
  unsetenv("OFFLOAD_RS_MEMCHECK");
  setenv("OFFLOAD_RS_KERNEL_TIMEOUT", "0.5", 1);
  setup();
  RUN(time_limit_stops_endless_kernels);
  RUN(time_limit_ends_a_group_waiting_for_a_trap);
  RUN(long_finite_loops_are_exact);
  RUN(time_limit_stops_an_endless_constructor);
  RUN(printf_two_calls_around_a_barrier);
  RUN(assert_between_barriers);
  RUN(shutdown_with_an_endless_kernel_returns);
  teardown();
  unsetenv("OFFLOAD_RS_KERNEL_TIMEOUT");
  unlink(perf_map); // (written by every load of this process: the variable is read once)
  return t_finish();
}
