// Device code for ffi-tests/test_kmem.c: shared-memory overruns and the kernel memory checker
// (OFFLOAD_RS_MEMCHECK=1); the private-memory kernels are in kmem_private.c. Built with the other device
// code by build-device.sh.
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid_x(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// The work-item with global id `which` stores 7 to p[n] (an out-of-bounds store when n is past the end).
__gpu_kernel void store_at(uint32_t *p, uint32_t n, uint32_t which) {
  if (gid_x() == which)
    p[n] = 7;
}

// Touches `n` bytes of dynamic shared memory (more than DynSharedMemory is an overrun).
extern __gpu_local uint8_t kmem_dyn[];
__gpu_kernel void dyn_touch(uint32_t n, uint32_t *out) {
  if (__gpu_thread_id_x() == 0) {
    for (uint32_t i = 0; i < n; i++)
      kmem_dyn[i] = (uint8_t)i;
    out[__gpu_block_id_x()] = kmem_dyn[n - 1];
  }
}

// 16 words of static shared memory; work-item 0 then writes word `idx` (past the end when idx >= 16).
__gpu_kernel void static_overrun(uint32_t *out, uint32_t idx) {
  static __gpu_local uint32_t sh[16];
  uint32_t t = __gpu_thread_id_x();
  if (t < 16)
    sh[t] = t;
  __gpu_sync_threads();
  if (t == 0)
    sh[idx] = 1;
  __gpu_sync_threads();
  if (t < 16)
    out[t] = sh[t];
}

// 16 words of static shared memory counted with atomics (plain code on the CPU device: the group's own
// memory); work-item 0 then adds to word `idx` (past the end when idx >= 16): memcheck still sees it.
__gpu_kernel void static_atomic_overrun(uint32_t *out, uint32_t idx) {
  static __gpu_local uint32_t sh[16];
  uint32_t t = __gpu_thread_id_x();
  if (t < 16)
    sh[t] = 0;
  __gpu_sync_threads();
  __atomic_fetch_add(&sh[t % 16], t, __ATOMIC_RELAXED);
  if (t == 0)
    __atomic_fetch_add(&sh[idx], 100, __ATOMIC_RELAXED);
  __gpu_sync_threads();
  if (t < 16)
    out[t] = sh[t];
}
