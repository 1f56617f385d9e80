/* Loads the library the way the post-22 GPU loader does: dlopen("libLLVMOffload.so") and dlsym() of every
 * entry point (no link-time dependency), plus dlvsym(..., "VERS1.0") for each, then a short session through
 * the function pointers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <OffloadAPI.h>

/* harness.h's device helpers call the API directly; this test only uses its CHECK machinery. */
#define HARNESS_NO_API_HELPERS
#include "harness.h"

static const char *const NAMES[] = {
    "olInit", "olShutDown", "olIterateDevices", "olGetDeviceInfo", "olGetDeviceInfoSize", "olGetPlatformInfo",
    "olGetPlatformInfoSize", "olCreateQueue", "olDestroyQueue", "olSyncQueue", "olWaitEvents", "olGetQueueInfo",
    "olGetQueueInfoSize", "olLaunchHostFunction", "olCreateEvent", "olDestroyEvent", "olSyncEvent",
    "olGetEventInfo", "olGetEventInfoSize", "olMemAlloc", "olMemFree", "olGetMemInfo", "olGetMemInfoSize",
    "olMemcpy", "olMemFill", "olMemRegister", "olMemUnregister", "olCreateProgram", "olIsValidBinary",
    "olDestroyProgram", "olGetSymbol", "olGetSymbolInfo", "olGetSymbolInfoSize", "olLaunchKernel",
    "olCalculateOptimalOccupancy"};
#define N_NAMES (sizeof NAMES / sizeof NAMES[0])

static void *lib;

TEST(dlopen_libLLVMOffload_so) {
  lib = dlopen("libLLVMOffload.so", RTLD_NOW | RTLD_LOCAL);
  CHECKF(lib != NULL, "dlopen: %s", dlerror());
}

TEST(dlsym_and_dlvsym_all_70_entry_points) {
  REQUIRE(lib);
  CHECK(N_NAMES == 35);
  for (size_t i = 0; i < N_NAMES; i++) {
    char twin[128];
    snprintf(twin, sizeof twin, "%sWithCodeLoc", NAMES[i]);
    const char *names[2] = {NAMES[i], twin};
    for (int k = 0; k < 2; k++) {
      void *a = dlsym(lib, names[k]);
      void *b = dlvsym(lib, names[k], "VERS1.0");
      CHECKF(a != NULL, "dlsym(%s) failed", names[k]);
      CHECKF(b != NULL && a == b, "dlvsym(%s, VERS1.0) = %p, dlsym = %p", names[k], b, a);
    }
  }
  CHECK(dlsym(lib, "rust_begin_unwind") == NULL); /* nothing but ol* is exported */
  CHECK(dlsym(lib, "ol_init") == NULL);
}

static bool first_cb(ol_device_handle_t d, void *ud) {
  *(ol_device_handle_t *)ud = d;
  return true; /* keep going: remember the last (host) device */
}

TEST(session_through_function_pointers) {
  REQUIRE(lib);
  ol_result_t (*init)(void) = (ol_result_t(*)(void))dlsym(lib, "olInit");
  ol_result_t (*shut)(void) = (ol_result_t(*)(void))dlsym(lib, "olShutDown");
  ol_result_t (*iter)(ol_device_iterate_cb_t, void *) =
      (ol_result_t(*)(ol_device_iterate_cb_t, void *))dlsym(lib, "olIterateDevices");
  ol_result_t (*info)(ol_device_handle_t, ol_device_info_t, size_t, void *) =
      (ol_result_t(*)(ol_device_handle_t, ol_device_info_t, size_t, void *))dlsym(lib, "olGetDeviceInfo");
  ol_result_t (*info_loc)(ol_device_handle_t, ol_device_info_t, size_t, void *, ol_code_location_t *) =
      (ol_result_t(*)(ol_device_handle_t, ol_device_info_t, size_t, void *, ol_code_location_t *))dlsym(
          lib, "olGetDeviceInfoWithCodeLoc");
  REQUIRE(init && shut && iter && info && info_loc);
  CHECK_ERR(OL_ERRC_UNINITIALIZED, iter(first_cb, NULL));
  REQUIRE_OK(init());
  ol_device_handle_t dev = NULL;
  CHECK_OK(iter(first_cb, &dev));
  REQUIRE(dev);
  char name[64] = "";
  CHECK_OK(info(dev, OL_DEVICE_INFO_NAME, sizeof name, name));
  CHECK(strcmp(name, "Virtual Host Device") == 0);
  ol_code_location_t loc = {"session", __FILE__, __LINE__, 1};
  CHECK_OK(info_loc(dev, OL_DEVICE_INFO_NAME, sizeof name, name, &loc));
  CHECK_ERR_TEXT(OL_ERRC_INVALID_SIZE, "validation failure: PropSize == 0", info(dev, OL_DEVICE_INFO_NAME, 0, name));
  CHECK_OK(shut());
}

TEST(dlclose_library) {
  REQUIRE(lib);
  /* Under valgrind/ASan the leak checkers run at exit: after dlclose the library's statics (which hold the
   * intentionally immortal interned errors and the handle table) are unmapped, so those would be reported
   * as leaks. scripts/test.sh sets FFI_TESTS_NO_DLCLOSE=1 there and keeps leak checking on. */
  if (getenv("FFI_TESTS_NO_DLCLOSE")) SKIP("FFI_TESTS_NO_DLCLOSE is set (leak-checked run)");
  CHECK(dlclose(lib) == 0);
}

int main(void) {
  RUN(dlopen_libLLVMOffload_so);
  RUN(dlsym_and_dlvsym_all_70_entry_points);
  RUN(session_through_function_pointers);
  RUN(dlclose_library);
  return harness_summary();
}
