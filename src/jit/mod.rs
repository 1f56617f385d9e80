//! The CPU JIT: turns GPU-style kernels into x86-64 work-group functions that run on the calling thread.
//!
//! # Inputs ([`classify`], [`is_valid_for_cpu`], [`load`])
//! * **LLVM bitcode** (raw `BC\xC0\xDE` or with the `0x0B17C0DE` wrapper header) whose triple is
//!   `nvptx64-*`, `amdgcn-*`, `spirv64` or the x86-64 host. Kernels are the functions with the
//!   `ptx_kernel` (71), `amdgpu_kernel` (91) or `spir_kernel` (76) calling convention; they are retargeted
//!   to the host (triple, datalayout, target-cpu/features, C calling convention), fully inlined (recursion
//!   is rejected), their GPU intrinsics replaced, and wrapped in one work-group ("WG") function each (see
//!   below). On spirv64, clang 22 implements `__gpu_exit` as `__builtin_trap()`, so it traps (SIGILL) as
//!   written rather than ending the work-item.
//!   **Host-triple (x86-64) bitcode** follows the native convention: every exported function of type
//!   `void(ptr)` is already a WG function with the [`WgFn`] ABI and is compiled as is.
//! * **x86-64 ELF shared objects** (`ET_DYN`), loaded with `dlopen` from a `memfd` (no file is left
//!   behind). Every exported function named like the kernel is taken to be a WG function with exactly the
//!   [`WgFn`] ABI: `void name(const WgCtx *ctx)`, running one whole work-group; `ctx->args` is the raw
//!   argument buffer (the plugin passes it through; [`KernelEntry::params`] is empty).
//!
//! # The WG function ABI
//! `unsafe extern "C" fn(*const WgCtx)` runs all work-items of group `ctx.group_id` on the calling thread.
//! Everything per-group comes through `ctx` (no mutable globals, no TLS), so many threads may run groups of
//! the same kernel at once, each with its own `local_mem`/`scratch`.
//! * Arguments: `ctx.args` is laid out like the kernel's parameters in a naturally aligned C struct
//!   (offset = align_up(previous end, align)); [`KernelEntry::params`] gives each size and alignment.
//!   By-value structs (`byval`/`byref`) are read from the buffer. The buffer must be aligned to 16 bytes
//!   (copies of by-value structs may use aligned vector loads).
//! * Static `__gpu_local` (addrspace 3) variables live at `ctx.local_mem[0..static_local_bytes)`;
//!   `extern __gpu_local` zero-size arrays all start at `ctx.dyn_local_mem`.
//! * Kernels with barriers or warp collectives use `ctx.scratch`
//!   (`scratch_bytes_per_wi * group_size.x*y*z` bytes, 64-byte aligned, no zeroing needed).
//!
//! A launch, as the CPU plugin does it (each worker thread with its own buffers):
//! ```ignore
//! let img = jit::load(bytes)?;                       // olCreateProgram (cache hit: ~20 µs)
//! let k = img.kernel("saxpy").ok_or(..)?;            // olGetSymbol
//! for each group g handed to this worker {
//!     let ctx = WgCtx { args, local_mem, dyn_local_mem, scratch, group_id: g, num_groups, group_size, _pad: 0 };
//!     unsafe { (k.wg_fn)(&ctx) };                    // runs all work-items of group g
//! }
//! ```
//!
//! # Work-items, barriers and warps
//! Kernels without barriers become a top-tested z/y/x loop over work-items around the body, inlined by
//! the lowering; the x loop is marked `llvm.loop.parallel_accesses` (work-items are independent between
//! barriers under GPU rules), so LLVM vectorises it. A guard `if (gid * n + tid < len)` around the body
//! narrows the x range to the ids that pass and disappears (no masked loads/stores); where `gid * n +
//! tid` could wrap around 2^32 (checked once per group), an unchanged copy of the loop nest runs.
//! Kernels with `__gpu_sync_threads` (or warp operations) are lowered in C++ (`llvm/lower/`; the C API has
//! no CloneFunction/InlineFunction/DemoteRegToStack/dominators), without fibers:
//! * blocks are split at barriers; a *region* is what runs from the entry or a barrier to the next
//!   barriers/exits. Each region's blocks are cloned into their own parallel z/y/x work-item loop;
//! * only values live across a barrier (per-region dominance) and private variables are demoted to
//!   per-work-item arrays in `ctx.scratch` (structure of arrays); cheap pure functions of the ids,
//!   arguments and group-invariant values (`&s[tid]`) are recomputed in each region instead; values a
//!   uniformity analysis proves work-item-invariant share one slot, preloaded per region, and
//!   side-effect-free invariant values of the entry block are computed once per group;
//! * **uniform barriers** (the common case): when every branch whose direction may differ between
//!   work-items leads to a single barrier or exit, all work-items reach the same barriers in the same
//!   order. Then each uniform branch choosing between barriers gets an implicit barrier on each edge
//!   (the choice is made once per group), a region records its exit in one group-level `next` and the
//!   regions follow each other (barriers in loops become loops around region loops), regions without
//!   any work-item-dependent instruction run once per group, and a region guarded by `tid <pred> b`,
//!   `tid + c <pred> b` (conjunctions, signed or unsigned, any dimension; b, c group-invariant) loops
//!   only over the ids that pass: a tree reduction's step `if (t < k)` costs k iterations, not 256;
//! * otherwise (**general scheduler**), a per-work-item resume id (in scratch) records the barrier each
//!   work-item waits at (or that it exited); after each region a vectorisable min/max scan picks the
//!   next region (the smallest pending id; the fast path skips the per-item check when all wait at the
//!   same barrier). Divergent barriers therefore cannot deadlock, and `__gpu_exit` ends only the
//!   calling work-item.
//!
//! **Launch-time specialisation** ([`KernelEntry::specialise`], used by the CPU plugin at the first
//! launch with each group shape, up to 4 per kernel; `OFFLOAD_RS_JIT_SPECIALISE=0` turns it off): the
//! kernel alone is compiled again with the group size as constants (constant trip counts, no z/y loop
//! nests, no remainders), keyed in the content cache by (bitcode, kernel, shape). The launch waits for
//! it: the first launch at a shape runs a quickly compiled version while the full one compiles beside it,
//! and every later launch runs the full one (`plugin::cpu::tier_up`, `OFFLOAD_RS_JIT_QUICK_FIRST`;
//! [`Tiers`]). Only kernels that use no mutable global variable are specialised, since the copy has globals of
//! its own (and runs no constructors). The generic code of a program whose kernels are all
//! specialisable then runs only for a kernel's fifth and later shapes (or where a specialisation failed
//! to compile), so it is **deferred**: a cold [`load`] (`olCreateProgram`) of such a program without
//! constructors runs the lowering only (the kernels' metadata; what makes a program invalid, such as
//! recursion or an unknown GPU intrinsic, fails the load as before) and the generic code is compiled and
//! loaded when a launch or a global variable's address first needs it (`Generic`), with a quick pipeline
//! (`default<O1>`, codegen -O1; at most the `LIBOMPTARGET_JIT_OPT_LEVEL`). With specialisation off or
//! under the memory checker it is compiled with the program, with the full pipeline.
//!
//! The warp width is the one clang folded into the bitcode: 32 for nvptx64, 64 for amdgcn (32 with
//! `+wavefrontsize32`); spirv64 leaves it to us (`llvm.spv.subgroup.size`) and we choose 32. Lanes are
//! consecutive linear work-item ids (`x + y*nx + z*nx*ny`), warps start at multiples of the width.
//! Shuffles, ballots, votes, `readfirstlane`, `readlane` and `ds_bpermute` are emulated as two group
//! barriers around an exchange through scratch; `activemask`/`__gpu_lane_mask` is
//! the set of lanes of the warp that exist (divergence inside a warp is not tracked). `bar.warp.sync` /
//! `wave.barrier` are group barriers. Any other GPU intrinsic is a [`JitError::Compile`] naming it.
//!
//! # Code loading and the cache
//! The lowered module is optimised (`default<O{LIBOMPTARGET_JIT_OPT_LEVEL}>`, default 3) and compiled
//! for the host CPU into an ELF relocatable object, which our own small loader (`elf.rs`) maps and
//! relocates — one fresh copy (own globals) per [`load`]. Global constructors/destructors become
//! `__ol_rs_init`/`__ol_rs_fini`, run at load and when the last user of the instance is gone.
//! Compiled objects are cached by **content** (blake3 of the image, host CPU and features, options, build
//! id, LLVM version) and evicted when the last [`LoadedImage`] made from them is dropped (unlike the
//! address-keyed cache of LLVM PR #148847). Below that, the disk cache (disk.rs, on by default). LLVM
//! runs on image bytes only in the compile helper process (helper.rs), or in the in-process LLVM module
//! (module.rs) when asked or when no helper can start; the library itself has no LLVM in it (`llvm/` is
//! built into the helper and the module only). `olIsValidBinary` reads the bitcode's triple without
//! LLVM (bitcode.rs), and a cache hit loads without it.

