//! Kernel launch on the CPU device: kernels, argument normalisation, grid validation and the
//! work-group loop run by the pool.
//!
//! # Arguments
//! A kernel reads its arguments from one 64-byte aligned block laid out like a naturally aligned C struct
//! of its parameters (`{uint32_t; void*}` is 16 bytes); where each parameter goes is worked out once per
//! kernel ([`ArgSlots::natural`]), and each launch copies its arguments into a fresh block once
//! ([`arg_block`]).
//!
//! LLVM 22 passes one buffer in that layout ([`LaunchArgs::Buffer`]). The Unified Runtime adapter packs the
//! same values *without* padding (offset = sum of the earlier sizes). With `natural_end` = end of the last
//! parameter in the natural layout and `packed` = sum of the sizes:
//! * `args.len() >= natural_end` -> natural layout, used as is (extra tail bytes are ignored, so
//!   `sizeof(struct)` with tail padding works, as on CUDA);
//! * else `args.len() == packed` -> packed layout, each parameter copied to its place;
//! * else `InvalidArgument("mismatch in kernel arguments: ...")`.
//!
//! LLVM 23 passes one value per parameter ([`LaunchArgs::Values`], checked against the parameters by the
//! entry point): each is copied straight to its place in the block.
//!
//! A kernel with no parameter layout (`params` empty) gets the buffer unchanged, or the values packed.
//!
//! # Grid
//! CUDA's limits, which the JIT'd kernels' `range()` attributes assume (a launch outside them would
//! be undefined behaviour in the kernel): group size >= 1 in every dimension, x and y <= 1024, z <= 64,
//! x*y*z <= 1024; group count >= 1 and < 2^31 in every dimension. A grid with 0 groups in some dimension
//! is rejected (CUDA rejects it too) rather than silently doing nothing. Local memory (static +
//! dynamic) is limited to [`LOCAL_MEM_PER_GROUP`].

use super::devicelib::{self, LaunchLog};
use super::kernel_memory::{KERNEL_STACK, STACK_RESERVE, on_kernel_stack};
use super::machine::{LOCAL_MEM_PER_GROUP, MAX_GROUP_SIZE, MAX_GROUP_SIZE_PER_DIM};
use super::memcheck::{self, LaunchCheck};
use super::pool::{MAX_ITEMS, Task, WorkerSlot, pool};
use super::tier_up::{self, Deferred};
use crate::jit::{KernelCode, KernelEntry, ParamLayout, Tiers, WgCtx, WgFn};
use crate::plugin::{ArgSlots, Kernel, LaunchArgs, LaunchDims, PluginError, PluginResult};
use crate::sync::Mutex;
use std::any::Any;
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

/// Most group shapes one kernel is specialised for; launches with further shapes use the generic code.
const MAX_SPECIALISATIONS: usize = 4;

/// A kernel's version for one group shape: the entry keeps `code` alive.
pub(super) struct Specialised {
    entry: KernelEntry,
    code: KernelCode,
}

impl Specialised {
    fn new(entry: KernelEntry) -> Result<Arc<Specialised>, crate::jit::JitError> {
        Ok(Arc::new(Specialised { code: entry.code()?, entry }))
    }

    /// `e`'s version for `group_size` (its quick one with `quick`), or why it did not compile: the launches
    /// then run the generic code, the same results, slower. Such a failure is the JIT's (the generic code of
    /// the same kernel compiled), so it is not the launch's error unless `OFFLOAD_RS_JIT_SPECIALISE=require`
    /// ([`specialised_for`](CpuKernel::specialised_for)); `OFFLOAD_RS_DEBUG` says which.
    fn compile(e: &KernelEntry, group_size: [u32; 3], quick: bool) -> Compiled {
        e.specialise(group_size, quick).and_then(Specialised::new).map_err(|err| {
            let [x, y, z] = group_size;
            let which = if quick { "quick version" } else { "version" };
            let why = format!("kernel '{}': its {which} for groups of {x}x{y}x{z} did not compile: {err}", e.name);
            crate::jit::debug(&format!("{why}; its launches with that shape run its generic code"));
            why.into()
        })
    }
}

