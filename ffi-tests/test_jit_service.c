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
#include <dlfcn.h>
#include <limits.h>
#include <poll.h>
#include <sys/prctl.h>
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

// Our helper processes: `offload-rs-jit serve <client>` whose environment carries JIT_SERVICE_MARK=<mark>.
static int helpers_marked(const char *mark_value, pid_t *out, int max) {
  char mark[64];
  snprintf(mark, sizeof mark, "JIT_SERVICE_MARK=%s", mark_value);
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

// This run's helpers.
static int helpers(pid_t *out, int max) {
  char mark[32];
  snprintf(mark, sizeof mark, "%d", (int)getpid());
  return helpers_marked(mark, out, max);
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

// ---- the client's descriptors, children and output (issue 22) ---------------------------------------

// Whether `fd` is open and names the file at `path` (same device and inode).
static bool fd_is(int fd, const char *path) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The client's own file: "client data\n", opened read-write at its start.
static int own_file(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0 && (write(fd, "client data\n", 12) != 12 || lseek(fd, 0, SEEK_SET) != 0))
    return -1;
  return fd;
}

// Still the client's file, with exactly its own content and position (nothing of ours written to it).
static bool untouched(int fd, const char *path) {
  char buf[64] = {0};
  struct stat st;
  return fd_is(fd, path) && lseek(fd, 0, SEEK_CUR) == 0 && fstat(fd, &st) == 0 && st.st_size == 12 &&
         pread(fd, buf, sizeof buf, 0) == 12 && memcmp(buf, "client data\n", 12) == 0;
}

// closefrom(3), as daemons and sandboxes do, then files of the client's own at the freed numbers.
static int child_closefrom(void) {
  const char *dir = getenv("JIT_SERVICE_DIR");
  if (which_of("seed_a") != VAL_A) // a helper is running, its socket open
    return 30;
  close_range(3, ~0u, 0);
  char path[8][600];
  int fds[8];
  for (int i = 0; i < 8; i++) {
    snprintf(path[i], sizeof path[i], "%s/own%d", dir, i);
    if ((fds[i] = own_file(path[i])) < 0)
      return 31;
  }
  if (which_of("seed_b") != VAL_B) // a new helper
    return 32;
  if (which_of("seed_a") != VAL_A)
    return 33;
  for (int i = 0; i < 8; i++)
    if (!untouched(fds[i], path[i])) {
      fprintf(stderr, "the client's fd %d (%s) was closed or written\n", fds[i], path[i]);
      return 34;
    }
  return 0;
}

// A dup2 of the client's own file over every socket the library holds (the helper's).
static int child_dup2(void) {
  const char *dir = getenv("JIT_SERVICE_DIR");
  if (which_of("seed_a") != VAL_A)
    return 40;
  char path[600];
  snprintf(path, sizeof path, "%s/dup2", dir);
  int mine = own_file(path);
  if (mine < 0)
    return 41;
  int over[64], n = 0;
  for (int fd = 3; fd < 4096 && n < 64; fd++) {
    char l[64], p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(p, l, sizeof l - 1);
    if (k > 0 && (l[k] = 0, strncmp(l, "socket:", 7) == 0) && dup2(mine, fd) == fd)
      over[n++] = fd;
  }
  if (n == 0)
    return 42; // no socket: no helper
  if (which_of("seed_b") != VAL_B)
    return 43;
  for (int i = 0; i < n; i++)
    if (!untouched(over[i], path)) {
      fprintf(stderr, "the client's fd %d (dup2'ed over the helper's socket) was closed or written\n", over[i]);
      return 44;
    }
  return untouched(mine, path) ? 0 : 45;
}

static volatile sig_atomic_t g_sigchld;
static void on_sigchld(int sig) {
  (void)sig;
  g_sigchld++;
}

// Zombie children of this process (state Z in /proc/<pid>/stat with our pid as parent); with `say`,
// every child on stderr.
static int children_of_mine(bool say) {
  DIR *d = opendir("/proc");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], buf[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *close_paren = strrchr(buf, ')');
    char state = 0;
    int ppid = 0;
    if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid()) {
      if (say)
        fprintf(stderr, "  child %s: %s\n", e->d_name, buf);
      n += state == 'Z';
    }
  }
  if (d)
    closedir(d);
  return n;
}

