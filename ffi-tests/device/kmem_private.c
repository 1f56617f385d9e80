// Device code for ffi-tests/test_kmem.c: kernels with large private arrays. The test loads only the
// nvptx64 build: the amdgcn one does not compile on the CPU device yet (the lowering's addrspace(5) alloca
// rewrite leaves llvm.lifetime markers on the cast, which LLVM 22's verifier rejects).
#include <gpuintrin.h>
#include <stdint.h>

static inline uint32_t gid_x(void) { return __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x(); }

// A 1 MiB private array, every page touched: out[i] = sum over the pages of (page index & 0xff).
__gpu_kernel void private_1m(uint32_t *out) {
  volatile uint8_t buf[1 << 20];
  for (uint32_t i = 0; i < sizeof buf; i += 4096)
    buf[i] = (uint8_t)(i >> 12);
  uint32_t s = 0;
  for (uint32_t i = 0; i < sizeof buf; i += 4096)
    s += buf[i];
  out[gid_x()] = s;
}

// 17 MiB of private memory: more than a CPU device thread's stack.
__gpu_kernel void private_17m(uint32_t *out, uint32_t i) {
  volatile uint8_t buf[17 << 20];
  buf[i] = 1;
  out[0] = buf[i];
}
