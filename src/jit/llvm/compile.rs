//! Bitcode -> x86-64 relocatable object: parse, verify, retarget (triple/datalayout here), lower (the
//! module-wide steps in `normalise`, each kernel in the C++ lowering `lower/`, then `cleanup`), optimise
//! with the host TargetMachine, emit an ELF object in memory.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use inkwell::context::Context;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};

use crate::jit::compile::{Spec, supported_arch, time_line, timing, truncate, unsupported};
use crate::jit::request::CpuTarget;
use crate::jit::{Arch, JitError, KernelMeta, ParamLayout};

use super::abi::{OlRsKernelInfo, OlRsLowerOptions};

unsafe extern "C" {
    fn ol_rs_jit_lower(
        m: *mut c_void,
        cpu: *const c_char,
        features: *const c_char,
        opts: *const OlRsLowerOptions,
        on_kernel: unsafe extern "C" fn(cx: *mut c_void, info: *const OlRsKernelInfo),
        cx: *mut c_void,
        err_out: *mut *mut c_char,
    ) -> c_int;
    fn ol_rs_jit_free(p: *mut c_char);
    fn ol_rs_jit_emit_stack_sizes(tm: *mut c_void);
    fn ol_rs_jit_memcheck_instrument(m: *mut c_void, arch: c_int, err_out: *mut *mut c_char) -> c_int;
}

/// The lowering's callback: copies one kernel's metadata into the `Vec<KernelMeta>` behind `cx`.
/// Nothing in it can panic but allocation failure (which aborts), so no unwinding reaches the C++.
///
/// # Safety
/// `cx` is the `&mut Vec<KernelMeta>` passed to `ol_rs_jit_lower`; `info` and what it points to are
/// valid for the call (NUL-terminated names, `num_params` parameters).
unsafe extern "C" fn collect_kernel(cx: *mut c_void, info: *const OlRsKernelInfo) {
    // SAFETY: see the function's contract.
    let (out, k) = unsafe { (&mut *(cx as *mut Vec<KernelMeta>), &*info) };
    let text = |p: *const c_char| {
        // SAFETY: a NUL-terminated string from the shim, valid for the call.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    let params = if k.num_params == 0 {
        &[][..]
    } else {
        // SAFETY: `num_params` elements at `params`, valid for the call.
        unsafe { std::slice::from_raw_parts(k.params, k.num_params as usize) }
    };
    out.push(KernelMeta {
        name: text(k.name),
        symbol: text(k.symbol),
        static_local_bytes: k.static_local_bytes as usize,
        scratch_bytes_per_wi: k.scratch_bytes_per_wi as usize,
        has_barriers: k.has_barriers,
        specialisable: k.specialisable,
        debug_info: false,
        warp_size: k.warp_size,
        params: params.iter().map(|p| ParamLayout { size: p.size as usize, align: p.align as usize }).collect(),
    });
    let mut stats = super::lowering::Stats::default();
    if !k.stats.is_null() {
        // SAFETY: `num_stats` counts at `stats`, valid for the call.
        let counts = unsafe { std::slice::from_raw_parts(k.stats, k.num_stats as usize) };
        for (s, c) in stats.0.iter_mut().zip(counts) {
            *s = *c;
        }
    }
    super::lowering::report(&text(k.name), stats);
}

fn tm_for(t: &CpuTarget, opt: u32) -> Result<TargetMachine, JitError> {
    Target::initialize_x86(&InitializationConfig::default());
    let tm = super::pipeline::target_machine(&t.triple, &t.cpu, &t.features, opt, RelocMode::PIC, CodeModel::Small)
        .map_err(JitError::Compile)?;
    // SAFETY: `tm` is a live target machine; the shim only sets one of its options.
    unsafe { ol_rs_jit_emit_stack_sizes(tm.as_mut_ptr() as *mut c_void) };
    Ok(tm)
}

