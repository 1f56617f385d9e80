//! The compile service's protocol: a job ([`Request`]) and its answer ([`encode_result`]) as bytes, the
//! same whether the job goes to the compile helper over its socket (helper.rs) or to the in-process LLVM
//! module (module.rs), and the resolved CPU target ([`CpuTarget`]) that compile jobs carry.

use super::JitError;

/// What the CPU JIT compiles for (resolved by the compile service).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuTarget {
    pub triple: String,
    pub cpu: String,
    pub features: String,
    /// whether the code may call glibc's vector math (`OFFLOAD_RS_JIT_VECTOR_MATH`, src/jit/llvm/math.rs)
    pub vector_math: bool,
    /// whether the code gets stop points (src/jit/stop.rs; not chosen here: set per compile from
    /// [`super::stop_points`])
    pub stop_points: bool,
    /// which of the lowering's transforms run (`OFFLOAD_RS_JIT_LOWERING`, src/jit/llvm/lowering.rs; empty:
    /// all of them)
    pub lowering: String,
}

impl CpuTarget {
    /// The compile service's answer to a target request: `(len: u32, bytes)` for triple, cpu, features
    /// and `enabled` (every feature LLVM turns on for the target, implied ones included, comma-separated).
    #[cfg(any(feature = "llvm", test))]
    pub(crate) fn encode(&self, enabled: &str) -> Vec<u8> {
        let mut v = Vec::new();
        put_strs(&mut v, &[&self.triple, &self.cpu, &self.features, enabled]);
        v
    }

    /// The inverse of [`CpuTarget::encode`] (vector math and stop points off, every lowering transform on),
    /// with the enabled features.
    pub(crate) fn decode(mut v: &[u8]) -> Option<(CpuTarget, Vec<String>)> {
        let [triple, cpu, features, enabled] = take_strs(&mut v)?.map(str::to_string);
        let enabled = enabled.split(',').filter(|f| !f.is_empty()).map(str::to_string).collect();
        v.is_empty().then_some((
            CpuTarget { triple, cpu, features, vector_math: false, stop_points: false, lowering: String::new() },
            enabled,
        ))
    }
}

/// Appends each of `strs` as `len: u32 | bytes`.
fn put_strs(v: &mut Vec<u8>, strs: &[&str]) {
    for s in strs {
        v.extend_from_slice(&(s.len() as u32).to_le_bytes());
        v.extend_from_slice(s.as_bytes());
    }
}

/// Takes `N` strings written by [`put_strs`] from the front of `v`; `None` for bytes it did not write.
fn take_strs<'a, const N: usize>(v: &mut &'a [u8]) -> Option<[&'a str; N]> {
    let mut out = [""; N];
    for s in &mut out {
        let n = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
        *s = std::str::from_utf8(v.get(4..4usize.checked_add(n)?)?).ok()?;
        *v = &v[4 + n..];
    }
    Some(out)
}

/// One job for the helper.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request<'a> {
    /// Bitcode -> x86-64 relocatable object and kernel metadata (`compile::compile_in_process`), with
    /// the memory checker's instrumentation when `memcheck`, specialised for one kernel and group size
    /// when `kernel` is not empty (`compile::Spec`, `quick` its tier); `replaced`: generic code that specialisations
    /// replace at launch (`compile::generic_is_replaced`); `defer`: such generic code may be left
    /// uncompiled (`compile::compile_in_process`: the answer is then the metadata without an object); for
    /// the client's target `triple`, `cpu`,
    /// `features`, `vector_math` (target.rs: the helper compiles for exactly these, whatever CPU it sees
    /// itself).
    Cpu {
        bc: &'a [u8],
        opt: u32,
        memcheck: bool,
        replaced: bool,
        defer: bool,
        kernel: &'a str,
        group: [u32; 3],
        quick: bool,
        triple: &'a str,
        cpu: &'a str,
        features: &'a str,
        vector_math: bool,
        stop_points: bool,
        lowering: &'a str,
    },
    /// NVPTX bitcode -> PTX text for `cpu` (`sm_90`) with `features` (`+ptx84`).
    Ptx { bc: &'a [u8], cpu: &'a str, features: &'a str, opt: u32 },
    /// The client's CPU target choice (target.rs: `OFFLOAD_RS_CPU_TARGET`, empty when unset) -> the LLVM
    /// CPU name and features it resolves to ([`super::target::CpuTarget::encode`]), for a client whose
    /// CPU lacks `lacks` (comma-separated feature names) and that may run under valgrind.
    Target { spec: &'a str, under_valgrind: bool, lacks: &'a str },
}

