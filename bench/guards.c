// Guards on work-item ids on the CPU device (src/jit/llvm/lower.cpp, narrowToGuards and splitAtEqualities),
// each timed next to a peer of the same run that does the same work in a form narrowed before:
//
//   make lib && bash bench/build.sh && build/bench/guards
//
//   flat_tree_sum 16x16 the classic tree reduction (f < k) over the flat id f = tx + ty * 16 of 16x16
//                       groups (ffi-tests/kernels/flat_guards.c), peer: the same kernel on 256x1 groups
//   flat_reduce 16x16   two more tree reductions over the flat id, interleaved (f % 2k == 0 && f + k < n)
//                       and sequential (f < k && f + k < n), peer: the same on 256x1 groups
//   eq_guards64 16x16   equality guards on size_t (i64) indices (ffi-tests/kernels/eq_guards.c),
//                       peer: eq_guards, the same guards on uint32_t indices
//   eq_guards_bar 16x16 equality guards in the region loop after a barrier (no peer: compare builds)
//
// Each kernel runs 2 warm-ups, then 10 timed launch + sync; the best and the median are printed, generic
// (OFFLOAD_RS_JIT_SPECIALISE=0, in its own child process) and specialised to the group shape (the default).
// The kernels are read from $BENCH_KERNELS (default build/bench, bench/build.sh puts them there).
// The reductions' results are checked. Another build of the library is measured with
// LD_LIBRARY_PATH=<its lib dir> build/bench/guards (the same binary and kernels).
#define _GNU_SOURCE
#include "bench.h"

#define REPS 10
#define W 4096u
#define H 2048u

static ol_device_handle_t dev;
static ol_queue_handle_t q;

static ol_symbol_handle_t kernel(const char *path, const char *name) {
  size_t sz;
  void *bc = read_file(path, &sz);
  ol_program_handle_t prog;
  OL(olCreateProgram(dev, bc, sz, &prog));
  ol_symbol_handle_t k;
  OL(olGetSymbol(prog, name, OL_SYMBOL_KIND_KERNEL, &k));
  return k;
}

// Prints `<key>_best_ms` and `<key>_median_ms`.
static void timed(const char *key, ol_symbol_handle_t k, const void *args, size_t args_size, uint32_t gx,
                  uint32_t gy, uint32_t bx, uint32_t by) {
  ol_kernel_launch_size_args_t sz = {2, {gx, gy, 1}, {bx, by, 1}, 0};
  for (int i = 0; i < 2; i++)
    OL(olLaunchKernel(q, dev, k, args, args_size, &sz));
  OL(olSyncQueue(q));
  double v[REPS], best = 1e30;
  for (int i = 0; i < REPS; i++) {
    double t0 = now_ns();
    OL(olLaunchKernel(q, dev, k, args, args_size, &sz));
    OL(olSyncQueue(q));
    v[i] = (now_ns() - t0) / 1e6;
    best = v[i] < best ? v[i] : best;
  }
  printf("%s_best_ms %.3f\n%s_median_ms %.3f\n", key, best, key, median(v, REPS));
}

