// GPU-style kernels on the CPU device: each kernel built for nvptx64 and amdgcn, results checked exactly.
#include "ol_test.h"

#include "device/mixed.h"

static ol_program_handle_t progs[2];
static ol_queue_handle_t queue;

static ol_symbol_handle_t kern(int t, const char *name) { return t_kernel(progs[t], name); }

static void saxpy(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    const uint32_t n = 1000000;
    float *x = t_dalloc(n * 4), *y = t_dalloc(n * 4);
    for (uint32_t i = 0; i < n; i++) {
      x[i] = (float)(i % 1024);
      y[i] = 3.0f;
    }
    struct {
      float a;
      float *x, *y;
      uint32_t n;
    } args = {2.0f, x, y, n};
    ol_kernel_launch_size_args_t la = t_grid((n + 255) / 256, 1, 1, 256, 1, 1, 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "saxpy"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
      bad += y[i] != 2.0f * (float)(i % 1024) + 3.0f;
    CHECK(bad == 0);
    OK(olMemFree(x));
    OK(olMemFree(y));
  }
}

static void reduction_with_barriers(void) {
  NEED_CPU();
  uint32_t sizes[] = {64, 256, 1024, 32};
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < 4; s++) {
      uint32_t wg = sizes[s], groups = 97, n = wg * groups;
      uint32_t *in = t_dalloc(n * 4), *out = t_dalloc(groups * 4);
      for (uint32_t i = 0; i < n; i++)
        in[i] = i * 7 + 1;
      struct {
        uint32_t *in, *out;
      } args = {in, out};
      ol_kernel_launch_size_args_t la = t_grid(groups, 1, 1, wg, 1, 1, 0);
      OK(olLaunchKernel(queue, t_cpu, kern(t, "reduce"), &args, sizeof args, &la));
      OK(olSyncQueue(queue));
      for (uint32_t g = 0; g < groups; g++) {
        uint32_t want = 0;
        for (uint32_t k = 0; k < wg; k++)
          want += in[g * wg + k];
        CHECK(out[g] == want);
      }
      OK(olMemFree(in));
      OK(olMemFree(out));
    }
}

static void grid_2d(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t gx = 5, gy = 3, bx = 8, by = 4, w = gx * bx, h = gy * by;
    uint32_t *out = t_dalloc(w * h * 8);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(gx, gy, 1, bx, by, 1, 0);
    OK(olLaunchKernel(NULL, t_cpu, kern(t, "coords2d"), &args, sizeof args, &la));
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++)
        CHECK(out[2 * (y * w + x)] == x && out[2 * (y * w + x) + 1] == y);
    OK(olMemFree(out));
  }
}

static void grid_3d(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t g[3] = {3, 2, 4}, b[3] = {4, 3, 2};
    uint32_t w = g[0] * b[0], h = g[1] * b[1], d = g[2] * b[2];
    uint32_t *out = t_dalloc((size_t)w * h * d * 32);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(g[0], g[1], g[2], b[0], b[1], b[2], 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "coords3d"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    uint32_t bad = 0;
    for (uint32_t z = 0; z < d; z++)
      for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
          uint32_t *o = out + 8 * ((z * h + y) * w + x);
          bad += o[0] != x || o[1] != y || o[2] != z || o[3] != z % b[2] || o[4] != z / b[2] || o[5] != b[2] ||
                 o[6] != g[2] || o[7] != b[0] * b[1] * b[2];
        }
    CHECK(bad == 0);
    OK(olMemFree(out));
  }
}

static void dynamic_shared_memory(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t wg = 128, groups = 9, n = wg * groups;
    uint32_t *out = t_dalloc(n * 4);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(groups, 1, 1, wg, 1, 1, wg * 4);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "dynshared"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    for (uint32_t g = 0; g < groups; g++)
      for (uint32_t i = 0; i < wg; i++)
        CHECK(out[g * wg + i] == (g * wg + (wg - 1 - i)) * 3);
    OK(olMemFree(out));
  }
}

static void atomics_across_groups(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t groups = 500, wg = 64, n = groups * wg;
    uint32_t *counter = t_dalloc(4), *maxv = t_dalloc(4);
    uint64_t *sum = t_dalloc(8);
    struct {
      uint32_t *c, *m;
      uint64_t *s;
    } args = {counter, maxv, sum};
    ol_kernel_launch_size_args_t la = t_grid(groups, 1, 1, wg, 1, 1, 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "atomics"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    CHECK(*counter == n);
    CHECK(*maxv == n - 1);
    CHECK(*sum == (uint64_t)n * (n - 1) / 2);
    OK(olMemFree(counter));
    OK(olMemFree(maxv));
    OK(olMemFree(sum));
  }
}

