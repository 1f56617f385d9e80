//! The lowering's recursion check: kernels are fully inlined, so a call cycle cannot be lowered. The call
//! graph is the one LLVM's `CallGraph` builds: an edge for each direct call (the callee a function of
//! the call's type, as `CallBase::getCalledFunction`), walked from the functions callable from outside
//! the module (not local, or their address taken), so a recursive function that nothing reachable calls
//! (dead code, removed by the lowering) is no error.

use std::collections::HashMap;

use inkwell::llvm_sys::core::{
    LLVMGetCalledFunctionType, LLVMGetCalledValue, LLVMGetFirstUse, LLVMGetNextUse, LLVMGetNumOperands,
    LLVMGetOperandUse, LLVMGetUser, LLVMGlobalGetValueType, LLVMIsACallBrInst, LLVMIsACallInst, LLVMIsAFunction,
    LLVMIsAInvokeInst,
};
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, FunctionValue};

use crate::jit::JitError;

/// Whether `v` is a call, invoke or callbr instruction.
///
/// # Safety
/// `v` is a live value.
pub(super) unsafe fn is_call(v: LLVMValueRef) -> bool {
    // SAFETY: the caller's contract; the LLVMIsA* functions only inspect the value's kind.
    unsafe { !LLVMIsACallInst(v).is_null() || !LLVMIsAInvokeInst(v).is_null() || !LLVMIsACallBrInst(v).is_null() }
}

/// The function a call instruction `call` calls directly, if any.
///
/// # Safety
/// `call` is a live call, invoke or callbr instruction.
unsafe fn direct_callee(call: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: the caller's contract: `call` is a call-like instruction, whose called operand exists.
    unsafe {
        let f = LLVMGetCalledValue(call);
        (!f.is_null() && !LLVMIsAFunction(f).is_null() && LLVMGlobalGetValueType(f) == LLVMGetCalledFunctionType(call))
            .then_some(f)
    }
}

/// `Function::hasAddressTaken`: a use of `f` other than as the callee of a call of its own type.
fn address_taken(f: FunctionValue<'_>) -> bool {
    let fv = f.as_value_ref();
    // SAFETY: `f` is a live function of a live module; its use list and the users are walked read-only.
    unsafe {
        let mut u = LLVMGetFirstUse(fv);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            let callee_use = is_call(user)
                && LLVMGetOperandUse(user, (LLVMGetNumOperands(user) - 1) as u32) == u
                && direct_callee(user) == Some(fv);
            if !callee_use {
                return true;
            }
            u = LLVMGetNextUse(u);
        }
    }
    false
}

/// Refuses a module in which a defined function reachable from outside it is part of a call cycle.
pub(crate) fn check_recursion(m: &Module<'_>) -> Result<(), JitError> {
    let funcs: Vec<FunctionValue<'_>> = m.get_functions().collect();
    let index: HashMap<LLVMValueRef, usize> = funcs.iter().enumerate().map(|(i, f)| (f.as_value_ref(), i)).collect();
    let mut calls: Vec<Vec<usize>> = vec![Vec::new(); funcs.len()];
    for (i, f) in funcs.iter().enumerate() {
        for bb in f.get_basic_block_iter() {
            for ins in bb.get_instructions() {
                let v = ins.as_value_ref();
                // SAFETY: `v` is a live instruction of `m`; direct_callee is asked only of calls.
                let callee = unsafe { if is_call(v) { direct_callee(v) } else { None } };
                if let Some(j) = callee.and_then(|c| index.get(&c)) {
                    calls[i].push(*j);
                }
            }
        }
    }
    let roots = (0..funcs.len()).filter(|&i| {
        !matches!(funcs[i].get_linkage(), Linkage::Internal | Linkage::Private) || address_taken(funcs[i])
    });
    // Tarjan's strongly connected components, iteratively.
    const UNSEEN: usize = usize::MAX;
    let n = funcs.len();
    let (mut order, mut low, mut on_stack) = (vec![UNSEEN; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next) = (Vec::new(), 0);
    for root in roots {
        if order[root] != UNSEEN {
            continue;
        }
        let mut walk = vec![(root, 0usize)];
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(top) = walk.last_mut() {
            let v = top.0;
            if let Some(&w) = calls[v].get(top.1) {
                top.1 += 1;
                if order[w] == UNSEEN {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    walk.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            walk.pop();
            if let Some(&(parent, _)) = walk.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] != order[v] {
                continue;
            }
            let mut scc = Vec::new();
            while let Some(w) = stack.pop() {
                on_stack[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            let cyclic = scc.len() > 1 || calls[v].contains(&v);
            if let Some(&f) = scc.iter().find(|&&f| cyclic && funcs[f].count_basic_blocks() > 0) {
                return Err(JitError::Compile(format!(
                    "recursive call cycle involving function '{}': recursion is not supported by the CPU JIT \
                     (kernels are fully inlined)",
                    funcs[f].get_name().to_string_lossy()
                )));
            }
        }
    }
    Ok(())
}
