// 2-D tile kernels on the CPU device, where ol-prefetch-next-group fires (src/jit/llvm/prefetch_next_group.cpp),
// next to hand-written peers of the same run:
//
//   make lib && bash bench/build.sh && build/bench/tiles
//
//   transpose  the suite's (bench/kernels/suite.c), 4096 x 2048 floats (32 MiB) through a 16 x 16 shared
//              tile; peers: a memcpy of the same 32 MiB, and the suite's hand-written C loop
//              (bench/kernels/tiles_hand.c) with plain stores, with the next group's rows prefetched, and
//              with non-temporal stores of out's rows (the write side without reads for ownership); and the
//              fastest transpose we know how to write, the ceiling: whole tiles transposed in registers
//              (vector shuffles) and stored non-temporally
//   add_rows   c = a + b, 2048 x 4096 u32, on a grid whose x goes down the rows (ffi-tests/kernels/tiles.c;
//              no peer: compare runs)
//   stencil    the suite's 5-point stencil, 4096 x 2048 floats, whose next group is the next piece of the
//              same rows (the pass leaves it alone; no peer)
// Ours from nvptx64 and amdgcn bitcode (TILES_TARGET=nvptx64 or amdgcn for one). The pass's effect: run again
// with OFFLOAD_RS_JIT_LOWERING=-ol-prefetch-next-group. Threads: the CPU device's pool, the hand loops and
// memcpy as many (the affinity mask). 2 warm-ups, then TILES_REPS (20) timed launch + sync; best / median /
// max, and each kernel's result checked. The kernels are read from $BENCH_KERNELS (default build/bench).
#define _GNU_SOURCE
#include <sched.h>

#include "bench.h"

void tiles_hand_transpose(const uint32_t *in, uint32_t *out, uint32_t w, uint32_t h, int form, unsigned threads);

#define W 4096u
#define H 2048u
#define MAX_REPS 200

static int reps = 20;

static void report(const char *what, double *v) {
  qsort(v, reps, sizeof *v, cmp_double);
  printf("%-40s %7.2f / %7.2f / %7.2f\n", what, v[0] / 1e6, v[reps / 2] / 1e6, v[reps - 1] / 1e6);
}

static bool transposed(const float *in, const float *out) {
  for (uint32_t y = 0; y < H; y += 7)
    for (uint32_t x = 0; x < W; x += 5)
      if (out[(size_t)x * H + y] != in[(size_t)y * W + x])
        return false;
  return true;
}

static ol_program_handle_t program(ol_device_handle_t dev, const char *name, const char *target) {
  char path[512], bcname[64];
  snprintf(bcname, sizeof bcname, "%s.%s.bc", name, target);
  size_t sz;
  void *bc = read_file(kernel_path(path, sizeof path, bcname), &sz);
  ol_program_handle_t prog;
  OL(olCreateProgram(dev, bc, sz, &prog));
  free(bc);
  return prog;
}

static int ours(const char *target, float *in, uint32_t *b, float *out, ol_device_handle_t dev, ol_queue_handle_t q) {
  ol_program_handle_t suite = program(dev, "suite", target), tiles = program(dev, "tiles", target);
  int bad = 0;
  for (int k = 0; k < 3; k++) {
    static const char *const names[3] = {"transpose", "add_rows", "stencil"};
    ol_symbol_handle_t kern;
    OL(olGetSymbol(k == 1 ? tiles : suite, names[k], OL_SYMBOL_KIND_KERNEL, &kern));
    struct {
      void *in, *out;
      uint32_t w, h;
    } two = {in, out, W, H};
    struct {
      void *a, *b, *c;
      uint32_t rows, cols;
    } three = {in, b, out, H, W};
    const void *args = k == 1 ? (const void *)&three : (const void *)&two;
    size_t args_size = k == 1 ? sizeof three : sizeof two;
    ol_kernel_launch_size_args_t la = {2, {k == 1 ? H / 16 : W / 16, k == 1 ? W / 16 : H / 16, 1}, {16, 16, 1}, 0};
    memset(out, 0, (size_t)W * H * 4);
    for (int i = 0; i < 2; i++)
      OL(olLaunchKernel(q, dev, kern, args, args_size, &la));
    OL(olSyncQueue(q));
    double v[MAX_REPS];
    for (int i = 0; i < reps; i++) {
      double t0 = now_ns();
      OL(olLaunchKernel(q, dev, kern, args, args_size, &la));
      OL(olSyncQueue(q));
      v[i] = now_ns() - t0;
    }
    bool ok = k == 0 ? transposed(in, out) : true;
    for (size_t i = 1; k > 0 && i < (size_t)W * H - 1; i += 4099) {
      uint32_t x = i % W, y = i / W, ui, uo;
      memcpy(&ui, &in[i], 4);
      memcpy(&uo, &out[i], 4);
      if (k == 1)
        ok = ok && uo == ui + b[i];
      else
        ok = ok && out[i] == (x == 0 || y == 0 || x == W - 1 || y == H - 1
                                  ? in[i]
                                  : 4.0f * in[i] - in[i - W] - in[i + W] - in[i - 1] - in[i + 1]);
    }
    char what[64];
    snprintf(what, sizeof what, "ours %s %s%s", target, names[k], ok ? "" : " WRONG");
    report(what, v);
    bad += !ok;
  }
  OL(olDestroyProgram(suite));
  OL(olDestroyProgram(tiles));
  return bad;
}

