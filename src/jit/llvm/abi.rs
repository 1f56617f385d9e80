//! The types Rust and the C++ side of the JIT (the lowering, src/jit/llvm/lower/, and the pass pipeline,
//! passes.cpp) exchange, in one place: `abi.h`, which the C++ includes, is generated from this file by
//! cbindgen (`tests/header.rs`; `UPDATE_HEADER=1 cargo test --test header` rewrites it, CI fails on a
//! difference), so the two sides cannot drift apart. Nothing else is declared by hand on either side.

use std::ffi::c_char;

/// What a call to a GPU intrinsic becomes (the C++ lowering builds the replacement IR per operation; the
/// table of names is src/jit/llvm/intrinsics.rs). `arg` of [`OlRsIntrinsic`] is given per operation.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntrinsicOp {
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
    /// nvvm match.sync: `arg` 0 any (the lanes holding the same value), 1 all (the predicate form)
    Match = 24,
    /// nvvm redux.sync (sm_80's `__reduce_*_sync`): `arg` 0 add, 1 min, 2 max, 3 umin, 4 umax, 5 and, 6 or,
    /// 7 xor
    Redux = 25,
}

/// One classification: what `classify_intrinsic` answers about a called name.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OlRsIntrinsic {
    pub op: IntrinsicOp,
    pub arg: i32,
}

/// `classify_intrinsic` (src/jit/llvm/intrinsics.rs): what a called name is; `name` need not be
/// NUL-terminated.
pub type OlRsClassifyFn = unsafe extern "C" fn(name: *const c_char, len: usize) -> OlRsIntrinsic;

/// Options of the lowering (`ol_rs_jit_lower`).
#[repr(C)]
pub struct OlRsLowerOptions {
    /// NUL-terminated kernel name, or NULL for the generic lowering of every kernel
    pub spec_kernel: *const c_char,
    pub spec_group_size: [u32; 3],
    /// the warp width the kernels were built for (src/jit/llvm/normalise.rs)
    pub warp_size: u32,
    /// the GPU intrinsic table
    pub classify_intrinsic: OlRsClassifyFn,
    /// which transforms run (bit i: `NAMES[i]` of src/jit/llvm/lowering.rs; the bits from 48, its
    /// `PIPELINE_NAMES`, are not the lowering's)
    pub transforms: u64,
}

/// One kernel parameter's size and alignment, as the lowering reports it.
#[repr(C)]
pub struct OlRsParam {
    pub size: u64,
    pub align: u64,
}

/// One kernel's metadata, as the lowering reports it to its callback; the pointers are valid only during
/// the callback.
#[repr(C)]
pub struct OlRsKernelInfo {
    /// the kernel's name
    pub name: *const c_char,
    /// its work-group function
    pub symbol: *const c_char,
    pub params: *const OlRsParam,
    pub num_params: u64,
    pub static_local_bytes: u64,
    pub scratch_bytes_per_wi: u64,
    pub warp_size: u32,
    pub has_barriers: bool,
    /// uses no mutable global variable
    pub specialisable: bool,
    /// what each transform did, `num_stats` counts in `NAMES` order (src/jit/llvm/lowering.rs)
    pub stats: *const u32,
    pub num_stats: u32,
}

/// A vector variant of a scalar function the vectoriser may call (the list is src/jit/llvm/math.rs's).
#[repr(C)]
pub struct OlRsVecFn {
    /// libm name or intrinsic (`expf`, `llvm.exp.f32`)
    pub scalar: *const c_char,
    /// glibc's vector function (`_ZGVdN8v_expf`)
    pub vector: *const c_char,
    /// LLVM's vector-ABI prefix (`_ZGV_LLVM_N8v`)
    pub abi_prefix: *const c_char,
    pub lanes: u32,
}

/// A flag of `ol_rs_jit_run_passes`: hook `ol-hoist-invariant-divisions` and `ol-opaque-wrapping-masks`
/// (src/jit/llvm/workarounds/), then `ol-implied-selects` (src/jit/llvm/implied_selects.cpp), in at the
/// vectoriser's start.
pub const OL_RS_HOOK_VECTORISER_WORKAROUNDS: u32 = 1;

/// A flag of `ol_rs_jit_run_passes`: hook `ol-prefetch-streams` (src/jit/llvm/prefetch_streams.cpp) in at the
/// vectoriser's end.
pub const OL_RS_HOOK_PREFETCH_STREAMS: u32 = 2;

/// A flag of `ol_rs_jit_run_passes`: hook `ol-prefetch-next-group` (src/jit/llvm/prefetch_next_group.cpp) in
/// at the vectoriser's end.
pub const OL_RS_HOOK_PREFETCH_NEXT_GROUP: u32 = 4;

/// A flag of `ol_rs_jit_run_passes`: hook `ol-nested-selects` (src/jit/llvm/nested_selects.cpp) in at the
/// vectoriser's end.
pub const OL_RS_HOOK_NESTED_SELECTS: u32 = 8;

/// A flag of `ol_rs_jit_run_passes`: hook `ol-group-order` (src/jit/llvm/group_order.cpp) in at the
/// vectoriser's end, before `ol-prefetch-next-group`.
pub const OL_RS_HOOK_GROUP_ORDER: u32 = 16;
