// The JIT as a compile service, as a client notices it (issue 13): compiles run in a helper process that
// the library starts with posix_spawn (no fork of the client: no atfork handlers, the client's signal and
// atexit handlers run once, a process limit only moves the compile into the caller), a killed helper costs
// one compile, and the disk cache returns the right program or nothing, whatever is planted in it.
//
// Some cases run in a child process (this program again, JIT_SERVICE_CHILD=<case>) so that they own the
// process state they test: its stderr, its signal handlers, its process limit.
#define _GNU_SOURCE // memmem
#include "ol_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define VAL_A 0xAAAA0001u
#define VAL_B 0xBBBB0002u
static const char *TGT = "nvptx64";
static char g_root[256]; // scratch directory of this run
static char g_self[1024];

// ---- helpers --------------------------------------------------------------------------------------------

static void sh(const char *fmt, const char *arg) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, arg);
  if (system(cmd) != 0)
    fprintf(stderr, "(command failed: %s)\n", cmd);
}

// OFFLOAD_RS_JIT_CACHE_DIR = <scratch>/<name>, removed first (the library creates it).
static const char *use_cache(const char *name) {
  static char dir[512];
  snprintf(dir, sizeof dir, "%s/%s", g_root, name);
  sh("rm -rf '%s'", dir);
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", dir, 1);
  return dir;
}

static ol_program_handle_t make(const char *image) { return t_create(t_cpu, image, TGT); }

// Which program runs when `image` is loaded (0 when it cannot be).
static uint32_t which_of(const char *image) {
  ol_program_handle_t p = make(image);
  if (!p)
    return 0;
  uint32_t v = t_seed_value(p);
  OK(olDestroyProgram(p));
  return v;
}

static bool is_entry_name(const char *n) {
  if (strlen(n) != 64)
    return false;
  for (const char *c = n; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
      return false;
  return true;
}

// Number of cache entries in `dir`; the last one's path in `path`.
static int entries(const char *dir, char *path, size_t n) {
  DIR *d = opendir(dir);
  int count = 0;
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));)
    if (is_entry_name(e->d_name)) {
      count++;
      if (path)
        snprintf(path, n, "%s/%s", dir, e->d_name);
    }
  closedir(d);
  return count;
}

// The entry `image` gets: compiled into a cache of its own. Returns its file name (no directory).
static const char *entry_of(const char *image) {
  static char name[2][80];
  static int k;
  char path[1024];
  const char *dir = use_cache(image);
  CHECK(which_of(image) == (strcmp(image, "seed_a") ? VAL_B : VAL_A));
  CHECK(entries(dir, path, sizeof path) == 1);
  k ^= 1;
  snprintf(name[k], sizeof name[k], "%s", strrchr(path, '/') + 1);
  return name[k];
}

static bool same_file_content(const char *a, const char *b) {
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
  return system(cmd) == 0;
}

// A cache holding seed_b's entry: `dir` and the entry's path.
static void cache_with_b(const char *name, char *dir, char *entry) {
  snprintf(dir, 512, "%s", use_cache(name));
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(entries(dir, entry, 1024) == 1);
}

static bool regular_and_ours(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
}

// ---- the disk cache -------------------------------------------------------------------------------------

TEST(cache_dir_private_and_reused) {
  NEED_CPU();
  char dir[512], e[1024];
  cache_with_b("reuse", dir, e);
  struct stat st;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  CHECK(regular_and_ours(e));
  struct stat before;
  CHECK(stat(e, &before) == 0);
  CHECK(which_of("seed_b") == VAL_B); // from the disk
  CHECK(entries(dir, NULL, 0) == 1);
}

