// What a short process pays to use the library (issue 24): a process that does nothing; one that calls
// olInit + olShutDown on our library and on LLVM 22's; one that creates bench.c's program from a warm disk
// cache (ours) beside PoCL 3.1 building the same kernels from its warm kernel cache.
//
//   make lib && bash bench/build.sh && build/bench/startup [runs, default 11]
//   STARTUP_BEFORE=<another build's libLLVMOffload.so.22.1> build/bench/startup: its rows beside ours
//
// Every figure is a fresh process (this program again, STARTUP_CHILD=<case>), timed by the parent from
// posix_spawn to its exit (wait4), with its peak resident size (ru_maxrss); median (min-max) of `runs`.
// This program links no offload library: each case dlopens the one it measures (RTLD_NOW, as a loader that
// links it pays the same relocations at start), so ours and LLVM's load alike.
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <spawn.h>
#include <sys/resource.h>

#include "bench.h" // (its OffloadAPI.h types and file helpers only: this program calls no ol* symbol directly)

extern char **environ;

static double now_ms(void) { return now_ns() / 1e6; }

static char g_self[1024], g_dir[1024]; // this program, its directory (build/bench)

// The entry points a case calls, from the library at `path` (LLVM 22's ABI).
struct ol {
  __typeof__(&olInit) init;
  __typeof__(&olShutDown) shutdown;
  __typeof__(&olIterateDevices) iterate;
  __typeof__(&olGetDeviceInfo) device_info;
  __typeof__(&olGetPlatformInfo) platform_info;
  __typeof__(&olCreateProgram) create;
  __typeof__(&olDestroyProgram) destroy;
};

static int open_ol(const char *path, struct ol *o) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return 0;
  }
  *(void **)&o->init = dlsym(h, "olInit");
  *(void **)&o->shutdown = dlsym(h, "olShutDown");
  *(void **)&o->iterate = dlsym(h, "olIterateDevices");
  *(void **)&o->device_info = dlsym(h, "olGetDeviceInfo");
  *(void **)&o->platform_info = dlsym(h, "olGetPlatformInfo");
  *(void **)&o->create = dlsym(h, "olCreateProgram");
  *(void **)&o->destroy = dlsym(h, "olDestroyProgram");
  return o->init && o->shutdown && o->iterate && o->device_info && o->platform_info && o->create && o->destroy;
}

static struct ol g_ol;
static ol_device_handle_t g_cpu;
static bool find_cpu(ol_device_handle_t dev, void *ud) {
  (void)ud;
  ol_platform_handle_t plat = NULL;
  uint32_t backend = 0; // our CPU backend is 0x100
  if (!g_ol.device_info(dev, OL_DEVICE_INFO_PLATFORM, sizeof plat, &plat) &&
      !g_ol.platform_info(plat, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend) && backend == 0x100) {
    g_cpu = dev;
    return false;
  }
  return true;
}

static int child_init(const char *lib) {
  if (!open_ol(lib, &g_ol) || g_ol.init())
    return 3;
  return g_ol.shutdown() ? 4 : 0;
}

static int child_create(const char *lib) {
  char path[1200];
  size_t n;
  void *img = read_file(kernel_path(path, sizeof path, "bench.nvptx64.bc"), &n);
  if (!open_ol(lib, &g_ol) || g_ol.init())
    return 3;
  g_ol.iterate(find_cpu, NULL);
  ol_program_handle_t p = NULL;
  ol_result_t r = g_cpu ? g_ol.create(g_cpu, img, n, &p) : NULL;
  if (!g_cpu || r) {
    fprintf(stderr, "olCreateProgram: %s\n", r ? r->Details : "no CPU device");
    return 5;
  }
  g_ol.destroy(p);
  return g_ol.shutdown() ? 4 : 0;
}

// PoCL builds bench.cl (+ saxpy_reduce.cl) as bench/jit_process.c does; libOpenCL is dlopened too.
static int child_pocl(void) {
  void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return 3;
#define CLFN(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(h, #name)
  CLFN(clGetPlatformIDs); CLFN(clGetDeviceIDs); CLFN(clCreateContext); CLFN(clCreateProgramWithSource);
  CLFN(clBuildProgram); CLFN(clCreateKernel); CLFN(clReleaseKernel); CLFN(clReleaseProgram); CLFN(clReleaseContext);
  const char *src[2];
  cl_read_sources("bench.cl", src);
  cl_platform_id plat;
  cl_device_id dev;
  cl_int err;
  if (p_clGetPlatformIDs(1, &plat, NULL) || p_clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
    return 4;
  cl_context ctx = p_clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cl_program prog = p_clCreateProgramWithSource(ctx, 2, src, NULL, &err);
  if (err || p_clBuildProgram(prog, 1, &dev, SUITE_CL_OPTIONS, NULL, NULL))
    return 4;
  cl_kernel k = p_clCreateKernel(prog, "saxpy", &err);
  if (err)
    return 4;
  p_clReleaseKernel(k);
  p_clReleaseProgram(prog);
  p_clReleaseContext(ctx);
  return 0;
}

struct run { double ms, mib; };

// One fresh process of `mode` (library `lib`): wall time and peak RSS; ms < 0 when it failed.
static struct run spawn_case(const char *mode, const char *lib) {
  setenv("STARTUP_CHILD", mode, 1);
  char *argv[] = {g_self, (char *)(lib ? lib : ""), NULL};
  pid_t pid;
  double t0 = now_ms();
  int rc = posix_spawn(&pid, g_self, NULL, NULL, argv, environ);
  unsetenv("STARTUP_CHILD");
  struct run r = {-1, 0};
  int st;
  struct rusage ru;
  if (rc || wait4(pid, &st, 0, &ru) != pid)
    return r;
  double t = now_ms() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, "%s %s: status %d\n", mode, lib ? lib : "", st);
    return r;
  }
  r.ms = t, r.mib = ru.ru_maxrss / 1024.0;
  return r;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct stat3 { double med, min, max; };
