// The pinning thread-local of src/runtime/pin.rs, in the initial-exec TLS model: reaching it is one
// add to the thread pointer instead of a call to __tls_get_addr (the general-dynamic model, which is all
// stable Rust offers a shared library), on every API call. A dlopen'ed library may use initial-exec for
// a few bytes: glibc keeps a static TLS surplus for exactly that (glibc.rtld.optional_static_tls).
#include <stdbool.h>
#include <stdint.h>

// Layout shared with `pin::Local` (#[repr(C)]); zero is its initial state.
struct ol_rs_pin_local {
  const void *rec;
  uint32_t depth;
  bool deferred;
};

static __thread struct ol_rs_pin_local local __attribute__((tls_model("initial-exec")));

// The calling thread's record; valid for the thread's whole life (no destructor), including while its
// other thread-locals are being destroyed.
__attribute__((visibility("hidden"))) struct ol_rs_pin_local *ol_rs_pin_local(void) { return &local; }
