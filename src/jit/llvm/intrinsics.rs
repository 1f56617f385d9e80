//! The GPU intrinsic table: which called names are GPU intrinsics (nvvm, amdgcn, r600, spirv) and what
//! the lowering replaces each with. The C++ lowering (`replaceIntrinsics` in lower/intrinsics.cpp) asks
//! [`classify_intrinsic`] about every called function and builds the replacement IR for the
//! [`IntrinsicOp`] it gets; a GPU intrinsic it does not get an operation for is an error there, as is
//! one left over after lowering.

use std::ffi::c_char;

/// What a call to a GPU intrinsic becomes (must match `enum IntrinsicOp` in lower/lowering.h). `arg` of
/// [`Intrinsic`] is given per operation.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntrinsicOp {
    /// not a GPU intrinsic
    NotGpu = 0,
    /// a GPU intrinsic the CPU JIT cannot emulate
    Unsupported = 1,
    /// the local id in dimension `arg`
    LocalId = 2,
    /// the group size in dimension `arg`
    GroupSize = 3,
    /// the group id in dimension `arg`
    GroupId = 4,
    /// the number of groups in dimension `arg`
    NumGroups = 5,
    WarpSize = 6,
    LaneId = 7,
    /// the lanes below/above this one: `arg` 0 eq, 1 lt, 2 le, 3 ge, 4 gt
    LaneMask = 8,
    /// a group barrier; `arg` 1: amdgcn's `s.barrier.signal.isfirst` (returns false)
    Barrier = 9,
    /// spirv's group memory barriers (void)
    SpvBarrier = 10,
    /// nothing to do on a CPU (waits, scheduling hints, sleeps, block-scope fences)
    NoOp = 11,
    /// a sequentially consistent fence
    Fence = 12,
    /// the work-item exits
    Exit = 13,
    ActiveMask = 14,
    /// nvvm shfl.sync: `arg` & 3 the mode (0 up, 1 down, 2 bfly, 3 idx), `arg` & 4 the predicate form
    Shfl = 15,
    /// nvvm vote: `arg` 0 ballot, 1 any, 2 all, 3 uni
    Vote = 16,
    ImplicitArgPtr = 17,
    DispatchPtr = 18,
    /// amdgcn mbcnt: `arg` 0 lo, 1 hi
    Mbcnt = 19,
    /// amdgcn ballot
    Ballot = 20,
    /// spirv wave ballot (`<4 x i32>`)
    SpvBallot = 21,
    /// read another lane's value: `arg` 0 the first lane, 1 lane given by operand 1, 2 amdgcn
    /// ds.bpermute (byte address in operand 0)
    ReadLane = 22,
    /// spirv's ids with a constant dimension operand: `arg` 0 local id, 1 group id, 2 group size,
    /// 3 number of groups
    SpvId = 23,
}

/// One classification (must match `OlRsIntrinsic` in lower/lowering.h).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Intrinsic {
    pub op: IntrinsicOp,
    pub arg: i32,
}

const _: () = assert!(std::mem::size_of::<Intrinsic>() == 8);

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
pub(crate) fn classify(name: &[u8]) -> Intrinsic {
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
            (PrefixDim(_), Some(d)) => Intrinsic { op: *op, arg: d as i32 },
            (PrefixDim(_), None) => Intrinsic { op: Unsupported, arg: 0 },
            (PrefixPred(_), _) if name.ends_with(b"p") => Intrinsic { op: *op, arg: *arg | 4 },
            _ => Intrinsic { op: *op, arg: *arg },
        };
    }
    let gpu = GPU_PREFIXES.iter().any(|p| name.starts_with(p.as_bytes()));
    Intrinsic { op: if gpu { Unsupported } else { NotGpu }, arg: 0 }
}

/// [`classify`] for the C++ lowering (passed to it in `LowerOptions`). Nothing in it can panic (string
/// comparisons only), so no unwinding reaches the C++.
///
/// # Safety
/// `name` points to `len` readable bytes (not necessarily NUL-terminated).
pub(crate) unsafe extern "C" fn classify_intrinsic(name: *const c_char, len: usize) -> Intrinsic {
    if name.is_null() {
        return Intrinsic { op: NotGpu, arg: 0 };
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
        assert_eq!(c("llvm.memcpy.p0.p0.i64"), (NotGpu, 0));
        assert_eq!(c("printf"), (NotGpu, 0));
    }
}