// A subreaper client (as PID 1 of a container is): after compiles, and a helper killed, its wait loop
// finds no child, it got no SIGCHLD and has no zombie.
static int child_subreaper(void) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
    return 50;
  signal(SIGCHLD, on_sigchld);
  if (which_of("seed_a") != VAL_A)
    return 51;
  char mark[32];
  snprintf(mark, sizeof mark, "%s", getenv("JIT_SERVICE_MARK"));
  pid_t pids[64];
  int n = helpers_marked(mark, pids, 64);
  if (n == 0)
    return 52;
  for (int i = 0; i < n; i++) // as a crash of LLVM would
    kill(pids[i], SIGKILL);
  usleep(100 * 1000);
  if (which_of("seed_b") != VAL_B) // the dead helper is replaced (and reaped)
    return 53;
  int st;
  errno = 0;
  pid_t w = waitpid(-1, &st, WNOHANG); // a "wait for all my children" loop's first step
  if (w != -1 || errno != ECHILD) {
    fprintf(stderr, "waitpid(-1) = %d (errno %d): the client has a child it did not make\n", (int)w, errno);
    children_of_mine(true);
    return 54;
  }
  if (g_sigchld) {
    fprintf(stderr, "%d SIGCHLD\n", (int)g_sigchld);
    return 55;
  }
  int z = children_of_mine(false);
  if (z) {
    fprintf(stderr, "%d zombie children\n", z);
    return 56;
  }
  return 0;
}

// Compiles, leaves a forked child (that never execs) behind holding copies of everything, and exits.
static int child_leaves_fork(void) {
  if (which_of("seed_a") != VAL_A)
    return 60;
  pid_t g = fork();
  if (g == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    dup2(null, 2);
    sleep(120);
    _exit(0);
  }
  printf("fork %d\n", (int)g);
  fflush(stdout);
  return g > 0 ? 0 : 61;
}

// Runs child `name` with stdout and stderr on a pipe and its own helper mark; returns its pid.
static pid_t spawn_piped(const char *name, const char *mark, int *rd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) // only 1 and 2 in the child
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  posix_spawn_file_actions_addclose(&fa, p[0]);
  char saved[32];
  snprintf(saved, sizeof saved, "%s", getenv("JIT_SERVICE_MARK"));
  setenv("JIT_SERVICE_MARK", mark, 1);
  setenv("JIT_SERVICE_CHILD", name, 1);
  char *argv[] = {g_self, NULL};
  pid_t pid = -1;
  if (posix_spawn(&pid, g_self, &fa, NULL, argv, environ) != 0)
    pid = -1;
  unsetenv("JIT_SERVICE_CHILD");
  setenv("JIT_SERVICE_MARK", saved, 1);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  *rd = p[0];
  return pid;
}

// Reads `fd` to end-of-file into buf; false when it is not there within `secs` (a watchdog, not a timing).
static bool read_to_eof(int fd, char *buf, size_t n, int secs) {
  size_t got = 0;
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, secs * 1000) <= 0)
      return false;
    ssize_t k = read(fd, buf + got, n - 1 - got);
    if (k <= 0) {
      buf[got] = 0;
      return k == 0;
    }
    got += (size_t)k;
    if (got == n - 1)
      got = 0;
  }
}

TEST(closefrom_then_compile_leaves_the_clients_files_alone) {
  NEED_CPU();
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  setenv("JIT_SERVICE_DIR", g_root, 1);
  char err[600];
  snprintf(err, sizeof err, "%s/closefrom.stderr", g_root);
  pid_t pid = spawn_child("closefrom", err, false);
  CHECK(pid > 0);
  int st = child_status(pid);
  CHECKF(st == 0, "closefrom(3) child exited %d (stderr in %s)", st, err);
}

TEST(dup2_over_the_helper_socket_leaves_the_clients_file_alone) {
  NEED_CPU();
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  setenv("JIT_SERVICE_DIR", g_root, 1);
  char err[600];
  snprintf(err, sizeof err, "%s/dup2.stderr", g_root);
  pid_t pid = spawn_child("dup2", err, false);
  CHECK(pid > 0);
  int st = child_status(pid);
  if (st == 42)
    SKIP("no compile helper socket (library built without its helper?)");
  CHECKF(st == 0, "dup2 child exited %d (stderr in %s)", st, err);
}

TEST(subreaper_client_has_no_helper_children_zombies_or_sigchld) {
  NEED_CPU();
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  char err[600], mark[32], saved[32];
  snprintf(err, sizeof err, "%s/subreaper.stderr", g_root);
  snprintf(mark, sizeof mark, "%d-subreaper", (int)getpid());
  snprintf(saved, sizeof saved, "%s", getenv("JIT_SERVICE_MARK"));
  setenv("JIT_SERVICE_MARK", mark, 1);
  pid_t pid = spawn_child("subreaper", err, false);
  setenv("JIT_SERVICE_MARK", saved, 1);
  CHECK(pid > 0);
  int st = child_status(pid);
  if (st == 52)
    SKIP("no compile helper process found");
  CHECKF(st == 0, "subreaper child exited %d (stderr in %s)", st, err);
}

