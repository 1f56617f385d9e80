// Loops inside barrier regions (src/jit/llvm/lower.cpp interchangeLoops: a uniform barrier-free loop gets
// implicit barriers so the work-item loop runs inside it) and shared-memory atomics (markSharedAtomics:
// plain load/op/store on the group's own memory, real atomics elsewhere). Every result is exact.
#include <gpuintrin.h>
#include <stdint.h>

// acc = sum over j < m of tile[j % n] * (a + j): the trip count m is a kernel argument (uniform, known
// only at run time); the accumulator and `a` cross the loop's implicit barriers per work-item.
__gpu_kernel void runtime_trips(const int32_t *in, int32_t *out, uint32_t m) {
  static __gpu_local int32_t tile[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), i = __gpu_block_id_x() * n + t;
  int32_t a = in[i];
  tile[t] = a % 7 - 3;
  __gpu_sync_threads();
  int32_t acc = 0;
  uint32_t alt = 1;
  for (uint32_t j = 0; j < m; j++) {
    acc += tile[j % n] * (a + (int32_t)j);
    alt = alt * 3 + (j & 5);
  }
  __gpu_sync_threads();
  out[i] = acc + (int32_t)alt + tile[(t + 1) % n];
}

// The trip count differs between work-items (t % 5 + m): no implicit barrier may go in there.
__gpu_kernel void divergent_trips(const int32_t *in, int32_t *out, uint32_t m) {
  static __gpu_local int32_t tile[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), i = __gpu_block_id_x() * n + t;
  tile[t] = in[i];
  __gpu_sync_threads();
  uint32_t acc = 0;
  for (uint32_t j = 0; j < t % 5 + m; j++)
    acc = acc * 2 + (uint32_t)tile[(t + j) % n] - j;
  __gpu_sync_threads();
  out[i] = (int32_t)acc;
}

// A loop with a uniform trip count, but reached only by the work-items with t < k: no implicit barrier.
// The second loop is reached by every work-item and has a divergent branch inside (interchangeable).
__gpu_kernel void loop_under_branch(const int32_t *in, int32_t *out, uint32_t k, uint32_t m) {
  static __gpu_local int32_t tile[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), i = __gpu_block_id_x() * n + t;
  tile[t] = in[i];
  __gpu_sync_threads();
  int32_t acc = 0;
  if (t < k)
    for (uint32_t j = 0; j < m; j++)
      acc += tile[j % n] * (int32_t)(j + t);
  for (uint32_t j = 0; j < m; j++)
    if ((t + j) % 3 == 0)
      acc -= tile[(j * 5) % n] + (int32_t)j;
  __gpu_sync_threads();
  out[i] = acc;
}

// Values that leave an interchanged loop (buildCbs' shareHeaderSlot): `acc` is what its header PHI
// gets on the back edge (it shares the PHI's slot) and is read after the loop by another work-item
// through shared memory; `prev` leaves with the PHI's value of the last trip, not the back-edge one;
// f0/f1 swap on every trip (the back-edge value of one PHI is the other's).
__gpu_kernel void exit_values(const int32_t *in, int32_t *out, uint32_t m) {
  static __gpu_local uint32_t tile[256], accs[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), i = __gpu_block_id_x() * n + t;
  uint32_t a = (uint32_t)in[i];
  tile[t] = a;
  __gpu_sync_threads();
  uint32_t acc = 0, prev = 7, f0 = 1, f1 = 1;
  for (uint32_t j = 0; j < m; j++) {
    prev = acc;
    acc = acc * 3 + tile[(t + j) % n] - j;
    uint32_t f2 = f0 + f1 * a;
    f0 = f1;
    f1 = f2;
  }
  accs[t] = acc;
  __gpu_sync_threads();
  out[i] = (int32_t)(accs[(t + 1) % n] + prev * 5 + (f0 ^ f1));
}

