// The JIT as a compile service (issue 13), per process: what a new process pays to create bench.c's program
// with our disk cache cold and warm, beside PoCL 3.1 building the same kernels (saxpy_reduce.cl, bench.cl)
// with its default kernel cache cold and warm; and what a cold compile costs from a client with 4 GiB resident that a thread keeps writing,
// against the same compile from a small client (the old fork()-per-compile grew with the client).
//
//   make lib && bash bench/build.sh && build/bench/jit_process [runs, default 5]
//
// Each measurement is a fresh process (this program again: JIT_PROCESS_CHILD=<case>), timed by the parent
// from posix_spawn to exit; the figure is the median of `runs`. Cold: an empty cache directory per run
// (OFFLOAD_RS_JIT_CACHE_DIR / POCL_CACHE_DIR); warm: the directory a first run filled.
// JIT_PROCESS_NO_WRITER=1 JIT_PROCESS_CHILD=big|small OFFLOAD_RS_JIT_CACHE_DIR=off build/bench/jit_process: one
// compile without the writer thread (to tell resident size from memory traffic).
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/mman.h>

#include "bench.h"

extern char **environ;

static double now_ms(void) { return now_ns() / 1e6; }

// bench.c's program (the bitcode bench/build.sh built).
static void *bench_image(size_t *n) {
  char path[512];
  return read_file(kernel_path(path, sizeof path, "bench.nvptx64.bc"), n);
}

// olInit and the CPU device, with bench.c's image in *img; NULL when olInit fails or there is no CPU device.
static ol_device_handle_t open_cpu(void **img, size_t *n) {
  *img = bench_image(n);
  return olInit() ? NULL : find_device(0x100);
}

static int ours_create(void) {
  size_t n;
  void *img;
  ol_device_handle_t cpu = open_cpu(&img, &n);
  ol_program_handle_t p;
  ol_result_t r = cpu ? olCreateProgram(cpu, img, n, &p) : NULL;
  if (!cpu || r) {
    fprintf(stderr, "olCreateProgram: %s\n", r ? r->Details : "no CPU device");
    return 3;
  }
  olDestroyProgram(p);
  olShutDown();
  return 0;
}

static int pocl_create(void) {
  const char *src[2];
  cl_read_sources("bench.cl", src);
  cl_platform_id plat;
  cl_device_id dev;
  cl_int err;
  if (clGetPlatformIDs(1, &plat, NULL) || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
    return 4;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cl_program prog = clCreateProgramWithSource(ctx, 2, src, NULL, &err);
  if (err || clBuildProgram(prog, 1, &dev, SUITE_CL_OPTIONS, NULL, NULL))
    return 4;
  cl_kernel k = clCreateKernel(prog, "saxpy", &err); // PoCL compiles the kernel for the device here
  if (err)
    return 4;
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseContext(ctx);
  return 0;
}

static volatile int stop_writer;
static size_t g_len;
static void *writer(void *mem) {
  size_t len = g_len;
  struct timespec pause = {0, 100 * 1000};
  // every page over and over, 256 KiB per 100 us (at most ~2.5 GB/s): the page faults a fork would
  // cost, without taking a whole core from the compile on a small machine
  for (uint64_t round = 1; !stop_writer; round++)
    for (size_t i = 0; i < len && !stop_writer; i += 4096) {
      ((volatile uint64_t *)mem)[i / 8] = round;
      if ((i / 4096) % 64 == 63)
        nanosleep(&pause, NULL);
    }
  return NULL;
}

// The compile alone (cache off), timed inside the process, while a thread writes the client's memory:
// 4 GiB resident (`big`) or 64 MiB, the same writer either way (so both compete for the CPU alike).
static int compile_in(bool big) {
  pthread_t t;
  g_len = big ? (size_t)4 << 30 : (size_t)64 << 20;
  void *mem = mmap(NULL, g_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return 5;
  memset(mem, 1, g_len);
  if (!getenv("JIT_PROCESS_NO_WRITER"))
    pthread_create(&t, NULL, writer, mem);
  size_t n;
  void *img;
  ol_device_handle_t cpu = open_cpu(&img, &n);
  // A first compile starts the helper; the second is timed (the cache is off and destroying the program
  // dropped its in-memory entry, so it compiles again).
  ol_program_handle_t p;
  if (!cpu || olCreateProgram(cpu, img, n, &p))
    return 3;
  olDestroyProgram(p);
  double t0 = now_ms();
  if (olCreateProgram(cpu, img, n, &p))
    return 3;
  double ms = now_ms() - t0;
  olDestroyProgram(p);
  stop_writer = 1;
  if (!getenv("JIT_PROCESS_NO_WRITER"))
    pthread_join(t, NULL);
  printf("%.3f\n", ms);
  olShutDown();
  return 0;
}

static char self[1024];

// Runs this program as `child` with `var`=`val`; returns its wall time in ms (the child's own figure, if
// it prints one, in *inner).
static double run(const char *child, const char *var, const char *val, double *inner) {
  int fds[2];
  if (pipe(fds))
    exit(2);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  setenv("JIT_PROCESS_CHILD", child, 1);
  if (var)
    setenv(var, val, 1);
  char *argv[] = {self, NULL};
  pid_t pid;
  double t0 = now_ms();
  if (posix_spawn(&pid, self, &fa, NULL, argv, environ))
    exit(2);
  close(fds[1]);
  char buf[64] = {0};
  ssize_t k = read(fds[0], buf, sizeof buf - 1);
  int st;
  waitpid(pid, &st, 0);
  double ms = now_ms() - t0;
  close(fds[0]);
  posix_spawn_file_actions_destroy(&fa);
  if (var)
    unsetenv(var);
  unsetenv("JIT_PROCESS_CHILD");
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, "child %s failed (%d)\n", child, st);
    exit(3);
  }
  if (inner)
    *inner = k > 0 ? atof(buf) : 0;
  return ms;
}

