// Leaving JIT'd code at a stop point (src/jit/llvm/stop_points.cpp), without a signal: the CPU device calls a
// work-group function or a program's constructors through ol_rs_run_stoppable, which remembers where it
// was called from (sigsetjmp, no signal mask saved); a due stop point calls __ol_rs_rt_poll, which asks
// the runtime (ol_rs_jit_stop_requested, src/jit/stop.rs) and, when the code must stop, jumps back there
// (siglongjmp). The frames it leaves are the JIT'd code's and this file's only: nothing with a
// destructor, no lock (JIT'd code takes none), nothing of Rust's.
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

bool ol_rs_jit_stop_requested(void);

// Where the innermost stoppable call on this thread returns to when stopped (NULL: none).
static __thread sigjmp_buf *ol_rs_stop_target;

// Calls f(arg); returns 1 when f was stopped, else 0.
__attribute__((visibility("hidden"))) int ol_rs_run_stoppable(void (*f)(const void *), const void *arg) {
  sigjmp_buf here;
  sigjmp_buf *volatile prev = ol_rs_stop_target;
  if (sigsetjmp(here, 0)) {
    ol_rs_stop_target = prev;
    return 1;
  }
  ol_rs_stop_target = &here;
  f(arg);
  ol_rs_stop_target = prev;
  return 0;
}

// Calls f(); returns 1 when f was stopped, else 0.
__attribute__((visibility("hidden"))) int ol_rs_run_stoppable_void(void (*f)(void)) {
  sigjmp_buf here;
  sigjmp_buf *volatile prev = ol_rs_stop_target;
  if (sigsetjmp(here, 0)) {
    ol_rs_stop_target = prev;
    return 1;
  }
  ol_rs_stop_target = &here;
  f();
  ol_rs_stop_target = prev;
  return 0;
}

// What a due stop point calls. Outside a stoppable call it always returns.
__attribute__((visibility("hidden"))) void __ol_rs_rt_poll(void) {
  sigjmp_buf *t = ol_rs_stop_target;
  if (t && ol_rs_jit_stop_requested())
    siglongjmp(*t, 1);
}
