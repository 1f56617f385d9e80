//! The device library calls the CPU device runs itself, rewritten before the lowering into calls of the
//! CPU device's runtime (resolved by the loader, [`super::set_runtime_functions`]):
//! * `printf(fmt, ...)` (C's variadic form, what clang emits for nvptx64, amdgcn and host bitcode from C)
//!   and nvptx64's CUDA form `vprintf(fmt, args)` -> [`RT_PRINTF`]`(fmt, args, args_len, cuda, x, y, z)`.
//!   The variadic form's arguments are packed here into the buffer CUDA defines for `vprintf` (each
//!   argument at the next multiple of its size, `float` promoted to `double`, integers narrower than 32
//!   bits to `int`), so both forms reach the runtime the same way. `args_len` is the buffer's size when
//!   it is known (an alloca, or no arguments), else `u64::MAX`; (x, y, z) the work-item's local id.
//! * `__assertfail(msg, file, line, function, charSize)` (CUDA), `__assert_fail(msg, file, line,
//!   function)` (C, amdgcn and nvptx64 from C) and `llvm.trap`/`llvm.debugtrap`/`llvm.ubsantrap` ->
//!   [`RT_TRAP`]`(msg, file, line, function, x, y, z, gx, gy, gz)` (NULLs and 0 for a trap), then the
//!   work-item exits (`llvm.nvvm.exit`, which the lowering turns into the work-item's return): what
//!   follows the call in its block becomes unreachable. The runtime records the failure and stops the
//!   launch (no group starts after it); no signal is involved.
//!
//! Host bitcode's `printf` is rewritten too (with work-item ids 0); its traps and `__assert_fail` are not
//! (host bitcode has no work-item exit: they trap or abort as the host's would). In GPU bitcode's
//! functions that no kernel calls (global constructors and destructors) the ids are 0 and, in a function
//! returning void, a failed assert or a trap returns from it after the runtime call (the runtime then
//! fails `olCreateProgram`); in one returning a value they keep the host's semantics.
//!
//! HIP's printf forms (`__ockl_printf_begin`, hostcall, and `__printf_alloc`, buffered) are what clang
//! emits for HIP only, not for C on amdgcn; they are refused by name ([`unsupported_printf`]).

use std::ffi::{CString, c_uint};

use inkwell::llvm_sys::core::{
    LLVMAddFunction, LLVMBuildAlloca, LLVMBuildCall2, LLVMBuildFPExt, LLVMBuildGEP2, LLVMBuildIntCast2, LLVMBuildStore,
    LLVMConstInt, LLVMConstIntGetZExtValue, LLVMConstNull, LLVMDoubleTypeInContext, LLVMFunctionType,
    LLVMGetAllocatedType, LLVMGetArgOperand, LLVMGetCalledFunctionType, LLVMGetCalledValue, LLVMGetConstOpcode,
    LLVMGetEntryBasicBlock, LLVMGetFirstBasicBlock, LLVMGetFirstInstruction, LLVMGetInstructionOpcode,
    LLVMGetIntTypeWidth, LLVMGetModuleContext, LLVMGetNamedFunction, LLVMGetNextBasicBlock, LLVMGetNextInstruction,
    LLVMGetNumArgOperands, LLVMGetOperand, LLVMGetTypeKind, LLVMGetValueName2, LLVMInstructionEraseFromParent,
    LLVMInt8TypeInContext, LLVMInt32TypeInContext, LLVMInt64TypeInContext, LLVMIsAAllocaInst, LLVMIsACallInst,
    LLVMIsAConstantExpr, LLVMIsAConstantInt, LLVMIsAConstantPointerNull, LLVMIsAFunction, LLVMIsFunctionVarArg,
    LLVMPointerTypeInContext, LLVMPositionBuilderBefore, LLVMReplaceAllUsesWith, LLVMSetAlignment, LLVMTypeOf,
    LLVMVoidTypeInContext,
};
use inkwell::llvm_sys::prelude::{LLVMContextRef, LLVMTypeRef, LLVMValueRef};
use inkwell::llvm_sys::target::{LLVMABISizeOfType, LLVMGetModuleDataLayout, LLVMTargetDataRef};
use inkwell::llvm_sys::{LLVMOpcode, LLVMTypeKind};
use inkwell::module::Module;

use super::normalise::Builder;
use crate::jit::{Arch, JitError, RT_PRINTF, RT_TRAP};

/// HIP's printf entry points, which the CPU device does not run.
const HIP_PRINTF: [&str; 3] = ["__ockl_printf_begin", "__printf_alloc", "__ockl_printf_append_args"];

