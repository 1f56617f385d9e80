/* Counters of the fake CUDA driver (ffi-tests/fake_cuda/fake_cuda.c), for tests.
 *
 * A test finds the function with dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) + dlsym(h, "fakeCudaStats")
 * after olInit (the library loads the driver); against NVIDIA's real driver the symbol is absent and the
 * checks that need it are skipped. Nothing here is part of offload-rs.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H
#include <stddef.h>
#include <stdint.h>

struct fake_cuda_stats {
  /* live objects (created and not yet destroyed/freed/unloaded) */
  int64_t live_device_allocs;  /* cuMemAlloc_v2 + cuMemAllocManaged */
  int64_t live_host_allocs;    /* cuMemAllocHost_v2 */
  int64_t live_registrations;  /* cuMemHostRegister_v2 */
  int64_t live_modules;
  int64_t live_streams;
  int64_t live_events;
  int64_t primary_ctx_retains; /* cuDevicePrimaryCtxRetain minus cuDevicePrimaryCtxRelease_v2 */
  /* protocol violations: a correct client keeps all of these at zero */
  int64_t no_context_calls;    /* a call that needs a current context from a thread without one */
  int64_t wrong_context_calls; /* an object of one context used while another is current */
  int64_t calls_from_host_fn;  /* any driver call from inside a cuLaunchHostFunc callback */
  int64_t invalid_handles;     /* stale, destroyed or garbage stream/event/module/function handle */
  int64_t bad_frees;           /* free of unknown/interior/already freed memory, or with the wrong function */
  int64_t kernel_faults;       /* an emulated kernel touched memory the GPU could not reach */
  int64_t bad_launches;        /* cuLaunchKernel refused: argument size, dims, shared memory */
  int64_t unsupported_kernels; /* launches of kernels the fake does not emulate */
  /* activity */
  int64_t launches;            /* kernels executed */
  int64_t host_fns;            /* host functions executed */
  int64_t copies, memsets, modules_loaded;
  /* FAKE_CUDA_PTXAS: modules assembled with NVIDIA's ptxas, and those it rejected (a violation) */
  int64_t ptxas_runs, ptxas_rejects;
  /* an async copy from or to pageable host memory, or between two host ranges, queued behind unfinished work
   * of its stream: NVIDIA's driver waits for the stream first (measured on an H200, driver 13.0: behind a host
   * function that waits for the caller it never returns); the fake waits 2 s, counts it and goes on (a
   * violation) */
  int64_t pageable_stalls;
  /* cuMemFree/cuMemFreeHost while queued work of some stream was still waiting 2 s later (CUDA: "may perform
   * implicit synchronization"; a hang behind a host function that waits for the caller) */
  int64_t implicit_sync_stalls;
};

/* Fills *out (size: sizeof(struct fake_cuda_stats) as the caller knows it); returns 0. */
typedef int (*fake_cuda_stats_fn)(struct fake_cuda_stats *out, size_t size);

#endif
