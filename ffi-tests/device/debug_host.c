// Host-triple device code for ffi-tests/test_debug.c (x86-64 bitcode, whose exported `void f(void *ctx)`
// functions are work-group functions already): a plain printf, which the CPU device runs like a kernel's
// (its buffer, flushed by the sync) rather than glibc's.
int printf(const char *, ...);
struct wg_ctx {
  void *args, *local, *dyn_local, *scratch;
  unsigned group_id[3], num_groups[3], group_size[3];
};
void host_print(struct wg_ctx *ctx) {
  printf("host group %u: %d %s %.2f %lx|%-3c|\n", ctx->group_id[0], 42, "str", 1.5, 0xabcdefUL, 'z');
}
