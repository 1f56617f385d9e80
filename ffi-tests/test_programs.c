// Programs, symbols and the JIT cache on the CPU device (issue: programs, symbols and the JIT).
#include "ol_test.h"

static void create_destroy_both_targets(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t n;
    void *img = t_load("kernels", t_targets[t], &n);
    bool valid = false;
    OK(olIsValidBinary(t_cpu, img, n, &valid));
    CHECK(valid);
    ol_program_handle_t p = NULL;
    OK(olCreateProgram(t_cpu, img, n, &p));
    CHECK(p != NULL);
    OK(olDestroyProgram(p));
    free(img);
  }
}

static void symbols(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    ol_program_handle_t p = t_create(t_cpu, "kernels", t_targets[t]);
    if (!p)
      return;
    ol_symbol_handle_t k1 = NULL, k2 = NULL, g = NULL, s = NULL;
    OK(olGetSymbol(p, "saxpy", OL_SYMBOL_KIND_KERNEL, &k1));
    OK(olGetSymbol(p, "saxpy", OL_SYMBOL_KIND_KERNEL, &k2));
    CHECK(k1 && k1 == k2);
    OK(olGetSymbol(p, "global_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
    CHECK(g != NULL);
    ERR(OL_ERRC_NOT_FOUND, olGetSymbol(p, "no_such_kernel", OL_SYMBOL_KIND_KERNEL, &s));
    ERR(OL_ERRC_NOT_FOUND, olGetSymbol(p, "no_such_global", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s));
    ERR(OL_ERRC_NOT_FOUND, olGetSymbol(p, "global_var", OL_SYMBOL_KIND_KERNEL, &s));
    ERR(OL_ERRC_NOT_FOUND, olGetSymbol(p, "saxpy", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &s));
    ERR(OL_ERRC_INVALID_ENUMERATION, olGetSymbol(p, "saxpy", OL_SYMBOL_KIND_FORCE_UINT32, &s));
    ol_symbol_kind_t kind = 99;
    OK(olGetSymbolInfo(k1, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
    CHECK(kind == OL_SYMBOL_KIND_KERNEL);
    OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
    CHECK(kind == OL_SYMBOL_KIND_GLOBAL_VARIABLE);
    void *addr = NULL;
    size_t size = 0, sz = 0;
    OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
    OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, sizeof size, &size));
    CHECK(addr != NULL);
    CHECK(size == 256);
    OK(olGetSymbolInfoSize(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, &sz));
    CHECK(sz == 8);
    ERR(OL_ERRC_SYMBOL_KIND, olGetSymbolInfo(k1, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof addr, &addr));
    ERR(OL_ERRC_SYMBOL_KIND, olGetSymbolInfoSize(k1, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, &sz));
    ol_result_t r = olGetSymbolInfo(k1, OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE, 1, &size);
    CHECK(r && r->Code == OL_ERRC_SYMBOL_KIND &&
          !strcmp(r->Details, "OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE: Expected a symbol of Kind "
                              "OL_SYMBOL_KIND_GLOBAL_VARIABLE but given a symbol of Kind OL_SYMBOL_KIND_KERNEL"));
    ERR(OL_ERRC_INVALID_ENUMERATION, olGetSymbolInfo(k1, OL_SYMBOL_INFO_FORCE_UINT32, sizeof kind, &kind));
    ERR(OL_ERRC_INVALID_SIZE, olGetSymbolInfo(k1, OL_SYMBOL_INFO_KIND, 3, &kind));
    OK(olDestroyProgram(p));
    // symbols die with their program
    ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbolInfo(k1, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
    ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbolInfo(g, OL_SYMBOL_INFO_KIND, sizeof kind, &kind));
    ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbol(p, "saxpy", OL_SYMBOL_KIND_KERNEL, &s));
    ERR(OL_ERRC_INVALID_ARGUMENT, olDestroyProgram(p));
  }
}

