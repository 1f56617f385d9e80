// Hand-written C peers of ffi-tests/kernels/tiles.c's transpose (bench/tiles.c): the suite's hand loop
// (bench/kernels/suite_hand.c) over 16 x 16 tiles, groups shared out to threads in chunks from an atomic
// counter, x fastest, as the CPU device's pool runs them; three forms of the write side. Built by
// bench/build.sh with clang-22 -O3 -march=native.
#include <pthread.h>
#include <stdint.h>

#define T 16

enum { HAND_PLAIN, HAND_PREFETCH, HAND_NONTEMPORAL, HAND_REGISTERS };

struct hand {
  const uint32_t *in;
  uint32_t *out;
  uint32_t w, h, gx, groups, chunk;
  int form;
  uint32_t next; // the next unclaimed group (atomic)
};

typedef uint32_t row16 __attribute__((vector_size(64), aligned(64)));

typedef uint32_t row16u __attribute__((vector_size(64), aligned(4)));

// One step of the 16 x 16 transpose in registers: the 2 x 2 blocks of s x s elements of rows i and i + s
// (bit s of i clear) swap their off-diagonal halves (lanes with bit s set of row i <-> lanes with it clear
// of row i + s); steps 8, 4, 2, 1 transpose the tile. Clang's generic vector shuffles: two-source permutes
// on AVX-512, a few shuffles each on AVX2.
#define LO(s, j) (((j) & (s)) ? 16 + (j) - (s) : (j))
#define HI(s, j) (((j) & (s)) ? 16 + (j) : (j) + (s))
#define LANES(F, s)                                                                                           \
  F(s, 0), F(s, 1), F(s, 2), F(s, 3), F(s, 4), F(s, 5), F(s, 6), F(s, 7), F(s, 8), F(s, 9), F(s, 10), F(s, 11), \
      F(s, 12), F(s, 13), F(s, 14), F(s, 15)
#define STEP(s)                                                                                               \
  for (int i = 0; i < T; i++)                                                                                 \
    if (!(i & (s))) {                                                                                         \
      row16 a = r[i], b = r[i + (s)];                                                                         \
      r[i] = __builtin_shufflevector(a, b, LANES(LO, s));                                                     \
      r[i + (s)] = __builtin_shufflevector(a, b, LANES(HI, s));                                               \
    }

// A whole tile as the fastest transpose we know how to write on a CPU: 16 row loads, the transpose in
// registers, 16 non-temporal row stores; false (nothing done) where the tile is partial or out's rows are
// not 64-byte aligned.
static int group_in_registers(const struct hand *p, uint32_t bx, uint32_t by) {
  uint32_t w = p->w, h = p->h;
  if ((bx + 1) * T > w || (by + 1) * T > h || ((uintptr_t)p->out | (uintptr_t)h * 4) % 64)
    return 0;
  row16 r[T];
  for (int i = 0; i < T; i++)
    r[i] = *(const row16u *)&p->in[(by * T + i) * w + bx * T];
  STEP(8) STEP(4) STEP(2) STEP(1)
  for (int i = 0; i < T; i++)
    __builtin_nontemporal_store(r[i], (row16 *)&p->out[(bx * T + i) * h + by * T]);
  return 1;
}

static void group(const struct hand *p, uint32_t bx, uint32_t by) {
  const uint32_t *in = p->in;
  uint32_t *out = p->out, w = p->w, h = p->h;
  if (p->form == HAND_REGISTERS && group_in_registers(p, bx, by))
    return;
  uint32_t tile[T][T + 1];
  if (p->form == HAND_PREFETCH) // the next group's rows, as ol-prefetch-next-group does
    for (uint32_t t = 0; t < T; t++) {
      __builtin_prefetch(&in[(by * T + t) * w + (bx + 1) * T], 0, 3);
      __builtin_prefetch(&out[((bx + 1) * T + t) * h + by * T], 1, 3);
    }
  for (uint32_t ty = 0; ty < T; ty++)
    for (uint32_t tx = 0; tx < T; tx++) {
      uint32_t x = bx * T + tx, y = by * T + ty;
      if (x < w && y < h)
        tile[ty][tx] = in[y * w + x];
    }
  for (uint32_t ty = 0; ty < T; ty++) {
    uint32_t y = bx * T + ty, x0 = by * T;
    if (p->form == HAND_NONTEMPORAL && y < w && x0 + T <= h && ((uintptr_t)&out[y * h + x0]) % 64 == 0) {
      row16 r;
      for (uint32_t tx = 0; tx < T; tx++)
        r[tx] = tile[tx][ty];
      __builtin_nontemporal_store(r, (row16 *)&out[y * h + x0]);
      continue;
    }
    for (uint32_t tx = 0; tx < T; tx++)
      if (x0 + tx < h && y < w)
        out[y * h + x0 + tx] = tile[tx][ty];
  }
}

static void *worker(void *arg) {
  struct hand *p = arg;
  for (;;) {
    uint32_t g0 = __atomic_fetch_add(&p->next, p->chunk, __ATOMIC_RELAXED);
    if (g0 >= p->groups)
      break;
    uint32_t g1 = g0 + p->chunk < p->groups ? g0 + p->chunk : p->groups;
    for (uint32_t g = g0; g < g1; g++)
      group(p, g % p->gx, g / p->gx);
  }
  if (p->form == HAND_NONTEMPORAL || p->form == HAND_REGISTERS)
    __builtin_ia32_sfence(); // the non-temporal stores ordered before the join
  return NULL;
}

// out (w rows of h) = the transpose of in (h rows of w), on `threads` threads (the calling one and up to
// 63 more), write side `form`: 0 plain stores, 1 the next group's rows prefetched, 2 non-temporal stores
// of out's 64-byte tile rows (where aligned), 3 whole tiles transposed in registers and stored non-temporally
// (the others as form 0).
void tiles_hand_transpose(const uint32_t *in, uint32_t *out, uint32_t w, uint32_t h, int form, unsigned threads) {
  struct hand p = {in, out, w, h, (w + T - 1) / T, 0, 1, form, 0};
  p.groups = p.gx * ((h + T - 1) / T);
  p.chunk = p.groups / (threads * 16) ? p.groups / (threads * 16) : 1;
  pthread_t t[64];
  unsigned extra = threads > 64 ? 63 : threads - 1;
  for (unsigned i = 0; i < extra; i++)
    if (pthread_create(&t[i], NULL, worker, &p)) {
      extra = i;
      break;
    }
  worker(&p);
  for (unsigned i = 0; i < extra; i++)
    pthread_join(t[i], NULL);
}