unsafe extern "C" {
    fn ol_rs_jit_unreachable_after(i: LLVMValueRef) -> LLVMValueRef;
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    Printf,
    VPrintf,
    Assert,
    Trap,
}

fn name_of(v: LLVMValueRef) -> Vec<u8> {
    let mut len = 0;
    // SAFETY: `v` is a live value; the name is copied before anything changes.
    unsafe {
        let p = LLVMGetValueName2(v, &mut len);
        if p.is_null() { Vec::new() } else { std::slice::from_raw_parts(p as *const u8, len).to_vec() }
    }
}

/// What the call `ci` is, if it is one of ours.
///
/// # Safety
/// `ci` is a live call instruction.
unsafe fn classify(ci: LLVMValueRef, arch: Arch) -> Option<Call> {
    // SAFETY: the caller's contract; only reads.
    unsafe {
        let callee = LLVMGetCalledValue(ci);
        if LLVMIsAFunction(callee).is_null() {
            return None;
        }
        let n = name_of(callee);
        let args = LLVMGetNumArgOperands(ci);
        let gpu = arch != Arch::Host;
        match n.as_slice() {
            b"printf" if LLVMIsFunctionVarArg(LLVMGetCalledFunctionType(ci)) != 0 && args >= 1 => Some(Call::Printf),
            b"vprintf" if arch == Arch::Nvptx && args == 2 => Some(Call::VPrintf),
            b"__assertfail" if gpu && args == 5 => Some(Call::Assert),
            b"__assert_fail" if gpu && args == 4 => Some(Call::Assert),
            b"llvm.trap" | b"llvm.debugtrap" | b"llvm.ubsantrap" if gpu => Some(Call::Trap),
            _ => None,
        }
    }
}

