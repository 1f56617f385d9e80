/* Call-cost benchmark: offload-rs's libLLVMOffload.so.22.1 against LLVM 22's, in one run.
 *
 *   bench/offload_calls OURS_LIB LLVM_LIB [iterations]
 *
 * Each library is dlopen()ed in its own child process (so the two copies of the ol* symbols never meet),
 * which measures:
 *   olGetDeviceInfo(NAME), olGetDeviceInfo(TYPE) on the virtual host device (the last device: the one device
 *   both libraries have, so both answer the same query), olGetDeviceInfo(PropSize = 0) (the
 *   error path: validation + interned error), olMemAlloc+olMemFree of 64 B (DEVICE) on the first device
 *   that is not the virtual host device (LLVM 22 crashes if asked to allocate on the host device, so with
 *   no GPU there is nothing to measure for LLVM: said so in the output), and a synchronous 64 B host-to-host
 *   olMemcpy (NULL queue, the host device on both sides: a plain memcpy in both libraries; ours first checks
 *   both ranges against the allocation table and the registered host ranges).
 * The parent prints ns/call for both and the ratio ours/LLVM; each figure but allocation's is the fastest of 10
 * blocks of iterations/10 calls (BEST_OF_BLOCKS). Timing only: not a test. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <OffloadAPI.h>

typedef ol_result_t (*init_fn)(void);
typedef ol_result_t (*iter_fn)(ol_device_iterate_cb_t, void *);
typedef ol_result_t (*info_fn)(ol_device_handle_t, ol_device_info_t, size_t, void *);
typedef ol_result_t (*alloc_fn)(ol_device_handle_t, ol_alloc_type_t, size_t, void **);
typedef ol_result_t (*free_fn)(void *);
typedef ol_result_t (*memcpy_fn)(ol_queue_handle_t, void *, ol_device_handle_t, const void *, ol_device_handle_t,
                                 size_t);

enum { M_NAME, M_TYPE, M_ERR, M_ALLOC, M_COPY, N_METRICS };
static const char *const METRIC[N_METRICS] = {"olGetDeviceInfo(NAME)", "olGetDeviceInfo(TYPE)",
                                              "olGetDeviceInfo(PropSize=0) error", "olMemAlloc+olMemFree 64 B",
                                              "olMemcpy host->host 64 B"};

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

typedef struct {
  ol_device_handle_t devs[64];
  int n;
} devs_t;
static bool collect(ol_device_handle_t d, void *ud) {
  devs_t *l = (devs_t *)ud;
  if (l->n < 64) l->devs[l->n++] = d;
  return true;
}

/* ns per call of STMT over ITERS calls, timed in BLOCKS blocks: the fastest block's (a busy machine's other
 * work lands in the slower blocks). */
enum { BLOCKS = 10 };
#define BEST_OF_BLOCKS(out, iters, stmt)                                                                     \
  do {                                                                                                       \
    long n_ = (iters) / BLOCKS > 0 ? (iters) / BLOCKS : 1;                                                   \
    double best_ = 1e300;                                                                                    \
    for (int b_ = 0; b_ < BLOCKS; b_++) {                                                                    \
      double t_ = now_ns();                                                                                  \
      for (long i_ = 0; i_ < n_; i_++) {                                                                     \
        stmt;                                                                                                \
      }                                                                                                      \
      t_ = (now_ns() - t_) / n_;                                                                             \
      if (t_ < best_) best_ = t_;                                                                            \
    }                                                                                                        \
    (out) = best_;                                                                                           \
  } while (0)

