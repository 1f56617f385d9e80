//! The LLVM steps both JIT paths share (the CPU path in compile.rs, the NVPTX path in nvptx.rs): parse
//! bitcode in a fresh context, make a target machine, optimise with `default<O{LIBOMPTARGET_JIT_OPT_LEVEL}>`
//! (through our own PassBuilder, src/jit/llvm/passes.cpp, so that the workarounds for LLVM bugs can hook into
//! it), emit. Errors are LLVM's text; each path says which step failed in its own words.

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, RelocMode, Target, TargetMachine, TargetTriple};
use std::ffi::{CStr, CString, c_char, c_void};

use super::abi::OlRsVecFn;

unsafe extern "C" {
    fn ol_rs_jit_run_passes(
        m: *mut c_void,
        tm: *mut c_void,
        pipeline: *const c_char,
        flags: u32,
        vec: *const OlRsVecFn,
        n_vec: usize,
        err_out: *mut *mut c_char,
        times_out: *mut *mut c_char,
    ) -> i32;
    fn ol_rs_jit_free(p: *mut c_char);
}

/// Our passes hooked into LLVM's default pipelines: the LLVM-bug workarounds and the kernel optimisations
/// that run inside LLVM's pipeline (flags of `ol_rs_jit_run_passes`, src/jit/llvm/abi.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hooks(u32);

/// cbindgen:ignore
impl Hooks {
    pub const NONE: Hooks = Hooks(0);
    /// `ol-hoist-invariant-divisions` and `ol-opaque-wrapping-masks` at VectorizerStart: LLVM 22.1's loop
    /// vectoriser predicates a loop-invariant division by a non-constant and hands lane 0's (possibly
    /// poison) result to every lane (src/jit/llvm/workarounds/hoist_invariant_divisions.cpp), and treats a
    /// masked induction variable that wraps as consecutive
    /// (src/jit/llvm/workarounds/opaque_wrapping_masks.cpp). Every CPU compile needs them. With them,
    /// `ol-implied-selects` (src/jit/llvm/implied_selects.cpp), an optimisation: selects that an
    /// enclosing select's condition decides (a warp scan's dead wrap-around reads).
    pub const CPU: Hooks = Hooks(super::abi::OL_RS_HOOK_VECTORISER_WORKAROUNDS);

    /// These and, with `on`, `ol-prefetch-streams` at VectorizerEnd: software prefetches for the load
    /// streams of a kernel's short inner loops (src/jit/llvm/prefetch_streams.cpp).
    pub fn with_prefetch_streams(self, on: bool) -> Hooks {
        Hooks(self.0 | if on { super::abi::OL_RS_HOOK_PREFETCH_STREAMS } else { 0 })
    }

    /// These and, with `on`, `ol-prefetch-next-group` at VectorizerEnd: software prefetches for what the
    /// next work-group of a 2-D tile kernel reads and writes (src/jit/llvm/prefetch_next_group.cpp).
    pub fn with_prefetch_next_group(self, on: bool) -> Hooks {
        Hooks(self.0 | if on { super::abi::OL_RS_HOOK_PREFETCH_NEXT_GROUP } else { 0 })
    }

    /// These and, with `on`, `ol-group-order` at VectorizerEnd: a 2-D tile kernel whose next group along x
    /// is rows away runs its groups y fastest (src/jit/llvm/group_order.cpp).
    pub fn with_group_order(self, on: bool) -> Hooks {
        Hooks(self.0 | if on { super::abi::OL_RS_HOOK_GROUP_ORDER } else { 0 })
    }

    /// These and, with `on`, `ol-nested-selects` at VectorizerEnd: a select of a select keeping the same
    /// value in both becomes one select (src/jit/llvm/nested_selects.cpp).
    pub fn with_nested_selects(self, on: bool) -> Hooks {
        Hooks(self.0 | if on { super::abi::OL_RS_HOOK_NESTED_SELECTS } else { 0 })
    }
}

/// Parses LLVM bitcode into `ctx`.
pub(crate) fn parse<'c>(ctx: &'c Context, bc: &[u8]) -> Result<Module<'c>, String> {
    let buf = MemoryBuffer::create_from_memory_range_copy(bc, "image");
    Module::parse_bitcode_from_buffer(&buf, ctx).map_err(|e| e.to_string())
}

