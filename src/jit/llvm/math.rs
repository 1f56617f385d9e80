//! Math in GPU kernels on the CPU: libm calls the loop vectoriser can vectorise.
//!
//! GPU bitcode built with `-ffreestanding -nogpulib` calls `expf`, `sqrtf`, ... as plain external
//! functions, `nobuiltin` and with no memory attributes, so LLVM treats each as an opaque call: one scalar
//! libm call per work-item inside the otherwise vectorised work-item loop (even `sqrtf`). On the CPU
//! device those names are the host's libm, so before the lowering ([`prepare_math_calls`]):
//! * a call that has an LLVM intrinsic with the same meaning (`sqrtf` -> `llvm.sqrt.f32`, `expf` ->
//!   `llvm.exp.f32`, `fminf` -> `llvm.minnum.f32`, ...) becomes that intrinsic: the code generator turns
//!   it back into the same libm call, or into the instruction (`sqrtss`, `roundss`, `vfmadd`), and the
//!   vectoriser knows it;
//! * the other libm functions glibc has vector variants of (`erff`, `cbrtf`, `expm1f`, ...) stay calls,
//!   with the `nobuiltin` dropped and marked as not touching memory (GPU code has no `errno`).
//!
//! Then the vectoriser may call glibc's vector variants (libmvec, `_ZGV<isa>N<lanes><args>_<name>`,
//! resolved from `libmvec.so.1` by the loader): [`vector_variants`] lists those the target can run (SSE
//! always, AVX2 and AVX-512 where the target has them), which src/jit/llvm/passes.cpp gives the target library
//! info. Their accuracy is glibc's (4 ulp at most, per glibc's manual; measured in
//! `vector_math_stays_within_glibc_bounds`); `OFFLOAD_RS_JIT_VECTOR_MATH=0` keeps every math call scalar.

use std::ffi::CString;

use inkwell::attributes::AttributeLoc;
use inkwell::intrinsics::Intrinsic;
use inkwell::llvm_sys::core::LLVMReplaceAllUsesWith;
use inkwell::module::Module;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue,
};

/// A libm function of one or two floating-point arguments: its double-precision name, arity, the LLVM
/// intrinsic of the same meaning (without the type suffix) if there is one, and whether glibc 2.35+'s
/// libmvec has vector variants of it.
struct MathFn {
    name: &'static str,
    args: u8,
    intrinsic: Option<&'static str>,
    libmvec: bool,
}

const fn f(name: &'static str, args: u8, intrinsic: Option<&'static str>, libmvec: bool) -> MathFn {
    MathFn { name, args, intrinsic, libmvec }
}

/// The libm functions the JIT knows (each also with the `f` suffix for `float`).
const MATH: &[MathFn] = &[
    f("sqrt", 1, Some("llvm.sqrt"), false),
    f("fabs", 1, Some("llvm.fabs"), false),
    f("floor", 1, Some("llvm.floor"), false),
    f("ceil", 1, Some("llvm.ceil"), false),
    f("trunc", 1, Some("llvm.trunc"), false),
    f("rint", 1, Some("llvm.rint"), false),
    f("nearbyint", 1, Some("llvm.nearbyint"), false),
    f("round", 1, Some("llvm.round"), false),
    f("fmin", 2, Some("llvm.minnum"), false),
    f("fmax", 2, Some("llvm.maxnum"), false),
    f("copysign", 2, Some("llvm.copysign"), false),
    f("exp", 1, Some("llvm.exp"), true),
    f("exp2", 1, Some("llvm.exp2"), true),
    f("exp10", 1, Some("llvm.exp10"), true),
    f("log", 1, Some("llvm.log"), true),
    f("log2", 1, Some("llvm.log2"), true),
    f("log10", 1, Some("llvm.log10"), true),
    f("sin", 1, Some("llvm.sin"), true),
    f("cos", 1, Some("llvm.cos"), true),
    f("tan", 1, Some("llvm.tan"), true),
    f("asin", 1, Some("llvm.asin"), true),
    f("acos", 1, Some("llvm.acos"), true),
    f("atan", 1, Some("llvm.atan"), true),
    f("sinh", 1, Some("llvm.sinh"), true),
    f("cosh", 1, Some("llvm.cosh"), true),
    f("tanh", 1, Some("llvm.tanh"), true),
    f("pow", 2, Some("llvm.pow"), true),
    f("atan2", 2, Some("llvm.atan2"), true),
    f("expm1", 1, None, true),
    f("log1p", 1, None, true),
    f("asinh", 1, None, true),
    f("acosh", 1, None, true),
    f("atanh", 1, None, true),
    f("cbrt", 1, None, true),
    f("erf", 1, None, true),
    f("erfc", 1, None, true),
    f("hypot", 2, None, true),
];