// Everything but `llvm` runs without LLVM (the client library); `llvm` is the JIT's LLVM side (the
// `llvm` feature: the compile helper, the in-process LLVM module, the Rust tests), which the client
// reaches only through the compile service (helper.rs, module.rs).
mod beside;
mod bitcode;
mod cache;
mod compile;
mod disk;
mod elf;
mod fd;
mod gdbjit;
pub mod helper;
#[cfg(feature = "llvm")]
mod llvm;
#[cfg(not(feature = "llvm"))]
mod module;
mod native;
mod perfmap;
mod request;
mod service;
mod stack;
mod stop;
pub(crate) mod target;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sync::Mutex;

/// The target a device bitcode module was built for; `Host` is host bitcode, whose functions are
/// work-group functions already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arch {
    Nvptx = 0,
    Amdgcn = 1,
    Spirv = 2,
    Host = 3,
}

pub use cache::{ContentCache, cache_stats};
pub(crate) use compile::opt_level;
pub(crate) use helper::BUILD_ID;
pub use service::compile_ptx;
pub use stop::{run_void, run_work_group, set_stop_points, stop_points, void_call_started};

/// A one-line note on stderr when `OFFLOAD_RS_DEBUG` is set.
pub(crate) fn debug(msg: &str) {
    if std::env::var_os("OFFLOAD_RS_DEBUG").is_some() {
        eprintln!("offload-rs: {msg}");
    }
}

static MEMCHECK: AtomicBool = AtomicBool::new(false);

