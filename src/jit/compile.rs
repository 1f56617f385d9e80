//! Bitcode -> x86-64 relocatable object: parse, verify, retarget (triple/datalayout here, the rest in the
//! C++ shim `lower.cpp`), optimise with the host TargetMachine, emit an ELF object in memory.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};

use super::{JitError, KernelMeta, ParamLayout};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arch {
    Nvptx = 0,
    Amdgcn = 1,
    Spirv = 2,
    Host = 3,
}

unsafe extern "C" {
    fn ol_rs_jit_lower(
        m: *mut c_void,
        arch: c_int,
        cpu: *const c_char,
        features: *const c_char,
        meta_out: *mut *mut c_char,
        err_out: *mut *mut c_char,
    ) -> c_int;
    fn ol_rs_jit_free(p: *mut c_char);
}

pub(crate) struct HostInfo {
    pub triple: String,
    pub cpu: String,
    pub features: String,
}

pub(crate) fn host() -> &'static HostInfo {
    static HOST: OnceLock<HostInfo> = OnceLock::new();
    HOST.get_or_init(|| {
        Target::initialize_x86(&InitializationConfig::default());
        HostInfo {
            triple: TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned(),
            cpu: TargetMachine::get_host_cpu_name().to_string(),
            features: TargetMachine::get_host_cpu_features().to_string(),
        }
    })
}

/// `LIBOMPTARGET_JIT_OPT_LEVEL` (default 3), as LLVM's JIT reads it.
pub(crate) fn opt_level() -> u32 {
    std::env::var("LIBOMPTARGET_JIT_OPT_LEVEL")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map(|v| v.min(3))
        .unwrap_or(3)
}

fn parse<'c>(ctx: &'c Context, bc: &[u8]) -> Result<Module<'c>, String> {
    let buf = MemoryBuffer::create_from_memory_range_copy(bc, "image");
    Module::parse_bitcode_from_buffer(&buf, ctx).map_err(|e| e.to_string())
}

/// Target triple of a bitcode image (full parse, in a child process: garbage and truncation are errors).
pub(crate) fn bitcode_triple(bc: &[u8]) -> Result<String, String> {
    let probe = || {
        let ctx = Context::create();
        parse(&ctx, bc).map(|m| m.get_triple().as_str().to_string_lossy().into_owned())
    };
    if !super::isolate::enabled() {
        return probe();
    }
    let out = super::isolate::run_isolated(
        || encode(probe().map(String::into_bytes).map_err(JitError::InvalidBinary)),
        std::time::Duration::from_secs(120),
    )?;
    decode(&out).map(|b| String::from_utf8_lossy(b).into_owned()).map_err(|e| e.to_string())
}