int main(void) {
  reps = getenv("TILES_REPS") && atoi(getenv("TILES_REPS")) > 0 ? atoi(getenv("TILES_REPS")) : 20;
  reps = reps > MAX_REPS ? MAX_REPS : reps;
  cpu_set_t set;
  long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
  unsigned threads = cpus > 0 ? (unsigned)cpus : 1;
  char model[256], isa[64];
  cpu_info(model, sizeof model, isa, sizeof isa);
  printf("2-D tile kernels: offload-rs CPU device vs hand-written loops and memcpy\nCPU: %s, vector ISA: %s; %u "
         "threads\ncommand:",
         model, isa, threads);
  const char *vars[] = {"TILES_TARGET", "TILES_REPS", "OFFLOAD_RS_JIT_LOWERING"};
  for (unsigned i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i]))
      printf(" %s=%s", vars[i], getenv(vars[i]));
  printf(" build/bench/tiles\n%d timed runs after 2 warm-ups; ms best / median / max\n", reps);
  OL(olInit());
  ol_device_handle_t dev = find_cpu_device();
  ol_queue_handle_t q;
  OL(olCreateQueue(dev, &q));
  size_t bytes = (size_t)W * H * 4;
  float *in, *out;
  uint32_t *b;
  OL(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, bytes, (void **)&in));
  OL(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, bytes, (void **)&b));
  OL(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, bytes, (void **)&out));
  for (size_t i = 0; i < (size_t)W * H; i++) {
    in[i] = (float)(i % 4096); // small integers: the stencil is exact
    b[i] = (uint32_t)(i * 7 + 3);
  }
  int bad = 0;
  const char *only = getenv("TILES_TARGET");
  for (int t = 0; t < 2; t++) {
    const char *target = t ? "amdgcn" : "nvptx64";
    if (!only || !strcmp(only, target))
      bad += ours(target, in, b, out, dev, q);
  }
  double v[MAX_REPS];
  for (int i = -2; i < reps; i++) {
    double ns = bench_copy((char *)out, (const char *)in, bytes, threads);
    if (i >= 0)
      v[i] = ns;
  }
  report("memcpy of the 32 MiB", v);
  static const char *const forms[4] = {"hand transpose, plain stores", "hand transpose, next group prefetched",
                                       "hand transpose, non-temporal stores",
                                       "hand transpose, in registers, NT stores"};
  for (int form = 0; form < 4; form++) {
    memset(out, 0, bytes);
    for (int i = -2; i < reps; i++) {
      double t0 = now_ns();
      tiles_hand_transpose((const uint32_t *)in, (uint32_t *)out, W, H, form, threads);
      if (i >= 0)
        v[i] = now_ns() - t0;
    }
    bool ok = transposed(in, out);
    bad += !ok;
    char what[64];
    snprintf(what, sizeof what, "%s%s", forms[form], ok ? "" : " WRONG");
    report(what, v);
  }
  if (bad)
    fprintf(stderr, "FAILED: %d wrong results\n", bad);
  return bad != 0;
}