// The n-body shape: a loop over the whole group (j < __gpu_num_threads_x()) between barriers, over
// two-field elements (clang's SLP makes them <2 x float> on amdgcn, split again before the lowering,
// scalarise_vectors), unrolled by clang with a remainder loop: the region of the unrolled loop leaves
// through the barrier a uniform compare of the counter chooses, decided once per region
// (cbsUnswitchExit). Small integers: every sum is exact in any order.
struct pair {
  float x, y;
};
__gpu_kernel void group_trips(const struct pair *in, struct pair *out, uint32_t rounds) {
  static __gpu_local struct pair tile[256];
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), i = __gpu_block_id_x() * n + t;
  struct pair p = in[i];
  float ax = 0.0f, ay = 0.0f;
  for (uint32_t r = 0; r < rounds; r++) {
    tile[t] = (struct pair){p.x + (float)r, p.y - (float)r};
    __gpu_sync_threads();
    for (uint32_t j = 0; j < n; j++) {
      float dx = tile[j].x - p.x, dy = tile[j].y - p.y;
      ax += dx * (float)(j & 3);
      ay += dy;
    }
    __gpu_sync_threads();
  }
  out[i] = (struct pair){ax, ay};
}

// Shared-memory atomics of every kind, each with a result that does not depend on the order the
// work-items run in; mixed with atomics on global memory and on a pointer that may be either.
// out[0..12): add, sub, min, max, umin, umax, and, or, xor, xchg, cmpxchg counter, cmpxchg winners
// (one group: the global ones are added across groups by the host check); sum[g]: per group.
__gpu_kernel void shared_atomics(const int32_t *in, int32_t *out, int32_t *glob, uint32_t rounds) {
  static __gpu_local int32_t s[12];
  static __gpu_local float fs;
  uint32_t t = __gpu_thread_id_x(), n = __gpu_num_threads_x(), i = __gpu_block_id_x() * n + t;
  int32_t v = in[i];
  if (t < 12)
    s[t] = t == 2 || t == 4 ? 0x7fffffff : t == 6 ? -1 : 0;
  if (t == 0)
    fs = 0.0f;
  __gpu_sync_threads();
  for (uint32_t r = 0; r < rounds; r++) {
    __atomic_fetch_add(&s[0], v, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&s[1], v + (int32_t)r, __ATOMIC_SEQ_CST);
    __atomic_fetch_min(&s[2], v - (int32_t)r, __ATOMIC_RELAXED);
    __atomic_fetch_max(&s[3], v + (int32_t)r, __ATOMIC_RELAXED);
    __atomic_fetch_min((uint32_t *)&s[4], (uint32_t)(v + 100) + r, __ATOMIC_RELAXED);
    __atomic_fetch_max((uint32_t *)&s[5], (uint32_t)(v + 100) + r, __ATOMIC_RELAXED);
    __atomic_fetch_and(&s[6], ~(1 << ((t + r) % 31)), __ATOMIC_RELAXED);
    __atomic_fetch_or(&s[7], 1 << ((v + (int32_t)r) & 15), __ATOMIC_RELAXED);
    __atomic_fetch_xor(&s[8], v * (int32_t)(r + 1), __ATOMIC_ACQ_REL);
    // every work-item swaps in the same value: the old values are 0 or 77, the final one 77
    int32_t old = __atomic_exchange_n(&s[9], 77, __ATOMIC_RELAXED);
    __atomic_fetch_add(&glob[0], old == 0 || old == 77 ? 1 : 1000, __ATOMIC_RELAXED);
    // a counter through a compare-and-swap loop
    int32_t c = __atomic_load_n(&s[10], __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&s[10], &c, c + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
      ;
    // exactly one work-item per round wins
    int32_t expect = (int32_t)r;
    if (__atomic_compare_exchange_n(&s[11], &expect, (int32_t)r + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      __atomic_fetch_add(&glob[1], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&fs, (float)(v % 4), __ATOMIC_RELAXED);
    // shared or global, chosen per work-item: must stay a real atomic
    int32_t *p = (t & 1) ? &glob[2] : &s[0];
    __atomic_fetch_add(p, 1, __ATOMIC_RELAXED);
  }
  __gpu_sync_threads();
  if (t < 12)
    __atomic_fetch_add(&out[t], s[t], __ATOMIC_RELAXED);
  if (t == 12)
    __atomic_fetch_add(&out[12], (int32_t)fs, __ATOMIC_RELAXED);
}