// Globals are device memory: write through olMemcpy, read back; constructors ran at load in priority order.
static void globals_and_ctors(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    ol_program_handle_t p = t_create(t_cpu, "kernels", t_targets[t]);
    if (!p)
      return;
    ol_symbol_handle_t g = NULL, c = NULL;
    OK(olGetSymbol(p, "global_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g));
    OK(olGetSymbol(p, "ctor_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &c));
    void *ga = NULL, *ca = NULL;
    OK(olGetSymbolInfo(g, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof ga, &ga));
    OK(olGetSymbolInfo(c, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof ca, &ca));
    uint32_t in[64], out[64];
    for (int i = 0; i < 64; i++)
      in[i] = 1000 + i;
    OK(olMemcpy(NULL, ga, t_cpu, in, t_host, sizeof in));
    memset(out, 0, sizeof out);
    OK(olMemcpy(NULL, out, t_host, ga, t_cpu, sizeof out));
    CHECK(!memcmp(in, out, sizeof in));
    OK(olMemcpy(NULL, out, t_host, ca, t_cpu, sizeof out));
    for (int i = 0; i < 64; i++)
      CHECK(out[i] == 100);
    // a second program from the same bytes has its own globals, and its constructors ran too
    ol_program_handle_t p2 = t_create(t_cpu, "kernels", t_targets[t]);
    ol_symbol_handle_t g2 = NULL;
    OK(olGetSymbol(p2, "global_var", OL_SYMBOL_KIND_GLOBAL_VARIABLE, &g2));
    void *ga2 = NULL;
    OK(olGetSymbolInfo(g2, OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS, sizeof ga2, &ga2));
    CHECK(ga2 != NULL && ga2 != ga);
    OK(olDestroyProgram(p2));
    OK(olDestroyProgram(p));
  }
}

static void garbage_rejected(void) {
  NEED_CPU();
  unsigned char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (unsigned char)(i * 131 + 7);
  ol_program_handle_t p = (ol_program_handle_t)0x1;
  bool valid = true;
  ERR(OL_ERRC_INVALID_BINARY, olCreateProgram(t_cpu, junk, sizeof junk, &p));
  CHECK(p == (ol_program_handle_t)0x1); // out-param untouched on failure
  OK(olIsValidBinary(t_cpu, junk, sizeof junk, &valid));
  CHECK(!valid);
  valid = true;
  OK(olIsValidBinary(t_cpu, junk, 0, &valid));
  CHECK(!valid);
  ol_result_t r = olCreateProgram(t_cpu, junk, 0, &p);
  CHECK(r != NULL);
  // ELF magic but nonsense, and a relocatable x86-64 object header
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  r = olCreateProgram(t_cpu, elf, sizeof elf, &p);
  CHECK(r != NULL && r->Details && r->Details[0]);
  for (int t = 0; t < 2; t++) {
    size_t n;
    unsigned char *img = t_load("kernels", t_targets[t], &n);
    // truncated images at several lengths
    size_t cuts[] = {4, 20, n / 4, n / 2, n - 1};
    for (int c = 0; c < 5; c++) {
      r = olCreateProgram(t_cpu, img, cuts[c], &p);
      CHECK(r != NULL && (r->Code == OL_ERRC_INVALID_BINARY || r->Code == OL_ERRC_COMPILE_FAILURE));
      valid = true;
      OK(olIsValidBinary(t_cpu, img, cuts[c], &valid));
      CHECK(!valid);
    }
    // bit flips in the middle: an error or a program, never a crash
    for (int f = 0; f < 16; f++) {
      unsigned char *copy = malloc(n);
      memcpy(copy, img, n);
      copy[(n / 2 + (size_t)f * 97) % n] ^= (unsigned char)(1u << (f % 8));
      r = olCreateProgram(t_cpu, copy, n, &p);
      if (!r)
        OK(olDestroyProgram(p));
      OK(olIsValidBinary(t_cpu, copy, n, &valid));
      free(copy);
    }
    free(img);
  }
  // the library is still usable
  ol_program_handle_t ok = t_create(t_cpu, "kernels", "nvptx64");
  CHECK(ok != NULL);
  if (ok)
    OK(olDestroyProgram(ok));
}

// The seed's scenario: a program is destroyed, its buffer freed and refilled with a different image at
// the same address; the new program must run the new image's code (t_seed_value checks which one runs).
static void seed_scenario_address_reuse(void) {
  NEED_CPU();
  for (int t = 0; t < 2; t++) {
    size_t na, nb;
    void *a = t_load("seed_a", t_targets[t], &na);
    void *b = t_load("seed_b", t_targets[t], &nb);
    size_t cap = na > nb ? na : nb;
    unsigned char *buf = malloc(cap);
    memcpy(buf, a, na);
    ol_program_handle_t p = NULL;
    OK(olCreateProgram(t_cpu, buf, na, &p));
    CHECK(t_seed_value(p) == 0xAAAA0001);
    OK(olDestroyProgram(p));
    free(buf);
    unsigned char *buf2 = malloc(cap); // very likely the same address
    memcpy(buf2, b, nb);
    OK(olCreateProgram(t_cpu, buf2, nb, &p));
    CHECK(t_seed_value(p) == 0xBBBB0002);
    // and with certainty the same address: overwrite in place while the B program is alive
    memcpy(buf2, a, na);
    ol_program_handle_t pa = NULL;
    OK(olCreateProgram(t_cpu, buf2, na, &pa));
    CHECK(t_seed_value(pa) == 0xAAAA0001);
    CHECK(t_seed_value(p) == 0xBBBB0002);
    OK(olDestroyProgram(pa));
    OK(olDestroyProgram(p));
    free(buf2);
    free(a);
    free(b);
  }
}

static void host_device_cannot_load(void) {
  size_t n;
  void *img = t_load("kernels", "nvptx64", &n);
  ol_program_handle_t p;
  bool valid = true;
  ERR(OL_ERRC_UNSUPPORTED, olCreateProgram(t_host, img, n, &p));
  OK(olIsValidBinary(t_host, img, n, &valid));
  CHECK(!valid);
  ERR(OL_ERRC_INVALID_ARGUMENT, olGetSymbol((ol_program_handle_t)t_host, "saxpy", OL_SYMBOL_KIND_KERNEL,
                                            (ol_symbol_handle_t *)&p));
  ERR(OL_ERRC_INVALID_ARGUMENT, olDestroyProgram((ol_program_handle_t)0x1234));
  ERR(OL_ERRC_INVALID_NULL_HANDLE, olDestroyProgram(NULL));
  ERR(OL_ERRC_INVALID_NULL_POINTER, olCreateProgram(t_host, NULL, n, &p));
  free(img);
}

struct th {
  int id;
  void *img[2];
  size_t n[2];
};

static void *program_thread(void *arg) {
  struct th *th = arg;
  for (int i = 0; i < 15; i++) {
    int which = (th->id + i) % 2;
    ol_program_handle_t p = NULL;
    OK(olCreateProgram(t_cpu, th->img[which], th->n[which], &p));
    if (!p)
      continue;
    CHECK(t_seed_global(p, NULL) == (which ? 0xBBBB0002u : 0xAAAA0001u));
    OK(olDestroyProgram(p));
  }
  return NULL;
}

static void twenty_threads(void) {
  NEED_CPU();
  struct th th[20];
  pthread_t tid[20];
  size_t na, nb;
  void *a = t_load("seed_a", "nvptx64", &na), *b = t_load("seed_b", "nvptx64", &nb);
  for (int i = 0; i < 20; i++) {
    th[i] = (struct th){i, {a, b}, {na, nb}};
    pthread_create(&tid[i], NULL, program_thread, &th[i]);
  }
  for (int i = 0; i < 20; i++)
    pthread_join(tid[i], NULL);
  free(a);
  free(b);
}

int main(void) {
  t_init();
  RUN(create_destroy_both_targets);
  RUN(symbols);
  RUN(globals_and_ctors);
  RUN(garbage_rejected);
  RUN(seed_scenario_address_reuse);
  RUN(host_device_cannot_load);
  RUN(twenty_threads);
  olShutDown();
  return t_finish();
}
