//! The CPU JIT's target: the CPU name and feature string the compiled code is for.
//!
//! The client chooses it, once per process (the first `olInit`, or the first compile without one), and
//! sends it with every compile request; the compile helper compiles for exactly that, and the memory and
//! disk cache keys hold it. So the code always matches what the client's process can run, also when the
//! helper sees another CPU than the client does (a client under valgrind, whose emulated CPU has no
//! AVX-512, while the helper runs on the real one).
//!
//! * Default: `native`, the host's CPU name and features as LLVM reads them in the client.
//! * Under valgrind (detected with valgrind's `RUNNING_ON_VALGRIND` client request): the highest of
//!   `x86-64-v3`, `x86-64-v2`, `x86-64` that valgrind's CPU runs, without the host's extra features
//!   (valgrind cannot run AVX-512 code), with an `OFFLOAD_RS_DEBUG` line saying so.
//! * `OFFLOAD_RS_CPU_TARGET=<cpu>[,+feature,-feature...]`: any CPU name LLVM knows for x86-64
//!   (`x86-64-v3`, `skylake-avx512`, `znver4`, ...) or `native`, with optional feature changes. An unknown
//!   CPU or feature, or a target this machine cannot run (the features it lacks are named), is an error
//!   at `olInit` (`OL_ERRC_INVALID_VALUE`).

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::OnceLock;

use inkwell::targets::{InitializationConfig, Target, TargetMachine};

use super::JitError;

unsafe extern "C" {
    fn ol_rs_jit_cpu_info(
        triple: *const c_char,
        cpu: *const c_char,
        features: *const c_char,
        cpu_valid: *mut c_int,
        known: *mut *mut c_char,
        enabled: *mut *mut c_char,
    ) -> c_int;
    fn ol_rs_jit_free(p: *mut c_char);
}

/// The environment variable that chooses the target.
pub(crate) const ENV: &str = "OFFLOAD_RS_CPU_TARGET";

/// What the CPU JIT compiles for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuTarget {
    pub triple: String,
    pub cpu: String,
    pub features: String,
    /// whether the code may call glibc's vector math (`OFFLOAD_RS_JIT_VECTOR_MATH`, src/jit/math.rs)
    pub vector_math: bool,
    /// whether the code gets stop points (src/jit/stop.rs; not chosen here: set per compile from
    /// [`super::stop_points`])
    pub stop_points: bool,
}

/// How the client's process sees its CPU (under valgrind: valgrind's CPU).
#[derive(Debug, Clone)]
pub(crate) struct HostView {
    pub triple: String,
    pub cpu: String,
    /// LLVM's host feature string: `+name` or `-name` for every feature it detects
    pub features: String,
    pub under_valgrind: bool,
}

/// The host as this process sees it.
pub(crate) fn host_view() -> &'static HostView {
    static HOST: OnceLock<HostView> = OnceLock::new();
    HOST.get_or_init(|| {
        Target::initialize_x86(&InitializationConfig::default());
        HostView {
            triple: TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned(),
            cpu: TargetMachine::get_host_cpu_name().to_string(),
            features: TargetMachine::get_host_cpu_features().to_string(),
            under_valgrind: running_on_valgrind(),
        }
    })
}

/// The process's CPU target (see the module docs), chosen on the first call.
pub(crate) fn cpu_target() -> Result<&'static CpuTarget, JitError> {
    static TARGET: OnceLock<Result<CpuTarget, String>> = OnceLock::new();
    TARGET
        .get_or_init(|| {
            let spec = std::env::var(ENV).ok();
            let host = host_view();
            let mut t = choose(spec.as_deref(), host)?;
            t.vector_math = super::math::vector_math_enabled();
            if spec.is_none() && host.under_valgrind && std::env::var_os("OFFLOAD_RS_DEBUG").is_some() {
                // as helper::debug's lines (not called from here: helper.rs depends on this file)
                eprintln!(
                    "offload-rs: running under valgrind: the CPU JIT compiles for {} instead of the host's {} \
                     (valgrind cannot run every instruction of the host; {ENV} chooses)",
                    t.cpu, host.cpu
                );
            }
            Ok(t)
        })
        .as_ref()
        .map_err(|e| JitError::InvalidTarget(e.clone()))
}

