//! `OlError` and the interning of `ol_error_struct_t`.
//!
//! At the C boundary an error becomes a pointer to an immortal `{Code, Details}` record: the same
//! (code, details) pair always yields the same pointer (as in LLVM 22), records are never freed (not even
//! by `olShutDown`), and `Details` is never NULL.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{LazyLock, Mutex};

use crate::ffi::*;
use crate::plugin::PluginError;

/// An API error: an `ol_errc_t` code and a message that says what failed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OlError {
    pub code: ol_errc_t,
    pub details: String,
}

pub type OlResult<T> = Result<T, OlError>;

impl OlError {
    pub fn new(code: ol_errc_t, details: impl Into<String>) -> Self {
        OlError { code, details: details.into() }
    }
    /// `validation failure: <expr>`, LLVM 22's text for a failed prologue check.
    pub fn validation(code: ol_errc_t, expr: &str) -> Self {
        // Not format!: this is the error path LLVM's callers probe with PropSize == 0, kept cheap.
        const PREFIX: &str = "validation failure: ";
        let mut details = String::with_capacity(PREFIX.len() + expr.len());
        details.push_str(PREFIX);
        details.push_str(expr);
        OlError { code, details }
    }
    pub fn invalid_size(details: impl Into<String>) -> Self {
        OlError::new(OL_ERRC_INVALID_SIZE, details)
    }
    pub fn invalid_argument(details: impl Into<String>) -> Self {
        OlError::new(OL_ERRC_INVALID_ARGUMENT, details)
    }
    pub fn invalid_enum(details: impl Into<String>) -> Self {
        OlError::new(OL_ERRC_INVALID_ENUMERATION, details)
    }
    pub fn unsupported(details: impl Into<String>) -> Self {
        OlError::new(OL_ERRC_UNSUPPORTED, details)
    }
    pub fn not_found(details: impl Into<String>) -> Self {
        OlError::new(OL_ERRC_NOT_FOUND, details)
    }
}

impl std::fmt::Display for OlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", errc_name(self.code), self.details)
    }
}

impl From<PluginError> for OlError {
    fn from(e: PluginError) -> Self {
        let code = match &e {
            PluginError::OutOfResources(_) => OL_ERRC_OUT_OF_RESOURCES,
            PluginError::InvalidBinary(_) => OL_ERRC_INVALID_BINARY,
            PluginError::NotFound(_) => OL_ERRC_NOT_FOUND,
            PluginError::InvalidArgument(_) => OL_ERRC_INVALID_ARGUMENT,
            PluginError::InvalidSize(_) => OL_ERRC_INVALID_SIZE,
            PluginError::Unsupported(_) => OL_ERRC_UNSUPPORTED,
            PluginError::Compile(_) => OL_ERRC_COMPILE_FAILURE,
            PluginError::Backend(_) => OL_ERRC_BACKEND_FAILURE,
            PluginError::Driver(_) => OL_ERRC_UNKNOWN,
            PluginError::InvalidValue(_) => OL_ERRC_INVALID_VALUE,
        };
        OlError::new(code, e.to_string())
    }
}

/// The enumerator name of an error code, as LLVM's tracer prints it.
pub fn errc_name(code: ol_errc_t) -> &'static str {
    enumerator_name!(code;
        OL_ERRC_SUCCESS,
        OL_ERRC_UNKNOWN,
        OL_ERRC_HOST_IO,
        OL_ERRC_INVALID_BINARY,
        OL_ERRC_INVALID_NULL_POINTER,
        OL_ERRC_INVALID_ARGUMENT,
        OL_ERRC_NOT_FOUND,
        OL_ERRC_OUT_OF_RESOURCES,
        OL_ERRC_INVALID_SIZE,
        OL_ERRC_INVALID_ENUMERATION,
        OL_ERRC_HOST_TOOL_NOT_FOUND,
        OL_ERRC_INVALID_VALUE,
        OL_ERRC_UNIMPLEMENTED,
        OL_ERRC_UNSUPPORTED,
        OL_ERRC_ASSEMBLE_FAILURE,
        OL_ERRC_COMPILE_FAILURE,
        OL_ERRC_LINK_FAILURE,
        OL_ERRC_BACKEND_FAILURE,
        OL_ERRC_UNINITIALIZED,
        OL_ERRC_INVALID_NULL_HANDLE,
        OL_ERRC_INVALID_PLATFORM,
        OL_ERRC_INVALID_DEVICE,
        OL_ERRC_INVALID_QUEUE,
        OL_ERRC_INVALID_EVENT,
        OL_ERRC_SYMBOL_KIND,
    )
}

