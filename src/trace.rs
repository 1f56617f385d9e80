//! `OFFLOAD_TRACE` output, in LLVM 22's format (stderr): `---> olX` before the call, then
//! `(.Param = value, ...)-> RESULT` and, for errors, `     *Error Details* <details> `.

use std::ffi::{CStr, c_char};
use std::io::Write;

use crate::error::{OlResult, errc_name};

pub fn begin(name: &str) {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "---> {name}");
    let _ = e.flush();
}

pub fn end(params: &str, result: &OlResult<()>) {
    let mut e = std::io::stderr().lock();
    match result {
        Ok(()) => {
            let _ = writeln!(e, "({params})-> OL_SUCCESS");
        }
        Err(err) => {
            let _ = writeln!(e, "({params})-> {}", errc_name(err.code));
            let _ = writeln!(e, "     *Error Details* {} ", err.details);
        }
    }
}

/// A data pointer or handle: `0x…` or `nullptr`.
pub fn ptr<T>(p: *const T) -> String {
    if p.is_null() { "nullptr".into() } else { format!("{p:p}") }
}

/// A function pointer: raw address, `0x0` when NULL.
pub fn fnptr(p: usize) -> String {
    format!("0x{p:x}")
}

/// A `const char*` parameter: `0xADDR (text)`.
///
/// # Safety
/// `p` must be NULL or a valid NUL-terminated string.
pub unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return "nullptr".into();
    }
    // SAFETY: caller guarantees a valid C string.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
    format!("{p:p} ({s})")
}

/// A pointer to an output value: `0xADDR (value)`.
pub fn out<T>(p: *const T, value: Option<String>) -> String {
    match (p.is_null(), value) {
        (true, _) => "nullptr".into(),
        (false, Some(v)) => format!("{p:p} ({v})"),
        (false, None) => format!("{p:p}"),
    }
}

/// A pointer-typed out-parameter, read after the call whatever its result (as LLVM's tracer does):
/// `0xADDR (nullptr)` / `0xADDR (0xVALUE)`.
///
/// # Safety
/// `p` must be NULL or valid for reading a pointer.
pub unsafe fn out_ptr<T>(p: *const *mut T) -> String {
    if p.is_null() {
        return "nullptr".into();
    }
    // SAFETY: non-NULL and readable per the caller contract (the entry point's own out-parameter).
    let v = unsafe { p.read_unaligned() };
    format!("{p:p} ({})", ptr(v))
}

/// A `size_t` out-parameter, read after the call: `0xADDR (N)`.
///
/// # Safety
/// `p` must be NULL or valid for reading a `size_t`.
pub unsafe fn out_usize(p: *const usize) -> String {
    if p.is_null() {
        return "nullptr".into();
    }
    // SAFETY: non-NULL and readable per the caller contract.
    format!("{p:p} ({})", unsafe { p.read_unaligned() })
}

/// A `bool` out-parameter, read after the call: `0xADDR (0|1)`.
///
/// # Safety
/// `p` must be NULL or valid for reading one byte.
pub unsafe fn out_bool(p: *const bool) -> String {
    if p.is_null() {
        return "nullptr".into();
    }
    // SAFETY: non-NULL and readable per the caller contract; read as a byte so any value is defined.
    format!("{p:p} ({})", unsafe { p.cast::<u8>().read() })
}
