//! The lowering's module-wide steps, run before the C++ per-kernel lowering (`lower/`), in the order
//! `compile` calls them: the warp width clang folded into the bitcode ([`warp_width`], read before the
//! normalisation drops the GPU target features), the normalisation of every function
//! ([`normalise_functions`]), GPU bitcode's small vectors split into elements ([`scalarise_vectors`]),
//! for a launch-time specialisation the choice of its one kernel ([`select_kernel`]), the constructors
//! and destructors ([`lower_structors`]), and for host bitcode the work-group functions it exports
//! ([`host_kernels`]). Everything here is plain LLVM-C (through llvm-sys, one pass through inkwell):
//! attributes, calling conventions, linkage, visibility, and instructions built at a position.

use std::ffi::{CString, c_char, c_uint};

use inkwell::llvm_sys::LLVMCallConv;
use inkwell::llvm_sys::core::{
    LLVMAddAttributeAtIndex, LLVMAddFunction, LLVMAppendBasicBlockInContext, LLVMBuildAddrSpaceCast,
    LLVMBuildArrayAlloca, LLVMBuildCall2, LLVMBuildRetVoid, LLVMConstIntGetZExtValue, LLVMCreateBuilderInContext,
    LLVMCreateStringAttribute, LLVMDeleteGlobal, LLVMDisposeBuilder, LLVMFunctionType, LLVMGetAlignment,
    LLVMGetAllocatedType, LLVMGetCalledValue, LLVMGetConstOpcode, LLVMGetEnumAttributeKindForName, LLVMGetFirstUse,
    LLVMGetFunctionCallConv, LLVMGetInitializer, LLVMGetInstructionCallConv, LLVMGetIntrinsicDeclaration,
    LLVMGetIntrinsicID, LLVMGetLinkage, LLVMGetModuleContext, LLVMGetNamedGlobal, LLVMGetNextUse, LLVMGetNumOperands,
    LLVMGetOperand, LLVMGetPointerAddressSpace, LLVMGetStringAttributeAtIndex, LLVMGetStringAttributeValue,
    LLVMGetUser, LLVMGetValueName2, LLVMInstructionEraseFromParent, LLVMIntrinsicGetType, LLVMIsAAllocaInst,
    LLVMIsAConstantArray, LLVMIsAConstantExpr, LLVMIsAConstantInt, LLVMIsAConstantPointerNull, LLVMIsAConstantStruct,
    LLVMIsAFunction, LLVMIsAIntrinsicInst, LLVMIsDeclaration, LLVMIsNull, LLVMLookupIntrinsicID,
    LLVMPositionBuilderAtEnd, LLVMPositionBuilderBefore, LLVMRemoveEnumAttributeAtIndex,
    LLVMRemoveStringAttributeAtIndex, LLVMReplaceAllUsesWith, LLVMSetAlignment, LLVMSetCurrentDebugLocation2,
    LLVMSetFunctionCallConv, LLVMSetInstructionCallConv, LLVMSetVisibility, LLVMTypeOf, LLVMVoidTypeInContext,
};
use inkwell::llvm_sys::debuginfo::LLVMInstructionGetDebugLoc;
use inkwell::llvm_sys::prelude::{LLVMBuilderRef, LLVMModuleRef, LLVMValueRef};
use inkwell::llvm_sys::{LLVMAttributeFunctionIndex, LLVMLinkage, LLVMOpcode, LLVMVisibility};
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, FunctionValue};

use super::callgraph::is_call;
use crate::jit::{Arch, JitError, KernelMeta};

/// The GPU kernel calling conventions (`ptx_kernel`, `amdgpu_kernel`, `spir_kernel`).
const GPU_KERNEL_CCS: [u32; 3] = [
    LLVMCallConv::LLVMPTXKernelCallConv as u32,
    LLVMCallConv::LLVMAMDGPUKERNELCallConv as u32,
    LLVMCallConv::LLVMSPIRKERNELCallConv as u32,
];
const C_CC: u32 = LLVMCallConv::LLVMCCallConv as u32;
const FAST_CC: u32 = LLVMCallConv::LLVMFastCallConv as u32;
/// The address space of `__gpu_local` (shared) variables.
const SHARED_AS: u32 = 3;

pub(super) fn is_gpu_kernel_cc(cc: u32) -> bool {
    GPU_KERNEL_CCS.contains(&cc)
}