static void side(void) {
  char flat[512], eq[512];
  kernel_path(flat, sizeof flat, "flat_guards.nvptx64.bc");
  kernel_path(eq, sizeof eq, "eq_guards.nvptx64.bc");
  OL(olInit());
  dev = find_cpu_device();
  OL(olCreateQueue(dev, &q));
  uint32_t *in, *out;
  OL(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, W * H * sizeof(uint32_t), (void **)&in));
  OL(olMemAlloc(dev, OL_ALLOC_TYPE_DEVICE, W * H * sizeof(uint32_t), (void **)&out));
  for (uint32_t i = 0; i < W * H; i++)
    in[i] = i % 7;

  // 32768 groups of 256 over the W * H values: the flat group id is bx + by * 256
  ol_symbol_handle_t sum = kernel(flat, "flat_tree_sum"), red = kernel(flat, "flat_reduce");
  struct {
    const uint32_t *in;
    uint32_t *out;
  } ra = {in, out};
  const char *skeys[2] = {"flat_tree_sum_16x16", "flat_tree_sum_256x1"};
  for (int s = 0; s < 2; s++) {
    memset(out, 0xff, (W * H / 256) * sizeof(uint32_t));
    timed(skeys[s], sum, &ra, sizeof ra, 256, W * H / 256 / 256, s ? 256 : 16, s ? 1 : 16);
    for (uint32_t g = 0; g < W * H / 256; g += 97) {
      uint32_t want = 0;
      for (uint32_t i = 0; i < 256; i++)
        want += in[g * 256 + i];
      if (out[g] != want) {
        fprintf(stderr, "%s: group %u: %u, want %u\n", skeys[s], g, out[g], want);
        exit(5);
      }
    }
  }
  const char *rkeys[2] = {"flat_reduce_16x16", "flat_reduce_256x1"};
  for (int s = 0; s < 2; s++) {
    memset(out, 0xff, 2 * (W * H / 256) * sizeof(uint32_t));
    timed(rkeys[s], red, &ra, sizeof ra, 256, W * H / 256 / 256, s ? 256 : 16, s ? 1 : 16);
    for (uint32_t g = 0; g < W * H / 256; g += 97) {
      uint32_t want0 = 0, want1 = 0;
      for (uint32_t i = 0; i < 256; i++) {
        want0 += in[g * 256 + i];
        want1 += in[g * 256 + i] * 3 + 1;
      }
      if (out[2 * g] != want0 || out[2 * g + 1] != want1) {
        fprintf(stderr, "%s: group %u: %u %u, want %u %u\n", rkeys[s], g, out[2 * g], out[2 * g + 1], want0, want1);
        exit(5);
      }
    }
  }

  // equality guards on a W x H grid of 16x16 groups
  struct {
    uint32_t *out;
    uint64_t w, c;
  } a64 = {out, W, 100};
  timed("eq_guards64_16x16", kernel(eq, "eq_guards64"), &a64, sizeof a64, W / 16, H / 16, 16, 16);
  struct {
    uint32_t *out;
    uint32_t w, c;
  } a32 = {out, W, 100};
  timed("eq_guards_16x16", kernel(eq, "eq_guards"), &a32, sizeof a32, W / 16, H / 16, 16, 16);
  struct {
    const uint32_t *in;
    uint32_t *out;
    uint32_t w, c;
  } ab = {in, out, W, 100};
  timed("eq_guards_bar_16x16", kernel(eq, "eq_guards_bar"), &ab, sizeof ab, W / 16, H / 16, 16, 16);
  OL(olDestroyQueue(q));
  OL(olShutDown());
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "side")) {
    side();
    return 0;
  }
  struct side gen, spec;
  setenv("OFFLOAD_RS_JIT_SPECIALISE", "0", 1);
  int rg = run_child(argv[0], "side", "ours", &gen);
  unsetenv("OFFLOAD_RS_JIT_SPECIALISE");
  int rs = run_child(argv[0], "side", "ours", &spec);
  if (rg || rs) {
    fprintf(stderr, "a side failed (%d, %d)\n", rg, rs);
    return 1;
  }
  const char *ld = getenv("LD_LIBRARY_PATH");
  printf("Guards on work-item ids, CPU device (nvptx64 bitcode); library from LD_LIBRARY_PATH=%s (else the "
         "build's RUNPATH)\n%d timed launch + sync after 2 warm-ups; ms best / median\n",
         ld ? ld : "", REPS);
  printf("%-22s %-22s %-22s\n", "kernel", "generic", "specialised");
  const char *keys[] = {"flat_tree_sum_16x16", "flat_tree_sum_256x1", "flat_reduce_16x16", "flat_reduce_256x1",
                        "eq_guards64_16x16", "eq_guards_16x16", "eq_guards_bar_16x16"};
  for (int i = 0; i < 7; i++) {
    char b[64], m[64];
    snprintf(b, sizeof b, "%s_best_ms", keys[i]);
    snprintf(m, sizeof m, "%s_median_ms", keys[i]);
    printf("%-22s %8.3f / %-11.3f %8.3f / %-11.3f\n", keys[i], side_get(&gen, b), side_get(&gen, m),
           side_get(&spec, b), side_get(&spec, m));
  }
  const char *pairs[][2] = {{"flat_tree_sum_16x16", "flat_tree_sum_256x1"},
                            {"flat_reduce_16x16", "flat_reduce_256x1"},
                            {"eq_guards64_16x16", "eq_guards_16x16"}};
  for (int i = 0; i < 3; i++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "%s_best_ms", pairs[i][0]);
    snprintf(b, sizeof b, "%s_best_ms", pairs[i][1]);
    printf("%s / %s (best): generic %.3f, specialised %.3f\n", pairs[i][0], pairs[i][1],
           side_get(&gen, a) / side_get(&gen, b), side_get(&spec, a) / side_get(&spec, b));
  }
  return 0;
}
