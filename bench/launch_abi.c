/* olLaunchKernel's 23.1 form (argument pointer array + sizes) against its 22.1 form (one packed buffer),
 * same kernel (add_args of ffi-tests/device/api23.c: int, long, double, byte, pointer), same library core.
 * Built twice by scripts/bench-launch-abi.sh: against LLVM 22's header with build/lib, and with -DABI23
 * against include/offload-23 with build/lib23. Prints ns per launch (enqueued on a queue, synced every 64). */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <OffloadAPI.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool first_cpu(ol_device_handle_t d, void *ud) {
  ol_platform_handle_t p;
  uint32_t b = 0;
  if (!olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) && !olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b) &&
      b == 0x100) {
    *(ol_device_handle_t *)ud = d;
    return false;
  }
  return true;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  long iters = argc > 2 ? atol(argv[2]) : 200000;
#ifdef ABI23
  if (olInit(NULL)) return 2;
#else
  if (olInit()) return 2;
#endif
  ol_device_handle_t dev = NULL;
  olIterateDevices(first_cpu, &dev);
  FILE *f = fopen(argv[1], "rb");
  if (!dev || !f) return 2;
  static unsigned char img[1 << 20];
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  ol_program_handle_t prog;
  ol_symbol_handle_t k;
  ol_queue_handle_t q;
  int64_t *out;
  if (olCreateProgram(dev, img, n, &prog) || olGetSymbol(prog, "add_args", OL_SYMBOL_KIND_KERNEL, &k) || olCreateQueue(dev, &q) ||
      olMemAlloc(dev, OL_ALLOC_TYPE_MANAGED, 16, (void **)&out))
    return 2;
  int32_t a = 5;
  int64_t b = 7;
  double c = 2.0;
  uint8_t d = 1;
  ol_kernel_launch_size_args_t la = {1, {1, 1, 1}, {1, 1, 1}, 0};
#ifdef ABI23
  void *ptrs[] = {&a, &b, &c, &d, &out};
  size_t sizes[] = {4, 8, 8, 1, 8};
#define LAUNCH() olLaunchKernel(q, dev, k, &la, NULL, 5, ptrs, sizes)
  const char *form = "23.1 (pointer array)";
#else
  struct { int32_t a; int64_t b; double c; uint8_t d; int64_t *out; } args = {a, b, c, d, out};
#define LAUNCH() olLaunchKernel(q, dev, k, &args, sizeof args, &la)
  const char *form = "22.1 (packed buffer)";
#endif
  for (int i = 0; i < 1000; i++) LAUNCH();
  olSyncQueue(q);
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
      if (LAUNCH()) return 3;
      if ((i & 63) == 63) olSyncQueue(q);
    }
    olSyncQueue(q);
    double ns = (now_ns() - t0) / iters;
    if (ns < best) best = ns;
  }
  printf("%-22s olLaunchKernel + 1/64 olSyncQueue: %.0f ns per launch (best of 5 x %ld); out = %lld\n", form, best, iters,
         (long long)out[0]);
  olMemFree(out);
  olDestroyQueue(q);
  olDestroyProgram(prog);
  olShutDown();
  return 0;
}
