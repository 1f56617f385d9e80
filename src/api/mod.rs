//! The C entry points: the only place with exported symbols. One file per API group; every body is one
//! call to [`entry`], which gates on `olInit`, traces, validates in the header's `@returns` order, catches
//! panics and turns the `Result` into `NULL` or an interned error pointer.
//!
//! Validation can be switched off with `OFFLOAD_DISABLE_VALIDATION` (as in LLVM 22); its NULL checks
//! still run (see [`validate`]), so a NULL argument gets the same code and text in both modes and nothing
//! crashes; the handle lookups and writers refuse NULL too.

#![allow(non_snake_case, reason = "parameter names are OffloadAPI.h's; cbindgen copies them into the header")]

pub mod codeloc;
pub mod device;
pub mod event;
pub mod init;
pub mod kernel;
pub mod memory;
pub mod platform;
pub mod program;
pub mod queue;
pub mod symbol;
/// The 23.1 entry points; not part of the 22 header.
///
/// cbindgen:ignore
pub mod v23;

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{self, OlError, OlResult};
use crate::ffi::*;
use crate::plugin;
use crate::runtime::{self, Context, pin};
use crate::trace;

/// Run one entry point. `params` renders the parameter list for the tracer (after the call, so that
/// out-parameters show their values); it is only called when tracing is on.
#[inline(always)]
pub(crate) fn entry(
    name: &'static str,
    body: impl FnOnce(&Context) -> OlResult<()>,
    params: impl FnOnce() -> String,
) -> ol_result_t {
    // The pin keeps the context and every handle looked up during the call alive until the call returns.
    let pin = pin::pin();
    let Some(ctx) = runtime::context(&pin) else { return error::uninitialized() };
    if ctx.trace {
        trace::begin(name);
    }
    let result = guarded(name, || body(ctx));
    if ctx.trace {
        trace::end(&params(), &result);
    }
    to_c(result)
}

/// Catch a panic and report it as `OL_ERRC_UNKNOWN` with its text: no panic crosses the C boundary.
// Inlined: with the body and the entry point in one frame the info queries retire ~20% fewer instructions
// (callgrind: olGetDeviceInfo(TYPE) 208 -> 165; LLVM 22: 190).
#[inline(always)]
pub(crate) fn guarded(name: &str, f: impl FnOnce() -> OlResult<()>) -> OlResult<()> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            Err(OlError::new(OL_ERRC_UNKNOWN, format!("internal error in {name}: {}", plugin::panic_text(&*payload))))
        }
    }
}

pub(crate) fn to_c(r: OlResult<()>) -> ol_result_t {
    match r {
        Ok(()) => std::ptr::null(),
        Err(e) => error::intern(&e),
    }
}

/// The generated validation prologue: checks in order, first failure wins, with LLVM's texts.
///
/// When `OFFLOAD_DISABLE_VALIDATION` was set at the first `olInit`, only the NULL checks (every
/// expression naming `NULL`) still run, in the same order: a NULL gets the same code and text in both
/// modes, where LLVM 22 would crash, and no entry point needs a second NULL check of its own. The other
/// checks (`PropSize == 0`, `Size == 0`, ...) are what the variable skips, as in LLVM 22.
#[inline(always)]
pub(crate) fn validate(ctx: &Context, checks: &[(bool, ol_errc_t, &'static str)]) -> OlResult<()> {
    // The common case, every check passing, needs only the conditions.
    if checks.iter().all(|&(failed, _, _)| !failed) {
        return Ok(());
    }
    for &(failed, code, expr) in checks {
        if failed && (ctx.validate || expr.contains("NULL")) {
            return Err(OlError::validation(code, expr));
        }
    }
    Ok(())
}

/// Write an out-parameter; NULL (possible with validation disabled) is an error, never a crash.
///
/// # Safety
/// `p` must be NULL or valid for writing a `T`.
pub(crate) unsafe fn write_out<T>(p: *mut T, v: T, what: &str) -> OlResult<()> {
    if p.is_null() {
        return Err(OlError::new(OL_ERRC_INVALID_NULL_POINTER, format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and, per the caller, valid for a write.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// Borrow a caller buffer as a slice (empty for size 0 or NULL).
///
/// # Safety
/// `p` must be NULL or valid for reading `size` bytes for the lifetime `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const std::ffi::c_void, size: usize) -> &'a [u8] {
    if p.is_null() || size == 0 {
        return &[];
    }
    // SAFETY: the caller guarantees `size` readable bytes at `p`.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size) }
}

/// The raw value of a handle argument (a pointer on the C side, never dereferenced): the table's key.
pub(crate) fn raw_handle<T>(p: *mut T) -> u64 {
    p as usize as u64
}