TEST(wrong_key_entry_ignored) {
  NEED_CPU();
  char dir[512], eb[1024], ea[1100];
  cache_with_b("wrongkey", dir, eb);
  snprintf(ea, sizeof ea, "%s/%s", dir, entry_of("seed_a"));
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", dir, 1);
  // seed_a's entry (valid, checksum and all) copied to seed_b's name, as another user could
  char src[1100];
  snprintf(src, sizeof src, "%s/seed_a/%s", g_root, strrchr(ea, '/') + 1);
  char cmd[2400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, eb);
  CHECK(system(cmd) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(!same_file_content(src, eb)); // replaced by the right entry
}

TEST(stale_build_entry_ignored) {
  NEED_CPU();
  char dir[512], eb[1024];
  cache_with_b("stale", dir, eb);
  // the build id (bytes 44..108 of an entry) of another build
  int fd = open(eb, O_WRONLY);
  CHECK(fd >= 0);
  CHECK(pwrite(fd, "0000", 4, 44) == 4);
  close(fd);
  char copy[1100];
  snprintf(copy, sizeof copy, "%s/stale-copy", g_root);
  char cmd[2400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", eb, copy);
  CHECK(system(cmd) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(!same_file_content(copy, eb)); // recompiled and rewritten
}

TEST(symlinked_entry_ignored) {
  NEED_CPU();
  char dir[512], eb[1024], target[1100];
  cache_with_b("symlink", dir, eb);
  snprintf(target, sizeof target, "%s/symlink-target", g_root);
  CHECK(rename(eb, target) == 0);
  CHECK(symlink(target, eb) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(regular_and_ours(eb)); // not followed (a hit would have left the link), replaced
}

TEST(fifo_entry_ignored) {
  NEED_CPU();
  char dir[512], eb[1024];
  cache_with_b("fifo", dir, eb);
  CHECK(unlink(eb) == 0);
  CHECK(mkfifo(eb, 0600) == 0);
  alarm(300); // a hang fails the test instead of blocking CI
  CHECK(which_of("seed_b") == VAL_B);
  alarm(0);
  CHECK(regular_and_ours(eb));
}

TEST(oversized_entry_ignored) {
  NEED_CPU();
  char dir[512], eb[1024];
  cache_with_b("oversized", dir, eb);
  CHECK(truncate(eb, (off_t)300 << 20) == 0); // sparse, over the 256 MiB default cap
  CHECK(which_of("seed_b") == VAL_B);
  struct stat st;
  CHECK(stat(eb, &st) == 0 && st.st_size < (1 << 20));
}

TEST(corrupt_and_truncated_entries_ignored) {
  NEED_CPU();
  char dir[512], eb[1024];
  cache_with_b("corrupt", dir, eb);
  struct stat st;
  CHECK(stat(eb, &st) == 0);
  int fd = open(eb, O_RDWR);
  CHECK(fd >= 0 && pwrite(fd, "\xff\xff\xff\xff", 4, st.st_size / 2) == 4);
  close(fd);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(truncate(eb, st.st_size / 3) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(stat(eb, &st) == 0 && st.st_size > 200);
}

TEST(foreign_owned_entry_ignored) {
  NEED_CPU();
  if (geteuid() != 0)
    SKIP("needs root to give an entry to another user (nobody)");
  char dir[512], eb[1024];
  cache_with_b("foreign-entry", dir, eb);
  CHECK(chown(eb, 65534, 65534) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(regular_and_ours(eb)); // ignored, so recompiled and replaced by our own
}

TEST(foreign_owned_dir_not_used) {
  NEED_CPU();
  if (geteuid() != 0)
    SKIP("needs root to give a directory to another user (nobody)");
  const char *dir = use_cache("foreign-dir");
  CHECK(mkdir(dir, 0700) == 0 && chown(dir, 65534, 65534) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(entries(dir, NULL, 0) == 0);
}

TEST(group_or_world_writable_dir_not_used) {
  NEED_CPU();
  const char *dir = use_cache("world-writable");
  CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(entries(dir, NULL, 0) == 0);
  CHECK(chmod(dir, 0770) == 0);
  CHECK(which_of("seed_b") == VAL_B);
  CHECK(entries(dir, NULL, 0) == 0);
}

TEST(temp_name_symlink_leaves_target_untouched) {
  NEED_CPU();
  const char *key = entry_of("seed_b");
  char victim[1100];
  snprintf(victim, sizeof victim, "%s/victim", g_root);
  FILE *f = fopen(victim, "w");
  CHECK(f && fputs("the user's own file\n", f) >= 0);
  if (f)
    fclose(f);
  const char *dir = use_cache("tempname");
  CHECK(mkdir(dir, 0700) == 0);
  // every name a writer could predict: the old <key>.tmp.<pid>, <key>.tmp, <key>~
  const char *fmts[] = {"%s/%s.tmp.%d", "%s/%s.tmp", "%s/%s~"};
  for (int i = 0; i < 3; i++) {
    char link[1400];
    snprintf(link, sizeof link, fmts[i], dir, key, (int)getpid());
    CHECK(symlink(victim, link) == 0);
  }
  CHECK(which_of("seed_b") == VAL_B);
  char entry[1200];
  snprintf(entry, sizeof entry, "%s/%s", dir, key);
  CHECK(regular_and_ours(entry));
  f = fopen(victim, "r");
  char buf[64] = {0};
  CHECK(f && fgets(buf, sizeof buf, f));
  if (f)
    fclose(f);
  CHECK(strcmp(buf, "the user's own file\n") == 0);
}

// ---- the helper process ---------------------------------------------------------------------------------

static int g_prepare, g_parent, g_child;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void at_prepare(void) {
  g_prepare++;
  pthread_mutex_lock(&g_lock);
}
static void at_parent(void) {
  g_parent++;
  pthread_mutex_unlock(&g_lock);
}
static void at_child(void) {
  g_child++;
  pthread_mutex_unlock(&g_lock);
}

TEST(compile_while_holding_an_atfork_lock) {
  NEED_CPU();
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  pthread_atfork(at_prepare, at_parent, at_child);
  pthread_mutex_lock(&g_lock);
  ol_program_handle_t p = make("seed_b"); // used to deadlock: fork() ran at_prepare
  pthread_mutex_unlock(&g_lock);
  CHECK(p != NULL);
  if (p) {
    CHECK(t_seed_value(p) == VAL_B);
    OK(olDestroyProgram(p));
  }
  size_t n;
  void *img = t_load("seed_a", TGT, &n);
  bool valid = false;
  pthread_mutex_lock(&g_lock);
  OK(olIsValidBinary(t_cpu, img, n, &valid));
  pthread_mutex_unlock(&g_lock);
  free(img);
  CHECK(valid);
  CHECKF(g_prepare == 0 && g_parent == 0 && g_child == 0, "atfork handlers ran: %d %d %d", g_prepare, g_parent,
         g_child);
}

// Our helper processes: `offload-rs-jit detach-serve` (the server keeps the command line it was started
// with) whose environment carries this run's mark.
static int helpers(pid_t *out, int max) {
  char mark[64];
  snprintf(mark, sizeof mark, "JIT_SERVICE_MARK=%d", (int)getpid());
  DIR *d = opendir("/proc");
  int n = 0;
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d)) && n < max;) {
    char path[300], buf[65536];
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
      continue;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0 || !strstr(buf, "offload-rs-jit") || memmem(buf, (size_t)k, "serve", 6) == NULL)
      continue;
    snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
    fd = open(path, O_RDONLY);
    if (fd < 0)
      continue;
    k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k > 0 && memmem(buf, (size_t)k, mark, strlen(mark) + 1))
      out[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  return n;
}

static void *create_b(void *arg) {
  size_t n;
  void *img = t_load("seed_b", TGT, &n);
  ol_program_handle_t p = NULL;
  ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
  free(img);
  if (!r)
    olDestroyProgram(p);
  *(ol_result_t *)arg = r;
  return NULL;
}

TEST(helper_killed_mid_compile) {
  NEED_CPU();
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  CHECK(which_of("seed_a") == VAL_A); // a helper is running now
  pid_t pids[64];
  int n = helpers(pids, 64);
  if (n == 0)
    SKIP("no compile helper process found (library built without build/lib/offload-rs/offload-rs-jit?)");
  for (int i = 0; i < n; i++)
    kill(pids[i], SIGSTOP);
  ol_result_t r = NULL;
  pthread_t t;
  pthread_create(&t, NULL, create_b, &r);
  sleep(1); // the request is on its way to a stopped helper
  for (int i = 0; i < n; i++)
    kill(pids[i], SIGKILL);
  pthread_join(t, NULL);
  CHECKF(r && r->Code == OL_ERRC_COMPILE_FAILURE, "olCreateProgram with the helper killed: %s",
         r ? r->Details : "success");
  if (r)
    printf("  (%s)\n", r->Details);
  CHECK(which_of("seed_b") == VAL_B); // a new helper
  CHECK(which_of("seed_a") == VAL_A);
}

// ---- cases in a child process ---------------------------------------------------------------------------

// Runs this program with JIT_SERVICE_CHILD=<name> (its stderr to `err`, in its own process group when
// `pgrp`); returns its pid.
static pid_t spawn_child(const char *name, const char *err, bool pgrp) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  if (err)
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (pgrp) {
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  }
  setenv("JIT_SERVICE_CHILD", name, 1);
  char *argv[] = {g_self, NULL};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, g_self, &fa, &at, argv, environ);
  unsetenv("JIT_SERVICE_CHILD");
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  return rc == 0 ? pid : -1;
}

static int child_status(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count_in_file(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[4096];
  int n = 0;
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle))
      n++;
  fclose(f);
  return n;
}

static int g_fail;
static pthread_barrier_t g_bar;
static void *twenty_worker(void *arg) {
  const char *img = ((intptr_t)arg % 2) ? "seed_b" : "seed_a";
  size_t n;
  void *bytes = t_load(img, TGT, &n);
  ol_program_handle_t p = NULL;
  pthread_barrier_wait(&g_bar);
  if (olCreateProgram(t_cpu, bytes, n, &p))
    __atomic_add_fetch(&g_fail, 1, __ATOMIC_RELAXED);
  else {
    pthread_barrier_wait(&g_bar); // every program alive at once: one compiled object per key
    olDestroyProgram(p);
  }
  free(bytes);
  return NULL;
}

static int child_twenty(void) {
  pthread_t t[20];
  pthread_barrier_init(&g_bar, NULL, 20);
  for (intptr_t i = 0; i < 20; i++)
    pthread_create(&t[i], NULL, twenty_worker, (void *)i);
  for (int i = 0; i < 20; i++)
    pthread_join(t[i], NULL);
  return g_fail;
}

TEST(twenty_threads_share_one_compile_per_key) {
  NEED_CPU();
  char err[600];
  snprintf(err, sizeof err, "%s/twenty.stderr", g_root);
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  setenv("OFFLOAD_RS_JIT_TIME", "1", 1);
  pid_t pid = spawn_child("twenty", err, false);
  unsetenv("OFFLOAD_RS_JIT_TIME");
  CHECK(pid > 0);
  CHECK(child_status(pid) == 0);
  // OFFLOAD_RS_JIT_TIME prints one "object emitted" line per compile (in the helper, same stderr)
  int compiles = count_in_file(err, "object emitted");
  CHECKF(compiles == 2, "20 threads, 2 images: %d compiles (stderr in %s)", compiles, err);
}

static int g_pipe = -1;
static void on_sigint(int sig) {
  (void)sig;
  if (write(g_pipe, "H", 1) != 1)
    _exit(3);
  exit(0); // the client's choice: leave through exit(), running its atexit handlers
}
static void on_exit_handler(void) {
  if (write(g_pipe, "A", 1) != 1)
    _exit(3);
}

static int child_sigint(void) {
  g_pipe = atoi(getenv("JIT_SERVICE_FD"));
  signal(SIGINT, on_sigint);
  atexit(on_exit_handler);
  if (write(g_pipe, "C", 1) != 1)
    return 3;
  for (;;) { // compile until the signal arrives
    ol_program_handle_t p = make("seed_b");
    if (p)
      olDestroyProgram(p);
  }
}

TEST(client_sigint_and_atexit_handlers_run_once) {
  NEED_CPU();
  int fds[2];
  CHECK(pipe(fds) == 0);
  char fdtext[16];
  snprintf(fdtext, sizeof fdtext, "%d", fds[1]);
  setenv("JIT_SERVICE_FD", fdtext, 1);
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  pid_t pid = spawn_child("sigint", NULL, true);
  unsetenv("JIT_SERVICE_FD");
  close(fds[1]);
  CHECK(pid > 0);
  char c = 0;
  CHECK(read(fds[0], &c, 1) == 1 && c == 'C');
  usleep(300 * 1000); // inside a compile (or between two)
  kill(-pid, SIGINT); // the whole process group, as a terminal's Ctrl-C
  char buf[64] = {0};
  size_t got = 0;
  for (ssize_t k; got < sizeof buf - 1 && (k = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0;)
    got += (size_t)k;
  close(fds[0]);
  CHECK(child_status(pid) == 0);
  CHECKF(strcmp(buf, "HA") == 0, "handler/atexit output '%s' (expected HA: once each)", buf);
}

static int child_nproc(void) {
  size_t n;
  void *img = t_load("seed_b", TGT, &n);
  if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
    return 10;
  struct rlimit one = {1, 1};
  if (setrlimit(RLIMIT_NPROC, &one) != 0)
    return 11;
  bool valid = false;
  if (olIsValidBinary(t_cpu, img, n, &valid) || !valid)
    return 12;
  ol_program_handle_t p = NULL;
  ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
  if (r) {
    fprintf(stderr, "olCreateProgram: %s\n", r->Details);
    return 13;
  }
  ol_symbol_handle_t k = NULL;
  if (olGetSymbol(p, "get", OL_SYMBOL_KIND_KERNEL, &k))
    return 14;
  olDestroyProgram(p);
  free(img);
  return 0;
}

TEST(rlimit_nproc_compiles_in_process) {
  NEED_CPU();
  char err[600];
  snprintf(err, sizeof err, "%s/nproc.stderr", g_root);
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  setenv("OFFLOAD_RS_DEBUG", "1", 1);
  // LeakSanitizer's exit-time check needs a new process, which the limit forbids (ASan builds)
  const char *asan = getenv("ASAN_OPTIONS");
  char *saved = asan ? strdup(asan) : NULL, opts[1024];
  snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  pid_t pid = spawn_child("nproc", err, false);
  if (saved)
    setenv("ASAN_OPTIONS", saved, 1);
  else
    unsetenv("ASAN_OPTIONS");
  free(saved);
  unsetenv("OFFLOAD_RS_DEBUG");
  CHECK(pid > 0);
  int st = child_status(pid);
  CHECKF(st == 0, "child under RLIMIT_NPROC=1 exited %d (stderr in %s)", st, err);
  // the one line saying why (when the limit applied: it does not to a root that could not drop to nobody)
  int said = count_in_file(err, "compiling in the calling process");
  CHECKF(said <= 1, "%d fallback lines", said);
  if (said == 1)
    printf("  (the helper could not start; compiled in the calling process)\n");
}

int main(void) {
  const char *child = getenv("JIT_SERVICE_CHILD");
  if (child) {
    t_init();
    int rc = !t_cpu                          ? 20
             : strcmp(child, "twenty") == 0 ? child_twenty()
             : strcmp(child, "sigint") == 0 ? child_sigint()
             : strcmp(child, "nproc") == 0  ? child_nproc()
                                            : 21;
    olShutDown();
    return rc;
  }
  ssize_t k = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (k <= 0)
    return 2;
  g_self[k] = 0;
  snprintf(g_root, sizeof g_root, "%s", "/tmp/offload-rs-jit-service-XXXXXX");
  if (!mkdtemp(g_root))
    return 2;
  char mark[32];
  snprintf(mark, sizeof mark, "%d", (int)getpid());
  setenv("JIT_SERVICE_MARK", mark, 1);
  t_init();
  RUN(cache_dir_private_and_reused);
  RUN(wrong_key_entry_ignored);
  RUN(stale_build_entry_ignored);
  RUN(symlinked_entry_ignored);
  RUN(fifo_entry_ignored);
  RUN(oversized_entry_ignored);
  RUN(corrupt_and_truncated_entries_ignored);
  RUN(foreign_owned_entry_ignored);
  RUN(foreign_owned_dir_not_used);
  RUN(group_or_world_writable_dir_not_used);
  RUN(temp_name_symlink_leaves_target_untouched);
  RUN(compile_while_holding_an_atfork_lock);
  RUN(helper_killed_mid_compile);
  RUN(twenty_threads_share_one_compile_per_key);
  RUN(client_sigint_and_atexit_handlers_run_once);
  RUN(rlimit_nproc_compiles_in_process);
  olShutDown();
  sh("rm -rf '%s'", g_root);
  return t_finish();
}