/// A target machine for `triple` (its target initialised by the caller) at optimisation level `opt`.
pub(crate) fn target_machine(
    triple: &str,
    cpu: &str,
    features: &str,
    opt: u32,
    reloc: RelocMode,
    model: CodeModel,
) -> Result<TargetMachine, String> {
    let t = TargetTriple::create(triple);
    let target = Target::from_triple(&t).map_err(|e| format!("target {triple}: {e}"))?;
    let level = match opt {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    target
        .create_target_machine(&t, cpu, features, level, reloc, model)
        .ok_or_else(|| format!("cannot create a target machine for {triple} {cpu} {features}"))
}

/// Runs `default<O{opt}>` on `m`, with `hooks` hooked in and the vectoriser allowed to call
/// `vector_fns` (src/jit/llvm/math.rs).
pub(crate) fn optimise(
    m: &Module,
    tm: &TargetMachine,
    opt: u32,
    hooks: Hooks,
    vector_fns: &[super::math::VecVariant],
) -> Result<(), String> {
    run_passes(m, tm, &format!("default<O{}>", opt.min(3)), hooks, vector_fns)
}

/// Runs the textual `pipeline` (LLVM's syntax; our `ol-*` pass names too, see passes.cpp) on `m`.
pub(crate) fn run_passes(
    m: &Module,
    tm: &TargetMachine,
    pipeline: &str,
    hooks: Hooks,
    vector_fns: &[super::math::VecVariant],
) -> Result<(), String> {
    let text = CString::new(pipeline).map_err(|_| "a pipeline with a NUL byte".to_string())?;
    let vec: Vec<OlRsVecFn> = vector_fns
        .iter()
        .map(|v| OlRsVecFn {
            scalar: v.scalar.as_ptr(),
            vector: v.vector.as_ptr(),
            abi_prefix: v.abi_prefix.as_ptr(),
            lanes: v.lanes,
        })
        .collect();
    let mut err: *mut c_char = std::ptr::null_mut();
    let mut times: *mut c_char = std::ptr::null_mut();
    let timing = crate::jit::compile::timing();
    // SAFETY: the module and target machine are live for the call; the pipeline and the strings `vec`
    // points to (owned by `vector_fns`) are NUL-terminated and outlive it; the shim writes a malloc'ed
    // message (or nothing) to `err`, and a malloc'ed report to `times` when given it.
    let rc = unsafe {
        ol_rs_jit_run_passes(
            m.as_mut_ptr() as *mut c_void,
            tm.as_mut_ptr() as *mut c_void,
            text.as_ptr(),
            hooks.0,
            vec.as_ptr(),
            vec.len(),
            &mut err,
            if timing { &mut times } else { std::ptr::null_mut() },
        )
    };
    if !times.is_null() {
        // SAFETY: a NUL-terminated string from the shim, freed once right after.
        let text = unsafe { CStr::from_ptr(times) }.to_string_lossy().into_owned();
        // SAFETY: allocated by the shim's malloc.
        unsafe { ol_rs_jit_free(times) };
        for l in text.lines() {
            let mut it = l.splitn(2, ' ');
            let (ms, rest) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
            let (name, runs) = rest.rsplit_once(' ').unwrap_or((rest, ""));
            let runs = if runs == "-" { String::new() } else { format!(" ({runs} runs)") };
            crate::jit::compile::time_line(&format!("pass {name}: {ms} ms{runs}"));
        }
    }
    if rc == 0 {
        return Ok(());
    }
    if err.is_null() {
        return Err(format!("pipeline '{pipeline}' failed"));
    }
    // SAFETY: a NUL-terminated string from the shim, freed once right after.
    let msg = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
    // SAFETY: allocated by the shim's malloc.
    unsafe { ol_rs_jit_free(err) };
    Err(msg)
}

/// Code for `m`: an object file or assembly text.
pub(crate) fn emit(m: &Module, tm: &TargetMachine, kind: FileType) -> Result<Vec<u8>, String> {
    tm.write_to_memory_buffer(m, kind).map(|b| b.as_slice().to_vec()).map_err(|e| e.to_string())
}