/// Compile later loads with the kernel memory checker (`OFFLOAD_RS_MEMCHECK=1`, set at `olInit`): every
/// load, store, atomic and memory intrinsic of a kernel calls the function the loader puts in the
/// image's `__ol_rs_memcheck_hook` ([`Checker::hook`], written by [`load_with`]) and is skipped when it returns
/// false. A separate JIT option, part of the cache key.
/// Chooses the CPU JIT's target now (`OFFLOAD_RS_CPU_TARGET`, valgrind; see target.rs) and says whether
/// it can be used: an unknown CPU or feature, or one this machine cannot run, is
/// [`JitError::InvalidTarget`].
///
/// Only a chosen target is checked now (by the compile service: LLVM knows the names); the default needs
/// no check and starts no LLVM. A service that cannot run now leaves the check to the first compile.
pub fn cpu_target_check() -> Result<(), JitError> {
    if target::client_cpu().spec.is_none() {
        return Ok(());
    }
    match service::cpu_target() {
        Err(e @ JitError::InvalidTarget(_)) => Err(e),
        _ => Ok(()),
    }
}

/// The features the CPU JIT's code may use when `OFFLOAD_RS_CPU_TARGET` chose its target (LLVM's names,
/// implied ones included), resolved at `olInit`; `None` for the default target (the host's CPU as this
/// process sees it) or when the compile service could not answer.
pub fn chosen_target_features() -> Option<&'static [String]> {
    target::client_cpu().spec.as_ref()?;
    service::cpu_target_features().ok()
}

pub fn set_memcheck(on: bool) {
    MEMCHECK.store(on, Ordering::Relaxed);
}

/// Whether new compiles are instrumented ([`set_memcheck`]).
pub fn memcheck() -> bool {
    MEMCHECK.load(Ordering::Relaxed)
}

/// Whether the CPU plugin specialises kernels at launch (`OFFLOAD_RS_JIT_SPECIALISE=0` turns it off; read
/// once). The JIT decides with it how much to optimise generic code that specialisations replace.
pub fn specialisation_enabled() -> bool {
    specialise_setting() != "0"
}

/// `OFFLOAD_RS_JIT_SPECIALISE=require` (read once): a kernel's version for a group shape that does not
/// compile is the launch's error, not a quiet fall-back to its generic code (the tests' setting: a lowering
/// that fails on some shape would otherwise show only as a slower launch).
pub fn specialisation_required() -> bool {
    specialise_setting() == "require"
}

/// `OFFLOAD_RS_JIT_SPECIALISE`, read once (empty where unset or not UTF-8).
fn specialise_setting() -> &'static str {
    static S: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    S.get_or_init(|| std::env::var("OFFLOAD_RS_JIT_SPECIALISE").unwrap_or_default())
}

/// Which versions of a kernel's specialisation for a group shape the CPU plugin runs
/// (`plugin::cpu::tier_up`; `OFFLOAD_RS_JIT_QUICK_FIRST`, read once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tiers {
    /// `0`: the full version from the first launch on (the first launch waits for its compile)
    Full,
    /// the default: the quick version for the first launch, the full one from the second on
    QuickFirst,
    /// `only`: the quick version for every launch (exactness tests of the quick pipeline)
    QuickOnly,
}

/// [`Tiers`]: `QuickFirst` unless `OFFLOAD_RS_JIT_QUICK_FIRST` says otherwise; `Full` at
/// `LIBOMPTARGET_JIT_OPT_LEVEL` 0 and 1 (the full compile is a quick one there).
pub fn tiers() -> Tiers {
    static T: std::sync::OnceLock<Tiers> = std::sync::OnceLock::new();
    *T.get_or_init(|| match std::env::var("OFFLOAD_RS_JIT_QUICK_FIRST").as_deref() {
        Ok("only") => Tiers::QuickOnly,
        Ok("0") => Tiers::Full,
        _ if compile::opt_level() < 2 => Tiers::Full,
        _ => Tiers::QuickFirst,
    })
}

/// `printf` of JIT'd code (`devicelib.rs`'s `__ol_rs_rt_printf`): (format, argument buffer in CUDA's
/// `vprintf` layout, its length or `u64::MAX` if unknown, 1 for CUDA's `vprintf` return value, the
/// work-item's local id) -> what printf returns.
pub type PrintfFn = unsafe extern "C" fn(*const std::ffi::c_char, *const u8, u64, i32, u32, u32, u32) -> i32;
/// An assertion failure or trap of JIT'd code (`devicelib.rs`'s `__ol_rs_rt_trap`): (assertion text,
/// file, line, function; NULL/0 for a trap; local id, group id). The work-item exits after it returns.
pub type TrapFn = unsafe extern "C" fn(
    *const std::ffi::c_char,
    *const std::ffi::c_char,
    u32,
    *const std::ffi::c_char,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
);

/// The CPU device's runtime functions that JIT'd code calls, registered by the CPU plugin before it loads
/// a program ([`set_runtime_functions`]); the loader resolves `__ol_rs_rt_*` to them and to nothing else.
#[derive(Clone, Copy)]
pub struct RuntimeFunctions {
    pub printf: PrintfFn,
    pub trap: TrapFn,
    /// asked at a due stop point of code run by [`run_work_group`] or [`run_void`] (src/jit/stop.rs):
    /// whether it must stop now
    pub stop_requested: fn() -> bool,
}

static RUNTIME: std::sync::OnceLock<RuntimeFunctions> = std::sync::OnceLock::new();

