/* End-to-end smoke test of the CUDA device through the C API (libLLVMOffload.so.22.1 built from this
 * repo), as a liboffload client sees it: find the CUDA device, print its info, load NVPTX bitcode,
 * run saxpy synchronously and on a queue, read a global, check results exactly.
 * Usage: capi_smoke <device_kernels.bc>   (ffi-tests/device/kernels.c as nvptx64 bitcode) */
#include "offload/OffloadAPI.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ol_device_handle_t gpu, host;
static int failures;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ol_result_t r_ = (call);                                                                       \
    if (r_) {                                                                                      \
      printf("capi_smoke: %s failed: code %u: %s\n", #call, (unsigned)r_->Code, r_->Details);     \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static bool find(ol_device_handle_t d, void *ud) {
  (void)ud;
  ol_platform_handle_t p;
  ol_platform_backend_t b = 0;
  if (olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p) ||
      olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof b, &b))
    return true;
  if (b == OL_PLATFORM_BACKEND_CUDA && !gpu)
    gpu = d;
  if (b == OL_PLATFORM_BACKEND_HOST)
    host = d;
  return true;
}

static void print_str(const char *what, ol_device_info_t info) {
  size_t n = 0;
  char buf[512] = "?";
  if (!olGetDeviceInfoSize(gpu, info, &n) && n < sizeof buf)
    olGetDeviceInfo(gpu, info, n, buf);
  printf("capi_smoke: %-15s %s\n", what, buf);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("usage: capi_smoke device_kernels.bc\n");
    return 2;
  }
  CHECK(olInit());
  CHECK(olIterateDevices(find, NULL));
  if (!gpu) {
    printf("capi_smoke: no CUDA device through the C API\n");
    return 1;
  }
  print_str("name", OL_DEVICE_INFO_NAME);
  print_str("uid", OL_DEVICE_INFO_UID);
  print_str("driver version", OL_DEVICE_INFO_DRIVER_VERSION);

  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    printf("capi_smoke: cannot open %s\n", argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *image = malloc(len);
  if (fread(image, 1, len, f) != (size_t)len)
    return 1;
  fclose(f);

  bool valid = false;
  CHECK(olIsValidBinary(gpu, image, len, &valid));
  printf("capi_smoke: olIsValidBinary   %s\n", valid ? "true" : "false");
  ol_program_handle_t prog;
  CHECK(olCreateProgram(gpu, image, len, &prog));
  ol_symbol_handle_t saxpy, read_ctor;
  CHECK(olGetSymbol(prog, "saxpy", OL_SYMBOL_KIND_KERNEL, &saxpy));
  CHECK(olGetSymbol(prog, "read_ctor", OL_SYMBOL_KIND_KERNEL, &read_ctor));

  enum { N = 1 << 16 };
  static float hx[N], hy[N];
  for (int i = 0; i < N; i++) {
    hx[i] = (float)i;
    hy[i] = 1.0f;
  }
  void *x, *y;
  CHECK(olMemAlloc(gpu, OL_ALLOC_TYPE_DEVICE, sizeof hx, &x));
  CHECK(olMemAlloc(gpu, OL_ALLOC_TYPE_DEVICE, sizeof hy, &y));
  CHECK(olMemcpy(NULL, x, gpu, hx, host, sizeof hx));
  CHECK(olMemcpy(NULL, y, gpu, hy, host, sizeof hy));
  struct {
    float a;
    void *x, *y;
    uint32_t n;
  } args = {2.0f, x, y, N};
  ol_kernel_launch_size_args_t dims = {1, {N / 256, 1, 1}, {256, 1, 1}, 0};
  CHECK(olLaunchKernel(NULL, gpu, saxpy, &args, sizeof args, &dims)); /* synchronous */
  ol_queue_handle_t q;
  CHECK(olCreateQueue(gpu, &q));
  args.a = 1.0f;
  CHECK(olLaunchKernel(q, gpu, saxpy, &args, sizeof args, &dims)); /* y = 3x + 1 */
  CHECK(olSyncQueue(q));
  CHECK(olMemcpy(NULL, hy, host, y, gpu, sizeof hy));
  for (int i = 0; i < N; i++)
    if (hy[i] != 3.0f * i + 1.0f) {
      printf("capi_smoke: saxpy mismatch at %d: %f\n", i, hy[i]);
      failures++;
      break;
    }

  uint32_t out[64];
  void *dout;
  CHECK(olMemAlloc(gpu, OL_ALLOC_TYPE_DEVICE, sizeof out, &dout));
  struct {
    void *out;
  } a2 = {dout};
  ol_kernel_launch_size_args_t d2 = {1, {1, 1, 1}, {64, 1, 1}, 0};
  CHECK(olLaunchKernel(NULL, gpu, read_ctor, &a2, sizeof a2, &d2));
  CHECK(olMemcpy(NULL, out, host, dout, gpu, sizeof out));
  for (uint32_t i = 0; i < 64; i++)
    if (out[i] != 100 + i) {
      printf("capi_smoke: read_ctor mismatch at %u: %u\n", i, out[i]);
      failures++;
      break;
    }

  CHECK(olDestroyQueue(q));
  CHECK(olMemFree(x));
  CHECK(olMemFree(y));
  CHECK(olMemFree(dout));
  CHECK(olDestroyProgram(prog));
  CHECK(olShutDown());
  printf("capi_smoke: %s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