/// A HIP printf entry point the module calls, if any.
pub(crate) fn unsupported_printf(m: &Module<'_>) -> Option<&'static str> {
    HIP_PRINTF.into_iter().find(|n| {
        m.get_function(n).is_some_and(|f| {
            // SAFETY: a live function of `m`; its use list is only read.
            !unsafe { inkwell::llvm_sys::core::LLVMGetFirstUse(f.as_value_ref_raw()) }.is_null()
        })
    })
}

struct Types {
    /// host bitcode: no work-item ids (it is not lowered), zeros instead
    host: bool,
    ctx: LLVMContextRef,
    td: LLVMTargetDataRef,
    i8: LLVMTypeRef,
    i32: LLVMTypeRef,
    i64: LLVMTypeRef,
    f64: LLVMTypeRef,
    ptr: LLVMTypeRef,
}

/// The declaration `name: ty` in `m` (added if missing).
///
/// # Safety
/// `ty` is a function type of `m`'s context.
unsafe fn declare(m: &Module<'_>, name: &str, ty: LLVMTypeRef) -> LLVMValueRef {
    let c = CString::new(name).unwrap_or_default();
    // SAFETY: the caller's contract; the name is NUL-terminated.
    unsafe {
        let f = LLVMGetNamedFunction(m.as_mut_ptr(), c.as_ptr());
        if f.is_null() { LLVMAddFunction(m.as_mut_ptr(), c.as_ptr(), ty) } else { f }
    }
}

/// Rewrites every call the module-level docs list. Runs after the data layout is the host's (the
/// argument buffer's layout is the host's) and before the lowering.
pub(crate) fn lower_device_calls(m: &Module<'_>, arch: Arch) -> Result<(), JitError> {
    if let Some(n) = unsupported_printf(m) {
        return Err(JitError::Compile(format!(
            "unsupported device library call '{n}' (HIP's printf; the CPU device runs printf as C and CUDA \
             compile it: plain printf or vprintf)"
        )));
    }
    let in_kernels = reachable_from_kernels(m);
    // functions also called outside kernels (by a constructor): their printf gets ids 0, as the
    // constructor's copy has no work-item (a trap there still ends a kernel's work-item)
    let outside: Vec<LLVMValueRef> = m
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .map(|f| f.as_value_ref_raw())
        .filter(|f| !in_kernels.contains(f))
        .collect();
    let shared = reachable(outside);
    let mut calls = Vec::new();
    for f in m.get_functions() {
        // outside kernels (constructors, destructors, dead code): host semantics, see the module docs
        let here = if in_kernels.contains(&f.as_value_ref_raw()) { arch } else { Arch::Host };
        let no_ids = here == Arch::Host || shared.contains(&f.as_value_ref_raw());
        // SAFETY: walks the live blocks and instructions of `f`, only reading.
        unsafe {
            let mut bb = LLVMGetFirstBasicBlock(f.as_value_ref_raw());
            while !bb.is_null() {
                let mut i = LLVMGetFirstInstruction(bb);
                while !i.is_null() {
                    if !LLVMIsACallInst(i).is_null()
                        && let Some(c) = classify(i, arch)
                        && (c == Call::Printf || c == Call::VPrintf || here != Arch::Host || returns_void(f))
                    {
                        let is_printf = c == Call::Printf || c == Call::VPrintf;
                        calls.push((f.as_value_ref_raw(), i, c, if is_printf { no_ids } else { here == Arch::Host }));
                    }
                    i = LLVMGetNextInstruction(i);
                }
                bb = LLVMGetNextBasicBlock(bb);
            }
        }
    }
    if calls.is_empty() {
        return Ok(());
    }
    // SAFETY: the module is live; its context and data layout outlive this function.
    let mut t = unsafe {
        let ctx = LLVMGetModuleContext(m.as_mut_ptr());
        Types {
            host: true,
            ctx,
            td: LLVMGetModuleDataLayout(m.as_mut_ptr()),
            i8: LLVMInt8TypeInContext(ctx),
            i32: LLVMInt32TypeInContext(ctx),
            i64: LLVMInt64TypeInContext(ctx),
            f64: LLVMDoubleTypeInContext(ctx),
            ptr: LLVMPointerTypeInContext(ctx, 0),
        }
    };
    // last first: a trap's rewrite removes what follows it in its block, which then holds no call still
    // to be rewritten
    for (f, ci, c, host) in calls.into_iter().rev() {
        t.host = host;
        // SAFETY: `ci` is a live call of `f` in `m`: each is rewritten once, and a rewrite removes only `ci`
        // and what follows it in its block, all of which was rewritten before (reverse order).
        unsafe {
            match c {
                Call::Printf | Call::VPrintf => rewrite_printf(m, &t, f, ci, c == Call::VPrintf)?,
                Call::Assert => rewrite_trap(m, &t, ci, true),
                Call::Trap => rewrite_trap(m, &t, ci, false),
            }
        }
    }
    Ok(())
}

fn returns_void(f: inkwell::values::FunctionValue<'_>) -> bool {
    f.get_type().get_return_type().is_none()
}

/// The functions GPU kernels call, directly or through other functions (the kernels included).
fn reachable_from_kernels(m: &Module<'_>) -> std::collections::HashSet<LLVMValueRef> {
    reachable(super::normalise::kernels(m).iter().map(|k| k.as_value_ref_raw()).collect())
}

/// `roots` and the functions they call, directly or through other functions.
fn reachable(roots: Vec<LLVMValueRef>) -> std::collections::HashSet<LLVMValueRef> {
    let mut seen: std::collections::HashSet<LLVMValueRef> = roots.iter().copied().collect();
    let mut work = roots;
    while let Some(f) = work.pop() {
        // SAFETY: walks the live blocks and instructions of `f`, only reading.
        unsafe {
            let mut bb = LLVMGetFirstBasicBlock(f);
            while !bb.is_null() {
                let mut i = LLVMGetFirstInstruction(bb);
                while !i.is_null() {
                    if !LLVMIsACallInst(i).is_null() {
                        let callee = LLVMGetCalledValue(i);
                        if !LLVMIsAFunction(callee).is_null() && seen.insert(callee) {
                            work.push(callee);
                        }
                    }
                    i = LLVMGetNextInstruction(i);
                }
                bb = LLVMGetNextBasicBlock(bb);
            }
        }
    }
    seen
}

/// Extension to get the raw value of an inkwell function without importing the trait everywhere.
trait RawFn {
    fn as_value_ref_raw(&self) -> LLVMValueRef;
}
impl RawFn for inkwell::values::FunctionValue<'_> {
    fn as_value_ref_raw(&self) -> LLVMValueRef {
        inkwell::values::AsValueRef::as_value_ref(self)
    }
}