TEST(client_output_reader_sees_eof_and_helpers_exit_with_the_client) {
  NEED_CPU();
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  char mark[32];
  snprintf(mark, sizeof mark, "%d-eof", (int)getpid());
  int rd = -1;
  pid_t pid = spawn_piped("leaves_fork", mark, &rd);
  CHECK(pid > 0);
  char out[4096];
  // $(client): end-of-file once the client has exited, although its forked child lives on
  bool eof = read_to_eof(rd, out, sizeof out, 60);
  close(rd);
  CHECK(child_status(pid) == 0);
  int grandchild = 0;
  const char *f = strstr(out, "fork ");
  if (f)
    grandchild = atoi(f + 5);
  CHECKF(eof, "no end-of-file on the client's output 60 s after it exited (a helper holds it)");
  // the helpers exit with the client, although the forked child still holds their sockets
  pid_t pids[64];
  int n = 0;
  for (int i = 0; i < 600 && (n = helpers_marked(mark, pids, 64)) > 0; i++)
    usleep(100 * 1000);
  if (grandchild > 0)
    kill(grandchild, SIGKILL);
  CHECKF(n == 0, "%d helpers of an exited client still running 60 s later", n);
}

// Loaded through a symlink (a Spack or Nix view, a module, a /usr/lib link): the helper beside the real
// file is found, so compiles run in a helper, not in the client.
static int child_symlink(void) {
  Dl_info info;
  if (!dladdr((void *)olInit, &info) || !strstr(info.dli_fname, "/symlib/"))
    return 70; // not loaded through the link
  if (which_of("seed_a") != VAL_A)
    return 71;
  pid_t pids[8];
  return helpers_marked(getenv("JIT_SERVICE_MARK"), pids, 8) > 0 ? 0 : 72;
}

TEST(helper_found_beside_the_real_library_behind_a_symlink) {
  NEED_CPU();
  Dl_info info;
  char real[PATH_MAX], link[600], dir[600];
  CHECK(dladdr((void *)olInit, &info) && realpath(info.dli_fname, real));
  snprintf(dir, sizeof dir, "%s/symlib", g_root);
  snprintf(link, sizeof link, "%s/libLLVMOffload.so.22.1", dir);
  mkdir(dir, 0700);
  unlink(link);
  CHECK(symlink(real, link) == 0);
  char err[600], mark[32], saved_mark[32];
  snprintf(err, sizeof err, "%s/symlink.stderr", g_root);
  snprintf(mark, sizeof mark, "%d-symlink", (int)getpid());
  snprintf(saved_mark, sizeof saved_mark, "%s", getenv("JIT_SERVICE_MARK"));
  const char *ld = getenv("LD_LIBRARY_PATH"), *helper = getenv("OFFLOAD_RS_JIT_HELPER");
  char *saved_ld = ld ? strdup(ld) : NULL, *saved_helper = helper ? strdup(helper) : NULL;
  setenv("LD_LIBRARY_PATH", dir, 1);
  unsetenv("OFFLOAD_RS_JIT_HELPER");
  setenv("JIT_SERVICE_MARK", mark, 1);
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  setenv("OFFLOAD_RS_DEBUG", "1", 1);
  pid_t pid = spawn_child("symlink", err, false);
  unsetenv("OFFLOAD_RS_DEBUG");
  setenv("JIT_SERVICE_MARK", saved_mark, 1);
  if (saved_ld)
    setenv("LD_LIBRARY_PATH", saved_ld, 1);
  else
    unsetenv("LD_LIBRARY_PATH");
  if (saved_helper)
    setenv("OFFLOAD_RS_JIT_HELPER", saved_helper, 1);
  free(saved_ld);
  free(saved_helper);
  CHECK(pid > 0);
  int st = child_status(pid);
  CHECKF(st == 0, "child loading the library through a symlink exited %d (stderr in %s)", st, err);
  CHECKF(count_in_file(err, "JIT helper unavailable") == 0, "no helper found through the symlink (stderr in %s)", err);
}

// Under an RLIMIT_FSIZE smaller than a cache entry the compile works and no entry is written (a write
// past the limit would end the client with SIGXFSZ).
static int child_fsize(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_FSIZE, &rl);
  rl.rlim_cur = 512; // a cache entry is a few KiB
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
    return 80;
  return which_of("seed_a") == VAL_A ? 0 : 81;
}

