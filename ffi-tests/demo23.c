/* A minimal LLVM 23.1 client (the install check builds it with `pkg-config offload-rs-23`): olInit(NULL),
 * list the devices, a 4096-byte aligned allocation on each non-host device, olShutDown. */
#include <stdbool.h> /* LLVM's generated header uses bool without including it (as 22's does) */
#include <OffloadAPI.h>
#include <stdint.h>
#include <stdio.h>

static bool show(ol_device_handle_t d, void *ud) {
  char name[256] = "";
  ol_device_type_t type;

  if (olGetDeviceInfo(d, OL_DEVICE_INFO_NAME, sizeof name, name) || olGetDeviceInfo(d, OL_DEVICE_INFO_TYPE, sizeof type, &type))
    return false;
  printf("device: %s\n", name);
  if (type != OL_DEVICE_TYPE_HOST) {
    void *p = NULL;
    if (olMemAllocAligned(d, OL_ALLOC_TYPE_DEVICE, 100, 4096, &p) || ((uintptr_t)p % 4096) || olMemFree(p)) {
      printf("olMemAllocAligned failed on %s\n", name);
      *(int *)ud = 1;
    }
  }
  return true;
}

int main(void) {
  int bad = 0;
  ol_init_args_t args = OL_INIT_ARGS_INIT;
  if (olInit(&args)) { printf("olInit failed\n"); return 1; }
  olIterateDevices(show, &bad);
  return olShutDown() != NULL || bad;
}