/// Calls of the id intrinsics the lowering replaces: the local ids and, if `groups`, the group ids.
///
/// # Safety
/// `b` is positioned in a function of `m`.
unsafe fn ids(m: &Module<'_>, t: &Types, b: &Builder, groups: bool) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    let kinds: &[&str] = if groups { &["tid", "ctaid"] } else { &["tid"] };
    if t.host {
        // SAFETY: a constant of the module's context.
        return vec![unsafe { LLVMConstInt(t.i32, 0, 0) }; kinds.len() * 3];
    }
    // SAFETY: the caller's contract; the intrinsics are `i32 ()`.
    unsafe {
        let fty = LLVMFunctionType(t.i32, std::ptr::null_mut(), 0, 0);
        for k in kinds {
            for d in ["x", "y", "z"] {
                let f = declare(m, &format!("llvm.nvvm.read.ptx.sreg.{k}.{d}"), fty);
                out.push(LLVMBuildCall2(b.0, fty, f, std::ptr::null_mut(), 0, c"".as_ptr()));
            }
        }
    }
    out
}

/// The size of the buffer `v` points to, if it is an alloca (through casts) or NULL; else `u64::MAX`.
///
/// # Safety
/// `v` is a live value; `t.td` the module's data layout.
unsafe fn buffer_len(t: &Types, mut v: LLVMValueRef) -> u64 {
    // SAFETY: the caller's contract; only reads.
    unsafe {
        for _ in 0..8 {
            if !LLVMIsAConstantPointerNull(v).is_null() {
                return 0;
            }
            if !LLVMIsAAllocaInst(v).is_null() {
                let n = LLVMGetOperand(v, 0);
                if LLVMIsAConstantInt(n).is_null() {
                    return u64::MAX;
                }
                let count = LLVMConstIntGetZExtValue(n);
                return LLVMABISizeOfType(t.td, LLVMGetAllocatedType(v)).saturating_mul(count);
            }
            let op = if !LLVMIsAConstantExpr(v).is_null() {
                LLVMGetConstOpcode(v)
            } else if !inkwell::llvm_sys::core::LLVMIsAInstruction(v).is_null() {
                LLVMGetInstructionOpcode(v)
            } else {
                return u64::MAX;
            };
            if !matches!(op, LLVMOpcode::LLVMAddrSpaceCast | LLVMOpcode::LLVMBitCast) {
                return u64::MAX;
            }
            v = LLVMGetOperand(v, 0);
        }
    }
    u64::MAX
}

/// `printf(fmt, ...)` or `vprintf(fmt, args)` at `ci` (in `f`) -> [`RT_PRINTF`].
///
/// # Safety
/// `ci` is a live call of `f`, a function of `m`.
unsafe fn rewrite_printf(
    m: &Module<'_>,
    t: &Types,
    f: LLVMValueRef,
    ci: LLVMValueRef,
    cuda: bool,
) -> Result<(), JitError> {
    // SAFETY: the caller's contract; every value built is in `f`.
    unsafe {
        let b = Builder::new(m);
        b.before(ci);
        let fmt = LLVMGetArgOperand(ci, 0);
        let (buf, len) = if cuda {
            let a = LLVMGetArgOperand(ci, 1);
            (a, buffer_len(t, a))
        } else {
            // pack the variadic arguments as CUDA's vprintf buffer
            let mut vals = Vec::new();
            let mut off = 0u64;
            for k in 1..LLVMGetNumArgOperands(ci) {
                let v = LLVMGetArgOperand(ci, k);
                let ty = LLVMTypeOf(v);
                let v = match LLVMGetTypeKind(ty) {
                    LLVMTypeKind::LLVMIntegerTypeKind if LLVMGetIntTypeWidth(ty) < 32 => {
                        LLVMBuildIntCast2(b.0, v, t.i32, 1, c"".as_ptr())
                    }
                    LLVMTypeKind::LLVMIntegerTypeKind if matches!(LLVMGetIntTypeWidth(ty), 32 | 64) => v,
                    LLVMTypeKind::LLVMFloatTypeKind | LLVMTypeKind::LLVMHalfTypeKind => {
                        LLVMBuildFPExt(b.0, v, t.f64, c"".as_ptr())
                    }
                    LLVMTypeKind::LLVMDoubleTypeKind | LLVMTypeKind::LLVMPointerTypeKind => v,
                    _ => {
                        let fname = String::from_utf8_lossy(&name_of(f)).into_owned();
                        return Err(JitError::Compile(format!(
                            "printf in function '{fname}': argument {k} has a type the GPU printf ABIs cannot \
                             carry (only integers, floating point numbers and pointers)"
                        )));
                    }
                };
                let size = LLVMABISizeOfType(t.td, LLVMTypeOf(v)).max(1);
                off = off.next_multiple_of(size);
                vals.push((v, off));
                off += size;
            }
            if vals.is_empty() {
                (LLVMConstNull(t.ptr), 0)
            } else {
                // the buffer: an alloca at the function's start (not in a loop), filled here
                let entry = LLVMGetEntryBasicBlock(f);
                let eb = Builder::new(m);
                LLVMPositionBuilderBefore(eb.0, LLVMGetFirstInstruction(entry));
                let arr = inkwell::llvm_sys::core::LLVMArrayType2(t.i8, off);
                let a = LLVMBuildAlloca(eb.0, arr, c"printf_args".as_ptr());
                LLVMSetAlignment(a, 8);
                for (v, o) in vals {
                    let mut idx = [LLVMConstInt(t.i64, o, 0)];
                    let p = LLVMBuildGEP2(b.0, t.i8, a, idx.as_mut_ptr(), 1, c"".as_ptr());
                    let st = LLVMBuildStore(b.0, v, p);
                    LLVMSetAlignment(st, 1);
                }
                (a, off)
            }
        };
        let mut params = [t.ptr, t.ptr, t.i64, t.i32, t.i32, t.i32, t.i32];
        let fty = LLVMFunctionType(t.i32, params.as_mut_ptr(), params.len() as c_uint, 0);
        let rt = declare(m, RT_PRINTF, fty);
        let id = ids(m, t, &b, false);
        let mut args =
            [fmt, buf, LLVMConstInt(t.i64, len, 0), LLVMConstInt(t.i32, cuda as u64, 0), id[0], id[1], id[2]];
        let n = LLVMBuildCall2(b.0, fty, rt, args.as_mut_ptr(), args.len() as c_uint, c"".as_ptr());
        LLVMReplaceAllUsesWith(ci, n);
        LLVMInstructionEraseFromParent(ci);
    }
    Ok(())
}