TEST(rlimit_fsize_below_an_entry_compiles_without_caching) {
  NEED_CPU();
  const char *dir = use_cache("fsize");
  char err[600];
  snprintf(err, sizeof err, "%s/fsize.stderr", g_root);
  pid_t pid = spawn_child("fsize", err, false);
  CHECK(pid > 0);
  int st = child_status(pid);
  CHECKF(st == 0, "child under RLIMIT_FSIZE=512 exited %d (stderr in %s; 153 is SIGXFSZ)", st, err);
  char path[1024];
  CHECKF(entries(dir, path, sizeof path) == 0, "an entry was written past RLIMIT_FSIZE: %s", path);
}

// ---- a client that never loads LLVM (issue 24) ---------------------------------------------------------

// Whether this process has a libLLVM mapped (libLLVM.so.22.1, libLLVM-22.so; not libLLVMOffload).
static bool llvm_mapped(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[1024];
  bool found = false;
  while (f && fgets(line, sizeof line, f))
    found |= strstr(line, "/libLLVM.so") != NULL || strstr(line, "/libLLVM-") != NULL;
  if (f)
    fclose(f);
  return found;
}

// olInit, olIsValidBinary, a compile in the helper, a disk-cache hit and the kernels' launches map no
// LLVM; the in-process module (OFFLOAD_RS_JIT_IN_PROCESS=1, asked for by JIT_SERVICE_MODULE=1) compiles
// the same programs, and only then is LLVM mapped.
static int child_no_llvm(void) {
  if (llvm_mapped())
    return 90;
  size_t n;
  void *img = t_load("seed_a", TGT, &n);
  bool valid = false;
  if (olIsValidBinary(t_cpu, img, n, &valid) != OL_SUCCESS || !valid)
    return 91;
  free(img);
  if (llvm_mapped())
    return 92;
  if (which_of("seed_a") != VAL_A || which_of("seed_b") != VAL_B)
    return 93; // (compiled by the helper, or a cache hit)
  if (llvm_mapped())
    return 94;
  // cold: the helper compiled; warm: no helper started at all (nor LLVM anywhere for this process)
  pid_t pids[8];
  int nh = helpers_marked(getenv("JIT_SERVICE_MARK"), pids, 8);
  if (getenv("JIT_SERVICE_WARM") ? nh != 0 : nh == 0)
    return 97;
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
  setenv("OFFLOAD_RS_JIT_IN_PROCESS", "1", 1);
  if (which_of("seed_b") != VAL_B || which_of("seed_a") != VAL_A)
    return 95;
  return llvm_mapped() ? 0 : 96;
}

TEST(the_library_maps_no_llvm_until_a_compile_runs_in_the_process) {
  NEED_CPU();
  char err[600];
  snprintf(err, sizeof err, "%s/nollvm.stderr", g_root);
  char mark[32], saved_mark[32];
  snprintf(saved_mark, sizeof saved_mark, "%s", getenv("JIT_SERVICE_MARK"));
  char dir[512];
  snprintf(dir, sizeof dir, "%s", use_cache("nollvm"));
  for (int round = 0; round < 2; round++) { // a cold cache (compiled by the helper), then a warm one
    snprintf(mark, sizeof mark, "%d-nollvm%d", (int)getpid(), round);
    setenv("JIT_SERVICE_MARK", mark, 1);
    setenv("OFFLOAD_RS_JIT_CACHE_DIR", dir, 1);
    if (round == 1)
      setenv("JIT_SERVICE_WARM", "1", 1);
    pid_t pid = spawn_child("no_llvm", err, false);
    CHECK(pid > 0);
    int st = child_status(pid);
    CHECKF(st == 0, "round %d: child exited %d (90-94: LLVM mapped without an in-process compile, 95: the module's "
                    "compile is wrong, 96: LLVM not mapped after it, 97: a helper started from a warm cache or none "
                    "from a cold one; stderr in %s)", round, st, err);
  }
  unsetenv("JIT_SERVICE_WARM");
  setenv("JIT_SERVICE_MARK", saved_mark, 1);
}

