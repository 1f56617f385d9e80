// The JIT cache (issue: programs, symbols and the JIT): cold compile vs. creating a program from bytes
// already compiled, and memory over 1000 create/destroy cycles. Peer in the same run: LLVM 22 has no
// cache at all (it recompiles on every olCreateProgram), so the cold figure is also what every create
// costs there.
//
//   make lib && bash bench/build.sh && build/bench/program_cache
#include <stdbool.h>
#include <OffloadAPI.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OL(call)                                                                                    \
  do {                                                                                              \
    ol_result_t r_ = (call);                                                                        \
    if (r_) {                                                                                       \
      fprintf(stderr, "%s failed: %d %s\n", #call, r_->Code, r_->Details);                          \
      exit(3);                                                                                      \
    }                                                                                               \
  } while (0)

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static long rss_kib(void) {
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
      rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static ol_device_handle_t cpu;
static bool find_cpu(ol_device_handle_t d, void *u) {
  (void)u;
  ol_platform_handle_t p;
  uint32_t b = 0;
  if (!olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) &&
      !olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b) && b == 0x100) {
    cpu = d;
    return false;
  }
  return true;
}

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*n);
  if (fread(p, 1, *n, f) != *n)
    exit(2);
  fclose(f);
  return p;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "build/bench/bench.nvptx64.bc";
  int cycles = argc > 2 ? atoi(argv[2]) : 1000;
  size_t n;
  void *img = read_file(path, &n);
  // the in-memory cache alone: every "cold" figure is a compile (the disk cache is bench/jit_process.c's)
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 0);
  OL(olInit());
  OL(olIterateDevices(find_cpu, NULL));
  if (!cpu) {
    fprintf(stderr, "no CPU device\n");
    return 1;
  }
  ol_program_handle_t pinned, p;
  double t0 = now_ns();
  OL(olCreateProgram(cpu, img, n, &pinned));
  double cold = now_ns() - t0;
  // warm: the same bytes while a program from them is alive (a cache hit: load a fresh instance)
  double warm_best = 1e18, warm_sum = 0;
  for (int i = 0; i < 100; i++) {
    t0 = now_ns();
    OL(olCreateProgram(cpu, img, n, &p));
    double t = now_ns() - t0;
    OL(olDestroyProgram(p));
    warm_sum += t;
    if (t < warm_best)
      warm_best = t;
  }
  long rss0 = rss_kib();
  for (int i = 0; i < cycles; i++) {
    OL(olCreateProgram(cpu, img, n, &p));
    ol_symbol_handle_t k;
    OL(olGetSymbol(p, "saxpy", OL_SYMBOL_KIND_KERNEL, &k));
    OL(olDestroyProgram(p));
  }
  long rss1 = rss_kib();
  OL(olDestroyProgram(pinned));
  // evicted: with no live program the entry is gone, so each create compiles again (as LLVM 22 always does)
  int evict_cycles = cycles / 20 > 0 ? cycles / 20 : 1;
  long rss2 = rss_kib();
  t0 = now_ns();
  for (int i = 0; i < evict_cycles; i++) {
    OL(olCreateProgram(cpu, img, n, &p));
    OL(olDestroyProgram(p));
  }
  double evicted = (now_ns() - t0) / evict_cycles;
  long rss3 = rss_kib();
  for (int i = 0; i < evict_cycles; i++) {
    OL(olCreateProgram(cpu, img, n, &p));
    OL(olDestroyProgram(p));
  }
  long rss4 = rss_kib();
  printf("image: %s (%zu bytes)\n", path, n);
  printf("cold olCreateProgram (JIT compile)           %10.0f us\n", cold / 1e3);
  printf("warm olCreateProgram (cache hit), mean       %10.1f us   best %.1f us\n", warm_sum / 100 / 1e3, warm_best / 1e3);
  printf("cold / warm (mean)                           %10.0fx\n", cold / (warm_sum / 100));
  printf("create+getSymbol+destroy x%d (cache hits): RSS %ld -> %ld KiB (%+ld KiB)\n", cycles, rss0, rss1, rss1 - rss0);
  printf("create+destroy after eviction (recompiles), mean %.0f us\n", evicted / 1e3);
  printf("  x%d: RSS %ld -> %ld KiB (%+ld KiB); next x%d: %ld -> %ld KiB (%+ld KiB)\n", evict_cycles, rss2, rss3,
         rss3 - rss2, evict_cycles, rss3, rss4, rss4 - rss3);
  OL(olShutDown());
  free(img);
  return 0;
}