fn is_local(f: LLVMValueRef) -> bool {
    // SAFETY: `f` is a live global value.
    let l = unsafe { LLVMGetLinkage(f) };
    matches!(l, LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage)
}

/// The defined functions with a GPU kernel calling convention, in module order.
pub(super) fn kernels<'m>(m: &Module<'m>) -> Vec<FunctionValue<'m>> {
    m.get_functions().filter(|f| f.count_basic_blocks() > 0 && is_gpu_kernel_cc(f.get_call_conventions())).collect()
}

/// A function attribute's string value, if the function has it.
fn fn_string_attr(f: FunctionValue<'_>, key: &str) -> Option<String> {
    // SAFETY: `f` is a live function; the key is passed with its length; the value is copied before
    // the attribute could go away.
    unsafe {
        let a = LLVMGetStringAttributeAtIndex(
            f.as_value_ref(),
            LLVMAttributeFunctionIndex,
            key.as_ptr() as *const c_char,
            key.len() as c_uint,
        );
        if a.is_null() {
            return None;
        }
        let mut len = 0;
        let p = LLVMGetStringAttributeValue(a, &mut len);
        Some(String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize)).into_owned())
    }
}

/// The warp width clang folded into the kernels: nvptx 32, amdgcn 64 unless a kernel is built for
/// wavefrontsize32, spirv64 32 (not folded by clang, `llvm.spv.subgroup.size`: we choose 32), host 1.
/// Read before [`normalise_functions`] replaces the target features.
pub(crate) fn warp_width(m: &Module<'_>, arch: Arch) -> u32 {
    match arch {
        Arch::Nvptx | Arch::Spirv => 32,
        Arch::Amdgcn => {
            let w32 = kernels(m)
                .into_iter()
                .any(|k| fn_string_attr(k, "target-features").is_some_and(|v| v.contains("+wavefrontsize32")));
            if w32 { 32 } else { 64 }
        }
        Arch::Host => 1,
    }
}

/// An owned LLVM IR builder.
pub(super) struct Builder(pub(super) LLVMBuilderRef);

impl Builder {
    pub(super) fn new(m: &Module<'_>) -> Builder {
        // SAFETY: the module's context is live; the builder is disposed in Drop.
        Builder(unsafe { LLVMCreateBuilderInContext(LLVMGetModuleContext(m.as_mut_ptr())) })
    }

    /// Positions the builder before `at`, with `at`'s debug location (as C++'s `IRBuilder<> B(at)`).
    ///
    /// # Safety
    /// `at` is a live instruction of the builder's context.
    pub(super) unsafe fn before(&self, at: LLVMValueRef) {
        // SAFETY: the caller's contract.
        unsafe {
            LLVMPositionBuilderBefore(self.0, at);
            LLVMSetCurrentDebugLocation2(self.0, LLVMInstructionGetDebugLoc(at));
        }
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        // SAFETY: created by LLVMCreateBuilderInContext, disposed once.
        unsafe { LLVMDisposeBuilder(self.0) }
    }
}

/// The users of `v`, in use-list order, collected before any of them changes.
///
/// # Safety
/// `v` is a live value.
pub(super) unsafe fn users(v: LLVMValueRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    // SAFETY: the caller's contract; the use list is only read.
    unsafe {
        let mut u = LLVMGetFirstUse(v);
        while !u.is_null() {
            out.push(LLVMGetUser(u));
            u = LLVMGetNextUse(u);
        }
    }
    out
}

/// The intrinsic id of a call `v` to an intrinsic, else 0.
///
/// # Safety
/// `v` is a live value.
unsafe fn intrinsic_id(v: LLVMValueRef) -> c_uint {
    // SAFETY: the caller's contract; an IntrinsicInst has a called function.
    unsafe {
        if LLVMIsAIntrinsicInst(v).is_null() {
            return 0;
        }
        LLVMGetIntrinsicID(LLVMGetCalledValue(v))
    }
}

fn intrinsic_named(name: &str) -> c_uint {
    // SAFETY: the name is passed with its length.
    unsafe { LLVMLookupIntrinsicID(name.as_ptr() as *const c_char, name.len()) }
}

