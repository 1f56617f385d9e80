// OpenCL C twins of bench/kernels/suite.c (the classic-kernel suite), for PoCL. Same arguments, same
// algorithms, same group shapes: SUITE_WG, SUITE_TILE and the other constants of suite_shape.h come as -D
// options to clBuildProgram (bench.h's cl_build). saxpy and reduce come first, from saxpy_reduce.cl
// (bench.h's cl_read_sources loads it in front of this file); the pricer is blackscholes.cl's kernel,
// included at the end (cl_build puts the kernels' directory on the include path).

__kernel void copy(__global const float *in, __global float *out, uint n) {
  uint i = get_global_id(0);
  if (i < n)
    out[i] = in[i];
}

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

// softmax, conv2d, mandel, spmv and radix: as in suite.c.

__kernel void softmax(__global const float *in, __global float *out, uint cols) {
  __local float s[SUITE_WG];
  uint t = get_local_id(0), nt = get_local_size(0);
  __global const float *row = in + (ulong)get_group_id(0) * cols;
  __global float *orow = out + (ulong)get_group_id(0) * cols;
  float m = -INFINITY;
  for (uint j = t; j < cols; j += nt)
    m = fmax(m, row[j]);
  s[t] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = nt / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] = fmax(s[t], s[t + k]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (uint j = t; j < cols; j += nt)
    sum += exp(row[j] - m);
  s[t] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = nt / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] += s[t + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float inv = 1.0f / s[0];
  for (uint j = t; j < cols; j += nt)
    orow[j] = exp(row[j] - m) * inv;
}

#define SUITE_CONV_SPAN (SUITE_TILE + 2 * SUITE_CONV_R)
#define SUITE_CONV_TAPS ((2 * SUITE_CONV_R + 1) * (2 * SUITE_CONV_R + 1))
__kernel void conv2d(__global const float *in, __global const float *filter, __global float *out, uint w, uint h) {
  __local float tile[SUITE_CONV_SPAN][SUITE_CONV_SPAN], f[SUITE_CONV_TAPS];
  uint tx = get_local_id(0), ty = get_local_id(1), t = ty * SUITE_TILE + tx;
  int x0 = (int)(get_group_id(0) * SUITE_TILE) - SUITE_CONV_R;
  int y0 = (int)(get_group_id(1) * SUITE_TILE) - SUITE_CONV_R;
  for (uint i = t; i < SUITE_CONV_SPAN * SUITE_CONV_SPAN; i += SUITE_TILE * SUITE_TILE) {
    int x = x0 + (int)(i % SUITE_CONV_SPAN), y = y0 + (int)(i / SUITE_CONV_SPAN);
    bool inside = x >= 0 && y >= 0 && x < (int)w && y < (int)h;
    tile[i / SUITE_CONV_SPAN][i % SUITE_CONV_SPAN] = inside ? in[(uint)y * w + (uint)x] : 0.0f;
  }
  if (t < SUITE_CONV_TAPS)
    f[t] = filter[t];
  barrier(CLK_LOCAL_MEM_FENCE);
  uint x = get_global_id(0), y = get_global_id(1);
  if (x < w && y < h) {
    float acc = 0.0f;
    for (uint dy = 0; dy <= 2 * SUITE_CONV_R; dy++)
      for (uint dx = 0; dx <= 2 * SUITE_CONV_R; dx++)
        acc += f[dy * (2 * SUITE_CONV_R + 1) + dx] * tile[ty + dy][tx + dx];
    out[y * w + x] = acc;
  }
}

// One operation per statement, as in suite.c (OpenCL C's FP_CONTRACT fuses only within an expression).
__kernel void mandel(__global uint *out, uint w, uint h, float x0, float y0, float step) {
  uint x = get_global_id(0), y = get_global_id(1);
  if (x >= w || y >= h)
    return;
  float cr = (float)x * step, ci = (float)y * step;
  cr = cr + x0;
  ci = ci + y0;
  float zr = 0.0f, zi = 0.0f;
  uint k = 0;
  for (; k < SUITE_MANDEL_ITERS; k++) {
    float zr2 = zr * zr, zi2 = zi * zi, zri = zr * zi;
    if (zr2 + zi2 > 4.0f)
      break;
    zr = zr2 - zi2;
    zr = zr + cr;
    zi = zri + zri;
    zi = zi + ci;
  }
  out[y * w + x] = k;
}

__kernel void spmv(__global const uint *row_ptr, __global const uint *col, __global const float *val,
                   __global const float *x, __global float *y, uint rows) {
  uint r = get_global_id(0);
  if (r >= rows)
    return;
  float acc = 0.0f;
  for (uint k = row_ptr[r]; k < row_ptr[r + 1]; k++)
    acc += val[k] * x[col[k]];
  y[r] = acc;
}

#define SUITE_RADIX_DIGITS (1u << SUITE_RADIX_BITS)
__kernel void radix(__global const uint *in, __global uint *out, __global uint *counts, uint n, uint shift) {
  __local uint hist[SUITE_RADIX_DIGITS], start[SUITE_RADIX_DIGITS], digit[SUITE_WG];
  uint t = get_local_id(0), nt = get_local_size(0), base = get_group_id(0) * nt;
  bool valid = base + t < n;
  uint key = valid ? in[base + t] : 0, d = (key >> shift) & (SUITE_RADIX_DIGITS - 1);
  if (t < SUITE_RADIX_DIGITS)
    hist[t] = 0;
  digit[t] = d;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (valid)
    atomic_inc(&hist[d]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t == 0) {
    uint s = 0;
    for (uint k = 0; k < SUITE_RADIX_DIGITS; k++) {
      start[k] = s;
      s += hist[k];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (valid) {
    uint rank = 0;
    for (uint j = 0; j < t; j++)
      rank += digit[j] == d;
    out[base + start[d] + rank] = key;
  }
  if (t < SUITE_RADIX_DIGITS)
    counts[get_group_id(0) * SUITE_RADIX_DIGITS + t] = hist[t];
}

// The option pricer: bench/vmath.c's Black-Scholes kernel, one source for both benchmarks.
#include "blackscholes.cl"