/// The libm calls of `m` as described in the module docs. GPU bitcode only: host bitcode keeps C's
/// semantics (`errno`).
pub(crate) fn prepare_math_calls(m: &Module<'_>) {
    let ctx = m.get_context();
    let kind = inkwell::attributes::Attribute::get_named_enum_kind_id;
    let memory_none = ctx.create_enum_attribute(kind("memory"), 0);
    let plain = ["nounwind", "willreturn", "nosync", "nofree"].map(|n| ctx.create_enum_attribute(kind(n), 0));
    // The libm declarations of `m` with libm's prototypes: each with its intrinsic (None: it stays a call).
    let mut known: Vec<(FunctionValue, Option<FunctionValue>)> = Vec::new();
    for decl in m.get_functions().filter(|f| f.count_basic_blocks() == 0) {
        let name = decl.get_name().to_string_lossy().into_owned();
        let found = MATH.iter().find_map(|mf| {
            if name == mf.name {
                Some((mf, false))
            } else {
                (name.strip_suffix('f') == Some(mf.name)).then_some((mf, true))
            }
        });
        let Some((mf, float)) = found else { continue };
        let ty = decl.get_type();
        let want: BasicTypeEnum = if float { ctx.f32_type().into() } else { ctx.f64_type().into() };
        let params = ty.get_param_types();
        if ty.get_return_type() != Some(want)
            || ty.is_var_arg()
            || params.len() != usize::from(mf.args)
            || params.iter().any(|p| *p != want.into())
        {
            continue; // not libm's prototype: someone else's function of that name
        }
        match mf.intrinsic.and_then(Intrinsic::find).and_then(|i| i.get_declaration(m, &[want])) {
            Some(intr) => known.push((decl, Some(intr))),
            None if mf.libmvec => {
                decl.add_attribute(AttributeLoc::Function, memory_none);
                for a in plain {
                    decl.add_attribute(AttributeLoc::Function, a);
                }
                known.push((decl, None));
            }
            None => {}
        }
    }
    if known.is_empty() {
        return;
    }
    let calls: Vec<(InstructionValue, CallSiteValue, Option<FunctionValue>)> = m
        .get_functions()
        .flat_map(|f| f.get_basic_block_iter().collect::<Vec<_>>())
        .flat_map(|bb| bb.get_instructions().collect::<Vec<_>>())
        .filter(|i| i.get_opcode() == InstructionOpcode::Call)
        .filter_map(|i| {
            let c = CallSiteValue::try_from(i).ok()?;
            let callee = c.get_called_fn_value()?;
            known.iter().find(|(d, _)| *d == callee).map(|&(_, intr)| (i, c, intr))
        })
        .collect();
    let b = ctx.create_builder();
    for (inst, c, intr) in calls {
        match intr {
            Some(id) => {
                b.position_before(&inst);
                let args: Vec<BasicMetadataValueEnum> = (0..c.count_arguments())
                    .filter_map(|k| match inst.get_operand(k) {
                        Some(inkwell::values::Operand::Value(v)) => Some(v.into()),
                        _ => None,
                    })
                    .collect();
                let Ok(new) = b.build_call(id, &args, "") else { continue };
                // SAFETY: both are live calls of `m` with the same type; the old one has no uses left
                // when it is erased.
                unsafe { LLVMReplaceAllUsesWith(inst.as_value_ref(), new.as_value_ref()) };
                inst.erase_from_basic_block();
            }
            None => {
                c.remove_enum_attribute(AttributeLoc::Function, kind("nobuiltin"));
                c.remove_enum_attribute(AttributeLoc::Function, kind("convergent"));
                c.remove_string_attribute(AttributeLoc::Function, "no-builtins");
                c.add_attribute(AttributeLoc::Function, memory_none);
                for a in plain {
                    c.add_attribute(AttributeLoc::Function, a);
                }
            }
        }
    }
}