/// Private allocas (amdgcn addrspace(5)) -> host allocas (same type, array size, alignment and name)
/// and a no-op addrspace cast; their lifetime markers move to the new alloca (they must name an
/// alloca, not a cast of it).
///
/// # Safety
/// `ai` is a live alloca of `m` outside address space 0; it is erased.
unsafe fn rehome_alloca(m: &Module<'_>, b: &Builder, ai: LLVMValueRef, lifetime: [c_uint; 2]) {
    // SAFETY: the caller's contract; every value used is live: `ai` until it is erased last, its
    // lifetime users until each is erased after its replacement is built.
    unsafe {
        b.before(ai);
        let mut len = 0;
        let name = LLVMGetValueName2(ai, &mut len);
        let name = CString::new(std::slice::from_raw_parts(name as *const u8, len)).unwrap_or_default();
        let n = LLVMBuildArrayAlloca(b.0, LLVMGetAllocatedType(ai), LLVMGetOperand(ai, 0), name.as_ptr());
        LLVMSetAlignment(n, LLVMGetAlignment(ai));
        let mut ptr_ty = LLVMTypeOf(n);
        for u in users(ai) {
            let id = intrinsic_id(u);
            if id == 0 || !lifetime.contains(&id) {
                continue;
            }
            let lb = Builder::new(m);
            lb.before(u);
            let decl = LLVMGetIntrinsicDeclaration(m.as_mut_ptr(), id, &mut ptr_ty, 1);
            let ty = LLVMIntrinsicGetType(LLVMGetModuleContext(m.as_mut_ptr()), id, &mut ptr_ty, 1);
            let mut args = [n];
            LLVMBuildCall2(lb.0, ty, decl, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMInstructionEraseFromParent(u);
        }
        let cast = LLVMBuildAddrSpaceCast(b.0, n, LLVMTypeOf(ai), c"".as_ptr());
        LLVMReplaceAllUsesWith(ai, cast);
        LLVMInstructionEraseFromParent(ai);
    }
}

/// Every function made a host function: the GPU target attributes, `optnone` and `noinline` dropped,
/// Small vectors split into their elements (`scalarizer<load-store>`): amdgcn bitcode comes
/// SLP-vectorised by clang (`<2 x float>` for two fields of a struct), and the loop vectoriser does
/// not vectorise loops with vector-typed values, so the work-item loops would stay scalar; O3's
/// SLP vectoriser packs what is left afterwards.
pub(crate) fn scalarise_vectors(m: &Module<'_>, tm: &inkwell::targets::TargetMachine) -> Result<(), JitError> {
    m.run_passes("function(scalarizer<load-store>)", tm, inkwell::passes::PassBuilderOptions::create())
        .map_err(|e| JitError::Compile(format!("internal: scalarizer: {e}")))
}

/// the host's target-cpu/features on definitions, calling conventions other than C, fast and the GPU
/// kernel ones (and, at call sites, the kernel ones) made C, private allocas made host allocas
/// ([`rehome_alloca`]); non-local globals outside shared memory get default visibility (amdgcn hides
/// them by default) so that they are found by name.
pub(crate) fn normalise_functions(m: &Module<'_>, cpu: &str, features: &str) {
    let lifetime = [intrinsic_named("llvm.lifetime.start"), intrinsic_named("llvm.lifetime.end")];
    let b = Builder::new(m);
    // SAFETY: every value touched is a live function, instruction or global of `m`; instructions are
    // collected before any is replaced; strings are passed with their lengths.
    unsafe {
        let ctx = LLVMGetModuleContext(m.as_mut_ptr());
        let enum_kind = |n: &str| LLVMGetEnumAttributeKindForName(n.as_ptr() as *const c_char, n.len());
        let (optnone, noinline) = (enum_kind("optnone"), enum_kind("noinline"));
        for f in m.get_functions() {
            let fv = f.as_value_ref();
            for key in ["target-cpu", "target-features", "no-builtins", "uniform-work-group-size"] {
                LLVMRemoveStringAttributeAtIndex(
                    fv,
                    LLVMAttributeFunctionIndex,
                    key.as_ptr() as *const c_char,
                    key.len() as c_uint,
                );
            }
            if LLVMIsDeclaration(fv) == 0 {
                LLVMRemoveEnumAttributeAtIndex(fv, LLVMAttributeFunctionIndex, optnone);
                LLVMRemoveEnumAttributeAtIndex(fv, LLVMAttributeFunctionIndex, noinline);
                for (key, val) in [("target-cpu", cpu), ("target-features", features)] {
                    if !val.is_empty() {
                        let a = LLVMCreateStringAttribute(
                            ctx,
                            key.as_ptr() as *const c_char,
                            key.len() as c_uint,
                            val.as_ptr() as *const c_char,
                            val.len() as c_uint,
                        );
                        LLVMAddAttributeAtIndex(fv, LLVMAttributeFunctionIndex, a);
                    }
                }
            }
            let cc = LLVMGetFunctionCallConv(fv);
            if !is_gpu_kernel_cc(cc) && cc != C_CC && cc != FAST_CC {
                LLVMSetFunctionCallConv(fv, C_CC);
            }
            let insts = || f.get_basic_block_iter().flat_map(|bb| bb.get_instructions()).map(|i| i.as_value_ref());
            let private: Vec<LLVMValueRef> = insts()
                .filter(|&i| !LLVMIsAAllocaInst(i).is_null() && LLVMGetPointerAddressSpace(LLVMTypeOf(i)) != 0)
                .collect();
            for ai in private {
                rehome_alloca(m, &b, ai, lifetime);
            }
            for i in insts() {
                if is_call(i) && is_gpu_kernel_cc(LLVMGetInstructionCallConv(i)) {
                    LLVMSetInstructionCallConv(i, C_CC);
                }
            }
        }
        for g in m.get_globals() {
            let gv = g.as_value_ref();
            if !is_local(gv) && LLVMGetPointerAddressSpace(LLVMTypeOf(gv)) != SHARED_AS {
                LLVMSetVisibility(gv, LLVMVisibility::LLVMDefaultVisibility);
            }
        }
    }
}

/// A launch-time specialisation lowers only `name`: the other kernels become internal C functions
/// (removed unless called), and the module's constructors and destructors are dropped (they run in
/// the generic instance).
pub(crate) fn select_kernel(m: &Module<'_>, name: &str) -> Result<(), JitError> {
    let ks = kernels(m);
    if !ks.iter().any(|k| k.get_name().to_bytes() == name.as_bytes()) {
        return Err(JitError::Compile(format!("internal: no kernel '{name}' to specialise")));
    }
    for k in ks {
        if k.get_name().to_bytes() != name.as_bytes() {
            k.set_call_conventions(C_CC);
            k.set_linkage(Linkage::Internal);
        }
    }
    for gv in ["llvm.global_ctors", "llvm.global_dtors"] {
        if let Some(g) = m.get_global(gv) {
            // SAFETY: a live global of `m`, not used by anything (the structor lists never are).
            unsafe { g.delete() };
        }
    }
    delete_dead_functions(m);
    Ok(())
}

/// Deletes the module's internal functions that nothing uses, until none is left (the other kernels of
/// a specialisation's module and what only they called): every later step, the lowering's and the
/// optimisation pipeline's function passes before its dead-code elimination, would work on them too.
fn delete_dead_functions(m: &Module<'_>) {
    loop {
        let dead: Vec<_> = m
            .get_functions()
            .filter(|f| {
                matches!(f.get_linkage(), Linkage::Internal | Linkage::Private)
                    // SAFETY: a live function of `m`.
                    && unsafe { LLVMGetFirstUse(f.as_value_ref()) }.is_null()
            })
            .collect();
        if dead.is_empty() {
            return;
        }
        for f in dead {
            // SAFETY: a function of `m` with no use left (no call, no constant refers to it).
            unsafe { f.delete() };
        }
    }
}

/// `Value::stripPointerCasts` for constants: through bitcasts, addrspace casts and all-zero GEPs.
///
/// # Safety
/// `v` is a live constant.
unsafe fn strip_pointer_casts(mut v: LLVMValueRef) -> LLVMValueRef {
    // SAFETY: the caller's contract; constant expressions' operands are live constants.
    unsafe {
        while !LLVMIsAConstantExpr(v).is_null() {
            let zero_gep = LLVMGetConstOpcode(v) == LLVMOpcode::LLVMGetElementPtr
                && (1..LLVMGetNumOperands(v)).all(|i| LLVMIsNull(LLVMGetOperand(v, i as c_uint)) != 0);
            match LLVMGetConstOpcode(v) {
                LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast => {}
                _ if zero_gep => {}
                _ => break,
            }
            v = LLVMGetOperand(v, 0);
        }
        v
    }
}

/// `llvm.global_ctors` -> `__ol_rs_init`, `llvm.global_dtors` -> `__ol_rs_fini`: functions that call
/// the entries in priority order (destructors in reverse), the lists removed. Both functions exist
/// afterwards, empty if the module has no list.
pub(crate) fn lower_structors(m: &Module<'_>) -> Result<(), JitError> {
    lower_structor_list(m, "llvm.global_ctors", c"__ol_rs_init", false)?;
    lower_structor_list(m, "llvm.global_dtors", c"__ol_rs_fini", true)
}

fn lower_structor_list(m: &Module<'_>, gv_name: &str, fn_name: &std::ffi::CStr, reverse: bool) -> Result<(), JitError> {
    let gv = CString::new(gv_name).unwrap_or_default();
    let b = Builder::new(m);
    // SAFETY: the module, its context and its globals are live; the new function and block are built
    // through `b`; the list's entries are live constants read before the list is deleted.
    unsafe {
        let mm: LLVMModuleRef = m.as_mut_ptr();
        let ctx = LLVMGetModuleContext(mm);
        let g = LLVMGetNamedGlobal(mm, gv.as_ptr());
        let void_fn = LLVMFunctionType(LLVMVoidTypeInContext(ctx), std::ptr::null_mut(), 0, 0);
        let f = LLVMAddFunction(mm, fn_name.as_ptr(), void_fn);
        LLVMSetVisibility(f, LLVMVisibility::LLVMDefaultVisibility);
        let bb = LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr());
        LLVMPositionBuilderAtEnd(b.0, bb);
        if !g.is_null() {
            let init = LLVMGetInitializer(g);
            let mut list: Vec<(u64, LLVMValueRef)> = Vec::new();
            if !init.is_null() && !LLVMIsAConstantArray(init).is_null() {
                for i in 0..LLVMGetNumOperands(init) {
                    let cs = LLVMGetOperand(init, i as c_uint);
                    if LLVMIsAConstantStruct(cs).is_null() || LLVMGetNumOperands(cs) < 2 {
                        continue;
                    }
                    let prio = LLVMGetOperand(cs, 0);
                    let func = strip_pointer_casts(LLVMGetOperand(cs, 1));
                    if !LLVMIsAConstantPointerNull(func).is_null() {
                        continue;
                    }
                    let prio = if LLVMIsAConstantInt(prio).is_null() { 65535 } else { LLVMConstIntGetZExtValue(prio) };
                    list.push((prio, func));
                }
            }
            list.sort_by_key(|e| e.0); // stable
            if reverse {
                list.reverse();
            }
            for (_, func) in list {
                if LLVMIsAFunction(func).is_null() {
                    return Err(JitError::Compile(format!("unsupported entry in {gv_name}: not a function")));
                }
                let call = LLVMBuildCall2(b.0, void_fn, func, std::ptr::null_mut(), 0, c"".as_ptr());
                LLVMSetInstructionCallConv(call, C_CC);
            }
        }
        LLVMBuildRetVoid(b.0);
        if !g.is_null() {
            LLVMDeleteGlobal(g);
        }
    }
    Ok(())
}

/// Host bitcode: its exported `void name(ptr)` functions are work-group functions already (given
/// default visibility); each is reported as a kernel of no parameters, shared memory or barriers.
pub(crate) fn host_kernels(m: &Module<'_>) -> Vec<KernelMeta> {
    let mut out = Vec::new();
    for f in m.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        if f.count_basic_blocks() == 0 || is_local(f.as_value_ref()) || name.starts_with("__ol_rs") {
            continue;
        }
        let ty = f.get_type();
        if ty.get_return_type().is_none() && ty.count_param_types() == 1 && ty.get_param_types()[0].is_pointer_type() {
            // SAFETY: a live function of `m`.
            unsafe { LLVMSetVisibility(f.as_value_ref(), LLVMVisibility::LLVMDefaultVisibility) };
            out.push(KernelMeta {
                symbol: name.clone(),
                name,
                static_local_bytes: 0,
                scratch_bytes_per_wi: 0,
                has_barriers: false,
                specialisable: false,
                debug_info: false,
                warp_size: 1,
                params: Vec::new(),
            });
        }
    }
    out
}
