// OpenCL C twins of bench/kernels/suite.c (the classic-kernel suite), for PoCL. Same arguments, same
// algorithms, same group shapes: SUITE_WG, SUITE_TILE, SUITE_BINS and SUITE_HIST_PER_ITEM come from
// suite_shape.h as -D options to clBuildProgram (bench/suite.c). saxpy and reduce come first, from
// saxpy_reduce.cl (bench.h's cl_read_sources loads it in front of this file).

__kernel void scan(__global const float *in, __global float *out) {
  __local float s[SUITE_WG];
  uint t = get_local_id(0);
  s[t] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint off = 1; off < get_local_size(0); off <<= 1) {
    float v = t >= off ? s[t - off] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    s[t] += v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[get_global_id(0)] = s[t];
}

__kernel void matmul(__global const float *a, __global const float *b, __global float *c, uint n) {
  __local float ta[SUITE_TILE][SUITE_TILE], tb[SUITE_TILE][SUITE_TILE];
  uint tx = get_local_id(0), ty = get_local_id(1);
  uint col = get_group_id(0) * SUITE_TILE + tx, row = get_group_id(1) * SUITE_TILE + ty;
  float acc = 0.0f;
  for (uint k0 = 0; k0 < n; k0 += SUITE_TILE) {
    ta[ty][tx] = a[row * n + k0 + tx];
    tb[ty][tx] = b[(k0 + ty) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < SUITE_TILE; k++)
      acc += ta[ty][k] * tb[k][tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  c[row * n + col] = acc;
}

__kernel void histogram(__global const uint *in, __global uint *bins, uint n) {
  __local uint h[SUITE_BINS];
  uint t = get_local_id(0), nt = get_local_size(0);
  for (uint b = t; b < SUITE_BINS; b += nt)
    h[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint base = get_group_id(0) * nt * SUITE_HIST_PER_ITEM;
  for (uint k = 0; k < SUITE_HIST_PER_ITEM; k++) {
    uint i = base + k * nt + t;
    if (i < n)
      atomic_inc(&h[in[i] % SUITE_BINS]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint b = t; b < SUITE_BINS; b += nt)
    if (h[b])
      atomic_add(&bins[b], h[b]);
}

__kernel void transpose(__global const float *in, __global float *out, uint w, uint h) {
  __local float tile[SUITE_TILE][SUITE_TILE + 1];
  uint tx = get_local_id(0), ty = get_local_id(1);
  uint x = get_group_id(0) * SUITE_TILE + tx, y = get_group_id(1) * SUITE_TILE + ty;
  if (x < w && y < h)
    tile[ty][tx] = in[y * w + x];
  barrier(CLK_LOCAL_MEM_FENCE);
  x = get_group_id(1) * SUITE_TILE + tx;
  y = get_group_id(0) * SUITE_TILE + ty;
  if (x < h && y < w)
    out[y * h + x] = tile[tx][ty];
}

__kernel void stencil(__global const float *in, __global float *out, uint w, uint h) {
  uint x = get_global_id(0), y = get_global_id(1);
  if (x >= w || y >= h)
    return;
  uint i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
    out[i] = in[i];
  else
    out[i] = 4.0f * in[i] - in[i - w] - in[i + w] - in[i - 1] - in[i + 1];
}

__kernel void bitonic(__global const float *in, __global float *out) {
  __local float s[SUITE_WG];
  uint t = get_local_id(0), n = get_local_size(0);
  s[t] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 2; k <= n; k <<= 1)
    for (uint j = k >> 1; j > 0; j >>= 1) {
      uint p = t ^ j;
      if (p > t) {
        float a = s[t], b = s[p];
        if ((t & k) == 0 ? a > b : a < b) {
          s[t] = b;
          s[p] = a;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  out[get_global_id(0)] = s[t];
}

// float4: x, y, z and the mass in w (suite.c's struct body).
__kernel void nbody(__global const float4 *pos, __global const float4 *vel, __global float4 *pos_out,
                    __global float4 *vel_out, uint n) {
  __local float4 tile[SUITE_WG];
  uint t = get_local_id(0), nt = get_local_size(0), i = get_global_id(0);
  float4 p = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (uint j0 = 0; j0 < n; j0 += nt) {
    tile[t] = pos[j0 + t];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint j = 0; j < nt; j++) {
      float dx = tile[j].x - p.x, dy = tile[j].y - p.y, dz = tile[j].z - p.z;
      float f = tile[j].w * (dx * dx + dy * dy + dz * dz + 1.0f);
      ax += f * dx;
      ay += f * dy;
      az += f * dz;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float4 v = vel[i];
  v.x += ax;
  v.y += ay;
  v.z += az;
  vel_out[i] = v;
  pos_out[i] = (float4)(p.x + v.x, p.y + v.y, p.z + v.z, p.w);
}

// The warp kernels (wreduce, wscan) for OpenCL C 1.2, which has no sub-group shuffles: the same exchanges
// between the lanes of a SUITE_LANES-wide warp through local memory, a barrier around each.
#define SUITE_LANES 32

__kernel void wreduce(__global const float *in, __global float *out) {
  __local float x[SUITE_WG], partial[SUITE_LANES];
  uint t = get_local_id(0), lane = t % SUITE_LANES;
  float v = in[get_global_id(0)];
  for (uint off = SUITE_LANES / 2; off > 0; off >>= 1) {
    x[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    v += x[t ^ off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == 0)
    partial[t / SUITE_LANES] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = t < get_local_size(0) / SUITE_LANES ? partial[t] : 0.0f;
  for (uint off = SUITE_LANES / 2; off > 0; off >>= 1) {
    x[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    s += x[t ^ off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0)
    out[get_group_id(0)] = s;
}

__kernel void wscan(__global const float *in, __global float *out) {
  __local float x[SUITE_WG], totals[SUITE_LANES];
  uint t = get_local_id(0), lane = t % SUITE_LANES, w = t / SUITE_LANES;
  float v = in[get_global_id(0)];
  for (uint off = 1; off < SUITE_LANES; off <<= 1) {
    x[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane >= off)
      v += x[t - off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == SUITE_LANES - 1)
    totals[w] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint warps = get_local_size(0) / SUITE_LANES;
  float s = t < warps ? totals[t] : 0.0f;
  for (uint off = 1; off < SUITE_LANES; off <<= 1) {
    x[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t >= off)
      s += x[t - off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t < warps)
    totals[t] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = v + (w ? totals[w - 1] : 0.0f);
}

// compact without ballots: each lane counts the kept flags below it in its warp from local memory.
__kernel void compact(__global const uint *in, __global uint *out, __global uint *counts) {
  __local uint flag[SUITE_WG], kept[SUITE_LANES];
  uint t = get_local_id(0), lane = t % SUITE_LANES, w = t / SUITE_LANES, nt = get_local_size(0);
  uint v = in[get_global_id(0)];
  uint keep = v % 3 == 0;
  flag[t] = keep;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint below = 0;
  for (uint l = 0; l < lane; l++)
    below += flag[t - lane + l];
  if (lane == SUITE_LANES - 1)
    kept[w] = below + keep;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint before = 0;
  for (uint k = 0; k < w; k++)
    before += kept[k];
  __global uint *dst = out + get_group_id(0) * nt;
  if (keep)
    dst[before + below] = v;
  if (t == nt - 1)
    counts[get_group_id(0)] = before + kept[w];
}
