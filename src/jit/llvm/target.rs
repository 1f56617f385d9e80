//! The compile service's side of the CPU JIT's target (see src/jit/target.rs for the client's): resolves
//! the client's choice to an LLVM CPU name and feature string, checked against what LLVM knows and what
//! the client's CPU runs (this process's CPU as LLVM reads it, less what the client's `cpuid` lacks).

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::OnceLock;

use inkwell::targets::{InitializationConfig, Target, TargetMachine};

use crate::jit::JitError;
use crate::jit::request::CpuTarget;
use crate::jit::target::ENV;

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

/// How the client's process sees its CPU (under valgrind: valgrind's CPU).
#[derive(Debug, Clone)]
pub(crate) struct HostView {
    pub triple: String,
    pub cpu: String,
    /// LLVM's host feature string: `+name` or `-name` for every feature it detects
    pub features: String,
    pub under_valgrind: bool,
}

/// The client's CPU: this process's as LLVM reads it, with the features the client lacks (`lacks`,
/// comma-separated names) turned off.
pub(crate) fn host_view(under_valgrind: bool, lacks: &str) -> HostView {
    static LLVM_HOST: OnceLock<(String, String, String)> = OnceLock::new();
    let (triple, cpu, features) = LLVM_HOST.get_or_init(|| {
        Target::initialize_x86(&InitializationConfig::default());
        (
            TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned(),
            TargetMachine::get_host_cpu_name().to_string(),
            TargetMachine::get_host_cpu_features().to_string(),
        )
    });
    let lacks: Vec<&str> = lacks.split(',').filter(|n| !n.is_empty()).collect();
    let mut feats: Vec<String> = features
        .split(',')
        .filter(|f| !f.is_empty())
        .map(|f| match f.strip_prefix('+') {
            Some(n) if lacks.contains(&n) => format!("-{n}"),
            _ => f.to_string(),
        })
        .collect();
    for n in lacks {
        if !feats.iter().any(|f| f.get(1..) == Some(n)) {
            feats.push(format!("-{n}"));
        }
    }
    HostView { triple: triple.clone(), cpu: cpu.clone(), features: feats.join(","), under_valgrind }
}

/// The client's target request, resolved: the target for `spec` on the client's CPU ([`host_view`]).
pub(crate) fn resolve_request(spec: Option<&str>, under_valgrind: bool, lacks: &str) -> Result<CpuTarget, JitError> {
    choose(spec, &host_view(under_valgrind, lacks)).map_err(JitError::InvalidTarget)
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
            lowering: String::new(),
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
        lowering: String::new(),
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
    fn the_clients_missing_features_are_off() {
        let h = host_view(false, "avx2,nosuch");
        assert!(
            h.features.split(',').any(|f| f == "-avx2") && !h.features.split(',').any(|f| f == "+avx2"),
            "{}",
            h.features
        );
        assert!(h.features.ends_with("-nosuch") || h.features.contains("-nosuch,"), "{}", h.features);
        let e = resolve_request(Some("x86-64-v3"), false, "avx2").unwrap_err();
        assert!(e.to_string().contains("lacks: avx2"), "{e}");
    }
}
