//! The GPU intrinsic table: which called names are GPU intrinsics (nvvm, amdgcn, r600, spirv) and what
//! the lowering replaces each with. The C++ lowering (`replaceIntrinsics` in lower/intrinsics.cpp) asks
//! [`classify_intrinsic`] about every called function and builds the replacement IR for the
//! [`IntrinsicOp`] it gets; a GPU intrinsic it does not get an operation for is an error there, as is
//! one left over after lowering.

use std::ffi::c_char;

pub(crate) use super::abi::{IntrinsicOp, OlRsIntrinsic};

/// How a rule's name matches.
enum Name {
    Exact(&'static str),
    Prefix(&'static str),
    /// a prefix, and the name ends in `.x`, `.y` or `.z`: the dimension is the op's `arg`
    PrefixDim(&'static str),
    /// a prefix; a name ending in `p` (the predicate form) adds 4 to `arg`
    PrefixPred(&'static str),
}

use IntrinsicOp::*;
use Name::*;

/// The rules, tried in order; the first whose name matches decides.
const RULES: &[(Name, IntrinsicOp, i32)] = &[
    (PrefixDim("llvm.nvvm.read.ptx.sreg.tid."), LocalId, 0),
    (PrefixDim("llvm.nvvm.read.ptx.sreg.ntid."), GroupSize, 0),
    (PrefixDim("llvm.nvvm.read.ptx.sreg.ctaid."), GroupId, 0),
    (PrefixDim("llvm.nvvm.read.ptx.sreg.nctaid."), NumGroups, 0),
    (Exact("llvm.nvvm.read.ptx.sreg.warpsize"), WarpSize, 0),
    (Exact("llvm.nvvm.read.ptx.sreg.laneid"), LaneId, 0),
    (Exact("llvm.nvvm.read.ptx.sreg.lanemask.eq"), LaneMask, 0),
    (Exact("llvm.nvvm.read.ptx.sreg.lanemask.lt"), LaneMask, 1),
    (Exact("llvm.nvvm.read.ptx.sreg.lanemask.le"), LaneMask, 2),
    (Exact("llvm.nvvm.read.ptx.sreg.lanemask.ge"), LaneMask, 3),
    (Exact("llvm.nvvm.read.ptx.sreg.lanemask.gt"), LaneMask, 4),
    (Prefix("llvm.nvvm.barrier"), Barrier, 0),
    (Exact("llvm.nvvm.bar.sync"), Barrier, 0),
    (Exact("llvm.nvvm.bar.warp.sync"), Barrier, 0),
    (Exact("llvm.amdgcn.s.barrier"), Barrier, 0),
    (Exact("llvm.amdgcn.wave.barrier"), Barrier, 0),
    (Exact("llvm.amdgcn.s.barrier.signal"), Barrier, 0),
    (Exact("llvm.amdgcn.s.barrier.signal.isfirst"), Barrier, 1),
    (Exact("llvm.amdgcn.s.barrier.wait"), NoOp, 0),
    (Exact("llvm.nvvm.membar.cta"), NoOp, 0),
    (Exact("llvm.amdgcn.sched.barrier"), NoOp, 0),
    (Exact("llvm.amdgcn.s.waitcnt"), NoOp, 0),
    (Exact("llvm.amdgcn.sched.group.barrier"), NoOp, 0),
    (Exact("llvm.nvvm.membar.gl"), Fence, 0),
    (Exact("llvm.nvvm.membar.sys"), Fence, 0),
    (Exact("llvm.nvvm.exit"), Exit, 0),
    (Exact("llvm.amdgcn.endpgm"), Exit, 0),
    (Exact("llvm.nvvm.activemask"), ActiveMask, 0),
    (PrefixPred("llvm.nvvm.shfl.sync.up"), Shfl, 0),
    (PrefixPred("llvm.nvvm.shfl.sync.down"), Shfl, 1),
    (PrefixPred("llvm.nvvm.shfl.sync.bfly"), Shfl, 2),
    (PrefixPred("llvm.nvvm.shfl.sync."), Shfl, 3),
    (Prefix("llvm.nvvm.vote.ballot"), Vote, 0),
    (Prefix("llvm.nvvm.vote.any"), Vote, 1),
    (Prefix("llvm.nvvm.vote.all"), Vote, 2),
    (Prefix("llvm.nvvm.vote.uni"), Vote, 3),
    (Prefix("llvm.nvvm.match.any.sync."), Match, 0),
    (Prefix("llvm.nvvm.match.all.sync."), Match, 1),
    // (ol-match-loops' replacement of gpuintrin's match_any loop)
    (Prefix("__ol_rs.match_any."), Match, 2),
    (Exact("llvm.nvvm.redux.sync.add"), Redux, 0),
    (Exact("llvm.nvvm.redux.sync.min"), Redux, 1),
    (Exact("llvm.nvvm.redux.sync.max"), Redux, 2),
    (Exact("llvm.nvvm.redux.sync.umin"), Redux, 3),
    (Exact("llvm.nvvm.redux.sync.umax"), Redux, 4),
    (Exact("llvm.nvvm.redux.sync.and"), Redux, 5),
    (Exact("llvm.nvvm.redux.sync.or"), Redux, 6),
    (Exact("llvm.nvvm.redux.sync.xor"), Redux, 7),
    (PrefixDim("llvm.amdgcn.workitem.id."), LocalId, 0),
    (PrefixDim("llvm.amdgcn.workgroup.id."), GroupId, 0),
    (Exact("llvm.amdgcn.implicitarg.ptr"), ImplicitArgPtr, 0),
    (Exact("llvm.amdgcn.dispatch.ptr"), DispatchPtr, 0),
    (Prefix("llvm.amdgcn.mbcnt.lo"), Mbcnt, 0),
    (Prefix("llvm.amdgcn.mbcnt.hi"), Mbcnt, 1),
    (Prefix("llvm.amdgcn.ballot."), Ballot, 0),
    (Prefix("llvm.amdgcn.readfirstlane"), ReadLane, 0),
    (Prefix("llvm.amdgcn.readlane"), ReadLane, 1),
    (Prefix("llvm.amdgcn.ds.bpermute"), ReadLane, 2),
    (Prefix("llvm.spv.wave.readlane"), ReadLane, 1),
    (Prefix("llvm.spv.thread.id.in.group"), SpvId, 0),
    (Prefix("llvm.spv.group.id"), SpvId, 1),
    (Prefix("llvm.spv.workgroup.size"), SpvId, 2),
    (Prefix("llvm.spv.num.workgroups"), SpvId, 3),
    (Exact("llvm.spv.subgroup.size"), WarpSize, 0),
    (Exact("llvm.spv.subgroup.max.size"), WarpSize, 0),
    (Exact("llvm.spv.subgroup.local.invocation.id"), LaneId, 0),
    (Exact("llvm.spv.group.memory.barrier.with.group.sync"), SpvBarrier, 0),
    (Exact("llvm.spv.group.memory.barrier"), SpvBarrier, 0),
    (Prefix("llvm.spv.wave.ballot"), SpvBallot, 0),
    (Exact("llvm.amdgcn.s.sleep"), NoOp, 0),
    (Exact("llvm.nvvm.nanosleep"), NoOp, 0),
];

/// The name prefixes of GPU intrinsics: a name with one of them that no rule handles is unsupported.
const GPU_PREFIXES: [&str; 4] = ["llvm.nvvm.", "llvm.amdgcn.", "llvm.r600.", "llvm.spv."];

/// What the lowering does with a call to `name` (see [`RULES`]).
pub(crate) fn classify(name: &[u8]) -> OlRsIntrinsic {
    let dim = |n: &[u8]| [b".x", b".y", b".z"].iter().position(|s| n.ends_with(*s));
    for (rule, op, arg) in RULES {
        let hit = match rule {
            Exact(s) => name == s.as_bytes(),
            Prefix(s) => name.starts_with(s.as_bytes()),
            PrefixDim(s) | PrefixPred(s) => name.starts_with(s.as_bytes()),
        };
        if !hit {
            continue;
        }
        return match (rule, dim(name)) {
            (PrefixDim(_), Some(d)) => OlRsIntrinsic { op: *op, arg: d as i32 },
            (PrefixDim(_), None) => OlRsIntrinsic { op: Unsupported, arg: 0 },
            (PrefixPred(_), _) if name.ends_with(b"p") => OlRsIntrinsic { op: *op, arg: *arg | 4 },
            _ => OlRsIntrinsic { op: *op, arg: *arg },
        };
    }
    let gpu = GPU_PREFIXES.iter().any(|p| name.starts_with(p.as_bytes()));
    OlRsIntrinsic { op: if gpu { Unsupported } else { NotGpu }, arg: 0 }
}

/// [`classify`] for the C++ lowering (passed to it in `LowerOptions`). Nothing in it can panic (string
/// comparisons only), so no unwinding reaches the C++.
///
/// # Safety
/// `name` points to `len` readable bytes (not necessarily NUL-terminated).
pub(crate) unsafe extern "C" fn classify_intrinsic(name: *const c_char, len: usize) -> OlRsIntrinsic {
    if name.is_null() {
        return OlRsIntrinsic { op: NotGpu, arg: 0 };
    }
    // SAFETY: the caller's contract.
    classify(unsafe { std::slice::from_raw_parts(name as *const u8, len) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(n: &str) -> (IntrinsicOp, i32) {
        let i = classify(n.as_bytes());
        (i.op, i.arg)
    }

    #[test]
    fn names_map_to_operations() {
        assert_eq!(c("llvm.nvvm.read.ptx.sreg.tid.y"), (LocalId, 1));
        assert_eq!(c("llvm.nvvm.read.ptx.sreg.nctaid.z"), (NumGroups, 2));
        assert_eq!(c("llvm.nvvm.read.ptx.sreg.tid.w"), (Unsupported, 0));
        assert_eq!(c("llvm.nvvm.read.ptx.sreg.clock"), (Unsupported, 0));
        assert_eq!(c("llvm.nvvm.barrier0"), (Barrier, 0));
        assert_eq!(c("llvm.amdgcn.s.barrier.signal.isfirst"), (Barrier, 1));
        assert_eq!(c("llvm.nvvm.shfl.sync.bfly.i32p"), (Shfl, 6));
        assert_eq!(c("llvm.nvvm.shfl.sync.down.f32"), (Shfl, 1));
        assert_eq!(c("llvm.nvvm.shfl.sync.idx.f32"), (Shfl, 3));
        assert_eq!(c("llvm.amdgcn.workitem.id.x"), (LocalId, 0));
        assert_eq!(c("llvm.amdgcn.readfirstlane.i32"), (ReadLane, 0));
        assert_eq!(c("llvm.amdgcn.readlane.i32"), (ReadLane, 1));
        assert_eq!(c("llvm.spv.group.id.i32"), (SpvId, 1));
        assert_eq!(c("llvm.r600.read.tidig.x"), (Unsupported, 0));
        assert_eq!(c("llvm.nvvm.vote.sync"), (Unsupported, 0));
        assert_eq!(c("llvm.nvvm.match.any.sync.i64"), (Match, 0));
        assert_eq!(c("llvm.nvvm.match.all.sync.i32p"), (Match, 1));
        assert_eq!(c("__ol_rs.match_any.i64"), (Match, 2));
        assert_eq!(c("llvm.nvvm.redux.sync.umax"), (Redux, 4));
        assert_eq!(c("llvm.nvvm.redux.sync.fmin"), (Unsupported, 0));
        assert_eq!(c("llvm.memcpy.p0.p0.i64"), (NotGpu, 0));
        assert_eq!(c("printf"), (NotGpu, 0));
    }
}