impl<'a> Request<'a> {
    /// `kind: u8 | opt: u8 | flags: u8 (CPU: 1 memcheck, 2 replaced, 4 no vector math, 8 stop points, 16 defer,
    /// 32 quick; target: 1 under valgrind) | group: 3 x u32 | (len: u32, bytes) for five strings (CPU: the
    /// specialised kernel, triple, cpu, features, lowering; PTX: cpu, features, "", "", ""; target: spec,
    /// lacks, "", "", "") | bitcode`.
    /// The request's bytes; `OutOfResources` when there is no memory for them (a copy of the image: the
    /// client's size, not to end its process with Rust's allocation-failure abort).
    pub(crate) fn encode(&self) -> Result<Vec<u8>, JitError> {
        let (kind, opt, flags, group, strs, bc): (u8, u32, u8, [u32; 3], [&str; 5], &[u8]) = match *self {
            Request::Cpu {
                bc,
                opt,
                memcheck,
                replaced,
                defer,
                kernel,
                group,
                quick,
                triple,
                cpu,
                features,
                vector_math,
                stop_points,
                lowering,
            } => {
                let flags = u8::from(memcheck)
                    | (u8::from(replaced) << 1)
                    | (u8::from(!vector_math) << 2)
                    | (u8::from(stop_points) << 3)
                    | (u8::from(defer) << 4)
                    | (u8::from(quick) << 5);
                (1, opt, flags, group, [kernel, triple, cpu, features, lowering], bc)
            }
            Request::Ptx { bc, cpu, features, opt } => (2, opt, 0, [0; 3], [cpu, features, "", "", ""], bc),
            Request::Target { spec, under_valgrind, lacks } => {
                (3, 0, u8::from(under_valgrind), [0; 3], [spec, lacks, "", "", ""], &[][..])
            }
        };
        let mut v = Vec::new();
        let want = bc.len().saturating_add(64 + strs.iter().map(|s| s.len() + 8).sum::<usize>());
        v.try_reserve_exact(want).map_err(|_| {
            JitError::OutOfResources(format!("no memory for a {}-byte compile request (the image's copy)", want))
        })?;
        v.push(kind);
        v.push(opt.min(3) as u8);
        v.push(flags);
        for g in group {
            v.extend_from_slice(&g.to_le_bytes());
        }
        put_strs(&mut v, &strs);
        v.extend_from_slice(bc);
        Ok(v)
    }

