//! The lowering's module-wide clean-up, after the C++ per-kernel lowering (`lower/`) has built the
//! work-group functions: the original kernels and every function no work-group function uses removed,
//! `__gpu_local` variables left unused removed (one still used is an error), and what cannot run on the
//! CPU refused: CUDA printf/assert calls that devicelib.rs did not rewrite (an unknown signature), GPU intrinsics that the lowering did not reach (compile.rs verifies
//! the module next). Plain LLVM-C but for two thin primitives of lower/entry.cpp (`removeDeadConstantUsers`,
//! erasing named metadata).

use std::collections::HashSet;
use std::ffi::{c_char, c_void};

use inkwell::llvm_sys::LLVMCallConv;
use inkwell::llvm_sys::core::{
    LLVMGetBasicBlockParent, LLVMGetFirstUse, LLVMGetInstructionParent, LLVMGetNextUse, LLVMGetPointerAddressSpace,
    LLVMGetUser, LLVMGetValueName2, LLVMIsAInstruction, LLVMTypeOf,
};
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, FunctionValue};

use super::intrinsics::{IntrinsicOp, classify};
use crate::jit::{Arch, JitError, KernelMeta};

unsafe extern "C" {
    fn ol_rs_jit_remove_dead_constant_users(v: *mut c_void);
    fn ol_rs_jit_erase_named_metadata(m: *mut c_void, name: *const c_char);
}

/// The address space of `__gpu_local` (shared) variables.
const SHARED_AS: u32 = 3;

fn is_gpu_intrinsic(name: &[u8]) -> bool {
    classify(name).op != IntrinsicOp::NotGpu
}

fn used(v: LLVMValueRef) -> bool {
    // SAFETY: `v` is a live value; its use list is only read.
    unsafe { !LLVMGetFirstUse(v).is_null() }
}

/// The name of the function of `v`'s first user that is an instruction ("" if none).
fn first_user_function(v: LLVMValueRef) -> Option<String> {
    // SAFETY: `v` is a live value; its users, their blocks and functions are live and only read.
    unsafe {
        let mut u = LLVMGetFirstUse(v);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAInstruction(user).is_null() {
                let f = LLVMGetBasicBlockParent(LLVMGetInstructionParent(user));
                let mut len = 0;
                let p = LLVMGetValueName2(f, &mut len);
                return Some(String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned());
            }
            u = LLVMGetNextUse(u);
        }
    }
    None
}

fn remove_dead_constant_users(v: LLVMValueRef) {
    // SAFETY: `v` is a live global value; the primitive only drops constants nothing uses.
    unsafe { ol_rs_jit_remove_dead_constant_users(v as *mut c_void) }
}

/// The clean-up. `kernels`: the GPU kernels that were lowered (the originals), `lowered` what the
/// lowering reported for them.
pub(crate) fn clean_up(
    m: &Module<'_>,
    arch: Arch,
    kernels: &[FunctionValue<'_>],
    lowered: &[KernelMeta],
) -> Result<(), JitError> {
    let c_cc = LLVMCallConv::LLVMCCallConv as u32;
    // drop the original kernels, make helpers internal, delete dead code
    for &k in kernels {
        k.set_call_conventions(c_cc);
        if used(k.as_value_ref()) {
            k.set_linkage(Linkage::Internal);
        } else {
            // SAFETY: a function of `m` that nothing uses.
            unsafe { k.delete() };
        }
    }
    let mut keep: HashSet<&[u8]> = HashSet::from([&b"__ol_rs_init"[..], &b"__ol_rs_fini"[..]]);
    keep.extend(lowered.iter().map(|k| k.symbol.as_bytes()));
    for f in m.get_functions() {
        if f.count_basic_blocks() > 0 && !keep.contains(f.get_name().to_bytes()) {
            f.set_linkage(Linkage::Internal);
        }
    }
    let local = |f: FunctionValue<'_>| matches!(f.get_linkage(), Linkage::Internal | Linkage::Private);
    loop {
        let mut changed = false;
        for f in m.get_functions().collect::<Vec<_>>() {
            if f.count_basic_blocks() > 0 && local(f) && !used(f.as_value_ref()) {
                // SAFETY: a function of `m` that nothing uses.
                unsafe { f.delete() };
                changed = true;
            }
        }
        // constant users (e.g. dead constant exprs) keep functions alive; drop dead constants
        for f in m.get_functions() {
            remove_dead_constant_users(f.as_value_ref());
        }
        if !changed {
            break;
        }
    }
    for g in m.get_globals().collect::<Vec<_>>() {
        let gv = g.as_value_ref();
        // SAFETY: a live global of `m`.
        if unsafe { LLVMGetPointerAddressSpace(LLVMTypeOf(gv)) } != SHARED_AS {
            continue;
        }
        remove_dead_constant_users(gv);
        let name = g.get_name().to_string_lossy().into_owned();
        if used(gv) {
            return Err(JitError::Compile(match first_user_function(gv) {
                Some(f) => format!(
                    "__gpu_local variable '{name}' is used by function '{f}' which is not inlined into any kernel"
                ),
                None => format!("__gpu_local variable '{name}' is referenced by a constant initializer"),
            }));
        }
        // SAFETY: a global of `m` that nothing uses.
        unsafe { g.delete() };
    }
    // nvptx printf lowers to a GPU-ABI `vprintf(fmt, packed args)` that must not bind to glibc's;
    // devicelib.rs rewrote the calls of the signatures CUDA gives them.
    for bad in ["vprintf", "__assertfail"] {
        if let Some(f) = m.get_function(bad)
            && f.count_basic_blocks() == 0
            && used(f.as_value_ref())
            && arch == Arch::Nvptx
        {
            return Err(JitError::Compile(format!(
                "unsupported device library call '{bad}' (not CUDA's signature, which the CPU device runs)"
            )));
        }
    }
    // anything GPU-specific left?
    for f in m.get_functions() {
        if is_gpu_intrinsic(f.get_name().to_bytes()) && used(f.as_value_ref()) {
            return Err(JitError::Compile(format!(
                "unsupported GPU intrinsic '{}' used in function '{}' (called indirectly or not reachable from a kernel)",
                f.get_name().to_string_lossy(),
                first_user_function(f.as_value_ref()).unwrap_or_default()
            )));
        }
        if super::normalise::is_gpu_kernel_cc(f.get_call_conventions()) {
            f.set_call_conventions(c_cc);
        }
    }
    for f in m.get_functions().collect::<Vec<_>>() {
        let n = f.get_name().to_bytes();
        if f.count_basic_blocks() == 0 && !used(f.as_value_ref()) && (is_gpu_intrinsic(n) || n.starts_with(b"__ol_rs."))
        {
            // SAFETY: a declaration of `m` that nothing uses.
            unsafe { f.delete() };
        }
    }
    if m.get_function("__ol_rs.barrier").is_some_and(|f| used(f.as_value_ref())) {
        return Err(JitError::Compile("internal: barrier marker left".into()));
    }
    // SAFETY: the module is live; the name is NUL-terminated.
    unsafe { ol_rs_jit_erase_named_metadata(m.as_mut_ptr() as *mut c_void, c"nvvm.annotations".as_ptr()) };
    Ok(())
}