static void struct_argument(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    int64_t *out = t_dalloc(8 * 8);
    int *pv = t_dalloc(4);
    *pv = -12345;
    struct {
      char c0;
      struct mixed m;
      short s2;
      int64_t *out;
    } args = {'A', {'z', 2.5, -300, pv, 1.5f}, 4242, out};
    ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 4, 1, 1, 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "structarg"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    CHECK(out[0] == 'A');
    CHECK(out[1] == 'z');
    CHECK(out[2] == 10);
    CHECK(out[3] == -300);
    CHECK(out[4] == -12345);
    CHECK(out[5] == 3);
    CHECK(out[6] == 4242);
    OK(olMemFree(out));
    OK(olMemFree(pv));
  }
}

static void divergent_no_barrier(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t wg = 96, groups = 7, n = wg * groups;
    uint32_t *out = t_dalloc(n * 4);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(groups, 1, 1, wg, 1, 1, 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "divergent"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    for (uint32_t g = 0; g < n; g++) {
      uint32_t tt = g % wg, want;
      if (tt % 3 == 0)
        want = g * 2;
      else if (tt % 3 == 1)
        want = tt * (tt - 1) / 2;
      else
        want = g ^ 0x5a5a;
      CHECK(out[g] == want);
    }
    OK(olMemFree(out));
  }
}

static void global_variable_kernels(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t *out = t_dalloc(64 * 4);
    ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 64, 1, 1, 0);
    OK(olLaunchKernel(queue, t_cpu, kern(t, "write_global"), NULL, 0, &la));
    void *args = out;
    OK(olLaunchKernel(queue, t_cpu, kern(t, "read_global"), &args, sizeof args, &la));
    OK(olSyncQueue(queue));
    for (uint32_t i = 0; i < 64; i++)
      CHECK(out[i] == 2 * i);
    OK(olLaunchKernel(NULL, t_cpu, kern(t, "read_ctor"), &args, sizeof args, &la));
    for (uint32_t i = 0; i < 64; i++)
      CHECK(out[i] == 100 + i);
    OK(olMemFree(out));
  }
}

static void early_exit(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    uint32_t n = 4 * 32;
    uint32_t *out = t_dalloc(n * 4);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(4, 1, 1, 32, 1, 1, 0);
    OK(olLaunchKernel(NULL, t_cpu, kern(t, "early_exit"), &args, sizeof args, &la));
    for (uint32_t i = 0; i < n; i++)
      CHECK(out[i] == ((i & 1) ? 0u : 7u));
    OK(olMemFree(out));
  }
}

// LLVM's argument convention is a naturally aligned struct; the UR adapter packs without padding.
static void packed_and_natural_arguments(void) {
  NEED_CPU();
  uint32_t *buf = t_dalloc(16 * 4);
  ol_symbol_handle_t k = kern(0, "sequence");
  ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 1, 1, 1, 0);
  for (uint32_t i = 0; i < 8; i++) {
    if (i % 2 == 0) {
      struct {
        uint32_t idx;
        uint32_t *p;
      } natural = {i, buf};
      OK(olLaunchKernel(queue, t_cpu, k, &natural, sizeof natural, &la));
    } else {
      unsigned char packed[12];
      memcpy(packed, &i, 4);
      memcpy(packed + 4, &buf, 8);
      OK(olLaunchKernel(queue, t_cpu, k, packed, sizeof packed, &la));
    }
  }
  OK(olSyncQueue(queue));
  uint32_t fib[8] = {0, 1, 1, 2, 3, 5, 8, 13};
  for (int i = 0; i < 8; i++)
    CHECK(buf[i] == fib[i]);
  unsigned char shortbuf[7] = {0};
  ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(queue, t_cpu, k, shortbuf, sizeof shortbuf, &la));
  ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(queue, t_cpu, k, NULL, 16, &la));
  OK(olMemFree(buf));
}