    #[cfg(feature = "llvm")]
    pub(crate) fn decode(v: &'a [u8]) -> Option<Request<'a>> {
        let (&kind, rest) = v.split_first()?;
        let (&opt, rest) = rest.split_first()?;
        let (&flags, mut rest) = rest.split_first()?;
        let mut group = [0u32; 3];
        for g in &mut group {
            *g = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
            rest = &rest[4..];
        }
        let strs: [&str; 5] = take_strs(&mut rest)?;
        let opt = u32::from(opt);
        match kind {
            1 => Some(Request::Cpu {
                bc: rest,
                opt,
                memcheck: flags & 1 != 0,
                replaced: flags & 2 != 0,
                defer: flags & 16 != 0,
                kernel: strs[0],
                group,
                quick: flags & 32 != 0,
                triple: strs[1],
                cpu: strs[2],
                features: strs[3],
                vector_math: flags & 4 == 0,
                stop_points: flags & 8 != 0,
                lowering: strs[4],
            }),
            2 => Some(Request::Ptx { bc: rest, cpu: strs[0], features: strs[1], opt }),
            3 => Some(Request::Target { spec: strs[0], under_valgrind: flags & 1 != 0, lacks: strs[1] }),
            _ => None,
        }
    }
}

#[cfg(feature = "llvm")]
/// `tag: u8 | payload`; tag 0 is success, the others name the `JitError` variant.
pub(crate) fn encode_result(r: Result<Vec<u8>, JitError>) -> Vec<u8> {
    let (tag, body) = match r {
        Ok(v) => (0u8, v),
        Err(JitError::InvalidBinary(m)) => (1, m.into_bytes()),
        Err(JitError::Compile(m)) => (2, m.into_bytes()),
        Err(JitError::Link(m)) => (3, m.into_bytes()),
        Err(JitError::Io(m)) => (4, m.into_bytes()),
        Err(JitError::NotFound(m)) => (5, m.into_bytes()),
        Err(JitError::Run(m)) => (6, m.into_bytes()),
        Err(JitError::InvalidTarget(m)) => (7, m.into_bytes()),
        Err(JitError::OutOfResources(m)) => (8, m.into_bytes()),
    };
    let mut v = Vec::with_capacity(body.len() + 1);
    v.push(tag);
    v.extend_from_slice(&body);
    v
}

pub(crate) fn decode_result(mut v: Vec<u8>) -> Result<Vec<u8>, JitError> {
    if v.is_empty() {
        return Err(JitError::Compile("internal: empty result from the JIT helper".into()));
    }
    let tag = v.remove(0);
    let msg = || String::from_utf8_lossy(&v).into_owned();
    match tag {
        0 => Ok(v),
        1 => Err(JitError::InvalidBinary(msg())),
        3 => Err(JitError::Link(msg())),
        4 => Err(JitError::Io(msg())),
        5 => Err(JitError::NotFound(msg())),
        6 => Err(JitError::Run(msg())),
        7 => Err(JitError::InvalidTarget(msg())),
        8 => Err(JitError::OutOfResources(msg())),
        _ => Err(JitError::Compile(msg())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let bc = [1u8, 2, 3];
        let r = Request::Ptx { bc: &bc, cpu: "sm_90", features: "+ptx84", opt: 2 };
        match Request::decode(&r.encode().unwrap()) {
            Some(Request::Ptx { bc: b, cpu, features, opt }) => {
                assert_eq!((b, cpu, features, opt), (&bc[..], "sm_90", "+ptx84", 2));
            }
            other => panic!("{other:?}"),
        }
        let r = Request::Cpu {
            bc: &bc,
            opt: 3,
            memcheck: false,
            replaced: true,
            defer: true,
            kernel: "k",
            group: [64, 2, 1],
            quick: true,
            triple: "x86_64-pc-linux-gnu",
            cpu: "x86-64-v3",
            features: "-avx2",
            vector_math: false,
            stop_points: true,
            lowering: "-ol-run-guards",
        };
        match Request::decode(&r.encode().unwrap()) {
            Some(Request::Cpu {
                bc: b,
                opt,
                memcheck,
                replaced,
                defer,
                kernel,
                group,
                quick,
                triple,
                cpu,
                features,
                vector_math,
                stop_points,
                lowering,
            }) => {
                assert_eq!((b, opt, memcheck, replaced, kernel, group), (&bc[..], 3, false, true, "k", [64, 2, 1]));
                assert!(defer && quick);
                assert_eq!((triple, cpu, features, vector_math), ("x86_64-pc-linux-gnu", "x86-64-v3", "-avx2", false));
                assert!(stop_points);
                assert_eq!(lowering, "-ol-run-guards");
            }
            other => panic!("{other:?}"),
        }
        assert!(Request::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert!(Request::decode(&[2, 0, 255, 255, 255, 255]).is_none());
        let e = decode_result(encode_result(Err(JitError::InvalidBinary("x".into()))));
        assert!(matches!(e, Err(JitError::InvalidBinary(m)) if m == "x"));
    }
}
