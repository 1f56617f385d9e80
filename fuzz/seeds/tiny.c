// A tiny x86-64 shared object for the `program` fuzz target's seed corpus (native-ELF path of
// olCreateProgram). Build: cc -shared -fPIC -O2 -nostdlib -Wl,-z,max-page-size=4096 -s -o tiny.so tiny.c
// Kernels of native images are work-group functions: void name(const WgCtx *ctx).
__attribute__((visibility("default"))) unsigned value[4] = {1, 2, 3, 4};
__attribute__((visibility("default"))) void noargs(const void *ctx) { (void)ctx; }