/// A kernel's version for a group shape, or why it did not compile.
type Compiled = Result<Arc<Specialised>, Arc<str>>;

/// A kernel's version for a group shape from the second launch on (the full one; the quick one under
/// `OFFLOAD_RS_JIT_QUICK_FIRST=only`; see [`tier_up`]), None where that compile panicked.
type Version = Arc<Deferred<Compiled>>;

/// A group shape and its kernel's [`Version`] for it.
type ShapeVersion = ([u32; 3], Version);

/// What a launch runs: its kernel's version for the shape and, for the first launch at that shape, the
/// full version it moves to between work-groups once compiled.
type LaunchCode = (Arc<Specialised>, Option<Version>);

/// The generic code where a version did not compile (`Ok(None)`; `why` None: its compile panicked), or
/// the launch's error where specialisations are `required` (`OFFLOAD_RS_JIT_SPECIALISE=require`).
pub(super) fn not_compiled(why: Option<&str>, required: bool) -> PluginResult<Option<LaunchCode>> {
    if !required {
        return Ok(None);
    }
    let why = why.unwrap_or("a kernel's version for a group shape: its compile panicked");
    Err(PluginError::Backend(format!("{why} (OFFLOAD_RS_JIT_SPECIALISE=require makes that the launch's error)")))
}

/// A kernel of a CPU program.
pub struct CpuKernel {
    /// shared with each launch (an `Arc`, not a copy per launch)
    name: Arc<str>,
    params: Vec<ParamLayout>,
    /// where `params` go in the argument block (their natural layout)
    slots: ArgSlots,
    static_local_bytes: usize,
    scratch_bytes_per_wi: usize,
    /// compiled with the memory checker: the program's mapping
    memcheck: Option<crate::jit::Mapping>,
    /// the generic code (any group size), once a launch needed it: its program may have deferred
    /// compiling it (`jit::KernelEntry::code`)
    generic: OnceLock<KernelCode>,
    /// keeps the JIT'd code alive; compiles deferred generic code and specialisations
    entry: Option<KernelEntry>,
    /// versions compiled for one group size from its first launch on (see [`tier_up`]), at most
    /// [`MAX_SPECIALISATIONS`]: a short list, searched in order (cheaper than hashing the shape)
    specialised: Mutex<Vec<ShapeVersion>>,
}

impl CpuKernel {
    /// A kernel of a loaded program whose instance occupies `program`.
    pub fn from_entry(entry: KernelEntry, program: Option<crate::jit::Mapping>) -> CpuKernel {
        CpuKernel {
            name: entry.name.as_str().into(),
            params: entry.params.clone(),
            slots: ArgSlots::natural(&entry.params).unwrap_or_default(),
            static_local_bytes: entry.static_local_bytes,
            scratch_bytes_per_wi: entry.scratch_bytes_per_wi,
            memcheck: if entry.memcheck { Some(program.unwrap_or_default()) } else { None },
            generic: OnceLock::new(),
            entry: Some(entry),
            specialised: Mutex::new(Vec::new()),
        }
    }

    /// The generic code, compiled now if its program deferred it (a failure is this launch's error; the
    /// next launch tries again).
    fn generic_code(&self) -> PluginResult<KernelCode> {
        if let Some(c) = self.generic.get() {
            return Ok(*c);
        }
        let entry =
            self.entry.as_ref().ok_or_else(|| PluginError::Backend("internal: a kernel without code".into()))?;
        let code = entry.code().map_err(super::map_jit_error)?;
        Ok(*self.generic.get_or_init(|| code))
    }

