//! The CPU JIT's target as the client chooses it, without LLVM: what it asks for, what its process's CPU
//! lacks, and the part of every cache key that stands for the target.
//!
//! The client chooses once per process and the compile service resolves the choice to an LLVM CPU name
//! and feature string (src/jit/llvm/target.rs), at the first compile or at `olInit` when
//! `OFFLOAD_RS_CPU_TARGET` is set; every compile request then carries the resolved target and the
//! helper compiles for exactly that, whatever CPU it sees itself. So the code always matches what the
//! client's process can run, also when the helper sees another CPU than the client does (a client under
//! valgrind, whose emulated CPU has no AVX-512, while the helper runs on the real one): the client sends
//! the features its own `cpuid` says are missing, and the service treats them as absent.
//!
//! * Default: `native`, the host's CPU name and features as LLVM reads them.
//! * Under valgrind (detected with valgrind's `RUNNING_ON_VALGRIND` client request): the highest of
//!   `x86-64-v3`, `x86-64-v2`, `x86-64` that valgrind's CPU runs, without the host's extra features
//!   (valgrind cannot run AVX-512 code), with an `OFFLOAD_RS_DEBUG` line saying so.
//! * `OFFLOAD_RS_CPU_TARGET=<cpu>[,+feature,-feature...]`: any CPU name LLVM knows for x86-64
//!   (`x86-64-v3`, `skylake-avx512`, `znver4`, ...) or `native`, with optional feature changes. An unknown
//!   CPU or feature, or a target this machine cannot run (the features it lacks are named), is an error
//!   at `olInit` (`OL_ERRC_INVALID_VALUE`).
//!
//! A cache hit needs no resolution: the key holds what decides the resolved target (the choice, the
//! valgrind flag, the missing features, and a fingerprint of the `cpuid` leaves LLVM's host detection
//! reads), so loading a cached program never starts LLVM.

use std::sync::OnceLock;

/// The environment variable that chooses the target.
pub(crate) const ENV: &str = "OFFLOAD_RS_CPU_TARGET";

/// This process's CPU as the client sees it (under valgrind: valgrind's CPU), read without LLVM.
#[derive(Debug, Clone)]
pub(crate) struct ClientCpu {
    /// the value of [`ENV`], trimmed; `None` when unset or empty
    pub spec: Option<String>,
    pub under_valgrind: bool,
    /// the features (LLVM's names, comma-separated) this process's `cpuid` says are missing
    pub lacks: String,
    /// blake3 of the `cpuid` leaves (and `xgetbv`) LLVM's host detection reads
    pub fingerprint: [u8; 32],
}

/// The client's CPU, read on the first call.
pub(crate) fn client_cpu() -> &'static ClientCpu {
    static CPU: OnceLock<ClientCpu> = OnceLock::new();
    CPU.get_or_init(|| ClientCpu {
        spec: std::env::var(ENV).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
        under_valgrind: running_on_valgrind(),
        lacks: missing_features().join(","),
        fingerprint: cpuid_fingerprint(),
    })
}

/// The target's part of every JIT cache key: what decides the resolved target, without resolving it.
pub(crate) fn key_bytes() -> &'static [u8] {
    static KEY: OnceLock<Vec<u8>> = OnceLock::new();
    KEY.get_or_init(|| {
        let c = client_cpu();
        let mut v = b"target\0".to_vec();
        let spec = c.spec.as_deref().unwrap_or("");
        for s in [spec, c.lacks.as_str()] {
            v.extend_from_slice(&(s.len() as u64).to_le_bytes());
            v.extend_from_slice(s.as_bytes());
        }
        v.push(u8::from(c.under_valgrind));
        v.push(u8::from(vector_math_enabled()));
        v.extend_from_slice(&(lowering().len() as u64).to_le_bytes());
        v.extend_from_slice(lowering().as_bytes());
        v.extend_from_slice(&c.fingerprint);
        v
    })
}

/// `OFFLOAD_RS_JIT_LOWERING`, read once: which of the lowering's transforms run (src/jit/llvm/lowering.rs
/// reads it; empty: all). Part of the cache key and of the compile request.
pub(crate) fn lowering() -> &'static str {
    static SPEC: OnceLock<String> = OnceLock::new();
    SPEC.get_or_init(|| std::env::var("OFFLOAD_RS_JIT_LOWERING").map(|s| s.trim().to_string()).unwrap_or_default())
}

/// `OFFLOAD_RS_JIT_VECTOR_MATH=0`: every math call stays scalar (part of the cache key and of the
/// compile request).
pub(crate) fn vector_math_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OFFLOAD_RS_JIT_VECTOR_MATH").is_none_or(|v| v != "0"))
}