static void launch_errors(void) {
  NEED_CPU();
  ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 1, 1, 1, 0);
  ol_symbol_handle_t g = NULL;
  OK(olGetSymbol(progs[0], "global_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
  ERR(OL_ERRC_SYMBOL_KIND, olLaunchKernel(queue, t_cpu, g, NULL, 0, &la));
  ERR(OL_ERRC_INVALID_NULL_HANDLE, olLaunchKernel(queue, t_cpu, NULL, NULL, 0, &la));
  ERR(OL_ERRC_INVALID_NULL_POINTER, olLaunchKernel(queue, t_cpu, kern(0, "noargs"), NULL, 0, NULL));
  ERR(OL_ERRC_UNSUPPORTED, olLaunchKernel(NULL, t_host, kern(0, "noargs"), NULL, 0, &la));
  ol_kernel_launch_size_args_t huge = t_grid(1, 1, 1, 4096, 1, 1, 0);
  ERR(OL_ERRC_INVALID_ARGUMENT, olLaunchKernel(queue, t_cpu, kern(0, "noargs"), NULL, 0, &huge));
  ol_kernel_launch_size_args_t zero = t_grid(1, 1, 1, 0, 1, 1, 0);
  ol_result_t r = olLaunchKernel(queue, t_cpu, kern(0, "noargs"), NULL, 0, &zero);
  CHECK(r == NULL || r->Code == OL_ERRC_INVALID_ARGUMENT);
  OK(olSyncQueue(queue));
  size_t gs = 0;
  OK(olCalculateOptimalOccupancy(t_cpu, kern(0, "saxpy"), 0, &gs));
  CHECK(gs > 0);
  ERR(OL_ERRC_SYMBOL_KIND, olCalculateOptimalOccupancy(t_cpu, g, 0, &gs));
}

static void lanes(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t n;
    void *img = t_load("lanes", t_targets[t], &n);
    ol_program_handle_t p = NULL;
    ol_result_t r = olCreateProgram(t_cpu, img, n, &p);
    free(img);
    if (r) {
      // an unsupported lane operation must be a clear compile error, never a wrong result
      CHECK(r->Code == OL_ERRC_COMPILE_FAILURE || r->Code == OL_ERRC_UNSUPPORTED);
      printf("  lanes (%s) rejected: %s\n", t_targets[t], r->Details);
      continue;
    }
    ol_symbol_handle_t k = NULL;
    OK(olGetSymbol(p, "lanes", OL_SYMBOL_KIND_KERNEL, &k));
    uint32_t wg = 128;
    uint32_t *out = t_dalloc(wg * 16);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, wg, 1, 1, 0);
    OK(olLaunchKernel(NULL, t_cpu, k, &args, sizeof args, &la));
    uint32_t lanes = out[0];
    CHECK(lanes == 1 || lanes == 32 || lanes == 64);
    for (uint32_t i = 0; i < wg && lanes; i++) {
      uint32_t *o = out + 4 * i;
      CHECK(o[0] == lanes);
      CHECK(o[1] == i % lanes);
      CHECK(o[2] == i - i % lanes);   // lane 0's thread id
      CHECK(o[3] == (lanes < wg ? lanes : wg)); // every lane voted
    }
    OK(olMemFree(out));
    OK(olDestroyProgram(p));
  }
}

static void launch_on(ol_queue_handle_t q) {
  for (int rep = 0; rep < 10; rep++) {
    uint32_t *out = NULL;
    OK(olMemAlloc(t_cpu, OL_ALLOC_TYPE_MANAGED, 64 * 4, (void **)&out));
    if (!out)
      break;
    memset(out, 0xff, 64 * 4);
    void *args = out;
    ol_kernel_launch_size_args_t la = t_grid(1, 1, 1, 64, 1, 1, 0);
    OK(olLaunchKernel(q, t_cpu, kern(rep % 2, "foo"), &args, sizeof args, &la));
    OK(olSyncQueue(q));
    for (uint32_t i = 0; i < 64; i++)
      CHECK(out[i] == i);
    OK(olMemFree(out));
  }
}

static void twenty_threads_launching(void) {
  NEED_CPU();
  for (int own = 0; own < 2; own++)
    t_twenty_threads(launch_on, t_cpu, queue, own);
}

int main(void) {
  t_init();
  if (t_cpu) {
    for (int t = 0; t < 2; t++)
      progs[t] = t_create(t_cpu, "kernels", t_targets[t]);
    OK(olCreateQueue(t_cpu, &queue));
    if (!progs[0] || !progs[1] || !queue) {
      fprintf(stderr, "cannot set up the kernel tests\n");
      return 1;
    }
  }
  RUN(saxpy);
  RUN(reduction_with_barriers);
  RUN(grid_2d);
  RUN(grid_3d);
  RUN(dynamic_shared_memory);
  RUN(atomics_across_groups);
  RUN(struct_argument);
  RUN(divergent_no_barrier);
  RUN(global_variable_kernels);
  RUN(early_exit);
  RUN(packed_and_natural_arguments);
  RUN(launch_errors);
  RUN(lanes);
  RUN(twenty_threads_launching);
  if (t_cpu) {
    OK(olDestroyQueue(queue));
    OK(olDestroyProgram(progs[0]));
    OK(olDestroyProgram(progs[1]));
  }
  olShutDown();
  return t_finish();
}