    /// The version of this kernel for `group_size`, shared through the JIT's content-keyed cache: for
    /// the first launch with that shape its quick version (unless the full one is cached), which runs
    /// while the full one compiles on the tier-up thread, and that full version; for every later launch
    /// the full version, waited for where its compile has not finished (see [`tier_up`]). None: use the
    /// generic code (not specialisable, turned off, too many shapes, compile failed); a failed compile is
    /// an error under `OFFLOAD_RS_JIT_SPECIALISE=require`.
    pub(super) fn specialised_for(&self, group_size: [u32; 3]) -> PluginResult<Option<LaunchCode>> {
        // Not under the memory checker: it knows the generic code's program mapping only.
        let Some(entry) = self
            .entry
            .as_ref()
            .filter(|e| e.specialisable() && crate::jit::specialisation_enabled() && self.memcheck.is_none())
        else {
            return Ok(None);
        };
        let version = {
            let mut map = self.specialised.lock();
            if let Some((_, v)) = map.iter().find(|(g, _)| *g == group_size) {
                v.clone()
            } else if map.len() >= MAX_SPECIALISATIONS {
                return Ok(None);
            } else {
                let e = entry.clone();
                // (a kernel built with -g: a debugger sees the same code at every launch)
                let tiers = if entry.debug_info { Tiers::Full } else { crate::jit::tiers() };
                let quick_only = tiers == Tiers::QuickOnly;
                let version = Deferred::new(move || Some(Specialised::compile(&e, group_size, quick_only)));
                map.push((group_size, version.clone()));
                drop(map);
                // the first launch with this shape; compiled without the lock: launches with other
                // shapes go on meanwhile
                if tiers == Tiers::QuickFirst {
                    if let Some(cached) = entry.cached_specialisation(group_size).and_then(|c| Specialised::new(c).ok())
                    {
                        version.fulfil(Some(Ok(cached)));
                    } else {
                        // With two CPUs or more the full compile starts now, beside the quick one (in
                        // another compile helper), not after it (first launches of the suite on 2 CPUs:
                        // radix 138-170 -> 122-153 ms, blackscholes 58-68 -> 37-52, spmv 59 -> 43-47); on
                        // one, the two compiles would share it and the quick version start later.
                        let beside = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
                        if beside {
                            tier_up::submit(&version);
                        }
                        match Specialised::compile(entry, group_size, true) {
                            Ok(quick) if quick.code.stack_bytes.is_none_or(|b| b <= KERNEL_STACK - STACK_RESERVE) => {
                                if !beside {
                                    tier_up::submit(&version);
                                }
                                return Ok(Some((quick, Some(version))));
                            }
                            // (the full version is compiled by whoever asks for it next)
                            Err(why) if crate::jit::specialisation_required() => return not_compiled(Some(&why), true),
                            _ => {}
                        }
                    }
                }
                version
            }
        };
        match version.get() {
            Some(Ok(s)) => Ok(Some((s, None))),
            Some(Err(why)) => not_compiled(Some(&why), crate::jit::specialisation_required()),
            None => not_compiled(None, crate::jit::specialisation_required()),
        }
    }

    /// A kernel around a hand-written work-group function (tests, benchmarks).
    ///
    /// # Safety
    /// `wg_fn` must be sound to call with any [`WgCtx`] this module builds for a launch of the
    /// kernel: args laid out per `params`, `static_local_bytes` of local memory, no scratch.
    pub unsafe fn from_raw(name: &str, wg_fn: WgFn, params: Vec<ParamLayout>, static_local_bytes: usize) -> CpuKernel {
        CpuKernel {
            name: name.into(),
            slots: ArgSlots::natural(&params).unwrap_or_default(),
            params,
            static_local_bytes,
            scratch_bytes_per_wi: 0,
            memcheck: None,
            generic: OnceLock::from(KernelCode { wg_fn, stack_bytes: None, groups_y_first: false }),
            entry: None,
            specialised: Mutex::new(Vec::new()),
        }
    }

    pub fn static_local_bytes(&self) -> usize {
        self.static_local_bytes
    }
}

