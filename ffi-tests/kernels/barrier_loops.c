// Loops with barriers whose trip count the group size decides (ol-unroll-barrier-loops unrolls them in a
// launch-time specialisation): a tree by halves from n / 2 (any n, odd halves included), a Hillis-Steele
// scan doubling up to n, a loop over the group's rows halving y (2-D groups, a step that is not a shift),
// and a loop over the group's warps of 32 (one work-item adds its warp's first value per trip). Integer
// data: every order gives the same sums, so the host's reference is exact.
#include <gpuintrin.h>
#include <stdint.h>

#define T __gpu_thread_id_x()
#define N __gpu_num_threads_x()
#define G (__gpu_block_id_x() * N + T)

// out[group] = the tree's s[0]; out2[G] = s[T] after the tree (what each step left behind)
__gpu_kernel void halves(const uint32_t *in, uint32_t *out, uint32_t *out2) {
  static __gpu_local uint32_t s[1024];
  s[T] = in[G];
  __gpu_sync_threads();
  for (uint32_t d = N / 2; d > 0; d >>= 1) {
    if (T < d)
      s[T] += s[T + d];
    __gpu_sync_threads();
  }
  if (T == 0)
    out[__gpu_block_id_x()] = s[0];
  out2[G] = s[T];
}

// inclusive prefix sums over the group
__gpu_kernel void doubling(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  s[T] = in[G];
  __gpu_sync_threads();
  for (uint32_t off = 1; off < N; off <<= 1) {
    uint32_t v = T >= off ? s[T - off] : 0;
    __gpu_sync_threads();
    s[T] += v;
    __gpu_sync_threads();
  }
  out[G] = s[T];
}

// 2-D groups: column sums, rows folded onto the upper half while more than one is left (h -> (h + 1) / 2)
__gpu_kernel void rows(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t s[1024];
  uint32_t x = __gpu_thread_id_x(), y = __gpu_thread_id_y(), w = __gpu_num_threads_x();
  uint32_t f = y * w + x, gid = __gpu_block_id_x() * w * __gpu_num_threads_y() + f;
  s[f] = in[gid];
  __gpu_sync_threads();
  for (uint32_t h = __gpu_num_threads_y(); h > 1; h = (h + 1) / 2) {
    uint32_t half = (h + 1) / 2;
    if (y < h / 2)
      s[f] += s[(y + half) * w + x];
    __gpu_sync_threads();
  }
  out[gid] = s[x];
}

// a loop over the group's warps of 32: in trip c the work-item of the next warp adds its value to acc[0]
__gpu_kernel void warps(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t acc[1];
  if (T == 0)
    acc[0] = 0;
  __gpu_sync_threads();
  for (uint32_t c = 0; c < N / 32; c++) {
    if (T == 32 * c)
      acc[0] = acc[0] * 3 + in[G];
    __gpu_sync_threads();
  }
  out[G] = acc[0] + T;
}
