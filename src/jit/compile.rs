//! A compile of the CPU JIT as the client sees it, without LLVM: what is asked (a launch-time
//! specialisation, the optimisation level), which bitcode architectures are compiled, and the result as
//! bytes (the compile helper's answer and the disk cache's payload: an x86-64 relocatable object and
//! the kernels' metadata). The compile itself is src/jit/llvm/compile.rs.

use super::{Arch, JitError, KernelMeta, ParamLayout};

/// Launch-time specialisation: compile only `kernel`, for work-groups of exactly `group_size`
/// (constant trip counts), without the module's constructors/destructors. `quick`: the version for the
/// first launch at that shape, which runs while the full one compiles (`plugin::cpu::tier_up`): the same
/// lowering, then a short pipeline (src/jit/llvm/compile.rs) and code generation at -O1 instead of `default<O3>` and -O3.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Spec {
    pub kernel: String,
    pub group_size: [u32; 3],
    pub quick: bool,
}

impl Spec {
    /// The group shape as `XxYxZ` (diagnostics, perf map names, dump file names).
    pub(crate) fn shape(&self) -> String {
        let [x, y, z] = self.group_size;
        format!("{x}x{y}x{z}")
    }
}

/// `LIBOMPTARGET_JIT_OPT_LEVEL` (default 3), as LLVM's JIT reads it.
pub(crate) fn opt_level() -> u32 {
    std::env::var("LIBOMPTARGET_JIT_OPT_LEVEL")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map(|v| v.min(3))
        .unwrap_or(3)
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

pub(crate) fn unsupported(triple: &str) -> JitError {
    JitError::InvalidBinary(format!(
        "expected LLVM bitcode for nvptx64, amdgcn, spirv64 or x86_64, found bitcode for target '{triple}'"
    ))
}

/// A compile's result as bytes (the helper's answer and the disk cache's payload):
/// `object length: u64 | object | metadata text` (see [`encode_meta`]).
pub(crate) fn encode_object(obj: &[u8], kernels: &[KernelMeta]) -> Vec<u8> {
    let meta = encode_meta(kernels);
    let mut v = Vec::with_capacity(obj.len() + meta.len() + 8);
    v.extend_from_slice(&(obj.len() as u64).to_le_bytes());
    v.extend_from_slice(obj);
    v.extend_from_slice(meta.as_bytes());
    v
}

/// The inverse of [`encode_object`]; `None` for bytes it did not write (a corrupted disk entry).
pub(crate) fn decode_object(v: &[u8]) -> Option<(Vec<u8>, Vec<KernelMeta>)> {
    let ol = usize::try_from(u64::from_le_bytes(v.get(..8)?.try_into().ok()?)).ok()?;
    let obj = v.get(8..8usize.checked_add(ol)?)?.to_vec();
    let meta = std::str::from_utf8(&v[8 + ol..]).ok()?;
    Some((obj, parse_meta(meta).ok()?))
}

/// Whether a compile makes generic code that launch-time specialisations replace (see the module docs
/// of `jit`): not a specialisation, not under the memory checker (which runs the generic code), with
/// specialisation on. Part of the cache key and of the helper request.
pub(crate) fn generic_is_replaced(memcheck: bool, spec: Option<&Spec>) -> bool {
    spec.is_none() && !memcheck && super::specialisation_enabled()
}

/// `OFFLOAD_RS_JIT_TIME`: whether compiles print their stages' times.
pub(crate) fn timing() -> bool {
    std::env::var_os("OFFLOAD_RS_JIT_TIME").is_some()
}

/// One `offload-rs jit: <text>` line on stderr in one write(2): the helper and the client may share it.
pub(crate) fn time_line(text: &str) {
    let line = format!("offload-rs jit: {text}\n");
    // SAFETY: writing a live buffer to fd 2.
    let _ = unsafe { libc::write(2, line.as_ptr() as *const libc::c_void, line.len()) };
}

pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(2000).collect()
}

/// Kernel metadata as text, one line per kernel: `K name symbol static scratch flags warp nparams
/// size:align...` (flags: 1 = barriers, 2 = specialisable, i.e. no mutable globals, 4 = debug info).
fn encode_meta(kernels: &[KernelMeta]) -> String {
    let mut s = String::new();
    for k in kernels {
        let flags = u32::from(k.has_barriers) | (u32::from(k.specialisable) << 1) | (u32::from(k.debug_info) << 2);
        s += &format!(
            "K {} {} {} {} {flags} {} {}",
            k.name,
            k.symbol,
            k.static_local_bytes,
            k.scratch_bytes_per_wi,
            k.warp_size,
            k.params.len()
        );
        for p in &k.params {
            s += &format!(" {}:{}", p.size, p.align);
        }
        s.push('\n');
    }
    s
}

/// Parses [`encode_meta`]'s text.
fn parse_meta(text: &str) -> Result<Vec<KernelMeta>, JitError> {
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
            has_barriers: num(5)? & 1 != 0,
            specialisable: num(5)? & 2 != 0,
            debug_info: num(5)? & 4 != 0,
            warp_size: num(6)? as u32,
            params,
        });
    }
    Ok(out)
}