impl Kernel for CpuKernel {
    fn name(&self) -> &str {
        &self.name
    }
    fn params(&self) -> Option<&[ParamLayout]> {
        // hand-written kernels (tests) declare no parameters: unknown
        if self.params.is_empty() { None } else { Some(&self.params) }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// 64-byte aligned argument storage.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; 64]);

/// An argument block of at most 128 bytes whose parameters need at most 16-byte alignment (every kernel
/// of the suite and of LLVM's tests), kept inside the launch: no allocation of its own, and the launch
/// itself stays 16-byte aligned (a plain `malloc`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Small([u8; 128]);

/// The argument buffer of one launch, in the kernel's natural layout: [`Small`] when it fits, else 64-byte
/// aligned blocks on the heap.
pub struct ArgBuf(Storage);

enum Storage {
    Inline(Small),
    Heap(Vec<Block>),
}

impl ArgBuf {
    fn zeroed(len: usize, align: usize) -> ArgBuf {
        if len <= size_of::<Small>() && align <= align_of::<Small>() {
            ArgBuf(Storage::Inline(Small([0; 128])))
        } else {
            ArgBuf(Storage::Heap(vec![Block([0; 64]); len.div_ceil(64)]))
        }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Storage::Inline(b) => &mut b.0,
            Storage::Heap(v) => {
                let n = v.len() * 64;
                // SAFETY: `Block` is 64 plain bytes with no padding; the vector holds n bytes.
                unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), n) }
            }
        }
    }
    /// The first byte (where the buffer is now: a launch moved after this call must ask again).
    pub fn as_ptr(&self) -> *const u8 {
        match &self.0 {
            Storage::Inline(b) => b.0.as_ptr(),
            Storage::Heap(v) => v.as_ptr().cast(),
        }
    }
    /// Length in bytes (128 inline, a multiple of 64 on the heap).
    pub fn byte_len(&self) -> usize {
        match &self.0 {
            Storage::Inline(b) => b.0.len(),
            Storage::Heap(v) => v.len() * 64,
        }
    }
}

/// The argument block of one launch of kernel `name` whose parameters go to `slots` (their natural layout;
/// none: unknown): `args` copied into it once (rules in the module docs).
pub fn arg_block(name: &str, slots: &ArgSlots, args: LaunchArgs<'_>) -> PluginResult<ArgBuf> {
    let (end, packed) = (slots.end(), slots.packed());
    match args {
        LaunchArgs::Buffer(args) if slots.is_empty() => {
            let mut buf = ArgBuf::zeroed(args.len(), slots.align());
            buf.bytes_mut()[..args.len()].copy_from_slice(args);
            Ok(buf)
        }
        LaunchArgs::Buffer(args) if args.len() >= end => {
            let mut buf = ArgBuf::zeroed(end, slots.align());
            buf.bytes_mut()[..end].copy_from_slice(&args[..end]);
            Ok(buf)
        }
        LaunchArgs::Buffer(args) if args.len() == packed => {
            let mut buf = ArgBuf::zeroed(end, slots.align());
            let out = buf.bytes_mut();
            let mut src = 0;
            for &(off, size) in slots.slots() {
                out[off..off + size].copy_from_slice(&args[src..src + size]);
                src += size;
            }
            Ok(buf)
        }
        LaunchArgs::Buffer(args) => Err(PluginError::InvalidArgument(format!(
            "mismatch in kernel arguments: kernel '{name}' takes {end} bytes of arguments ({packed} packed), got {}",
            args.len()
        ))),
        LaunchArgs::Values(v) if slots.is_empty() => {
            let mut buf = ArgBuf::zeroed(v.packed_size(), slots.align());
            let written = v.write_packed(buf.bytes_mut());
            debug_assert!(written, "the block has room for the packed values");
            Ok(buf)
        }
        LaunchArgs::Values(v) => {
            let mut buf = ArgBuf::zeroed(end, slots.align());
            if v.write(slots, buf.bytes_mut()) {
                return Ok(buf);
            }
            let sizes: Vec<usize> = slots.slots().iter().map(|s| s.1).collect();
            Err(PluginError::InvalidArgument(format!(
                "mismatch in kernel arguments: kernel '{name}' takes {} arguments of {sizes:?} bytes, got {} values \
                 that do not match them",
                sizes.len(),
                v.count()
            )))
        }
    }
}