/// An assertion failure (`assert`: its four or five arguments) or a trap at `ci` -> [`RT_TRAP`], then
/// the work-item exits.
///
/// # Safety
/// `ci` is a live call in a function of `m`.
unsafe fn rewrite_trap(m: &Module<'_>, t: &Types, ci: LLVMValueRef, assert: bool) {
    // SAFETY: the caller's contract.
    unsafe {
        let b = Builder::new(m);
        b.before(ci);
        let null = LLVMConstNull(t.ptr);
        let (msg, file, line, func) = if assert {
            let line = LLVMGetArgOperand(ci, 2);
            let line = if LLVMGetTypeKind(LLVMTypeOf(line)) == LLVMTypeKind::LLVMIntegerTypeKind {
                LLVMBuildIntCast2(b.0, line, t.i32, 0, c"".as_ptr())
            } else {
                LLVMConstInt(t.i32, 0, 0)
            };
            let p = |k| {
                let v = LLVMGetArgOperand(ci, k);
                if LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMTypeKind::LLVMPointerTypeKind { v } else { null }
            };
            (p(0), p(1), line, p(3))
        } else {
            (null, null, LLVMConstInt(t.i32, 0, 0), null)
        };
        let mut params = [t.ptr, t.ptr, t.i32, t.ptr, t.i32, t.i32, t.i32, t.i32, t.i32, t.i32];
        let fty = LLVMFunctionType(LLVMVoidTypeInContext(t.ctx), params.as_mut_ptr(), params.len() as c_uint, 0);
        let rt = declare(m, RT_TRAP, fty);
        let id = ids(m, t, &b, true);
        let mut args = [msg, file, line, func, id[0], id[1], id[2], id[3], id[4], id[5]];
        let call = LLVMBuildCall2(b.0, fty, rt, args.as_mut_ptr(), args.len() as c_uint, c"".as_ptr());
        // the work-item ends here: the rest of the block becomes `unreachable`, preceded by the exit
        let unreachable = ol_rs_jit_unreachable_after(call);
        if unreachable.is_null() {
            return;
        }
        b.before(unreachable);
        if t.host {
            // a constructor or destructor (which returns void): it returns here
            inkwell::llvm_sys::core::LLVMBuildRetVoid(b.0);
            LLVMInstructionEraseFromParent(unreachable);
            return;
        }
        let exit_ty = LLVMFunctionType(LLVMVoidTypeInContext(t.ctx), std::ptr::null_mut(), 0, 0);
        let exit = declare(m, "llvm.nvvm.exit", exit_ty);
        LLVMBuildCall2(b.0, exit_ty, exit, std::ptr::null_mut(), 0, c"".as_ptr());
        // `ci` (void) followed `call`: it went with the rest of the block
    }
}