/// The target for `spec` (the value of [`ENV`], `None` when unset) on `host`.
pub(crate) fn choose(spec: Option<&str>, host: &HostView) -> Result<CpuTarget, String> {
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let Some(spec) = spec else {
        if host.under_valgrind {
            for cpu in ["x86-64-v3", "x86-64-v2", "x86-64"] {
                if let Ok(t) = resolve(cpu, &[], host) {
                    return Ok(t);
                }
            }
        }
        return Ok(CpuTarget {
            triple: host.triple.clone(),
            cpu: host.cpu.clone(),
            features: host.features.clone(),
            vector_math: true,
            stop_points: false,
        });
    };
    let mut parts = spec.split(',').map(str::trim);
    let cpu = parts.next().unwrap_or("");
    let changes: Vec<&str> = parts.collect();
    if cpu.is_empty() || cpu.starts_with(['+', '-']) {
        return Err(format!(
            "{ENV}={spec}: expected a CPU name first (native, x86-64-v3, skylake-avx512, ...), then optional \
             +feature/-feature changes"
        ));
    }
    resolve(cpu, &changes, host).map_err(|e| format!("{ENV}={spec}: {e}"))
}

/// `cpu` (or `native`) with the feature `changes`, checked against what LLVM knows and what `host` runs.
fn resolve(cpu: &str, changes: &[&str], host: &HostView) -> Result<CpuTarget, String> {
    let (name, base) = if cpu == "native" { (host.cpu.as_str(), host.features.as_str()) } else { (cpu, "") };
    let probe = cpu_info(&host.triple, name, "")?;
    if !probe.cpu_valid {
        return Err(format!(
            "'{cpu}' is not a CPU LLVM knows for {} (try native, x86-64, x86-64-v2, x86-64-v3, x86-64-v4, \
             skylake, skylake-avx512, znver3, znver4)",
            host.triple
        ));
    }
    for c in changes {
        let name = c.strip_prefix(['+', '-']).ok_or_else(|| format!("'{c}' is not +feature or -feature"))?;
        if !probe.known.iter().any(|k| k == name) {
            return Err(format!("'{name}' is not a feature LLVM knows for {}", host.triple));
        }
    }
    let features =
        [base].into_iter().chain(changes.iter().copied()).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(",");
    let enabled = cpu_info(&host.triple, name, &features)?.enabled;
    let host_has: HashMap<&str, bool> = host
        .features
        .split(',')
        .filter_map(|f| f.strip_prefix('+').map(|n| (n, true)).or_else(|| f.strip_prefix('-').map(|n| (n, false))))
        .collect();
    // Only what the host reports as absent counts: the rest of LLVM's features are tuning flags.
    let missing: Vec<&str> = enabled.iter().map(String::as_str).filter(|f| host_has.get(f) == Some(&false)).collect();
    if !missing.is_empty() {
        let cpu_text = if host.under_valgrind { "the CPU valgrind emulates" } else { "this CPU" };
        return Err(format!("code for '{cpu}' needs features {cpu_text} lacks: {}", missing.join(", ")));
    }
    Ok(CpuTarget {
        triple: host.triple.clone(),
        cpu: name.to_string(),
        features,
        vector_math: true,
        stop_points: false,
    })
}

/// Every feature LLVM turns on for `t` (implied ones included), e.g. to choose the vector math variants
/// it may call.
pub(crate) fn enabled_features(t: &CpuTarget) -> Vec<String> {
    cpu_info(&t.triple, &t.cpu, &t.features).map(|i| i.enabled).unwrap_or_default()
}

struct CpuInfo {
    cpu_valid: bool,
    known: Vec<String>,
    enabled: Vec<String>,
}