/// Check a grid against the limits in the module docs; returns the number of work-groups.
pub fn validate_dims(name: &str, dims: &LaunchDims, static_local: usize) -> PluginResult<u64> {
    let bad = |s: String| Err(PluginError::InvalidArgument(format!("invalid launch of kernel '{name}': {s}")));
    const AXES: [&str; 3] = ["x", "y", "z"];
    for (d, axis) in AXES.iter().enumerate() {
        let gs = dims.group_size[d];
        if gs == 0 || gs > MAX_GROUP_SIZE_PER_DIM[d] {
            return bad(format!("group size {gs} in dimension {axis} is outside 1..={}", MAX_GROUP_SIZE_PER_DIM[d]));
        }
        let ng = dims.num_groups[d];
        if ng == 0 || ng >= 1 << 31 {
            return bad(format!("{ng} work-groups in dimension {axis}; each dimension needs 1..2^31"));
        }
    }
    let wis: u64 = dims.group_size.iter().map(|&g| g as u64).product();
    if wis > MAX_GROUP_SIZE as u64 {
        return bad(format!(
            "group size {}x{}x{} = {wis} work-items exceeds the limit of {MAX_GROUP_SIZE}",
            dims.group_size[0], dims.group_size[1], dims.group_size[2]
        ));
    }
    let total = dims.num_groups.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n as u64)).filter(|&t| t <= MAX_ITEMS);
    let Some(total) = total else {
        return bad(format!(
            "grid {}x{}x{} has more than 2^62 work-groups",
            dims.num_groups[0], dims.num_groups[1], dims.num_groups[2]
        ));
    };
    let local = (static_local as u64).saturating_add(dims.dyn_shared_mem as u64);
    if local > LOCAL_MEM_PER_GROUP {
        return Err(PluginError::OutOfResources(format!(
            "kernel '{name}' needs {local} bytes of local memory per work-group ({static_local} static + {} \
             dynamic); the CPU device has {LOCAL_MEM_PER_GROUP}",
            dims.dyn_shared_mem
        )));
    }
    Ok(total)
}

/// A validated launch, ready to run (now or later on a queue).
pub struct PreparedLaunch {
    /// keeps the kernel (and its code) alive until the launch ran
    _kernel: Arc<dyn Kernel>,
    /// keeps the specialised code alive, when `wg_fn` is from it
    _specialised: Option<Arc<Specialised>>,
    wg_fn: WgFn,
    /// the work-groups run y fastest (`KernelCode::groups_y_first` of the code the launch starts with): a
    /// thread's chunk of consecutive groups is then consecutive along y
    y_first: bool,
    /// a first launch at a shape that runs the quick version: the full version, which its work-groups
    /// run instead once it is compiled (see [`tier_up`]; it keeps that code alive)
    upgrade: Option<Version>,
    args: ArgBuf,
    num_groups: [u32; 3],
    group_size: [u32; 3],
    total: u64,
    static_local: usize,
    dyn_local: usize,
    scratch: usize,
    name: Arc<str>,
    /// the memory checker's state, for kernels compiled with it
    check: Option<LaunchCheck>,
    /// printf output and the first failed assertion or trap
    log: LaunchLog,
    /// a cooperative launch (LLVM 23.1): every group on a thread of its own, all at the same time
    cooperative: bool,
    /// chunks of work-groups that moved to `upgrade` (tests)
    #[cfg(test)]
    pub(super) upgraded_chunks: std::sync::atomic::AtomicU64,
}

/// `olGetKernelMaxCooperativeGroupCount` on the CPU device: one group per compute unit. A cooperative
/// grid runs each group on a thread of its own (so a grid-wide barrier of spinning groups completes);
/// more groups than compute units would still complete but spin against each other for the cores.
pub fn max_cooperative_groups(kernel: &dyn Kernel, group_size: [u32; 3], dyn_shared_mem: usize) -> PluginResult<u32> {
    let Some(k) = kernel.as_any().downcast_ref::<CpuKernel>() else {
        return Err(PluginError::InvalidArgument(format!(
            "kernel '{}' does not belong to the CPU device",
            kernel.name()
        )));
    };
    let dims = LaunchDims { num_groups: [1, 1, 1], group_size, dyn_shared_mem };
    validate_dims(&k.name, &dims, k.static_local_bytes)?;
    Ok(super::machine::num_compute_units().max(1))
}