/// Registers the runtime functions (the first registration wins).
pub fn set_runtime_functions(r: RuntimeFunctions) {
    let _ = RUNTIME.set(r);
}

/// `int __ol_rs_rt_printf(const char *fmt, const void *args, uint64_t args_len, int cuda, uint32_t x,
/// uint32_t y, uint32_t z)`.
pub(crate) const RT_PRINTF: &str = "__ol_rs_rt_printf";
/// `void __ol_rs_rt_trap(const char *msg, const char *file, uint32_t line, const char *function, uint32_t
/// x, uint32_t y, uint32_t z, uint32_t gx, uint32_t gy, uint32_t gz)`.
pub(crate) const RT_TRAP: &str = "__ol_rs_rt_trap";

/// The registered runtime functions.
fn runtime_functions() -> Option<&'static RuntimeFunctions> {
    RUNTIME.get()
}

/// The address of runtime function `name`, if registered.
fn runtime_function(name: &str) -> Option<usize> {
    let r = RUNTIME.get()?;
    match name {
        RT_PRINTF => Some(r.printf as usize),
        RT_TRAP => Some(r.trap as usize),
        stop::RT_POLL => Some(stop::poll_address()),
        _ => None,
    }
}

/// The memcheck hook's signature: (address, size, kind 0 read / 1 write / 2 atomic, work-item x, y, z)
/// -> whether the access may happen.
pub type MemcheckHook = unsafe extern "C" fn(addr: usize, size: u64, kind: u32, x: u32, y: u32, z: u32) -> bool;

/// Runs the constructors or destructors (`which`) of the instance mapped at `program`: `call` makes the
/// call; the runner sets up what the checks of an instrumented image need around it and returns the
/// first invalid access they found.
pub type StructorRunner = fn(which: &'static str, program: Mapping, call: &mut dyn FnMut()) -> Result<(), String>;

/// Where a JIT'd instance lives, (start, length) each: the whole mapping (code, constants, globals), its
/// writable part (the global variables; code and constants are read-only) and, inside that, what device
/// code must not write (the memory checker's own hook pointer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    pub all: (usize, usize),
    pub writable: (usize, usize),
    pub reserved: (usize, usize),
}

/// The memory checker as the loader uses it on an image compiled with it ([`load_with`]).
#[derive(Clone, Copy)]
pub struct Checker {
    /// what every instrumented access calls (written into the image's `__ol_rs_memcheck_hook`)
    pub hook: MemcheckHook,
    /// runs the image's constructors at load and its destructors when it goes
    pub structors: StructorRunner,
}

/// What an image looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageKind {
    Bitcode { triple: String },
    NativeElf,
    Unknown(String),
}

/// JIT errors. Messages say what was expected and what was found.
#[derive(thiserror::Error, Debug, Clone)]
pub enum JitError {
    #[error("{0}")]
    InvalidBinary(String),
    #[error("{0}")]
    Compile(String),
    #[error("{0}")]
    Link(String),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    NotFound(String),
    /// device code the loader ran (a constructor or destructor) went wrong: the memory checker's report
    #[error("{0}")]
    Run(String),
    /// the JIT's CPU target (`OFFLOAD_RS_CPU_TARGET`) is unknown or cannot run here (target.rs)
    #[error("{0}")]
    InvalidTarget(String),
    /// no memory to compile with (no compile helper could start under an address-space limit)
    #[error("{0}")]
    OutOfResources(String),
}

/// A work-group function: runs every work-item of one group.
pub type WgFn = unsafe extern "C" fn(ctx: *const WgCtx);

/// Per-group context handed to a [`WgFn`]. Field offsets are part of the generated code's ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct WgCtx {
    pub args: *const u8,
    pub local_mem: *mut u8,
    pub dyn_local_mem: *mut u8,
    pub scratch: *mut u8,
    pub group_id: [u32; 3],
    pub num_groups: [u32; 3],
    pub group_size: [u32; 3],
    pub _pad: u32,
}

const _: () = {
    assert!(std::mem::offset_of!(WgCtx, args) == 0);
    assert!(std::mem::offset_of!(WgCtx, local_mem) == 8);
    assert!(std::mem::offset_of!(WgCtx, dyn_local_mem) == 16);
    assert!(std::mem::offset_of!(WgCtx, scratch) == 24);
    assert!(std::mem::offset_of!(WgCtx, group_id) == 32);
    assert!(std::mem::offset_of!(WgCtx, num_groups) == 44);
    assert!(std::mem::offset_of!(WgCtx, group_size) == 56);
    assert!(std::mem::size_of::<WgCtx>() == 72);
};

/// Size and natural alignment of one kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamLayout {
    pub size: usize,
    pub align: usize,
}

/// Metadata of one kernel, as produced by the lowering.
#[derive(Debug, Clone)]
pub(crate) struct KernelMeta {
    pub name: String,
    pub symbol: String,
    pub static_local_bytes: usize,
    pub scratch_bytes_per_wi: usize,
    pub has_barriers: bool,
    /// uses no mutable global variable: a separately compiled and loaded copy behaves the same
    pub specialisable: bool,
    /// its module has debug info (built with `-g`)
    pub debug_info: bool,
    pub warp_size: u32,
    pub params: Vec<ParamLayout>,
}

