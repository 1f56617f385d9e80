//! `olInit`, `olShutDown`.

use crate::api::{guarded, to_c};
use crate::ffi::*;
use crate::runtime::{self, pin};
use crate::trace;

/// Whether a live context traces.
fn tracing() -> bool {
    runtime::context(&pin::pin()).is_some_and(|c| c.trace)
}

/// Initialise the library (reference counted). Reads `OFFLOAD_TRACE` and `OFFLOAD_DISABLE_VALIDATION` at
/// the first call; finds the CUDA devices (if a driver is present), the CPU device and the virtual host
/// device.
///
/// # Safety
/// Always safe to call; `unsafe` only because it is a C entry point.
#[unsafe(export_name = "olInit")]
pub unsafe extern "C" fn ol_init() -> ol_result_t {
    let r = guarded("olInit", || runtime::init(runtime::InitOptions::default()));
    // Traced entirely after the call: only then is it known whether tracing is on (as in LLVM 22).
    if tracing() {
        trace::begin("olInit");
        trace::end("", &r);
    }
    to_c(r)
}

/// Release one reference; the last one drains every queue, unloads every program, frees what was not
/// freed and invalidates every handle.
///
/// Errors: `OL_ERRC_UNINITIALIZED`, `OL_ERRC_UNSUPPORTED` (from a host function: the reference is kept).
///
/// # Safety
/// Always safe to call; calls racing with the final shutdown get UNINITIALIZED or complete first.
#[unsafe(export_name = "olShutDown")]
pub unsafe extern "C" fn ol_shut_down() -> ol_result_t {
    let trace_on = {
        let pin = pin::pin();
        let Some(ctx) = runtime::context(&pin) else { return crate::error::uninitialized() };
        ctx.trace
    };
    if trace_on {
        trace::begin("olShutDown");
    }
    let r = guarded("olShutDown", runtime::shutdown);
    // The call that destroyed the context prints only its prefix (LLVM 22).
    if tracing() {
        trace::end("", &r);
    }
    to_c(r)
}