static struct stat3 stats(double *v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return (struct stat3){n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0], v[n - 1]};
}

#define MAXRUNS 101
struct row { const char *name, *mode, *lib; double ms[MAXRUNS], mib[MAXRUNS]; struct stat3 t, m; bool ok; };

int main(int argc, char **argv) {
  ssize_t k = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (k <= 0)
    return 2;
  g_self[k] = 0;
  snprintf(g_dir, sizeof g_dir, "%s", g_self);
  *strrchr(g_dir, '/') = 0;
  setenv("BENCH_KERNELS", g_dir, 0);
  const char *child = getenv("STARTUP_CHILD");
  if (child) {
    const char *lib = argc > 1 ? argv[1] : "";
    return !strcmp(child, "none") ? 0
           : !strcmp(child, "init") ? child_init(lib)
           : !strcmp(child, "create") ? child_create(lib)
           : !strcmp(child, "pocl") ? child_pocl()
                                     : 9;
  }
  int runs = argc > 1 ? atoi(argv[1]) : 11;
  if (runs < 1 || runs > MAXRUNS)
    runs = 11;
  char ours[1200], cache[1200], pocl_cache[1200];
  snprintf(ours, sizeof ours, "%s/../lib/libLLVMOffload.so.22.1", g_dir);
  const char *llvm = "/usr/lib/llvm-22/lib/libLLVMOffload.so.22.1";
  // warm caches of their own, filled by one process each first
  snprintf(cache, sizeof cache, "%s/startup-cache", g_dir);
  snprintf(pocl_cache, sizeof pocl_cache, "%s/startup-pocl-cache", g_dir);
  char cmd[2600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", cache, pocl_cache);
  if (system(cmd))
    return 2;
  setenv("OFFLOAD_RS_JIT_CACHE_DIR", cache, 1);
  setenv("POCL_CACHE_DIR", pocl_cache, 1);
  const char *before = getenv("STARTUP_BEFORE");
  if (spawn_case("create", ours).ms < 0 || spawn_case("pocl", NULL).ms < 0 ||
      (before && spawn_case("create", before).ms < 0))
    fprintf(stderr, "warming a cache failed\n");
  struct row rows[] = {
      {"a process that does nothing", "none", NULL},
      {"olInit + olShutDown, offload-rs", "init", ours},
      {"olInit + olShutDown, LLVM 22.1.8's library", "init", llvm},
      {"create bench's program, warm disk cache, offload-rs", "create", ours},
      {"the same kernels built from PoCL 3.1's warm cache", "pocl", NULL},
      {"olInit + olShutDown, STARTUP_BEFORE's library", "init", before},
      {"create, warm disk cache, STARTUP_BEFORE's library", "create", before},
  };
  int nrows = sizeof rows / sizeof rows[0] - (before ? 0 : 2);
  for (int i = 0; i < nrows; i++)
    rows[i].ok = true;
  for (int r = 0; r < runs; r++) // interleaved, so a busy moment touches every row alike
    for (int i = 0; i < nrows; i++) {
      struct run x = spawn_case(rows[i].mode, rows[i].lib);
      rows[i].ok &= x.ms >= 0;
      rows[i].ms[r] = x.ms, rows[i].mib[r] = x.mib;
    }
  printf("fresh processes, posix_spawn to exit; median (min-max) of %d\n", runs);
  printf("| process | ms | peak RSS MiB |\n|---|---:|---:|\n");
  for (int i = 0; i < nrows; i++) {
    if (!rows[i].ok) {
      printf("| %s | failed | |\n", rows[i].name);
      continue;
    }
    rows[i].t = stats(rows[i].ms, runs), rows[i].m = stats(rows[i].mib, runs);
    printf("| %s | %.2f (%.2f-%.2f) | %.1f (%.1f-%.1f) |\n", rows[i].name, rows[i].t.med, rows[i].t.min, rows[i].t.max,
           rows[i].m.med, rows[i].m.min, rows[i].m.max);
  }
  if (rows[1].ok && rows[2].ok)
    printf("olInit + olShutDown: ours/LLVM's %.2f (time), %.2f (peak RSS)\n", rows[1].t.med / rows[2].t.med,
           rows[1].m.med / rows[2].m.med);
  if (rows[3].ok && rows[4].ok)
    printf("warm create: ours/PoCL's %.3f (time), %.2f (peak RSS)\n", rows[3].t.med / rows[4].t.med,
           rows[3].m.med / rows[4].m.med);
  if (before && rows[5].ok && rows[6].ok)
    printf("ours/STARTUP_BEFORE's: init %.2f (time) %.2f (peak RSS), warm create %.2f (time) %.2f (peak RSS)\n",
           rows[1].t.med / rows[5].t.med, rows[1].m.med / rows[5].m.med, rows[3].t.med / rows[6].t.med,
           rows[3].m.med / rows[6].m.med);
  return 0;
}