/// A cooperative launch: [`prepare`], with the grid at most [`max_cooperative_groups`] groups.
pub fn prepare_cooperative(
    kernel: Arc<dyn Kernel>,
    args: LaunchArgs<'_>,
    dims: LaunchDims,
) -> PluginResult<Box<PreparedLaunch>> {
    let max = max_cooperative_groups(kernel.as_ref(), dims.group_size, dims.dyn_shared_mem)?;
    let mut l = prepare(kernel, args, dims)?;
    if l.total > max as u64 {
        return Err(PluginError::InvalidArgument(format!(
            "cooperative launch of kernel '{}' with {} work-groups: the CPU device runs at most {max} at the same \
             time (olGetKernelMaxCooperativeGroupCount)",
            l.name, l.total
        )));
    }
    l.cooperative = true;
    Ok(l)
}

/// Validate a launch of `kernel` (which must be a [`CpuKernel`]).
/// Boxed where it is made: a launch is a few hundred bytes (its argument block inline), moved no further.
pub fn prepare(kernel: Arc<dyn Kernel>, args: LaunchArgs<'_>, dims: LaunchDims) -> PluginResult<Box<PreparedLaunch>> {
    let Some(k) = kernel.as_any().downcast_ref::<CpuKernel>() else {
        return Err(PluginError::InvalidArgument(format!(
            "kernel '{}' does not belong to the CPU device",
            kernel.name()
        )));
    };
    let total = validate_dims(&k.name, &dims, k.static_local_bytes)?;
    // the code for this shape: its specialisation, or the generic code (compiled now if deferred)
    let (spec, upgrade) = k.specialised_for(dims.group_size)?.map_or((None, None), |(s, u)| (Some(s), u));
    let (code, scratch_per_wi) = match &spec {
        Some(s) => (s.code, s.entry.scratch_bytes_per_wi),
        None => (k.generic_code()?, k.scratch_bytes_per_wi),
    };
    if let Some(need) = code.stack_bytes
        && need > KERNEL_STACK - STACK_RESERVE
    {
        return Err(PluginError::OutOfResources(format!(
            "kernel '{}' needs {need} bytes of stack (private memory) per work-group; the CPU device's kernel \
             threads have {} ({KERNEL_STACK} less {STACK_RESERVE} kept for the library and C library calls)",
            k.name,
            KERNEL_STACK - STACK_RESERVE
        )));
    }
    let args = arg_block(&k.name, &k.slots, args)?;
    let wis: usize = dims.group_size.iter().map(|&g| g as usize).product();
    let wg_fn = code.wg_fn;
    let scratch = scratch_per_wi
        .checked_mul(wis)
        .ok_or_else(|| PluginError::OutOfResources(format!("kernel '{}' needs too much private memory", k.name)))?;
    Ok(Box::new(PreparedLaunch {
        _specialised: spec,
        wg_fn,
        y_first: code.groups_y_first,
        upgrade,
        args,
        num_groups: dims.num_groups,
        group_size: dims.group_size,
        total,
        static_local: k.static_local_bytes,
        dyn_local: dims.dyn_shared_mem,
        scratch,
        name: k.name.clone(),
        check: k.memcheck.map(|program| LaunchCheck::new(&k.name, program)),
        log: LaunchLog::default(),
        cooperative: false,
        #[cfg(test)]
        upgraded_chunks: Default::default(),
        _kernel: kernel,
    }))
}

impl PreparedLaunch {
    /// Run every work-group on the pool; returns when all have run.
    /// Kernel code runs on a library stack only (`kernel_memory`), also when the calling thread is the
    /// client's.
    pub fn execute(&self) -> PluginResult<()> {
        if self.cooperative {
            return self.execute_cooperative();
        }
        let ran = on_kernel_stack(|| pool().run(self, self.total)).map_err(|_| {
            PluginError::OutOfResources(format!(
                "launch of kernel '{}': cannot map a {KERNEL_STACK}-byte stack to run it on",
                self.name
            ))
        })?;
        // the launch's printf output is out before the queue reports the launch complete
        let failure = self.log.finish(&self.name);
        if let Some(v) = self.check.as_ref().and_then(LaunchCheck::take_violation) {
            return Err(PluginError::Backend(v));
        }
        if let Some(f) = failure {
            return Err(PluginError::Backend(f.describe(&self.name)));
        }
        ran.map_err(|_| {
            PluginError::OutOfResources(format!(
                "launch of kernel '{}': cannot allocate {} bytes of local and {} bytes of scratch memory per thread",
                self.name,
                self.static_local + self.dyn_local,
                self.scratch
            ))
        })
    }
}