/// The optimisation level of a quick generic compile ([`generic_is_replaced`], every kernel
/// specialisable).
const QUICK_OPT: u32 = 1;

/// The optimisation of a quick specialisation ([`Spec::quick`]): what the lowering's output needs to run
/// well enough once: its private variables in registers, redundancy folded, invariant code out of the
/// work-item loops (LICM, GVN); no unrolling and no vectoriser, which with code generation at -O3 are
/// most of a full compile's time. On the suite's 18 kernels (AVX-512 Zen 4) it compiles in 10-43 ms
/// instead of 15-250 ms, and the first launch (compile and run, beside the full compile) takes 0.3-2.3x
/// as long as it did with the full version (BENCHMARKS.md). InstCombine without its fixpoint check, as
/// LLVM's own default pipelines run it (in a text pipeline, `instcombine` aborts when one run does not
/// reach a fixpoint).
const QUICK_PIPELINE: &str = "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),gvn,\
                              instcombine<no-verify-fixpoint>,simplifycfg)";
/// Code generation's level for a quick specialisation.
const QUICK_CODEGEN_OPT: u32 = 1;

/// Compiles `bc` here (the helper's side) for `target` (the client's choice, target.rs): parse, verify,
/// lower, optimise, emit. `replaced`: see [`generic_is_replaced`]. `defer`: replaced generic code of a
/// program without constructors or destructors whose kernels can all be specialised is not compiled;
/// the answer is the lowering's kernel metadata with an empty object (`jit::Generic` compiles the code
/// when a launch or a global needs it). The lowering runs either way, so what makes a load fail (bitcode
/// that does not verify, recursion, an unknown GPU intrinsic) still fails it.
pub(crate) fn compile_in_process(
    bc: &[u8],
    target: &CpuTarget,
    opt: u32,
    memcheck: bool,
    replaced: bool,
    defer: bool,
    spec: Option<&Spec>,
) -> Result<(Vec<u8>, Vec<KernelMeta>), JitError> {
    let h = target;
    let timing = timing();
    let t0 = std::time::Instant::now();
    let cpu0 = thread_cpu_ms();
    let stamp = |what: &str| {
        if timing {
            // the thread's CPU time too: on a loaded machine it is the steadier figure
            let (wall, cpu) = (t0.elapsed().as_secs_f64() * 1e3, thread_cpu_ms() - cpu0);
            time_line(&format!("{what} at {wall:.2} ms (cpu {cpu:.2} ms)"));
        }
    };
    let ctx = Context::create();
    let m = super::pipeline::parse(&ctx, bc)
        .map_err(|e| JitError::InvalidBinary(format!("expected valid LLVM bitcode, found malformed bitcode: {e}")))?;
    stamp("parsed");
    let triple = m.get_triple().as_str().to_string_lossy().into_owned();
    let arch = supported_arch(&triple).ok_or_else(|| unsupported(&triple))?;
    m.verify().map_err(|e| JitError::Compile(format!("input module does not verify: {}", truncate(&e.to_string()))))?;
    stamp("verified");
    let tm = tm_for(target, opt)?;
    m.set_triple(&tm.get_triple());
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    let cpu = CString::new(h.cpu.as_str()).unwrap_or_default();
    let feat = CString::new(h.features.as_str()).unwrap_or_default();
    let spec_name = match spec {
        Some(s) => Some(CString::new(s.kernel.as_str()).map_err(|_| JitError::NotFound(s.kernel.clone()))?),
        None => None,
    };
    let transforms = super::lowering::parse(&target.lowering).map_err(JitError::Compile)?
        & !super::lowering::quick_skips(spec.is_some_and(|s| s.quick));
    let on = |name| transforms & super::lowering::bit(name).unwrap_or(0) != 0;
    let hooks = super::pipeline::Hooks::CPU
        .with_prefetch_streams(on("ol-prefetch-streams"))
        .with_group_order(on("ol-group-order"))
        .with_prefetch_next_group(on("ol-prefetch-next-group"))
        .with_nested_selects(on("ol-nested-selects"));
    let opts = OlRsLowerOptions {
        spec_kernel: spec_name.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
        spec_group_size: spec.map_or([0; 3], |s| s.group_size),
        warp_size: super::normalise::warp_width(&m, arch),
        classify_intrinsic: super::intrinsics::classify_intrinsic,
        transforms,
    };
    let mut kernels: Vec<KernelMeta> = Vec::new();
    let mut err: *mut c_char = std::ptr::null_mut();
    if memcheck {
        // SAFETY: as for the lowering below; the shim returns a malloc'ed error string or NULL.
        let rc = unsafe { ol_rs_jit_memcheck_instrument(m.as_mut_ptr() as *mut c_void, arch as c_int, &mut err) };
        if rc != 0 {
            let msg = if err.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated string from the shim, freed once right after.
                let s = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
                // SAFETY: allocated by the shim's malloc.
                unsafe { ol_rs_jit_free(err) };
                s
            };
            return Err(JitError::Compile(format!("memcheck instrumentation: {msg}")));
        }
    }
    if arch != Arch::Host {
        // host bitcode is compiled as it is; GPU kernels are fully inlined
        super::callgraph::check_recursion(&m)?;
    }
    // printf, assert and traps -> the CPU device's runtime (before the lowering, which sees the ids)
    super::devicelib::lower_device_calls(&m, arch)?;
    // The lowering: the module-wide steps here (src/jit/llvm/normalise.rs, the warp width read above before
    // the normalisation drops the GPU target features), then each kernel in C++ (lower/).
    super::normalise::normalise_functions(&m, &h.cpu, &h.features);
    if arch != Arch::Host {
        super::normalise::scalarise_vectors(&m, &tm)?;
        super::math::prepare_math_calls(&m);
    }
    // the glibc vector math the vectoriser may call (host bitcode keeps its own math as compiled)
    let vector_fns = if target.vector_math && arch != Arch::Host {
        super::math::vector_variants(&super::target::enabled_features(target))
    } else {
        Vec::new()
    };
    if let Some(s) = spec.filter(|_| arch != Arch::Host) {
        super::normalise::select_kernel(&m, &s.kernel)?;
    }
    // (a constructor or destructor list: its generic code must be loaded with the program)
    let structors = m.get_global("llvm.global_ctors").is_some() || m.get_global("llvm.global_dtors").is_some();
    super::normalise::lower_structors(&m)?;
    let gpu_kernels = super::normalise::kernels(&m);
    // debugging aid (OFFLOAD_RS_JIT_DUMP_LOWERED=<dir>): <dir>/<image hash>[.<kernel>.<shape>[.quick]].<stage>.ll,
    // stage `prelower` the input of the C++ lowering (`opt -passes=ol-lower<...>` runs it: lower/pass.cpp)
    // (a first launch's quick version beside its full version, not overwritten by it)
    let dump_sfx =
        spec.map_or(String::new(), |s| format!(".{}.{}{}", s.kernel, s.shape(), if s.quick { ".quick" } else { "" }));
    let dump = |stage: &str| {
        #[cfg(test)]
        CAPTURE.with(|c| {
            if let Some((want, text)) = c.borrow_mut().as_mut()
                && *want == stage
            {
                *text = m.print_to_string().to_string();
            }
        });
        if let Some(d) = std::env::var_os("OFFLOAD_RS_JIT_DUMP_LOWERED").filter(|d| !d.is_empty()) {
            let name = format!("{}{dump_sfx}.{stage}.ll", &blake3::hash(bc).to_hex()[..16]);
            crate::jit::fd::write_dump(std::path::Path::new(&d), &name, m.print_to_string().to_bytes());
        }
    };
    if arch != Arch::Host {
        dump("prelower");
    }
    let rc = if arch == Arch::Host {
        kernels = super::normalise::host_kernels(&m);
        0
    } else {
        super::lowering::for_compile(spec, || {
            // SAFETY: the module pointer is valid for the call (owned by `m`); `opts` and the name it
            // points to outlive the call; `collect_kernel` gets `&mut kernels` as its context, as it
            // expects; the error out-pointer is valid and the shim returns a malloc'ed string that we free
            // with ol_rs_jit_free.
            unsafe {
                ol_rs_jit_lower(
                    m.as_mut_ptr() as *mut c_void,
                    cpu.as_ptr(),
                    feat.as_ptr(),
                    &opts,
                    collect_kernel,
                    &mut kernels as *mut Vec<KernelMeta> as *mut c_void,
                    &mut err,
                )
            }
        })
    };
    let take = |p: *mut c_char| -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: p is a NUL-terminated malloc'ed string from the shim.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        // SAFETY: p came from the shim's malloc and is freed once.
        unsafe { ol_rs_jit_free(p) };
        s
    };
    let err = take(err);
    if rc != 0 {
        return Err(JitError::Compile(err));
    }
    if arch != Arch::Host {
        super::cleanup::clean_up(&m, arch, &gpu_kernels, &kernels)?;
        m.verify().map_err(|e| {
            JitError::Compile(format!("internal: lowered module does not verify: {}", truncate(&e.to_string())))
        })?;
    }
    dump("lowered");
    m.verify()
        .map_err(|e| JitError::Compile(format!("lowered module does not verify: {}", truncate(&e.to_string()))))?;
    stamp("lowered");
    let debug_info = m.get_global_metadata_size("llvm.dbg.cu") > 0;
    for k in &mut kernels {
        k.debug_info = debug_info;
    }
    let all_specialisable = !kernels.is_empty() && kernels.iter().all(|k| k.specialisable);
    if defer && replaced && spec.is_none() && all_specialisable && !structors {
        return Ok((Vec::new(), kernels));
    }
    // Generic code that runs only where no specialisation does gets the quick pipeline; a quick
    // specialisation (its kernel's first launch at a shape) the shortest.
    let quick = replaced && opt > QUICK_OPT && all_specialisable;
    let (tm, opt) = if quick { (tm_for(target, QUICK_OPT)?, QUICK_OPT) } else { (tm, opt) };
    let tm = if spec.is_some_and(|s| s.quick) && opt > 0 {
        super::pipeline::run_passes(&m, &tm, QUICK_PIPELINE, hooks, &vector_fns)
            .map_err(|e| JitError::Compile(format!("optimisation failed: {e}")))?;
        tm_for(target, QUICK_CODEGEN_OPT.min(opt))?
    } else {
        super::pipeline::optimise(&m, &tm, opt, hooks, &vector_fns)
            .map_err(|e| JitError::Compile(format!("optimisation failed: {e}")))?;
        tm
    };
    if target.stop_points {
        // after the optimisation, which then saw the loops as they are without them (src/jit/stop.rs)
        super::stop_points::insert(&m, &tm).map_err(|e| JitError::Compile(format!("stop points: {e}")))?;
    }
    dump("opt");
    stamp("optimised");
    let obj = super::pipeline::emit(&m, &tm, FileType::Object)
        .map_err(|e| JitError::Compile(format!("code generation failed: {e}")))?;
    stamp("object emitted");
    Ok((obj, kernels))
}

#[cfg(test)]
thread_local! {
    /// When `Some((stage, _))`, the next compile on this thread leaves its IR at `stage` here (a stage of
    /// OFFLOAD_RS_JIT_DUMP_LOWERED: `prelower`, the C++ lowering's input, for the IR tests' inputs
    /// (tests.rs's `write_lowering_ir_tests`); `opt`, the optimised IR).
    pub(crate) static CAPTURE: std::cell::RefCell<Option<(&'static str, String)>> =
        const { std::cell::RefCell::new(None) };
}

/// This thread's CPU time in milliseconds (for `OFFLOAD_RS_JIT_TIME`).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}