/// A kernel of a loaded image.
#[derive(Clone)]
pub struct KernelEntry {
    pub name: String,
    pub params: Vec<ParamLayout>,
    pub static_local_bytes: usize,
    pub scratch_bytes_per_wi: usize,
    pub has_barriers: bool,
    pub warp_size: u32,
    /// built with debug info (`-g`): a debugger is to see the same code at every launch, so the CPU
    /// plugin runs no quick version of it (`plugin::cpu::tier_up`)
    pub debug_info: bool,
    /// compiled with the memory checker (its hook is set)
    pub memcheck: bool,
    /// the work-group function's symbol in the program's object (JIT'd code)
    symbol: String,
    /// the program's code, kept alive by the entry (and compiled by [`KernelEntry::code`] when deferred)
    generic: Arc<Generic>,
    /// the bitcode it came from, when it may be specialised ([`KernelEntry::specialise`])
    source: Option<Arc<Vec<u8>>>,
}

/// A kernel's code, valid while the [`KernelEntry`] it came from lives.
#[derive(Clone, Copy, Debug)]
pub struct KernelCode {
    pub wg_fn: WgFn,
    /// bytes of stack one call of `wg_fn` needs (see `stack.rs`); `None`: unknown (native code)
    pub stack_bytes: Option<usize>,
    /// the CPU device runs its work-groups y fastest (ol-group-order, src/jit/llvm/group_order.cpp: the
    /// object has the mark `<symbol>.ol.groups_y_first`); else x fastest
    pub groups_y_first: bool,
}

impl std::fmt::Debug for KernelEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelEntry")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("static_local_bytes", &self.static_local_bytes)
            .field("scratch_bytes_per_wi", &self.scratch_bytes_per_wi)
            .field("has_barriers", &self.has_barriers)
            .field("warp_size", &self.warp_size)
            .field("debug_info", &self.debug_info)
            .field("memcheck", &self.memcheck)
            .finish()
    }
}

impl KernelEntry {
    /// Whether [`KernelEntry::specialise`] can make a version for one group size.
    pub fn specialisable(&self) -> bool {
        self.source.is_some()
    }

    /// The kernel's generic code (any group size). Where its program deferred that code (see
    /// [`Generic`]), the first call compiles and loads it, and a failure to is this call's error (the
    /// next call tries again).
    pub fn code(&self) -> Result<KernelCode, JitError> {
        let loaded = self.generic.get()?;
        match &*loaded.inst {
            Instance::Jit(obj, co) => {
                let addr = obj.code_symbol(&self.symbol).ok_or_else(|| {
                    JitError::NotFound(format!("kernel '{}' is missing from its compiled code", self.name))
                })?;
                // SAFETY: `addr` is the address of a function generated with the WgFn ABI
                // (`void(ptr)`, C calling convention) inside the mapping kept alive by `self.generic`.
                let wg_fn: WgFn = unsafe { std::mem::transmute::<usize, WgFn>(addr) };
                let wg_symbols: Vec<&str> = co.kernels.iter().map(|k| k.symbol.as_str()).collect();
                let stack_bytes = stack::wg_stack_bytes(&loaded.frames, &self.symbol, &wg_symbols)
                    .map(|b| usize::try_from(b).unwrap_or(usize::MAX));
                let groups_y_first = obj.data_symbol(&format!("{}.ol.groups_y_first", self.symbol)).is_some();
                Ok(KernelCode { wg_fn, stack_bytes, groups_y_first })
            }
            Instance::Native(lib) => {
                let addr = lib
                    .function(&self.name)
                    .ok_or_else(|| JitError::NotFound(format!("kernel '{}' is missing from its library", self.name)))?;
                // SAFETY: by the documented native-ELF convention, an exported function named like the
                // kernel has the WgFn ABI; the library stays loaded while `self.generic` lives.
                let wg_fn: WgFn = unsafe { std::mem::transmute::<usize, WgFn>(addr) };
                Ok(KernelCode { wg_fn, stack_bytes: None, groups_y_first: false })
            }
        }
    }

    /// This kernel compiled for work-groups of exactly `group_size` (constant trip counts, no loop
    /// remainders), through the content-keyed cache: the same bitcode, kernel and group size compile
    /// once, whichever program asks. The copy has no constructors and shares no state with this one,
    /// which is why only kernels without mutable globals are specialisable. Its [`WgFn`] must only be
    /// called with `ctx.group_size == group_size`.
    /// `quick`: the quickly compiled version for the first launch at that shape ([`compile::Spec`]).
    pub fn specialise(&self, group_size: [u32; 3], quick: bool) -> Result<KernelEntry, JitError> {
        let Some(src) = &self.source else {
            return Err(JitError::NotFound(format!("kernel '{}' cannot be specialised", self.name)));
        };
        let spec = compile::Spec { kernel: self.name.clone(), group_size, quick };
        let co = cache::get_or_compile(src, memcheck(), false, Some(&spec))?;
        self.specialised_from(co, &spec)
    }

    /// The full version for `group_size` (as [`KernelEntry::specialise`] makes it) if the memory or the
    /// disk cache has it: then a first launch needs no quick version.
    pub fn cached_specialisation(&self, group_size: [u32; 3]) -> Option<KernelEntry> {
        let spec = compile::Spec { kernel: self.name.clone(), group_size, quick: false };
        let co = cache::get_cached(self.source.as_ref()?, memcheck(), Some(&spec))?;
        self.specialised_from(co, &spec).ok()
    }

