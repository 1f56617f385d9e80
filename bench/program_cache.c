// The JIT cache (issue: programs, symbols and the JIT): cold compile vs. creating a program from bytes
// already compiled, and memory over 1000 create/destroy cycles. Peer in the same run: LLVM 22 has no
// cache at all (it recompiles on every olCreateProgram), so the cold figure is also what every create
// costs there.
//
//   make lib && bash bench/build.sh && build/bench/program_cache
#include "bench.h"

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

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "build/bench/bench.nvptx64.bc";
  int cycles = argc > 2 ? atoi(argv[2]) : 1000;
  size_t n;
  void *img = read_file(path, &n);
  // the in-memory cache alone: every "cold" figure is a compile (the disk cache is bench/jit_process.c's)
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", "off", 0);
  OL(olInit());
  ol_device_handle_t cpu = find_cpu_device();
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
