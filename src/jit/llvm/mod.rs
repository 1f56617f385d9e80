//! The JIT's LLVM side: every line of offload-rs that runs LLVM, built only with the `llvm` feature.
//!
//! The client library (`libLLVMOffload.so.22.1`, `.23.1`) is built without it and never loads LLVM: its
//! compiles go to the compile helper (`offload-rs-jit`, src/jit/helper.rs), or, with
//! `OFFLOAD_RS_JIT_IN_PROCESS=1` or when no helper can start, to the in-process LLVM module
//! (`offload-rs/liboffload-rs-llvm.so` beside the library, src/jit/module.rs), which it loads with
//! `dlopen` on first need. Both run [`execute`] on the same request bytes, so a compile gives the same
//! answer wherever it runs. The helper, the module and the Rust tests are built with the feature.
//!
//! What is here: parsing and compiling bitcode to x86-64 objects ([`compile`]: the module-wide steps in
//! `normalise`, printf/assert/trap in `devicelib`, math in `math`, each kernel's lowering in C++
//! (`lower/`, `passes.cpp`, `kernel_memory.cpp`, `workarounds/`), `cleanup`, then `pipeline`'s
//! optimisation and code generation, `stop_points` when asked), NVPTX bitcode to PTX (`nvptx`), and the
//! resolution of the client's CPU target ([`target`]).

/// cbindgen:ignore
pub(crate) mod abi;
mod callgraph;
mod cleanup;
pub(crate) mod compile;
mod devicelib;
mod intrinsics;
pub(crate) mod lowering;
mod math;
mod normalise;
mod nvptx;
mod pipeline;
mod stop_points;
pub(crate) mod target;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod workaround_tests;

use std::ffi::c_char;

use super::JitError;
use super::request::{Request, encode_result};

/// Runs one job of the compile service here: the helper's side, the in-process module's, and (with this
/// feature) the library's own in-process compile. Returns the job's payload.
pub(crate) fn execute(req: &Request<'_>) -> Result<Vec<u8>, JitError> {
    match *req {
        Request::Cpu {
            bc,
            opt,
            memcheck,
            replaced,
            defer,
            kernel,
            group,
            quick,
            triple,
            cpu,
            features,
            vector_math,
            stop_points,
            lowering,
        } => {
            let spec = (!kernel.is_empty()).then(|| super::compile::Spec {
                kernel: kernel.to_string(),
                group_size: group,
                quick,
            });
            let target = super::request::CpuTarget {
                triple: triple.to_string(),
                cpu: cpu.to_string(),
                features: features.to_string(),
                vector_math,
                stop_points,
                lowering: lowering.to_string(),
            };
            compile::compile_in_process(bc, &target, opt, memcheck, replaced, defer, spec.as_ref())
                .map(|(o, m)| super::compile::encode_object(&o, &m))
        }
        Request::Ptx { bc, cpu, features, opt } => {
            nvptx::ptx_in_process(bc, cpu, features, opt).map(String::into_bytes)
        }
        Request::Target { spec, under_valgrind, lacks } => {
            let spec = (!spec.is_empty()).then_some(spec);
            target::resolve_request(spec, under_valgrind, lacks)
                .map(|t| t.encode(&target::enabled_features(&t).join(",")))
        }
    }
}

/// The in-process module's entry point (`offload_rs_llvm_execute`, exported by
/// `offload-rs/liboffload-rs-llvm.so`): runs the job encoded in `req[..len]` (the compile helper's
/// request) and returns its encoded result (the helper's response body) in `*out[..*out_len]`, a
/// buffer for [`offload_rs_llvm_free`]. 0 on success, -1 when no buffer could be made. No panic
/// leaves it.
///
/// # Safety
/// `req` points to `len` readable bytes; `out` and `out_len` are writable.
#[unsafe(no_mangle)]
unsafe extern "C" fn offload_rs_llvm_execute(
    req: *const u8,
    len: usize,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    let body = std::panic::catch_unwind(|| {
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(req, len) };
        match Request::decode(bytes) {
            Some(r) => encode_result(execute(&r)),
            None => encode_result(Err(JitError::Compile("internal: malformed request to the LLVM module".into()))),
        }
    })
    .unwrap_or_else(|_| encode_result(Err(JitError::Compile("internal: the JIT panicked".into()))));
    // SAFETY: malloc of a size we own; the copy fills it.
    let buf = unsafe { libc::malloc(body.len().max(1)) } as *mut u8;
    if buf.is_null() {
        return -1;
    }
    // SAFETY: `buf` has room for `body.len()` bytes; the out-pointers are writable (the caller's contract).
    unsafe {
        std::ptr::copy_nonoverlapping(body.as_ptr(), buf, body.len());
        *out = buf;
        *out_len = body.len();
    }
    0
}

/// Frees a result of [`offload_rs_llvm_execute`].
///
/// # Safety
/// `p` is NULL or a buffer from [`offload_rs_llvm_execute`], freed once.
#[unsafe(no_mangle)]
unsafe extern "C" fn offload_rs_llvm_free(p: *mut u8) {
    // SAFETY: the caller's contract (malloc'ed by offload_rs_llvm_execute).
    unsafe { libc::free(p.cast()) };
}

/// The module's build id (NUL-terminated): the library uses a module of its own build only.
#[unsafe(no_mangle)]
extern "C" fn offload_rs_llvm_build_id() -> *const c_char {
    concat!(env!("OFFLOAD_RS_BUILD_ID"), "\0").as_ptr().cast()
}