    fn specialised_from(&self, co: Arc<cache::CompiledObject>, spec: &compile::Spec) -> Result<KernelEntry, JitError> {
        let loaded = Loaded::load(co, None, Some(spec))?;
        let img = LoadedImage::new(Generic::ready(loaded), None);
        let mut k = img
            .kernel(&self.name)
            .ok_or_else(|| JitError::NotFound(format!("specialised kernel '{}' is missing", self.name)))?;
        k.params = self.params.clone();
        Ok(k)
    }
}

/// One loaded instance: JIT'ed code mapped by our loader, or a dlopen'ed native shared object.
pub(crate) enum Instance {
    Jit(elf::LoadedObject, Arc<cache::CompiledObject>),
    Native(native::NativeLib),
}

impl Instance {
    fn symbol(&self, name: &str) -> Option<(usize, usize)> {
        match self {
            Instance::Jit(o, _) => o.symbol(name),
            Instance::Native(n) => n.symbol(name),
        }
    }
}

/// A program's code in memory: the instance and the frame size of each of its functions
/// (`.stack_sizes` of a JIT'd object).
struct Loaded {
    inst: Arc<Instance>,
    frames: HashMap<String, u64>,
}

impl Loaded {
    /// Maps a compiled object (a fresh copy, own globals), fills in the memory checker's hook when the
    /// object was compiled with it (`checker`), and runs its constructors. `spec`: what a specialisation
    /// was compiled for (perf map names).
    fn load(
        co: Arc<cache::CompiledObject>,
        checker: Option<Checker>,
        spec: Option<&compile::Spec>,
    ) -> Result<Loaded, JitError> {
        let mut obj = elf::LoadedObject::load(&co.object)?;
        perfmap::record(&obj, spec);
        if let Some((hook, _)) = obj.data_symbol("__ol_rs_memcheck_hook") {
            let c = checker.ok_or_else(|| {
                JitError::Run("the image was compiled with the memory checker; it cannot run without it".into())
            })?;
            // SAFETY: `hook` is the address of the image's pointer-sized, pointer-aligned global
            // `__ol_rs_memcheck_hook` (writable data of the fresh instance, read by no code yet).
            unsafe { std::ptr::write_volatile(hook as *mut MemcheckHook, c.hook) };
            obj.set_structor_runner(c.structors);
        }
        obj.run_init().map_err(JitError::Run)?;
        let frames = stack::frame_sizes(&co.object);
        Ok(Loaded { inst: Arc::new(Instance::Jit(obj, co)), frames })
    }
}

/// A program's generic code (every group size). Loaded with the program, or, where that compile was
/// deferred (replaced generic code of a program without constructors whose kernels can all be
/// specialised: `compile_in_process`'s `defer`), compiled and loaded when something first needs it: a
/// launch with a shape that has no specialisation (a kernel's fifth, or one whose specialisation failed
/// to compile) or a global variable's address. Most programs then never compile it: `olCreateProgram`
/// costs the lowering alone, and each kernel's first launch its own specialisation.
struct Generic {
    /// the bitcode, for a deferred compile and for specialisations
    source: Option<Arc<Vec<u8>>>,
    /// the code once loaded; `None` while deferred
    loaded: Mutex<Option<Arc<Loaded>>>,
    /// held while a deferred compile runs: concurrent askers wait for that one compile, while kernel
    /// lookups (`loaded` alone) go on
    compiling: Mutex<()>,
}

impl Generic {
    fn new(source: Option<Arc<Vec<u8>>>, loaded: Option<Loaded>) -> Arc<Generic> {
        Arc::new(Generic { source, loaded: Mutex::new(loaded.map(Arc::new)), compiling: Mutex::new(()) })
    }

    fn ready(loaded: Loaded) -> Arc<Generic> {
        Generic::new(None, Some(loaded))
    }

    /// The loaded code, compiled and loaded now where it was deferred.
    fn get(&self) -> Result<Arc<Loaded>, JitError> {
        if let Some(l) = self.if_loaded() {
            return Ok(l);
        }
        let _one = self.compiling.lock();
        if let Some(l) = self.if_loaded() {
            return Ok(l);
        }
        let src = self
            .source
            .as_ref()
            .ok_or_else(|| JitError::Compile("internal: deferred generic code without its bitcode".into()))?;
        // (deferred only without the memory checker, which instruments the generic code)
        let co = cache::get_or_compile(src, false, false, None)?;
        let l = Arc::new(Loaded::load(co, None, None)?);
        *self.loaded.lock() = Some(l.clone());
        Ok(l)
    }

    /// The loaded code if it is (a deferred compile not forced).
    fn if_loaded(&self) -> Option<Arc<Loaded>> {
        self.loaded.lock().clone()
    }
}

/// A program loaded for the CPU device: owns its own copy of the code and globals.
pub struct LoadedImage {
    generic: Arc<Generic>,
    /// a JIT'd program's compile: its kernels' metadata (and, kept here, a deferred program's entry of the
    /// content cache: the next load of the same bytes is a hit); `None` for a native one (kernels unknown)
    compiled: Option<Arc<cache::CompiledObject>>,
}

impl std::fmt::Debug for LoadedImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadedImage")
    }
}

impl LoadedImage {
    /// The image of `generic`; `compiled`: a deferred program's declarations (otherwise its loaded
    /// object's compile).
    fn new(generic: Arc<Generic>, compiled: Option<Arc<cache::CompiledObject>>) -> LoadedImage {
        let compiled = compiled.or_else(|| match &*generic.if_loaded()?.inst {
            Instance::Jit(_, co) => Some(co.clone()),
            Instance::Native(_) => None,
        });
        LoadedImage { generic, compiled }
    }