/// A `Send + Sync` wrapper for the immortal, immutable error records.
struct Interned(&'static ol_error_struct_t);
// SAFETY: the record and its string are leaked, never mutated or freed after creation.
unsafe impl Send for Interned {}
// SAFETY: as above; shared read-only access from any thread is fine.
unsafe impl Sync for Interned {}

/// rustc's FxHash: the keys are our own error texts, so a fast non-keyed hash is right (SipHash was half
/// the cost of an error return).
#[derive(Default)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// details -> (code, record) for every code seen with that text (looked up by `&str`: no allocation).
type Records = FxMap<String, Vec<(u32, Interned)>>;
static INTERNED: LazyLock<Mutex<Records>> = LazyLock::new(Default::default);

/// The immortal record for `(code, details)`; the same pair always gives the same pointer.
pub fn intern(err: &OlError) -> ol_result_t {
    // An interior NUL would truncate the C string: replace it so Details stays a faithful, valid string.
    let escaped;
    let details = if err.details.contains('\0') {
        escaped = err.details.replace('\0', "\\0");
        &escaped
    } else {
        &err.details
    };
    let code = if err.code == OL_ERRC_SUCCESS { OL_ERRC_UNKNOWN } else { err.code };
    let mut map = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(rec) = map.get(details.as_str()).and_then(|v| v.iter().find(|(c, _)| *c == code.0)) {
        return rec.1.0 as *const ol_error_struct_t;
    }
    let cstr = CString::new(details.as_str()).unwrap_or_default();
    let rec: &'static ol_error_struct_t =
        Box::leak(Box::new(ol_error_struct_t { Code: code, Details: cstr.into_raw() }));
    map.entry(details.clone()).or_default().push((code.0, Interned(rec)));
    rec as *const ol_error_struct_t
}

/// The one static UNINITIALIZED error, with LLVM 22's text.
pub fn uninitialized() -> ol_result_t {
    static REC: LazyLock<Interned> = LazyLock::new(|| {
        let e = OlError::new(
            OL_ERRC_UNINITIALIZED,
            "liboffload has not been initialized - please call olInit before using this API",
        );
        // SAFETY: `intern` returns a pointer to a leaked, immortal record.
        Interned(unsafe { &*intern(&e) })
    });
    REC.0 as *const ol_error_struct_t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_errors_share_one_record() {
        let a = intern(&OlError::invalid_size("validation failure: Size == 0"));
        let b = intern(&OlError::invalid_size("validation failure: Size == 0"));
        let c = intern(&OlError::invalid_size("validation failure: PropSize == 0"));
        assert_eq!(a, b);
        assert_ne!(a, c);
        // SAFETY: interned records are immortal.
        let rec = unsafe { &*a };
        assert_eq!(rec.Code, OL_ERRC_INVALID_SIZE);
        assert!(!rec.Details.is_null());
    }

    #[test]
    fn interior_nul_does_not_lose_the_message() {
        let p = intern(&OlError::invalid_argument("a\0b"));
        // SAFETY: interned records are immortal and NUL-terminated.
        let s = unsafe { std::ffi::CStr::from_ptr((*p).Details) };
        assert_eq!(s.to_str().ok(), Some("a\\0b"));
    }
}