impl PreparedLaunch {
    /// Every group on a thread of its own, all started before any is waited for: groups that wait for
    /// each other (a grid barrier on global atomics) all make progress. Not the pool: its threads may be
    /// busy with other launches, and a chunk of groups on one thread would run them one after another.
    fn execute_cooperative(&self) -> PluginResult<()> {
        // All or nothing: each group's thread first takes its buffers and reports ready; the kernel runs
        // only once every thread is ready. A thread or buffer that cannot be had opens the gate as
        // "abort": no group starts, so none spins forever waiting for a group that never comes.
        struct Gate {
            ready: u64,
            failed: bool,
        }
        let gate = (Mutex::new(Gate { ready: 0, failed: false }), crate::sync::Condvar::new());
        let total = self.total;
        let wait_go = |prepared: bool| -> bool {
            let (m, cv) = &gate;
            let mut g = m.lock();
            g.ready += 1;
            g.failed |= !prepared;
            cv.notify_all();
            while g.ready < total && !g.failed {
                cv.wait(&mut g);
            }
            !g.failed
        };
        let group = |g: u64| {
            let mut slot = WorkerSlot::default();
            let prepared = slot.local.get(self.static_local).is_some()
                && slot.dyn_local.get(self.dyn_local).is_some()
                && slot.scratch.get(self.scratch).is_some();
            if !wait_go(prepared) {
                return false;
            }
            on_kernel_stack(|| self.run(g, g + 1, &mut slot)).unwrap_or(false)
        };
        let abort = || {
            let (m, cv) = &gate;
            m.lock().failed = true;
            cv.notify_all();
        };
        let ok = crate::threads::run_each_on_own_thread(total, "offload-coop", 256 * 1024, &group, &abort);
        // printf output out, and a trap or failed assertion reported, as for any launch
        let failure = self.log.finish(&self.name);
        if let Some(v) = self.check.as_ref().and_then(LaunchCheck::take_violation) {
            return Err(PluginError::Backend(v));
        }
        if let Some(f) = failure {
            return Err(PluginError::Backend(f.describe(&self.name)));
        }
        match ok {
            Ok(true) => Ok(()),
            Ok(false) => Err(PluginError::OutOfResources(format!(
                "cooperative launch of kernel '{}': cannot allocate a stack, {} bytes of local or {} bytes of \
                 scratch memory for a work-group thread",
                self.name,
                self.static_local + self.dyn_local,
                self.scratch
            ))),
            Err(g) => Err(PluginError::OutOfResources(format!(
                "cooperative launch of kernel '{}': cannot start a thread for work-group {g}",
                self.name
            ))),
        }
    }
}

impl PreparedLaunch {
    /// Whether the work-groups run y fastest (tests).
    #[cfg(test)]
    pub(super) fn groups_y_first(&self) -> bool {
        self.y_first
    }

    /// The full version this first launch moves to, if it is one (tests).
    #[cfg(test)]
    pub(super) fn upgrade(&self) -> Option<&Version> {
        self.upgrade.as_ref()
    }

    /// Whether `full` can run this launch's work-groups in place of its quick version: the stack and the
    /// scratch memory it needs are there (the same lowering: they are, but it costs nothing to check).
    fn fits(&self, full: &Specialised) -> bool {
        let wis: usize = self.group_size.iter().map(|&g| g as usize).product();
        // (the groups' order is fixed for the launch: a full version that runs them in another order
        // cannot take over the rest of a chunk)
        full.code.groups_y_first == self.y_first
            && full.code.stack_bytes.is_none_or(|b| b <= KERNEL_STACK - STACK_RESERVE)
            && full.entry.scratch_bytes_per_wi.checked_mul(wis).is_some_and(|s| s <= self.scratch)
    }
}