    fn kernels(&self) -> &[KernelMeta] {
        self.compiled.as_ref().map_or(&[], |c| &c.kernels)
    }

    /// Whether the generic code was deferred and is not compiled yet (tests).
    pub fn generic_deferred(&self) -> bool {
        self.generic.if_loaded().is_none()
    }

    /// The kernel `name`, or `None`.
    pub fn kernel(&self, name: &str) -> Option<KernelEntry> {
        // (a native image has no compile: its kernels are the library's functions of that name)
        if self.compiled.is_none() {
            let loaded = self.generic.if_loaded()?;
            let Instance::Native(lib) = &*loaded.inst else { return None };
            lib.function(name)?;
            return Some(KernelEntry {
                memcheck: false,
                name: name.to_string(),
                params: Vec::new(),
                static_local_bytes: 0,
                scratch_bytes_per_wi: 0,
                has_barriers: false,
                warp_size: 1,
                debug_info: false,
                symbol: name.to_string(),
                generic: self.generic.clone(),
                source: None,
            });
        }
        let m = self.kernels().iter().find(|k| k.name == name)?;
        Some(KernelEntry {
            memcheck: self.memcheck_hook().is_some(),
            name: m.name.clone(),
            params: m.params.clone(),
            static_local_bytes: m.static_local_bytes,
            scratch_bytes_per_wi: m.scratch_bytes_per_wi,
            has_barriers: m.has_barriers,
            warp_size: m.warp_size,
            debug_info: m.debug_info,
            symbol: m.symbol.clone(),
            generic: self.generic.clone(),
            source: if m.specialisable { self.generic.source.clone() } else { None },
        })
    }

    /// Address and size of the global variable `name` in this instance (`Ok(None)`: there is none). A
    /// deferred program's generic code is compiled and loaded now: its globals are the program's.
    pub fn global(&self, name: &str) -> Result<Option<(usize, usize)>, JitError> {
        if self.kernels().iter().any(|k| k.name == name) {
            return Ok(None);
        }
        let loaded = self.generic.get()?;
        Ok(match &*loaded.inst {
            Instance::Jit(obj, _) => obj.data_symbol(name),
            Instance::Native(_) => loaded.inst.symbol(name),
        })
    }

    /// Address of the image's `__ol_rs_memcheck_hook` (the [`MemcheckHook`] pointer [`load_with`] filled
    /// in) when it was compiled with the memory checker (never deferred).
    pub fn memcheck_hook(&self) -> Option<usize> {
        match &*self.generic.if_loaded()?.inst {
            Instance::Jit(obj, _) => obj.data_symbol("__ol_rs_memcheck_hook").map(|(a, _)| a),
            Instance::Native(_) => None,
        }
    }

    /// The memory of a JIT'd instance (its code, constants and global variables), once loaded.
    pub fn mapping(&self) -> Option<Mapping> {
        match &*self.generic.if_loaded()?.inst {
            Instance::Jit(obj, _) => Some(obj.mapping()),
            Instance::Native(_) => None,
        }
    }

    /// Drops this image; when nothing else (a kernel) keeps its instance alive, its destructors run now
    /// and what the memory checker found in them is the result (otherwise they run when the last kernel
    /// goes, and a violation is only skipped).
    pub fn close(self) -> Result<(), JitError> {
        let loaded = Arc::into_inner(self.generic).and_then(|g| g.loaded.into_inner()).and_then(Arc::into_inner);
        match loaded.and_then(|l| Arc::into_inner(l.inst)) {
            Some(Instance::Jit(obj, _)) => obj.run_fini().map_err(JitError::Run),
            _ => Ok(()),
        }
    }

    /// Names of the kernels in this image (native images: unknown, empty).
    pub fn kernel_names(&self) -> Vec<String> {
        self.kernels().iter().map(|k| k.name.clone()).collect()
    }
}

const BC_MAGIC: [u8; 4] = [b'B', b'C', 0xC0, 0xDE];
const BC_WRAPPER: [u8; 4] = [0xDE, 0xC0, 0x17, 0x0B];

fn describe(image: &[u8]) -> String {
    let n = image.len().min(4);
    let mut hex = String::new();
    for b in &image[..n] {
        hex.push_str(&format!("{b:02x}"));
    }
    if image.is_empty() {
        "an empty image (0 bytes)".to_string()
    } else {
        format!("{} bytes starting 0x{hex}", image.len())
    }
}

/// Returns the raw bitcode inside an image (unwrapping the 0x0B17C0DE wrapper) if it is bitcode.
fn bitcode_payload(image: &[u8]) -> Option<&[u8]> {
    if image.len() >= 4 && image[..4] == BC_MAGIC {
        return Some(image);
    }
    if image.len() >= 20 && image[..4] == BC_WRAPPER {
        let off = u32::from_le_bytes([image[8], image[9], image[10], image[11]]) as usize;
        let size = u32::from_le_bytes([image[12], image[13], image[14], image[15]]) as usize;
        let end = off.checked_add(size)?;
        if end <= image.len() && size >= 4 && image[off..off + 4] == BC_MAGIC {
            return Some(&image[off..end]);
        }
    }
    None
}