fn cpu_info(triple: &str, cpu: &str, features: &str) -> Result<CpuInfo, String> {
    let (t, c, f) = (
        CString::new(triple).map_err(|_| "a NUL byte in the triple")?,
        CString::new(cpu).map_err(|_| "a NUL byte in the CPU name")?,
        CString::new(features).map_err(|_| "a NUL byte in the features")?,
    );
    let (mut valid, mut known, mut enabled): (c_int, *mut c_char, *mut c_char) =
        (0, std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: NUL-terminated inputs; the shim writes the three out-pointers (malloc'ed strings or NULL).
    let rc = unsafe { ol_rs_jit_cpu_info(t.as_ptr(), c.as_ptr(), f.as_ptr(), &mut valid, &mut known, &mut enabled) };
    let take = |p: *mut c_char| -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: a NUL-terminated string from the shim, freed once right after.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        // SAFETY: allocated by the shim's malloc.
        unsafe { ol_rs_jit_free(p) };
        s
    };
    let (known, enabled) = (take(known), take(enabled));
    if rc != 0 {
        return Err(known);
    }
    let list = |s: String| s.split(',').filter(|n| !n.is_empty()).map(str::to_string).collect::<Vec<_>>();
    Ok(CpuInfo { cpu_valid: valid != 0, known: list(known), enabled: list(enabled) })
}

/// valgrind's `RUNNING_ON_VALGRIND` client request: non-zero under valgrind, 0 natively (the special
/// instruction sequence is a no-op on a real CPU and leaves the default, 0, in rdx).
#[cfg(target_arch = "x86_64")]
pub(crate) fn running_on_valgrind() -> bool {
    // VG_USERREQ__RUNNING_ON_VALGRIND, then five unused arguments (valgrind.h's layout).
    let args: [u64; 6] = [0x1001, 0, 0, 0, 0, 0];
    let mut result: u64 = 0;
    // SAFETY: valgrind's documented client-request preamble for amd64 (four rotations of rdi that cancel
    // out, then `xchg rbx, rbx`): natively it changes no register but rdi, which is restored; it reads
    // `args` through rax and writes the answer to rdx.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51", "xchg rbx, rbx",
            inout("rdx") result,
            in("rax") args.as_ptr(),
            out("rdi") _,
            options(nostack, preserves_flags)
        );
    }
    result != 0
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn running_on_valgrind() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(features: &str, valgrind: bool) -> HostView {
        HostView {
            triple: "x86_64-pc-linux-gnu".into(),
            cpu: "znver3".into(),
            features: features.into(),
            under_valgrind: valgrind,
        }
    }

    const AVX2_HOST: &str = "+sse,+sse2,+sse3,+ssse3,+sse4.1,+sse4.2,+popcnt,+avx,+avx2,+fma,+bmi,+bmi2,+lzcnt,\
                             +movbe,+f16c,+xsave,+cx16,+sahf,-avx512f,-avx512bw,-avx512vl,-avx512dq,-avx512cd";

    #[test]
    fn default_is_the_host_and_valgrind_gets_a_generic_level() {
        Target::initialize_x86(&InitializationConfig::default());
        let t = choose(None, &host(AVX2_HOST, false)).unwrap();
        assert_eq!((t.cpu.as_str(), t.features.as_str()), ("znver3", AVX2_HOST));
        let t = choose(None, &host(AVX2_HOST, true)).unwrap();
        assert_eq!((t.cpu.as_str(), t.features.as_str()), ("x86-64-v3", ""));
        let t = choose(Some("  "), &host(AVX2_HOST, false)).unwrap();
        assert_eq!(t.cpu, "znver3");
    }

    #[test]
    fn named_targets_and_feature_changes() {
        Target::initialize_x86(&InitializationConfig::default());
        let h = host(AVX2_HOST, false);
        let t = choose(Some("x86-64-v3"), &h).unwrap();
        assert_eq!((t.cpu.as_str(), t.features.as_str()), ("x86-64-v3", ""));
        let t = choose(Some("x86-64-v2,+avx,-sse4.2"), &h).unwrap();
        assert_eq!(t.features, "+avx,-sse4.2");
        let t = choose(Some("native,-avx2"), &h).unwrap();
        assert_eq!((t.cpu.as_str(), t.features), ("znver3", format!("{AVX2_HOST},-avx2")));
    }

    #[test]
    fn bad_targets_are_errors_that_say_why() {
        Target::initialize_x86(&InitializationConfig::default());
        let h = host(AVX2_HOST, false);
        let e = choose(Some("skylake-avx512"), &h).unwrap_err();
        assert!(e.starts_with("OFFLOAD_RS_CPU_TARGET=skylake-avx512: code for 'skylake-avx512' needs features"), "{e}");
        assert!(e.contains("avx512f") && e.contains("avx512bw"), "{e}");
        let e = choose(Some("x86-64-v3,+avx512f"), &h).unwrap_err();
        assert!(e.contains("lacks: avx512f"), "{e}");
        let e = choose(Some("pentium9"), &h).unwrap_err();
        assert!(e.contains("'pentium9' is not a CPU LLVM knows"), "{e}");
        let e = choose(Some("x86-64,+nosuchfeature"), &h).unwrap_err();
        assert!(e.contains("'nosuchfeature' is not a feature LLVM knows"), "{e}");
        let e = choose(Some("x86-64,avx2"), &h).unwrap_err();
        assert!(e.contains("'avx2' is not +feature or -feature"), "{e}");
        let e = choose(Some("+avx2"), &h).unwrap_err();
        assert!(e.contains("expected a CPU name first"), "{e}");
        let e = choose(Some("x86\0"), &h).unwrap_err();
        assert!(e.contains("NUL"), "{e}");
        // under valgrind, the message names valgrind's CPU
        let e = choose(Some("x86-64-v4"), &host(AVX2_HOST, true)).unwrap_err();
        assert!(e.contains("the CPU valgrind emulates lacks"), "{e}");
    }

    #[test]
    fn natively_not_under_valgrind() {
        // (the Rust tests never run under valgrind)
        assert!(!running_on_valgrind());
    }
}
