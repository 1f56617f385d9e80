//! Stop points: how JIT'd code that runs too long, or whose launch already failed, is stopped without a
//! signal. With stop points on ([`set_stop_points`], the CPU device's `OFFLOAD_RS_KERNEL_TIMEOUT`), every
//! compile gets the `ol-stop-points` pass after optimisation (src/jit/llvm/stop_points.cpp): each cycle of
//! every function counts its trips and, every 4096, calls [`RT_POLL`]. The CPU device calls work-group
//! functions and constructors through [`run_work_group`] and [`run_void`] (src/jit/stop.c), and the poll
//! asks the runtime's [`super::RuntimeFunctions::stop_requested`]: when it says stop, the code is left
//! at once, back to where it was called, and the call returns `true`.
//!
//! The option is part of the cache key and of the compile helper's request, as the target is (an object
//! with stop points is another object). Code without stop points runs under the same calls and is never
//! stopped; code with them called directly (not through these calls) is never stopped either.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{WgCtx, WgFn};

/// `void __ol_rs_rt_poll(void)`: what a due stop point calls (src/jit/stop.c).
pub(crate) const RT_POLL: &str = "__ol_rs_rt_poll";

unsafe extern "C" {
    fn ol_rs_run_stoppable(f: unsafe extern "C" fn(*const c_void), arg: *const c_void) -> c_int;
    fn ol_rs_run_stoppable_void(f: unsafe extern "C" fn()) -> c_int;
    fn __ol_rs_rt_poll();
}

static ON: AtomicBool = AtomicBool::new(false);

/// Compile later loads with stop points (set at `olInit`).
pub fn set_stop_points(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether new compiles get stop points ([`set_stop_points`]).
pub fn stop_points() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The poll's address, for the loader.
pub(crate) fn poll_address() -> usize {
    __ol_rs_rt_poll as *const () as usize
}

/// Asked by [`RT_POLL`] (C) at a due stop point of a stoppable call: whether the code must stop now.
#[unsafe(no_mangle)]
extern "C" fn ol_rs_jit_stop_requested() -> bool {
    // no panic crosses into C: a runtime that cannot answer stops the code
    std::panic::catch_unwind(|| super::runtime_functions().is_some_and(|r| (r.stop_requested)())).unwrap_or(true)
}

/// Runs work-group function `f` on `ctx`; `true` when it was stopped at a stop point.
///
/// # Safety
/// As calling `f(ctx)` directly.
pub unsafe fn run_work_group(f: WgFn, ctx: *const WgCtx) -> bool {
    // SAFETY: the same C ABI (one pointer argument, no result); the caller's contract for the call.
    unsafe {
        let f = std::mem::transmute::<WgFn, unsafe extern "C" fn(*const c_void)>(f);
        ol_rs_run_stoppable(f, ctx.cast()) != 0
    }
}

thread_local! {
    /// when the innermost [`run_void`] call on this thread started
    static VOID_STARTED: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Runs `f()` (a program's constructors or destructors); `true` when it was stopped at a stop point.
///
/// # Safety
/// As calling `f()` directly.
pub unsafe fn run_void(f: unsafe extern "C" fn()) -> bool {
    let prev = VOID_STARTED.with(|c| c.replace(Some(std::time::Instant::now())));
    // SAFETY: the caller's contract.
    let stopped = unsafe { ol_rs_run_stoppable_void(f) != 0 };
    VOID_STARTED.with(|c| c.set(prev));
    stopped
}

/// When the [`run_void`] call running on this thread started (None: none runs).
pub fn void_call_started() -> Option<std::time::Instant> {
    VOID_STARTED.with(|c| c.get())
}