// No helper and no LLVM module: a compile is COMPILE_FAILURE saying so, a disk-cache hit still loads, the
// library stays usable; a file that is no module of ours (not ELF, or not ours) is refused the same way.
static int child_no_compiler(void) {
  size_t n;
  void *img = t_load("seed_a", TGT, &n);
  ol_program_handle_t p = NULL;
  ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
  free(img);
  if (r == OL_SUCCESS || r->Code != OL_ERRC_COMPILE_FAILURE)
    return 100;
  fprintf(stderr, "create: %s\n", r->Details ? r->Details : "");
  if (!r->Details || !strstr(r->Details, "no compile helper, and no in-process LLVM module"))
    return 101;
  void *mem = NULL;
  if (olMemAlloc(t_cpu, OL_ALLOC_TYPE_DEVICE, 64, &mem) != OL_SUCCESS || olMemFree(mem) != OL_SUCCESS)
    return 102;
  const char *hit = getenv("JIT_SERVICE_HIT_CACHE");
  if (hit) { // a program compiled before, found in the disk cache without any compiler
    setenv("OFFLOAD_RS_JIT_CACHE_DIR", hit, 1);
    if (which_of("seed_b") != VAL_B)
      return 103;
  }
  return 0;
}

TEST(no_helper_and_no_llvm_module_is_a_compile_failure_and_cached_programs_still_load) {
  NEED_CPU();
  const char *warm = use_cache("nocompiler-warm");
  char dir[512];
  snprintf(dir, sizeof dir, "%s", warm);
  CHECK(which_of("seed_b") == VAL_B); // an entry to hit
  char err[600], notours[600];
  snprintf(err, sizeof err, "%s/nocompiler.stderr", g_root);
  snprintf(notours, sizeof notours, "%s/not-a-module.so", g_root);
  sh("printf 'not an ELF file' > '%s'", notours);
  const char *helper = getenv("OFFLOAD_RS_JIT_HELPER");
  char *saved_helper = helper ? strdup(helper) : NULL;
  const char *modules[] = {"/nonexistent/liboffload-rs-llvm.so", notours, "/lib/x86_64-linux-gnu/libm.so.6"};
  setenv("OFFLOAD_RS_JIT_HELPER", "/nonexistent/offload-rs-jit", 1);
  setenv("JIT_SERVICE_HIT_CACHE", dir, 1);
  for (int i = 0; i < 3; i++) {
    setenv("OFFLOAD_RS_JIT_MODULE", modules[i], 1);
    setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 1);
    pid_t pid = spawn_child("no_compiler", err, false);
    CHECK(pid > 0);
    int st = child_status(pid);
    CHECKF(st == 0, "module %s: child exited %d (100: not COMPILE_FAILURE, 101: the text, 102: the library "
                    "unusable, 103: a cached program did not load; stderr in %s)", modules[i], st, err);
  }
  unsetenv("OFFLOAD_RS_JIT_MODULE");
  unsetenv("JIT_SERVICE_HIT_CACHE");
  if (saved_helper)
    setenv("OFFLOAD_RS_JIT_HELPER", saved_helper, 1);
  else
    unsetenv("OFFLOAD_RS_JIT_HELPER");
  free(saved_helper);
}

int main(void) {
  const char *child = getenv("JIT_SERVICE_CHILD");
  if (child) {
    t_init();
    int rc = !t_cpu                          ? 20
             : strcmp(child, "twenty") == 0 ? child_twenty()
             : strcmp(child, "sigint") == 0 ? child_sigint()
             : strcmp(child, "nproc") == 0  ? child_nproc()
             : strcmp(child, "closefrom") == 0 ? child_closefrom()
             : strcmp(child, "dup2") == 0 ? child_dup2()
             : strcmp(child, "subreaper") == 0 ? child_subreaper()
             : strcmp(child, "leaves_fork") == 0 ? child_leaves_fork()
             : strcmp(child, "symlink") == 0 ? child_symlink()
             : strcmp(child, "fsize") == 0 ? child_fsize()
             : strcmp(child, "no_llvm") == 0 ? child_no_llvm()
             : strcmp(child, "no_compiler") == 0 ? child_no_compiler()
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
  RUN(closefrom_then_compile_leaves_the_clients_files_alone);
  RUN(dup2_over_the_helper_socket_leaves_the_clients_file_alone);
  RUN(subreaper_client_has_no_helper_children_zombies_or_sigchld);
  RUN(client_output_reader_sees_eof_and_helpers_exit_with_the_client);
  RUN(helper_found_beside_the_real_library_behind_a_symlink);
  RUN(rlimit_fsize_below_an_entry_compiles_without_caching);
  RUN(the_library_maps_no_llvm_until_a_compile_runs_in_the_process);
  RUN(no_helper_and_no_llvm_module_is_a_compile_failure_and_cached_programs_still_load);
  olShutDown();
  sh("rm -rf '%s'", g_root);
  return t_finish();
}