/* In the child: measure one library; write "metric ns" lines (ns < 0: not measurable) to fd. */
static int measure(const char *path, long iters, int fd) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    dprintf(fd, "error dlopen %s\n", dlerror());
    return 1;
  }
  init_fn init = (init_fn)dlsym(h, "olInit"), shut = (init_fn)dlsym(h, "olShutDown");
  iter_fn iter = (iter_fn)dlsym(h, "olIterateDevices");
  info_fn info = (info_fn)dlsym(h, "olGetDeviceInfo");
  alloc_fn alloc = (alloc_fn)dlsym(h, "olMemAlloc");
  free_fn mfree = (free_fn)dlsym(h, "olMemFree");
  memcpy_fn copy = (memcpy_fn)dlsym(h, "olMemcpy");
  if (!init || !shut || !iter || !info || !alloc || !mfree || !copy || init()) {
    dprintf(fd, "error symbols or olInit\n");
    return 1;
  }
  devs_t l = {{0}, 0};
  iter(collect, &l);
  ol_device_handle_t dev = l.devs[l.n - 1], alloc_dev = NULL;
  char name[256];
  for (int i = 0; i < l.n; i++) {
    uint32_t type = 0;
    info(l.devs[i], OL_DEVICE_INFO_TYPE, sizeof type, &type);
    if (type != OL_DEVICE_TYPE_HOST && !alloc_dev) alloc_dev = l.devs[i];
  }
  info(dev, OL_DEVICE_INFO_NAME, sizeof name, name);
  dprintf(fd, "device %s\n", name);
  double t;
  uint32_t type;
  for (int warm = 0; warm < 1000; warm++) info(dev, OL_DEVICE_INFO_NAME, sizeof name, name);
  BEST_OF_BLOCKS(t, iters, info(dev, OL_DEVICE_INFO_NAME, sizeof name, name));
  dprintf(fd, "%d %f\n", M_NAME, t);
  BEST_OF_BLOCKS(t, iters, info(dev, OL_DEVICE_INFO_TYPE, sizeof type, &type));
  dprintf(fd, "%d %f\n", M_TYPE, t);
  BEST_OF_BLOCKS(t, iters, info(dev, OL_DEVICE_INFO_NAME, 0, name));
  dprintf(fd, "%d %f\n", M_ERR, t);
  if (alloc_dev) {
    long n = iters / 10 ? iters / 10 : 1;
    void *p;
    t = now_ns();
    for (long i = 0; i < n; i++) {
      if (alloc(alloc_dev, OL_ALLOC_TYPE_DEVICE, 64, &p) || mfree(p)) {
        dprintf(fd, "%d -2\n", M_ALLOC);
        n = 0;
        break;
      }
    }
    if (n) dprintf(fd, "%d %f\n", M_ALLOC, (now_ns() - t) / n);
  } else {
    dprintf(fd, "%d -1\n", M_ALLOC);
  }
  static char src[64], dst[64];
  BEST_OF_BLOCKS(t, iters, copy(NULL, dst, dev, src, dev, sizeof dst));
  dprintf(fd, "%d %f\n", M_COPY, t);
  shut();
  return 0;
}

static int run_child(const char *path, long iters, double out[N_METRICS], char *device, size_t devsz) {
  int p[2];
  if (pipe(p)) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    _exit(measure(path, iters, p[1]));
  }
  close(p[1]);
  FILE *f = fdopen(p[0], "r");
  char line[512];
  for (int i = 0; i < N_METRICS; i++) out[i] = -3;
  while (fgets(line, sizeof line, f)) {
    int m;
    double v;
    if (strncmp(line, "device ", 7) == 0) {
      snprintf(device, devsz, "%.200s", line + 7);
      device[strcspn(device, "\n")] = 0;
    } else if (strncmp(line, "error", 5) == 0) {
      fprintf(stderr, "%s: %s", path, line);
    } else if (sscanf(line, "%d %lf", &m, &v) == 2 && m >= 0 && m < N_METRICS) {
      out[m] = v;
    }
  }
  fclose(f);
  int st;
  waitpid(pid, &st, 0);
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static const char *why(double v, bool is_llvm) {
  return v == -1 ? (is_llvm ? "n/a: only the virtual host device (no GPU); LLVM 22 cannot allocate there (it crashes)"
                            : "n/a: only the virtual host device (olMemAlloc there is UNSUPPORTED); no CPU device in this build")
         : v == -2 ? "n/a: olMemAlloc failed"
                   : "n/a: not measured";
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OURS_LIB LLVM_LIB [iterations]\n", argv[0]);
    return 2;
  }
  long iters = argc > 3 ? atol(argv[3]) : 1000000;
  double ours[N_METRICS], llvm[N_METRICS];
  char dev_ours[256] = "?", dev_llvm[256] = "?";
  int rc = run_child(argv[1], iters, ours, dev_ours, sizeof dev_ours);
  rc |= run_child(argv[2], iters, llvm, dev_llvm, sizeof dev_llvm);
  printf("offload call costs, %ld iterations (allocation: %ld), one process per library\n", iters,
         iters / 10 ? iters / 10 : 1);
  printf("  ours: %s (info queries on: %s)\n  LLVM: %s (info queries on: %s)\n\n", argv[1], dev_ours, argv[2], dev_llvm);
  printf("%-36s %14s %14s %12s\n", "call", "ours ns/call", "LLVM ns/call", "ours/LLVM");
  for (int m = 0; m < N_METRICS; m++) {
    char a[64], b[64], r[32] = "-";
    if (ours[m] >= 0) snprintf(a, sizeof a, "%.1f", ours[m]);
    else snprintf(a, sizeof a, "n/a");
    if (llvm[m] >= 0) snprintf(b, sizeof b, "%.1f", llvm[m]);
    else snprintf(b, sizeof b, "n/a");
    if (ours[m] > 0 && llvm[m] > 0) snprintf(r, sizeof r, "%.2fx", ours[m] / llvm[m]);
    printf("%-36s %14s %14s %12s\n", METRIC[m], a, b, r);
  }
  if (ours[M_ALLOC] < 0) printf("\n  ours, allocation: %s\n", why(ours[M_ALLOC], false));
  if (llvm[M_ALLOC] < 0) printf("  LLVM, allocation: %s\n", why(llvm[M_ALLOC], true));
  return rc;
}