impl Task for PreparedLaunch {
    fn run(&self, start: u64, end: u64, slot: &mut WorkerSlot) -> bool {
        let (Some(local), Some(dyn_local), Some(scratch)) =
            (slot.local.get(self.static_local), slot.dyn_local.get(self.dyn_local), slot.scratch.get(self.scratch))
        else {
            return false;
        };
        let [nx, ny, _] = self.num_groups.map(|n| n as u64);
        let mut ctx = WgCtx {
            args: self.args.as_ptr(),
            local_mem: local,
            dyn_local_mem: dyn_local,
            scratch,
            group_id: if self.y_first {
                [((start / ny) % nx) as u32, (start % ny) as u32, (start / (nx * ny)) as u32]
            } else {
                [(start % nx) as u32, ((start / nx) % ny) as u32, (start / (nx * ny)) as u32]
            },
            num_groups: self.num_groups,
            group_size: self.group_size,
            _pad: 0,
        };
        // with the memory checker: what its checks need about this chunk's groups
        let top = 0u8;
        let frame = self.check.as_ref().map(|launch| memcheck::GroupFrame {
            launch,
            regions: [
                (local as usize, self.static_local),
                (dyn_local as usize, self.dyn_local),
                (scratch as usize, self.scratch),
                (ctx.args as usize, self.args.byte_len()),
            ],
            stack_top: std::hint::black_box(&top) as *const u8 as usize,
            group: Cell::new(ctx.group_id),
            hits: Cell::new(memcheck::Hits::EMPTY),
        });
        let _registered = frame.as_ref().map(memcheck::enter);
        let _log = devicelib::enter(&self.log);
        let stoppable = crate::jit::stop_points();
        let mut wg_fn = self.wg_fn;
        // a first launch's full version, looked for before each work-group until it is there
        let mut upgrade = self.upgrade.as_deref();
        for _ in start..end {
            if let Some(full) = upgrade.and_then(Deferred::try_get) {
                upgrade = None;
                if let Some(f) = full.and_then(Result::ok).filter(|f| self.fits(f)) {
                    // (`self.upgrade` keeps it alive: the deferred result holds it)
                    wg_fn = f.code.wg_fn;
                    #[cfg(test)]
                    self.upgraded_chunks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            if self.log.stopped() || (stoppable && self.log.past_time_limit()) {
                break; // an assertion, a trap or the time limit stops the groups not started yet
            }
            if let Some(f) = &frame {
                if f.launch.stopped() {
                    break; // a violation stops the groups not started yet
                }
                f.group.set(ctx.group_id);
            }
            // SAFETY: the one call site of JIT'd (or hand-written) work-group functions. ABI: C, one
            // argument, a pointer to a `#[repr(C)] WgCtx` that lives across the call: `args` in the
            // natural layout of the kernel's parameters (copied into it by `prepare`), `local_mem`,
            // `dyn_local_mem` and `scratch` 64-byte aligned with the sizes the kernel declared, used
            // by this thread only, and `group_id` inside `num_groups`, which `validate_dims` checked
            // against the ranges the kernel code assumes; a specialised `wg_fn` was compiled for exactly
            // `group_size`. The code is kept alive by `_kernel` (and `_specialised`, `upgrade`). Code compiled with the
            // memory checker calls `memcheck::check_access`, which reads `frame` (registered for this
            // chunk, alive across the call); printf, assert and traps call `devicelib`'s functions, which
            // read `self.log` (registered likewise). With stop points (`OFFLOAD_RS_KERNEL_TIMEOUT`) the call is
            // stoppable (src/jit/stop.rs): a stopped group's failure is in `self.log`, which ends the loop.
            unsafe {
                if stoppable {
                    crate::jit::run_work_group(wg_fn, &ctx);
                } else {
                    wg_fn(&ctx);
                }
            }
            // the next group: x fastest, or y fastest (then x), z last
            let g = &mut ctx.group_id;
            let (fast, slow) = if self.y_first { (1, 0) } else { (0, 1) };
            g[fast] += 1;
            if g[fast] == self.num_groups[fast] {
                g[fast] = 0;
                g[slow] += 1;
                if g[slow] == self.num_groups[slow] {
                    g[slow] = 0;
                    g[2] += 1;
                }
            }
        }
        true
    }
}