int main(int argc, char **argv) {
  const char *child = getenv("JIT_PROCESS_CHILD");
  if (child)
    return strcmp(child, "ours") == 0    ? ours_create()
           : strcmp(child, "pocl") == 0  ? pocl_create()
           : strcmp(child, "small") == 0 ? compile_in(false)
           : strcmp(child, "big") == 0   ? compile_in(true)
                                         : 2;
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  if (runs < 1 || runs > 99)
    runs = 5;
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k <= 0)
    return 2;
  self[k] = 0;
  char root[] = "/tmp/offload-rs-bench-XXXXXX";
  if (!mkdtemp(root))
    return 2;
  double oc[99], ow[99], pc[99], pw[99], small[99], big[99], ip[99];
  char dir[256];
  for (int i = 0; i < runs; i++) {
    snprintf(dir, sizeof dir, "%s/ours-%d", root, i);
    oc[i] = run("ours", "OFFLOAD_RS_JIT_CACHE_DIR", dir, NULL);
    ow[i] = run("ours", "OFFLOAD_RS_JIT_CACHE_DIR", dir, NULL);
    setenv("OFFLOAD_RS_JIT_IN_PROCESS", "1", 1);
    ip[i] = run("ours", "OFFLOAD_RS_JIT_CACHE_DIR", "off", NULL);
    unsetenv("OFFLOAD_RS_JIT_IN_PROCESS");
    snprintf(dir, sizeof dir, "%s/pocl-%d", root, i);
    pc[i] = run("pocl", "POCL_CACHE_DIR", dir, NULL);
    pw[i] = run("pocl", "POCL_CACHE_DIR", dir, NULL);
    run("small", "OFFLOAD_RS_JIT_CACHE_DIR", "off", &small[i]);
    run("big", "OFFLOAD_RS_JIT_CACHE_DIR", "off", &big[i]);
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd))
    fprintf(stderr, "could not remove %s\n", root);
  double moc = median(oc, runs), mow = median(ow, runs), mpc = median(pc, runs), mpw = median(pw, runs);
  double ms = median(small, runs), mb = median(big, runs);
  printf("median of %d fresh processes each (ms, whole process: start, init, create, exit)\n", runs);
  printf("| measure | offload-rs | PoCL 3.1 | ours/PoCL |\n|---|---:|---:|---:|\n");
  printf("| create bench's program, disk cache cold | %.1f | %.1f | %.2f |\n", moc, mpc, moc / mpc);
  printf("| create bench's program, disk cache warm | %.1f | %.1f | %.2f |\n", mow, mpw, mow / mpw);
  printf("| create, no cache, LLVM in the calling process (OFFLOAD_RS_JIT_IN_PROCESS=1) | %.1f | | |\n",
         median(ip, runs));
  printf("compile (olCreateProgram, cache off, helper running), inside the process:\n");
  printf("| 64 MiB client, a thread writing it | 4 GiB resident, a thread writing it | big/small |\n");
  printf("|---:|---:|---:|\n");
  printf("| %.1f ms | %.1f ms | %.2f |\n", ms, mb, mb / ms);
  return 0;
}