/// The features this process's CPU lacks, by LLVM's name (`+name`, `-name` are LLVM's feature syntax;
/// these are plain names): every x86 feature the standard library detects that LLVM may use in code.
fn missing_features() -> Vec<&'static str> {
    let mut out = Vec::new();
    macro_rules! check {
        ($($llvm:literal = $std:tt),* $(,)?) => {
            $( if !std::arch::is_x86_feature_detected!($std) { out.push($llvm); } )*
        };
    }
    #[cfg(target_arch = "x86_64")]
    check!(
        "sse3" = "sse3",
        "ssse3" = "ssse3",
        "sse4.1" = "sse4.1",
        "sse4.2" = "sse4.2",
        "sse4a" = "sse4a",
        "popcnt" = "popcnt",
        "lzcnt" = "lzcnt",
        "bmi" = "bmi1",
        "bmi2" = "bmi2",
        "tbm" = "tbm",
        "fma" = "fma",
        "f16c" = "f16c",
        "avx" = "avx",
        "avx2" = "avx2",
        "xsave" = "xsave",
        "xsaveopt" = "xsaveopt",
        "xsavec" = "xsavec",
        "xsaves" = "xsaves",
        "cx16" = "cmpxchg16b",
        "movbe" = "movbe",
        "adx" = "adx",
        "aes" = "aes",
        "pclmul" = "pclmulqdq",
        "sha" = "sha",
        "rdrnd" = "rdrand",
        "rdseed" = "rdseed",
        "fxsr" = "fxsr",
        "avx512f" = "avx512f",
        "avx512cd" = "avx512cd",
        "avx512bw" = "avx512bw",
        "avx512dq" = "avx512dq",
        "avx512vl" = "avx512vl",
        "avx512ifma" = "avx512ifma",
        "avx512vbmi" = "avx512vbmi",
        "avx512vbmi2" = "avx512vbmi2",
        "avx512vnni" = "avx512vnni",
        "avx512bitalg" = "avx512bitalg",
        "avx512vpopcntdq" = "avx512vpopcntdq",
        "avx512bf16" = "avx512bf16",
        "avx512fp16" = "avx512fp16",
        "vaes" = "vaes",
        "vpclmulqdq" = "vpclmulqdq",
        "gfni" = "gfni",
        "avxvnni" = "avxvnni",
    );
    out
}

/// blake3 of the `cpuid` leaves LLVM's host CPU and feature detection reads (vendor, family/model, the
/// feature leaves 1, 7.0, 7.1, 0xD.1, 0x14, 0x19, 0x24, 0x80000001, 0x80000008) and of `xgetbv(0)`, the
/// per-core parts (APIC ids) left out: the same on every core of one machine, different for another CPU
/// or another set of enabled features.
fn cpuid_fingerprint() -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid_count;
        // (cpuid exists on every x86-64 CPU; leaves above the maximum are not asked)
        let leaf = |l: u32, s: u32| __cpuid_count(l, s);
        let max = leaf(0, 0).eax;
        let max_ext = leaf(0x8000_0000, 0).eax;
        let mut add = |l: u32, s: u32, mask_ebx: u32| {
            let r = leaf(l, s);
            for w in [l, s, r.eax, r.ebx & mask_ebx, r.ecx, r.edx] {
                h.update(&w.to_le_bytes());
            }
        };
        add(0, 0, !0);
        // leaf 1's ebx holds the APIC id and logical count (per core): keep brand index and clflush size
        add(1, 0, 0xffff);
        for (l, s) in [(7, 0), (7, 1), (0xd, 1), (0x14, 0), (0x19, 0), (0x24, 0)] {
            if l <= max {
                add(l, s, !0);
            }
        }
        for l in [0x8000_0001, 0x8000_0008] {
            if l <= max_ext {
                add(l, 0, !0);
            }
        }
        // OSXSAVE: the OS's enabled register state decides AVX and AVX-512 as much as cpuid does
        if leaf(1, 0).ecx & (1 << 27) != 0 {
            let (lo, hi): (u32, u32);
            // SAFETY: xgetbv with ecx = 0 is available when OSXSAVE is set; it only reads XCR0.
            unsafe { std::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
            h.update(&lo.to_le_bytes());
            h.update(&hi.to_le_bytes());
        }
    }
    *h.finalize().as_bytes()
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
    use super::super::request::CpuTarget;
    use super::*;

    #[test]
    fn natively_not_under_valgrind() {
        // (the Rust tests never run under valgrind)
        assert!(!running_on_valgrind());
    }

    #[test]
    fn the_cpu_as_the_client_sees_it() {
        // the same on every call and every core; this machine has SSE2 and x86-64's baseline
        assert_eq!(cpuid_fingerprint(), cpuid_fingerprint());
        let lacks = missing_features();
        assert!(!lacks.contains(&"fxsr"), "{lacks:?}");
        assert_eq!(lacks.contains(&"avx2"), !std::arch::is_x86_feature_detected!("avx2"));
        let t = CpuTarget {
            triple: "x".into(),
            cpu: "znver4".into(),
            features: "+a,-b".into(),
            ..CpuTarget::decode(&[0; 16]).unwrap().0
        };
        assert_eq!(CpuTarget::decode(&t.encode("avx2,fma")), Some((t, vec!["avx2".to_string(), "fma".to_string()])));
        assert_eq!(CpuTarget::decode(&[1, 0, 0]), None);
    }
}
