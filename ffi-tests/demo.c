/* offload-rs demo: list every device, then copy a buffer host -> CPU device -> host and check it.
 * Built against LLVM 22's OffloadAPI.h and run against our library (scripts/demo.sh). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <OffloadAPI.h>

#define CPU_BACKEND 0x100u /* offload-rs's CPU compute platform (extension of ol_platform_backend_t) */

static int check(ol_result_t r, const char *what) {
  if (r) fprintf(stderr, "  %s failed: error %u: %s\n", what, (unsigned)r->Code, r->Details);
  return r != NULL;
}

typedef struct {
  ol_device_handle_t cpu, host;
  int n;
} found_t;

static const char *backend_name(uint32_t b) {
  switch (b) {
  case OL_PLATFORM_BACKEND_CUDA: return "CUDA";
  case OL_PLATFORM_BACKEND_AMDGPU: return "AMDGPU";
  case OL_PLATFORM_BACKEND_HOST: return "HOST";
  case CPU_BACKEND: return "CPU (offload-rs)";
  default: return "unknown";
  }
}

static const char *type_name(uint32_t t) {
  switch (t) {
  case OL_DEVICE_TYPE_GPU: return "GPU";
  case OL_DEVICE_TYPE_CPU: return "CPU";
  case OL_DEVICE_TYPE_HOST: return "HOST";
  default: return "other";
  }
}

static bool visit(ol_device_handle_t d, void *ud) {
  found_t *f = (found_t *)ud;
  ol_platform_handle_t p = NULL;
  char name[256] = "?", pname[64] = "?";
  uint32_t backend = 0, type = 0, cus = 0;
  uint64_t mem = 0;
  olGetDeviceInfo(d, OL_DEVICE_INFO_NAME, sizeof name, name);
  olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, &type);
  olGetDeviceInfo(d, OL_DEVICE_INFO_NUM_COMPUTE_UNITS, sizeof cus, &cus);
  olGetDeviceInfo(d, OL_DEVICE_INFO_GLOBAL_MEM_SIZE, sizeof mem, &mem);
  olGetDeviceInfo(d, OL_DEVICE_INFO_PLATFORM, sizeof p, &p);
  olGetPlatformInfo(p, OL_PLATFORM_INFO_NAME, sizeof pname, pname);
  olGetPlatformInfo(p, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend);
  printf("  device %d: %-40s platform %-6s backend %-17s type %-4s compute units %-4u memory %llu MiB\n", f->n,
         name, pname, backend_name(backend), type_name(type), cus, (unsigned long long)(mem >> 20));
  if (backend == CPU_BACKEND && !f->cpu) f->cpu = d;
  if (type == OL_DEVICE_TYPE_HOST) f->host = d;
  f->n++;
  return true;
}

int main(void) {
  found_t f = {NULL, NULL, 0};
  printf("offload-rs demo (LLVM 22 liboffload API)\n\n");
  if (check(olInit(), "olInit")) return 1;
  printf("Devices:\n");
  if (check(olIterateDevices(visit, &f), "olIterateDevices")) return 1;

  enum { N = 1 << 20 };
  static uint32_t src[N], back[N];
  for (uint32_t i = 0; i < N; i++) src[i] = i * 2654435761u;
  printf("\nCopy of %zu KiB: ", sizeof src / 1024);
  if (!f.cpu) {
    printf("no CPU device in this build yet: copying host -> host through the virtual host device\n");
    if (check(olMemcpy(NULL, back, f.host, src, f.host, sizeof src), "olMemcpy")) return 1;
  } else {
    void *dev = NULL;
    printf("host -> CPU device -> host\n");
    if (check(olMemAlloc(f.cpu, OL_ALLOC_TYPE_DEVICE, sizeof src, &dev), "olMemAlloc")) return 1;
    printf("  olMemAlloc(DEVICE, %zu bytes) = %p\n", sizeof src, dev);
    if (check(olMemcpy(NULL, dev, f.cpu, src, f.host, sizeof src), "olMemcpy host -> device")) return 1;
    printf("  copied host -> device\n");
    if (check(olMemcpy(NULL, back, f.host, dev, f.cpu, sizeof src), "olMemcpy device -> host")) return 1;
    printf("  copied device -> host\n");
    if (check(olMemFree(dev), "olMemFree")) return 1;
  }
  int ok = memcmp(src, back, sizeof src) == 0;
  printf("  result: %s\n", ok ? "all bytes match" : "MISMATCH");

  ol_result_t e = olGetDeviceInfo(f.host, OL_DEVICE_INFO_NAME, 0, back);
  printf("\nErrors are values: olGetDeviceInfo(PropSize = 0) -> code %u, \"%s\"\n", (unsigned)e->Code, e->Details);
  if (check(olShutDown(), "olShutDown")) return 1;
  printf("\n%s\n", ok ? "demo OK" : "demo FAILED");
  return ok ? 0 : 1;
}
