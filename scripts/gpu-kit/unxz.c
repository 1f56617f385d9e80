/* Minimal static .xz decompressor for the GPU kit (the GPU machine may lack xz-utils).
 * Usage: unxz-static < in.xz > out */
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
    return 2;
  static unsigned char in[1 << 16], out[1 << 16];
  lzma_action act = LZMA_RUN;
  s.next_out = out;
  s.avail_out = sizeof out;
  for (;;) {
    if (s.avail_in == 0 && act == LZMA_RUN) {
      s.next_in = in;
      s.avail_in = fread(in, 1, sizeof in, stdin);
      if (ferror(stdin))
        return 3;
      if (feof(stdin))
        act = LZMA_FINISH;
    }
    lzma_ret r = lzma_code(&s, act);
    if (s.avail_out == 0 || r == LZMA_STREAM_END) {
      size_t n = sizeof out - s.avail_out;
      if (fwrite(out, 1, n, stdout) != n)
        return 4;
      s.next_out = out;
      s.avail_out = sizeof out;
    }
    if (r == LZMA_STREAM_END)
      return 0;
    if (r != LZMA_OK) {
      fprintf(stderr, "unxz-static: lzma error %d\n", (int)r);
      return 5;
    }
  }
}
