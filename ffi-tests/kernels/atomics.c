// Atomics across groups: a counter, a maximum and a compare-exchange claimed slot.
#include <gpuintrin.h>
#include <stdint.h>

__gpu_kernel void atomics(uint32_t *counter, uint32_t *maxv, uint32_t *claimed) {
  uint32_t i = __gpu_block_id_x() * __gpu_num_threads_x() + __gpu_thread_id_x();
  __atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED);
  __atomic_fetch_max(maxv, i, __ATOMIC_RELAXED);
  uint32_t expected = 0;
  __atomic_compare_exchange_n(claimed, &expected, i + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}
