//! The in-process LLVM module, as the client library loads it: `offload-rs/liboffload-rs-llvm.so`
//! beside the library (`OFFLOAD_RS_JIT_MODULE=<path>` names it), the JIT's LLVM side (src/jit/llvm/)
//! linked with libLLVM, loaded with `dlopen` at the first compile that runs in this process
//! (`OFFLOAD_RS_JIT_IN_PROCESS=1`, or no compile helper could start) and never unloaded (LLVM keeps
//! threads and static state). It takes the compile helper's request bytes and answers with its response
//! bytes (src/jit/llvm/mod.rs, `offload_rs_llvm_execute`), so a compile gives the same answer here as
//! in the helper; a module of another build is not used.
//!
//! Only the client library (built without the `llvm` feature) uses this file: with the feature, LLVM is
//! linked in and runs directly.

use std::ffi::{CStr, CString, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use super::JitError;

type ExecuteFn = unsafe extern "C" fn(*const u8, usize, *mut *mut u8, *mut usize) -> i32;
type FreeFn = unsafe extern "C" fn(*mut u8);
type BuildIdFn = unsafe extern "C" fn() -> *const c_char;

struct Module {
    execute: ExecuteFn,
    free: FreeFn,
}

/// Loads the module (once; a module that cannot be used stays unused, with the reason).
fn module() -> Result<&'static Module, &'static str> {
    static M: OnceLock<Result<Module, String>> = OnceLock::new();
    M.get_or_init(|| {
        let path = super::beside::beside_library(
            "OFFLOAD_RS_JIT_MODULE",
            &["offload-rs/liboffload-rs-llvm.so", "liboffload-rs-llvm.so"],
            Path::is_file,
        )?;
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("bad module path {}", path.display()))?;
        // SAFETY: dlopen of a NUL-terminated path; RTLD_LOCAL keeps LLVM's and the module's symbols out
        // of the client's namespace. The handle is never closed.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err(format!("cannot load {}: {}", path.display(), super::native::dl_error()));
        }
        let sym = |name: &CStr| {
            // SAFETY: dlsym on a live handle with a NUL-terminated name.
            let p = unsafe { libc::dlsym(h, name.as_ptr()) };
            (!p.is_null()).then_some(p).ok_or_else(|| format!("{} has no {}", path.display(), name.to_string_lossy()))
        };
        let (e, f, b) =
            (sym(c"offload_rs_llvm_execute")?, sym(c"offload_rs_llvm_free")?, sym(c"offload_rs_llvm_build_id")?);
        // SAFETY: the module's exports have these signatures (src/jit/llvm/mod.rs); the build id check
        // below refuses a module of another build, whose ABI could differ.
        let (execute, free, build_id) = unsafe {
            (
                std::mem::transmute::<*mut libc::c_void, ExecuteFn>(e),
                std::mem::transmute::<*mut libc::c_void, FreeFn>(f),
                std::mem::transmute::<*mut libc::c_void, BuildIdFn>(b),
            )
        };
        // SAFETY: returns a static NUL-terminated string.
        let theirs = unsafe { CStr::from_ptr(build_id()) }.to_string_lossy().into_owned();
        if theirs != super::BUILD_ID {
            return Err(format!("{} is from another build of offload-rs", path.display()));
        }
        super::debug(&format!("compiling in this process with the LLVM module {}", path.display()));
        Ok(Module { execute, free })
    })
    .as_ref()
    .map_err(String::as_str)
}

/// Runs the encoded compile-service request `req` in the module: the job's payload, or its error.
pub(crate) fn execute(req: &[u8]) -> Result<Vec<u8>, JitError> {
    let m = module().map_err(|why| {
        JitError::Compile(format!("the JIT cannot compile: no compile helper, and no in-process LLVM module ({why})"))
    })?;
    let (mut out, mut len): (*mut u8, usize) = (std::ptr::null_mut(), 0);
    // SAFETY: the module's ABI: `req` readable for its length, out-pointers writable; it returns a
    // malloc'ed buffer of `len` bytes that we free with its `free` after copying it.
    let body = unsafe {
        if (m.execute)(req.as_ptr(), req.len(), &mut out, &mut len) != 0 || out.is_null() {
            return Err(JitError::OutOfResources("the in-process LLVM module had no memory for its answer".into()));
        }
        let v = std::slice::from_raw_parts(out, len).to_vec();
        (m.free)(out);
        v
    };
    super::request::decode_result(body)
}
