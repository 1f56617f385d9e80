// More barrier shapes: a double-buffered inclusive scan (barrier in a loop, per-item values crossing
// barriers) and a 2-D tiled transpose (2-D groups, guarded shared-memory accesses).
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void scan(const uint32_t *in, uint32_t *out) {
  static __gpu_local uint32_t buf[2][256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x();
  uint32_t base = __gpu_block_id_x() * n;
  int pout = 0, pin = 1;
  buf[pout][t] = in[base + t];
  __gpu_sync_threads();
  for (uint32_t off = 1; off < n; off <<= 1) {
    pout = 1 - pout;
    pin = 1 - pout;
    uint32_t v = buf[pin][t];
    if (t >= off)
      v += buf[pin][t - off];
    buf[pout][t] = v;
    __gpu_sync_threads();
  }
  out[base + t] = buf[pout][t];
}

__gpu_kernel void transpose(const float *in, float *out, uint32_t w, uint32_t h) {
  static __gpu_local float tile[16][17];
  uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y();
  uint32_t x = __gpu_block_id_x() * 16 + tx, y = __gpu_block_id_y() * 16 + ty;
  if (x < w && y < h)
    tile[ty][tx] = in[y * w + x];
  __gpu_sync_threads();
  x = __gpu_block_id_y() * 16 + tx;
  y = __gpu_block_id_x() * 16 + ty;
  if (x < h && y < w)
    out[y * h + x] = tile[tx][ty];
}