fn tm_for(opt: u32) -> Result<TargetMachine, JitError> {
    let h = host();
    let triple = inkwell::targets::TargetTriple::create(&h.triple);
    let target = Target::from_triple(&triple).map_err(|e| JitError::Compile(format!("host target: {e}")))?;
    let level = match opt {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    target
        .create_target_machine(&triple, &h.cpu, &h.features, level, RelocMode::PIC, CodeModel::Small)
        .ok_or_else(|| JitError::Compile(format!("cannot create a target machine for {}", h.triple)))
}

/// Which bitcode architectures this JIT compiles.
pub(crate) fn supported_arch(triple: &str) -> Option<Arch> {
    match triple.split('-').next().unwrap_or("") {
        "nvptx64" => Some(Arch::Nvptx),
        "amdgcn" => Some(Arch::Amdgcn),
        "spirv64" => Some(Arch::Spirv),
        "x86_64" => Some(Arch::Host),
        _ => None,
    }
}

fn unsupported(triple: &str) -> JitError {
    JitError::InvalidBinary(format!(
        "expected LLVM bitcode for nvptx64, amdgcn, spirv64 or x86_64, found bitcode for target '{triple}'"
    ))
}

/// Compiles bitcode to an x86-64 ELF relocatable object: (object, metadata text). Runs LLVM in a child
/// process (see isolate.rs) unless OFFLOAD_RS_JIT_IN_PROCESS is set.
pub(crate) fn compile(bc: &[u8], opt: u32) -> Result<(Vec<u8>, String), JitError> {
    host();
    if !super::isolate::enabled() {
        return compile_in_process(bc, opt);
    }
    let out = super::isolate::run_isolated(
        || {
            encode(compile_in_process(bc, opt).map(|(o, m)| {
                let mut v = Vec::with_capacity(o.len() + m.len() + 8);
                v.extend_from_slice(&(o.len() as u64).to_le_bytes());
                v.extend_from_slice(&o);
                v.extend_from_slice(m.as_bytes());
                v
            }))
        },
        std::time::Duration::from_secs(600),
    )
    .map_err(JitError::Compile)?;
    let payload = decode(&out)?;
    let bad = || JitError::Compile("internal: malformed result from the JIT child".into());
    let ol: [u8; 8] = payload.get(..8).ok_or_else(bad)?.try_into().map_err(|_| bad())?;
    let ol = usize::try_from(u64::from_le_bytes(ol)).map_err(|_| bad())?;
    let obj = payload.get(8..8usize.checked_add(ol).ok_or_else(bad)?).ok_or_else(bad)?.to_vec();
    let meta = String::from_utf8(payload[8 + ol..].to_vec()).map_err(|_| bad())?;
    Ok((obj, meta))
}

fn encode(r: Result<Vec<u8>, JitError>) -> Vec<u8> {
    let (tag, body) = match r {
        Ok(v) => (0u8, v),
        Err(JitError::InvalidBinary(m)) => (1, m.into_bytes()),
        Err(JitError::Compile(m)) => (2, m.into_bytes()),
        Err(JitError::Link(m)) => (3, m.into_bytes()),
        Err(JitError::Io(m)) => (4, m.into_bytes()),
        Err(JitError::NotFound(m)) => (5, m.into_bytes()),
    };
    let mut v = Vec::with_capacity(body.len() + 1);
    v.push(tag);
    v.extend_from_slice(&body);
    v
}

fn decode(v: &[u8]) -> Result<&[u8], JitError> {
    let msg = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match v.split_first() {
        Some((0, rest)) => Ok(rest),
        Some((1, rest)) => Err(JitError::InvalidBinary(msg(rest))),
        Some((3, rest)) => Err(JitError::Link(msg(rest))),
        Some((4, rest)) => Err(JitError::Io(msg(rest))),
        Some((5, rest)) => Err(JitError::NotFound(msg(rest))),
        Some((_, rest)) => Err(JitError::Compile(msg(rest))),
        None => Err(JitError::Compile("internal: empty result from the JIT child".into())),
    }
}

fn compile_in_process(bc: &[u8], opt: u32) -> Result<(Vec<u8>, String), JitError> {
    let h = host();
    let timing = std::env::var_os("OFFLOAD_RS_JIT_TIME").is_some();
    let t0 = std::time::Instant::now();
    let stamp = |what: &str| {
        if timing {
            // raw write(2): this may run in a forked child, where std's stderr lock is not safe to take
            let line = format!("offload-rs jit: {what} at {:.2} ms\n", t0.elapsed().as_secs_f64() * 1e3);
            // SAFETY: writing a live buffer to fd 2.
            let _ = unsafe { libc::write(2, line.as_ptr() as *const libc::c_void, line.len()) };
        }
    };
    let ctx = Context::create();
    let m = parse(&ctx, bc)
        .map_err(|e| JitError::InvalidBinary(format!("expected valid LLVM bitcode, found malformed bitcode: {e}")))?;
    let triple = m.get_triple().as_str().to_string_lossy().into_owned();
    let arch = supported_arch(&triple).ok_or_else(|| unsupported(&triple))?;
    m.verify().map_err(|e| JitError::Compile(format!("input module does not verify: {}", truncate(&e.to_string()))))?;
    let tm = tm_for(opt)?;
    m.set_triple(&tm.get_triple());
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    let cpu = CString::new(h.cpu.as_str()).unwrap_or_default();
    let feat = CString::new(h.features.as_str()).unwrap_or_default();
    let mut meta: *mut c_char = std::ptr::null_mut();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: the module pointer is valid for the call (owned by `m`); out-pointers are valid; the shim
    // returns malloc'ed strings that we free with ol_rs_jit_free.
    let rc = unsafe {
        ol_rs_jit_lower(m.as_mut_ptr() as *mut c_void, arch as c_int, cpu.as_ptr(), feat.as_ptr(), &mut meta, &mut err)
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
    let meta = take(meta);
    let err = take(err);
    if rc != 0 {
        return Err(JitError::Compile(err));
    }
    if std::env::var_os("OFFLOAD_RS_JIT_DUMP_LOWERED").is_some() {
        let _ = m.print_to_file("/tmp/offload_rs_lowered.ll");
    }
    m.verify()
        .map_err(|e| JitError::Compile(format!("lowered module does not verify: {}", truncate(&e.to_string()))))?;
    stamp("parsed, verified and lowered");
    let passes = format!("default<O{opt}>");
    m.run_passes(&passes, &tm, PassBuilderOptions::create())
        .map_err(|e| JitError::Compile(format!("optimisation failed: {e}")))?;
    if std::env::var_os("OFFLOAD_RS_JIT_DUMP_LOWERED").is_some() {
        let _ = m.print_to_file("/tmp/offload_rs_opt.ll");
    }
    stamp("optimised");
    let buf = tm
        .write_to_memory_buffer(&m, FileType::Object)
        .map_err(|e| JitError::Compile(format!("code generation failed: {e}")))?;
    stamp("object emitted");
    Ok((buf.as_slice().to_vec(), meta))
}

fn truncate(s: &str) -> String {
    s.chars().take(2000).collect()
}

/// Parses the shim's metadata lines: `K name symbol static scratch barriers warp nparams size:align...`.
pub(crate) fn parse_meta(text: &str) -> Result<Vec<KernelMeta>, JitError> {
    let bad = || JitError::Compile(format!("internal: malformed kernel metadata: {}", truncate(text)));
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.first() != Some(&"K") || f.len() < 8 {
            return Err(bad());
        }
        let num = |i: usize| f.get(i).and_then(|s| s.parse::<usize>().ok()).ok_or_else(bad);
        let n = num(7)?;
        let mut params = Vec::with_capacity(n);
        for i in 0..n {
            let p = f.get(8 + i).ok_or_else(bad)?;
            let (s, a) = p.split_once(':').ok_or_else(bad)?;
            params.push(ParamLayout { size: s.parse().map_err(|_| bad())?, align: a.parse().map_err(|_| bad())? });
        }
        out.push(KernelMeta {
            name: f[1].to_string(),
            symbol: f[2].to_string(),
            static_local_bytes: num(3)?,
            scratch_bytes_per_wi: num(4)?,
            has_barriers: num(5)? != 0,
            warp_size: num(6)? as u32,
            params,
        });
    }
    Ok(out)
}