/// One vector variant for the target library info (handed to passes.cpp as `OlRsVecFn`): the scalar
/// function (a libm name or an intrinsic), glibc's vector function, its lane count and LLVM's
/// vector-ABI prefix (`_ZGV_LLVM_N<lanes><v per argument>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VecVariant {
    pub scalar: CString,
    pub vector: CString,
    pub lanes: u32,
    pub abi_prefix: CString,
}

/// The libmvec variants code for a target with `features` (the names LLVM's subtarget turns on) may
/// call: SSE (`b`) always, AVX2 (`d`) with `avx2`, AVX-512 (`e`) with `avx512f`.
pub(crate) fn vector_variants(features: &[String]) -> Vec<VecVariant> {
    let has = |f: &str| features.iter().any(|x| x == f);
    // (isa letter, lanes of f64; f32 has twice as many)
    let mut isas = vec![('b', 2u32)];
    if has("avx2") {
        isas.push(('d', 4));
    }
    if has("avx512f") {
        isas.push(('e', 8));
    }
    let mut out = Vec::new();
    for mf in MATH.iter().filter(|mf| mf.libmvec) {
        for float in [false, true] {
            let (libm, suffix) = if float { (format!("{}f", mf.name), "f32") } else { (mf.name.to_string(), "f64") };
            for &(isa, lanes64) in &isas {
                let lanes = if float { lanes64 * 2 } else { lanes64 };
                let args = "v".repeat(usize::from(mf.args));
                let vector = format!("_ZGV{isa}N{lanes}{args}_{libm}");
                let prefix = format!("_ZGV_LLVM_N{lanes}{args}");
                let scalars = std::iter::once(libm.clone()).chain(mf.intrinsic.map(|i| format!("{i}.{suffix}")));
                for scalar in scalars {
                    out.push(VecVariant {
                        scalar: CString::new(scalar).expect("no NUL"),
                        vector: CString::new(vector.clone()).expect("no NUL"),
                        lanes,
                        abi_prefix: CString::new(prefix.clone()).expect("no NUL"),
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_follow_the_target() {
        let sse = vector_variants(&[]);
        assert!(sse.iter().all(|v| v.vector.to_bytes().starts_with(b"_ZGVbN")), "{sse:?}");
        let names: Vec<String> = sse.iter().map(|v| format!("{:?}->{:?}", v.scalar, v.vector)).collect();
        assert!(names.contains(&"\"expf\"->\"_ZGVbN4v_expf\"".to_string()), "{names:?}");
        assert!(names.contains(&"\"llvm.exp.f32\"->\"_ZGVbN4v_expf\"".to_string()), "{names:?}");
        assert!(names.contains(&"\"erf\"->\"_ZGVbN2v_erf\"".to_string()), "{names:?}");
        assert!(names.contains(&"\"llvm.pow.f64\"->\"_ZGVbN2vv_pow\"".to_string()), "{names:?}");
        let avx512 = vector_variants(&["avx2".into(), "avx512f".into()]);
        assert!(avx512.iter().any(|v| v.vector.to_bytes() == b"_ZGVdN8v_expf" && v.lanes == 8));
        assert!(
            avx512
                .iter()
                .any(|v| v.vector.to_bytes() == b"_ZGVeN16v_erff" && v.abi_prefix.to_bytes() == b"_ZGV_LLVM_N16v")
        );
        // every variant named exists in this machine's libmvec
        // SAFETY: dlopen/dlsym with NUL-terminated names; the handle is never closed.
        let h = unsafe { libc::dlopen(c"libmvec.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "libmvec.so.1");
        for v in &avx512 {
            // SAFETY: as above.
            assert!(!unsafe { libc::dlsym(h, v.vector.as_ptr()) }.is_null(), "{:?} is not in libmvec", v.vector);
        }
    }
}
