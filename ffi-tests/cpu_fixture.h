/* The CPU-device fixture shared by the harness.h tests that work on the CPU device (test_cpu_device,
 * test_misuse): `cpu` and `host` handles, SETUP() (olInit, find both devices; SKIP and shut down again when
 * there is no CPU device) and TEARDOWN(). Include after harness.h. */
#ifndef OFFLOAD_RS_CPU_FIXTURE_H
#define OFFLOAD_RS_CPU_FIXTURE_H

#ifndef FFI_TESTS_PROGRAM
#define FFI_TESTS_PROGRAM "build/ffi-tests/tiny.nvptx64.bc"
#endif

static ol_device_handle_t cpu, host;

#define SETUP()                                                                                              \
  do {                                                                                                       \
    REQUIRE_OK(olInit());                                                                                    \
    harness_device_list_t l_ = harness_devices();                                                            \
    host = l_.count ? l_.devices[l_.count - 1] : NULL;                                                       \
    cpu = harness_find_backend(HARNESS_BACKEND_CPU);                                                         \
    if (!cpu) {                                                                                              \
      olShutDown();                                                                                          \
      SKIP("no CPU device");                                                                                 \
    }                                                                                                        \
  } while (0)

#define TEARDOWN() CHECK_OK(olShutDown())

#endif