/// LLVM's reader trusts some of the module's numbers to size allocations: absurd ones are rejected
/// before it runs (an out-of-memory abort would take the client with it in process). Run on a cache miss
/// only, before compiling: a cache hit is bytes this build checked and compiled before (its key holds the
/// image's hash and the build id), and the check costs about 15 µs per KiB (bitcode.rs's
/// `bitcode_check_cost`), several times a hit's load.
fn check_before_compile(bc: &[u8]) -> Result<(), JitError> {
    bitcode::check(bc).map_err(|e| JitError::InvalidBinary(format!("malformed LLVM bitcode ({}): {e}", describe(bc))))
}

/// The target triple of a bitcode image (wrapped or raw), read without LLVM (see bitcode.rs).
pub fn bitcode_triple(image: &[u8]) -> Result<String, String> {
    bitcode::triple(bitcode_payload(image).ok_or("not LLVM bitcode")?)
}

/// What [`classify`] and [`load`] see in an image, with the bitcode inside it when there is some.
enum Examined<'a> {
    Bitcode { payload: &'a [u8], triple: String },
    NativeElf,
    Unknown(String),
}

/// Looks at an image's header (and a bitcode image's triple record) once. Never panics and never runs
/// LLVM.
fn examine(image: &[u8]) -> Examined<'_> {
    if let Some(bc) = bitcode_payload(image) {
        return match bitcode::triple(bc) {
            Ok(t) => Examined::Bitcode { payload: bc, triple: t },
            Err(e) => Examined::Unknown(format!("malformed LLVM bitcode ({}): {e}", describe(image))),
        };
    }
    if image.len() >= 4 && image[..4] == BC_WRAPPER {
        return Examined::Unknown(format!("truncated bitcode wrapper ({})", describe(image)));
    }
    if image.len() >= 4 && &image[..4] == b"\x7fELF" {
        return match native::check_elf(image) {
            Ok(()) => Examined::NativeElf,
            Err(e) => Examined::Unknown(e),
        };
    }
    Examined::Unknown(describe(image))
}

/// Classifies an image by its header (and a bitcode image by its triple record). Never panics and never
/// runs LLVM.
pub fn classify(image: &[u8]) -> ImageKind {
    match examine(image) {
        Examined::Bitcode { triple, .. } => ImageKind::Bitcode { triple },
        Examined::NativeElf => ImageKind::NativeElf,
        Examined::Unknown(what) => ImageKind::Unknown(what),
    }
}

/// `olIsValidBinary` for the CPU device.
pub fn is_valid_for_cpu(image: &[u8]) -> bool {
    match classify(image) {
        ImageKind::Bitcode { triple } => compile::supported_arch(&triple).is_some(),
        ImageKind::NativeElf => true,
        ImageKind::Unknown(_) => false,
    }
}

/// Compiles (through the cache) and loads a fresh instance of `image`, running its constructors.
pub fn load(image: &[u8]) -> Result<LoadedImage, JitError> {
    load_with(image, None)
}

/// [`load`]; when the image was compiled with the memory checker, `checker` is what its checks call and
/// runs its constructors (a violation fails the load, [`JitError::Run`]) and destructors.
pub fn load_with(image: &[u8], checker: Option<Checker>) -> Result<LoadedImage, JitError> {
    match examine(image) {
        // What olIsValidBinary rejects is not loaded either (the same bounded reader, no LLVM, found the
        // triple). Beyond that, no parse here: the cache key is the content; on a miss the (isolated)
        // compile validates.
        Examined::Bitcode { payload, triple } => {
            compile::supported_arch(&triple).ok_or_else(|| compile::unsupported(&triple))?;
            // (the bitcode pre-check, `check_before_compile`, runs on a cache miss only)
            let memcheck = memcheck();
            // the generic compile may be deferred when launches replace its code (see `Generic`)
            let defer = compile::generic_is_replaced(memcheck, None);
            let mut co = cache::get_or_compile(payload, memcheck, defer, None)?;
            // (the image's copy, made only when the kernels use it: without memory for it the kernels run
            // unspecialised and the generic code is compiled now, rather than Rust's allocation-failure
            // abort ending the client)
            let source = co.kernels.iter().any(|k| k.specialisable).then(|| try_copy(payload)).flatten();
            if co.deferred() {
                if source.is_some() {
                    return Ok(LoadedImage::new(Generic::new(source, None), Some(co)));
                }
                co = cache::get_or_compile(payload, memcheck, false, None)?;
            }
            let loaded = Loaded::load(co, checker, None)?;
            Ok(LoadedImage::new(Generic::new(source, Some(loaded)), None))
        }
        Examined::NativeElf => {
            let lib = native::NativeLib::open(image)?;
            let loaded = Loaded { inst: Arc::new(Instance::Native(lib)), frames: HashMap::new() };
            Ok(LoadedImage::new(Generic::ready(loaded), None))
        }
        Examined::Unknown(what) => {
            Err(JitError::InvalidBinary(format!("expected LLVM bitcode or an x86-64 ELF shared object, found {what}")))
        }
    }
}

/// `bytes` copied to the heap, or `None` when there is no memory for them.
fn try_copy(bytes: &[u8]) -> Option<Arc<Vec<u8>>> {
    let mut v = Vec::new();
    v.try_reserve_exact(bytes.len()).ok()?;
    v.extend_from_slice(bytes);
    Some(Arc::new(v))
}
