//! The compile service as the library uses it: every job (a CPU object, PTX, the CPU target's
//! resolution) goes to a compile helper process (helper.rs), or runs in this process when asked
//! (`OFFLOAD_RS_JIT_IN_PROCESS=1`) or when no helper can start: through the in-process LLVM module
//! (module.rs) in the library, directly with the `llvm` feature (the helper itself, the Rust tests).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::JitError;
use super::request::{CpuTarget, Request, decode_result};

/// The process's CPU target (target.rs), resolved by the compile service on the first call that gets an
/// answer (a service that cannot run is an error for this call only), and every feature LLVM turns on
/// for it.
fn resolved() -> Result<&'static (CpuTarget, Vec<String>), JitError> {
    static TARGET: OnceLock<Result<(CpuTarget, Vec<String>), String>> = OnceLock::new();
    if TARGET.get().is_none() {
        let c = super::target::client_cpu();
        let answer = match resolve_target(c.spec.as_deref().unwrap_or(""), c.under_valgrind, &c.lacks) {
            Ok((mut t, enabled)) => {
                t.vector_math = super::target::vector_math_enabled();
                t.lowering = super::target::lowering().to_string();
                if c.spec.is_none() && c.under_valgrind {
                    super::debug(&format!(
                        "running under valgrind: the CPU JIT compiles for {} instead of the host's CPU (valgrind \
                         cannot run every instruction of the host; {} chooses)",
                        t.cpu,
                        super::target::ENV
                    ));
                }
                Ok((t, enabled))
            }
            Err(JitError::InvalidTarget(e)) => Err(e),
            Err(e) => return Err(e),
        };
        let _ = TARGET.set(answer);
    }
    match TARGET.get() {
        Some(Ok(t)) => Ok(t),
        Some(Err(e)) => Err(JitError::InvalidTarget(e.clone())),
        None => Err(JitError::Compile("internal: the CPU target was not resolved".into())),
    }
}

/// The process's CPU target ([`resolved`]).
pub(crate) fn cpu_target() -> Result<&'static CpuTarget, JitError> {
    resolved().map(|(t, _)| t)
}

/// Every feature LLVM turns on for the process's CPU target ([`resolved`]).
pub(crate) fn cpu_target_features() -> Result<&'static [String], JitError> {
    resolved().map(|(_, f)| f.as_slice())
}

/// Compiles bitcode to an x86-64 ELF relocatable object: (object, kernel metadata), in the compile
/// helper process, or here when there is none. `memcheck`: instrument every memory access of the
/// kernels (see `plugin::cpu::memcheck`); `spec`: a launch-time specialisation.
pub(crate) fn compile_cpu(
    bc: &[u8],
    target: &CpuTarget,
    opt: u32,
    memcheck: bool,
    defer: bool,
    spec: Option<&super::compile::Spec>,
) -> Result<(Vec<u8>, Vec<super::KernelMeta>), JitError> {
    let payload = run(Request::Cpu {
        bc,
        opt,
        memcheck,
        replaced: super::compile::generic_is_replaced(memcheck, spec),
        defer,
        kernel: spec.map_or("", |s| s.kernel.as_str()),
        group: spec.map_or([0; 3], |s| s.group_size),
        quick: spec.is_some_and(|s| s.quick),
        triple: &target.triple,
        cpu: &target.cpu,
        features: &target.features,
        vector_math: target.vector_math,
        stop_points: target.stop_points,
        lowering: &target.lowering,
    })?;
    let (object, kernels) = super::compile::decode_object(&payload)
        .ok_or_else(|| JitError::Compile("internal: malformed result from the JIT helper".into()))?;
    // checked before anything (the disk cache) keeps it: the object must load (a deferred generic
    // compile has none)
    if object.is_empty() && defer {
        return Ok((object, kernels));
    }
    super::elf::LoadedObject::check(&object)
        .map_err(|e| JitError::Compile(format!("internal: the JIT helper's object does not load: {e}")))?;
    Ok((object, kernels))
}

/// PTX for NVPTX bitcode, compiled in the helper process (or here when there is none).
pub fn compile_ptx(bc: &[u8], cpu: &str, features: &str) -> Result<String, JitError> {
    let opt = super::compile::opt_level();
    let v = run(Request::Ptx { bc, cpu, features, opt })?;
    String::from_utf8(v).map_err(|_| JitError::Compile("internal: PTX from the JIT helper is not text".into()))
}

/// The client's CPU target ([`Request::Target`]), resolved by the compile service.
fn resolve_target(spec: &str, under_valgrind: bool, lacks: &str) -> Result<(CpuTarget, Vec<String>), JitError> {
    let v = run(Request::Target { spec, under_valgrind, lacks })?;
    CpuTarget::decode(&v).ok_or_else(|| JitError::Compile("internal: malformed target from the JIT helper".into()))
}

fn in_process_forced() -> bool {
    std::env::var_os("OFFLOAD_RS_JIT_IN_PROCESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `req` in a helper process, or here when no helper can be started. Returns the job's payload.
pub(crate) fn run(req: Request<'_>) -> Result<Vec<u8>, JitError> {
    if in_process_forced() {
        return execute(&req);
    }
    let t0 = Instant::now();
    match super::helper::call(&req.encode()?, t0) {
        Ok(r) => decode_result(r?),
        Err(why) => {
            if let Some(limit) = address_space_limit() {
                // LLVM aborts the process when an allocation fails: under a limit that already kept the
                // helper from starting, compiling here would risk the client's life
                return Err(JitError::OutOfResources(format!(
                    "the JIT's compile helper could not start ({why}) and the process's address space is \
                     limited (RLIMIT_AS, {} MiB): compiling in the process instead could abort it (LLVM aborts \
                     when it runs out of memory)",
                    limit >> 20
                )));
            }
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                super::debug(&format!("JIT helper unavailable ({why}); compiling in the calling process"));
            }
            execute(&req)
        }
    }
}

/// The process's address-space limit (`RLIMIT_AS`) in bytes, if it has one.
fn address_space_limit() -> Option<u64> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills our struct.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) };
    (r == 0 && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur)
}

/// Runs the job in this process. With the `llvm` feature LLVM is linked in; without it (the library),
/// the in-process LLVM module runs it (module.rs).
fn execute(req: &Request<'_>) -> Result<Vec<u8>, JitError> {
    #[cfg(feature = "llvm")]
    return super::llvm::execute(req);
    #[cfg(not(feature = "llvm"))]
    return super::module::execute(&req.encode()?);
}
