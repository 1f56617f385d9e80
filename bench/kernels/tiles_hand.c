// Hand-written C peers of ffi-tests/kernels/tiles.c's transpose (bench/tiles.c): the suite's hand loop
// (bench/kernels/suite_hand.c) over 16 x 16 tiles, groups shared out to threads in chunks from an atomic
// counter, x fastest, as the CPU device's pool runs them; three forms of the write side. Built by
// bench/build.sh with clang-22 -O3 -march=native.
#include <pthread.h>
#include <stdint.h>

#define T 16

enum { HAND_PLAIN, HAND_PREFETCH, HAND_NONTEMPORAL };

struct hand {
  const uint32_t *in;
  uint32_t *out;
  uint32_t w, h, gx, groups, chunk;
  int form;
  uint32_t next; // the next unclaimed group (atomic)
};

typedef uint32_t row16 __attribute__((vector_size(64), aligned(64)));

static void group(const struct hand *p, uint32_t bx, uint32_t by) {
  const uint32_t *in = p->in;
  uint32_t *out = p->out, w = p->w, h = p->h;
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
  if (p->form == HAND_NONTEMPORAL)
    __builtin_ia32_sfence(); // the non-temporal stores ordered before the join
  return NULL;
}

// out (w rows of h) = the transpose of in (h rows of w), on `threads` threads (the calling one and up to
// 63 more), write side `form`: 0 plain stores, 1 the next group's rows prefetched, 2 non-temporal stores
// of out's 64-byte tile rows (where aligned).
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
