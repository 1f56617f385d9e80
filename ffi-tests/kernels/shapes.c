// Barrier and guard shapes of the work-group lowering (src/jit/llvm/lower.cpp): guarded regions, barriers in
// uniform loops, uniform branches to different barriers, divergent barrier counts (general scheduler),
// and guards whose `gid * stride + tid` wraps around (the unnarrowed fallback).
#include <gpuintrin.h>
#include <stdint.h>

// One block of up to 256 work-items; every region is guarded by a different condition on the id.
// Each guarded store goes to its own array and is read back only through other work-items' elements,
// so no value of a work-item's own is carried through the guards in a register.
__gpu_kernel void guards(const int32_t *in, int32_t *out, uint32_t k) {
  static __gpu_local int32_t a[256], r[5][256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  a[t] = in[base + t];
  for (int j = 0; j < 5; j++)
    r[j][t] = 0;
  __gpu_sync_threads();
  if (t >= k) // t >= k
    r[0][t] = a[(t + 1) % n] * 2;
  __gpu_sync_threads();
  if (t + 5 < k) // t + c < k
    r[1][t] = a[(t + 2) % n] + 1;
  __gpu_sync_threads();
  if (t == k / 2) // t == k/2
    r[2][t] = -a[(t + 3) % n];
  __gpu_sync_threads();
  if (t <= 3 && t > 0) // conjunction
    r[3][t] = a[(t + 4) % n] + 1000;
  __gpu_sync_threads();
  int32_t ti = (int32_t)t;
  if (ti - 10 > (int32_t)k - 20) // signed, t + (-10) > k - 20
    r[4][t] = a[(t + 5) % n] + 7;
  __gpu_sync_threads();
  int32_t acc = 0;
  for (uint32_t j = 0; j < 5; j++)
    acc = acc * 31 + r[j][(t + j + 1) % n];
  out[base + t] = acc;
}

// A barrier in a loop whose trip count is a kernel argument; double-buffered neighbour sums.
__gpu_kernel void uniform_loop(const uint32_t *in, uint32_t *out, uint32_t reps) {
  static __gpu_local uint32_t s[2][256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  s[0][t] = in[base + t];
  __gpu_sync_threads();
  uint32_t cur = 0;
  for (uint32_t r = 0; r < reps; r++) {
    s[1 - cur][t] = s[cur][t] + s[cur][(t + 1) % n] + r;
    cur = 1 - cur;
    __gpu_sync_threads();
  }
  out[base + t] = s[cur][t];
}

// A uniform branch (on a kernel argument) between two paths with different barriers.
__gpu_kernel void uniform_paths(const uint32_t *in, uint32_t *out, uint32_t mode) {
  static __gpu_local uint32_t s[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  s[t] = in[base + t];
  __gpu_sync_threads();
  uint32_t v;
  if (mode == 0) {
    v = s[n - 1 - t];
    __gpu_sync_threads();
    s[t] = v * 3;
  } else {
    v = s[(t + 3) % n];
    __gpu_sync_threads();
    s[t] = v + 11;
    __gpu_sync_threads();
    v = s[(t + 1) % n];
    __gpu_sync_threads();
    s[t] = v;
  }
  __gpu_sync_threads();
  out[base + t] = s[t] + (t < mode ? 1 : 0);
}

// Work-item t passes (t & 3) barriers in a loop: barrier counts differ between work-items, so the
// lowering must keep its general per-work-item scheduler. Each work-item only touches its own data.
__gpu_kernel void divergent_count(uint32_t *out) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + t;
  uint32_t acc = i;
  for (uint32_t r = 0; r < (t & 3); r++) {
    acc = acc * 3 + r;
    __gpu_sync_threads();
  }
  out[i] = acc;
}

// i = gid * stride + t wraps around 2^32 for some groups: the guard `i < len` cannot be turned into a
// range there, so the unnarrowed loop must run.
__gpu_kernel void wrap_guard(uint32_t *hit, uint32_t stride, uint32_t len) {
  uint32_t t = __gpu_thread_id_x();
  uint32_t i = __gpu_block_id_x() * stride + t;
  if (i < len)
    hit[__gpu_block_id_x() * __gpu_num_threads_x() + t] = i + 1;
}

__gpu_kernel void wrap_guard_bar(uint32_t *hit, uint32_t stride, uint32_t len) {
  static __gpu_local uint32_t s[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t i = __gpu_block_id_x() * stride + t;
  s[t] = 0;
  __gpu_sync_threads();
  if (i < len)
    s[t] = i + 1;
  __gpu_sync_threads();
  hit[__gpu_block_id_x() * n + t] = s[(t + 1) % n];
}

// A uniform loop without barriers inside a region: its counter lives in a slot shared by the
// work-items of the region loop, and each work-item must start it again.
__gpu_kernel void inner_uniform_loop(const uint32_t *in, uint32_t *out, uint32_t reps) {
  static __gpu_local uint32_t s[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  s[t] = in[base + t];
  __gpu_sync_threads();
  uint32_t acc = 0;
  for (uint32_t k = 0; k != reps; k++)
    acc += s[(t + k) % n] * (k + 1);
  for (uint32_t k = 0; k != 100; k++) // a constant trip count: no guard before the loop
    acc += s[(t * 7 + k) % n] ^ k;
  out[base + t] = acc;
}
