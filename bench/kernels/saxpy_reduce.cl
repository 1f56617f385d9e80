// OpenCL C twins of saxpy_reduce.h, for PoCL: the first source of both OpenCL programs (bench.cl's and
// suite.cl's; bench.h's cl_read_sources loads it in front of either). SUITE_WG comes from suite_shape.h as a
// -D option to clBuildProgram (SUITE_CL_OPTIONS).

__kernel void saxpy(float a, __global const float *x, __global float *y, uint n) {
  uint i = get_global_id(0);
  if (i < n)
    y[i] = a * x[i] + y[i];
}

__kernel void reduce(__global const float *in, __global float *out) {
  __local float s[SUITE_WG];
  uint t = get_local_id(0);
  s[t] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = get_local_size(0) / 2; k > 0; k >>= 1) {
    if (t < k)
      s[t] += s[t + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0)
    out[get_group_id(0)] = s[0];
}
