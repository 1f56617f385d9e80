//! The allocation table (base -> device, type, size) and the memory operations.
//!
//! * **Frees are deferred, never waited for.** `olMemFree` removes the allocation from the table at once
//!   (the address is unknown from then on: a second free is INVALID_ARGUMENT, `olGetMemInfo` NOT_FOUND),
//!   but the block goes back to its plugin's allocator only when the work enqueued on every queue before
//!   the free has finished (a fence: one event per queue that had pending work, any device, any plugin).
//!   Until then no allocator can hand the block out again, so a copy or kernel still queued when the
//!   memory was freed writes into memory nobody else owns, never into a later allocation (and, under
//!   `OFFLOAD_RS_MEMCHECK=1`, is reported as a use after free: the block is not the user's). Deferring
//!   rather than waiting (what `cuMemFree` does) keeps `olMemFree` non-blocking, as LLVM 22's is, and safe
//!   to call from a host function. Deferred blocks are released by later `olMemAlloc`/`olMemFree` calls
//!   and at `olShutDown`; a plugin error on a deferred free is not reported (the caller has moved on).
//!   What deferral holds is bounded: an `olMemAlloc` that would take the deferred bytes plus its own
//!   past half of the device's GLOBAL_MEM_SIZE first waits for the deferred blocks' queues (not from a
//!   host function).
//! * **`olMemUnregister` waits.** After it returns the caller may free its host memory, which we cannot
//!   defer: it first waits for the work enqueued on every queue before the call (as `cuMemHostUnregister`
//!   does), and is UNSUPPORTED from a host function (that wait would include the host function's own
//!   queue).
//! * **Range checks.** A copy or fill range that starts inside a known allocation (any device, any
//!   type) or a registered host range must end inside it: otherwise INVALID_SIZE naming the allocation's
//!   base and size (the code LLVM 22 gives every size that does not fit; CUDA says
//!   `CUDA_ERROR_INVALID_VALUE`). Pointers in no known allocation stay the caller's business, as in LLVM.
//! * **Sizes.** A DEVICE allocation larger than the device's GLOBAL_MEM_SIZE, or any allocation of a
//!   host-addressable device (the CPU device, whose every type is the same RAM), is OUT_OF_RESOURCES up
//!   front instead of a mapping the kernel's overcommit would kill the process for later. HOST and
//!   MANAGED memory of a GPU is host memory or oversubscribable: its driver decides.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crate::sync::Mutex;

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::plugin::{self, AllocKind};

use super::{Context, Device, Queue, hostfn};

#[derive(Clone)]
pub struct Allocation {
    pub base: usize,
    pub size: usize,
    pub device: Arc<Device>,
    /// raw `ol_alloc_type_t` value as passed to olMemAlloc
    pub raw_type: u32,
    pub kind: AllocKind,
}

/// Live allocations, keyed by base address. Ranges never overlap.
#[derive(Default)]
pub struct AllocTable {
    map: Mutex<BTreeMap<usize, Allocation>>,
    /// Freed allocations waiting for their fences (see the module docs).
    deferred: Mutex<Vec<Deferred>>,
    /// The bytes in `deferred` (0 when it is empty), read without the lock on the alloc/free fast path.
    deferred_bytes: AtomicUsize,
    /// Bytes of the live allocations of host-addressable devices (the CPU device: all of them are the
    /// process's RAM, bounded by its memory cgroup).
    live_host_bytes: AtomicUsize,
    /// [span_lo, span_hi): from the lowest base to the highest end of the live allocations (0, 0 when
    /// there are none), stored under `map`'s lock after each change and read without it, so that a copy
    /// whose ranges start outside it (e.g. host to host) skips the lock: no allocation can contain them.
    span_lo: AtomicUsize,
    span_hi: AtomicUsize,
}

/// Deferred blocks still held that one reclaim polls at most.
const RECLAIM_POLL: usize = 64;

/// A freed allocation that work enqueued before the free may still touch.
struct Deferred {
    alloc: Allocation,
    fences: Vec<Fence>,
}

/// A point in one queue, recorded when memory was freed.
enum Fence {
    Event(Arc<dyn plugin::Event>),
    /// The queue could not record an event (e.g. a driver call from a stream callback): the block is
    /// held until `olShutDown`.
    Unknown,
}

impl Fence {
    fn passed(&self) -> bool {
        match self {
            Fence::Event(e) => matches!(e.is_complete(), Ok(true)),
            Fence::Unknown => false,
        }
    }
}

/// Every queue created through the API (weakly: a destroyed queue with pending work is kept alive by
/// the context's outstanding list until that work is done). Process-wide, as queues of earlier
/// `olInit`s may still be draining.
static QUEUES: Mutex<Vec<Weak<dyn plugin::Queue>>> = Mutex::new(Vec::new());

/// Register a new queue, so that frees and unregistrations fence its work.
pub fn watch_queue(q: &Arc<dyn plugin::Queue>) {
    let mut v = QUEUES.lock();
    if v.len() >= 64 && v.len().is_power_of_two() {
        v.retain(|w| w.strong_count() > 0);
    }
    v.push(Arc::downgrade(q));
}

/// One fence per queue that has work not yet finished.
fn queue_fences() -> Vec<Fence> {
    let queues: Vec<Arc<dyn plugin::Queue>> = QUEUES.lock().iter().filter_map(Weak::upgrade).collect();
    queues
        .iter()
        .filter_map(|q| match q.record_event() {
            Ok(Some(e)) => Some(Fence::Event(e)),
            Ok(None) => None,
            Err(_) => Some(Fence::Unknown),
        })
        .collect()
}

fn kind_of(raw: u32) -> AllocKind {
    match raw {
        0 => AllocKind::Host,
        1 => AllocKind::Device,
        // values >= 3 are allocated like MANAGED, as in LLVM 22; the raw value is kept for OL_MEM_INFO_TYPE
        _ => AllocKind::Managed,
    }
}

impl AllocTable {
    /// Records the span of `map` (locked by the caller, just changed). Ranges never overlap, so the entry
    /// with the highest base also has the highest end.
    fn note_span(&self, map: &BTreeMap<usize, Allocation>) {
        let (lo, hi) = match (map.first_key_value(), map.last_key_value()) {
            (Some((_, first)), Some((_, last))) => (first.base, last.base.saturating_add(last.size)),
            _ => (0, 0),
        };
        // Relaxed suffices: a caller can only hold a pointer into an allocation after olMemAlloc
        // returned it, which happens-before its copy, and coherence then shows it this store or a later one
        // (each a correct span of a table still holding that allocation).
        self.span_lo.store(lo, Ordering::Relaxed);
        self.span_hi.store(hi, Ordering::Relaxed);
    }

    fn overlaps(map: &BTreeMap<usize, Allocation>, base: usize, size: usize) -> bool {
        let end = base.saturating_add(size);
        if let Some((_, a)) = map.range(..end).next_back() {
            return a.base.saturating_add(a.size) > base;
        }
        false
    }

    pub fn alloc(&self, dev: &Arc<Device>, raw_type: u32, size: usize) -> OlResult<usize> {
        self.alloc_aligned(dev, raw_type, size, None)
    }

    /// `olMemAlloc`, and 23.1's `olMemAllocAligned` with `align` (a power of two).
    pub fn alloc_aligned(
        &self,
        dev: &Arc<Device>,
        raw_type: u32,
        size: usize,
        align: Option<usize>,
    ) -> OlResult<usize> {
        let pdev = dev.plugin()?;
        let kind = kind_of(raw_type);
        let limit = pdev.global_mem_size();
        if (kind == AllocKind::Device || pdev.host_addressable()) && size as u64 > limit {
            return Err(OlError::new(
                OL_ERRC_OUT_OF_RESOURCES,
                format!(
                    "cannot allocate {size} bytes: more than the device's global memory \
                     (OL_DEVICE_INFO_GLOBAL_MEM_SIZE = {limit} bytes)"
                ),
            ));
        }
        self.reclaim();
        // Bound what deferral costs: when freed blocks still waiting for their queues hold more than half
        // of the device's memory, or (RAM of a host-addressable device) they and the live allocations
        // more than three quarters of it, wait for those queues (as cuMemFree would have at each free).
        // A host function cannot wait (the wait could include its own queue): its allocation past the
        // bound is OUT_OF_RESOURCES, never a process the OOM killer ends.
        let pending = self.deferred_bytes.load(Ordering::Relaxed) as u64;
        let live = if pdev.host_addressable() { self.live_host_bytes.load(Ordering::Relaxed) as u64 } else { 0 };
        let over = |pending: u64| {
            pending > 0
                && (pending.saturating_add(size as u64) > limit / 2
                    || live.saturating_add(pending).saturating_add(size as u64) > limit / 4 * 3)
        };
        if over(pending) {
            if hostfn::running().is_none() {
                self.wait_deferred();
            } else if over(self.deferred_bytes.load(Ordering::Relaxed) as u64) {
                return Err(OlError::new(
                    OL_ERRC_OUT_OF_RESOURCES,
                    format!(
                        "cannot allocate {size} bytes in a host function: {pending} freed bytes still wait for \
                         queued work and {live} bytes are live, more than the bound for the device's global \
                         memory (OL_DEVICE_INFO_GLOBAL_MEM_SIZE = {limit} bytes); a host function cannot wait \
                         for queues"
                    ),
                ));
            }
        }
        let mut rejected = Vec::new();
        let mut result = Err(OlError::new(OL_ERRC_BACKEND_FAILURE, "failed to allocate non-overlapping memory"));
        // Different devices may hand out overlapping ranges: retry like LLVM 22 (50 attempts).
        for _ in 0..50 {
            let p = match align {
                None => pdev.alloc(size, kind)?,
                Some(a) => pdev.alloc_aligned(size, kind, a)?,
            };
            if p == 0 {
                result = Err(OlError::new(OL_ERRC_OUT_OF_RESOURCES, "failed to allocate from device allocator"));
                break;
            }
            let mut map = self.map.lock();
            if Self::overlaps(&map, p, size) {
                drop(map);
                rejected.push(p);
                continue;
            }
            map.insert(p, Allocation { base: p, size, device: dev.clone(), raw_type, kind });
            self.note_span(&map);
            if pdev.host_addressable() {
                self.live_host_bytes.fetch_add(size, Ordering::Relaxed);
            }
            result = Ok(p);
            break;
        }
        for p in rejected {
            let _ = pdev.free(p, kind);
        }
        result
    }

    /// `olMemFree`: the block returns to its allocator once the work queued before now has finished.
    pub fn free(&self, addr: usize) -> OlResult<()> {
        let rec = {
            let mut map = self.map.lock();
            let rec =
                map.remove(&addr).ok_or_else(|| OlError::invalid_argument("address is not a known allocation"))?;
            self.note_span(&map);
            if rec.device.plugin().is_ok_and(|p| p.host_addressable()) {
                self.live_host_bytes.fetch_sub(rec.size, Ordering::Relaxed);
            }
            rec
        };
        let fences = queue_fences();
        if fences.is_empty() {
            rec.device.plugin()?.free(rec.base, rec.kind)?;
        } else {
            // not the user's any more: the memory checker reports what queued work does with it
            if let Ok(p) = rec.device.plugin() {
                p.freed_by_user(rec.base);
            }
            let mut d = self.deferred.lock();
            d.push(Deferred { alloc: rec, fences });
            self.deferred_bytes.store(d.iter().map(|x| x.alloc.size).sum(), Ordering::Relaxed);
        }
        self.reclaim();
        Ok(())
    }

    /// Wait for the fences of every deferred block, then release them.
    fn wait_deferred(&self) {
        let events: Vec<Arc<dyn plugin::Event>> = self
            .deferred
            .lock()
            .iter()
            .flat_map(|x| x.fences.iter())
            .filter_map(|f| match f {
                Fence::Event(e) => Some(e.clone()),
                Fence::Unknown => None,
            })
            .collect();
        for e in events {
            // the work's own errors are for its queue's sync
            let _ = e.sync();
        }
        self.reclaim();
    }

    /// Give the deferred blocks whose fences have all passed back to their allocators.
    fn reclaim(&self) {
        if self.deferred_bytes.load(Ordering::Relaxed) == 0 {
            return;
        }
        let ready: Vec<Allocation> = {
            let mut d = self.deferred.lock();
            let mut ready = Vec::new();
            // Oldest first (their fences pass first); polling stops after RECLAIM_POLL blocks still held,
            // so that many frees behind one long kernel do not make every call poll them all.
            let mut held = 0;
            d.retain_mut(|x| {
                if held >= RECLAIM_POLL {
                    return true;
                }
                x.fences.retain(|f| !f.passed());
                if x.fences.is_empty() {
                    ready.push(x.alloc.clone());
                    return false;
                }
                held += 1;
                true
            });
            self.deferred_bytes.store(d.iter().map(|x| x.alloc.size).sum(), Ordering::Relaxed);
            ready
        };
        for a in ready {
            if let Ok(p) = a.device.plugin() {
                let _ = p.free(a.base, a.kind);
            }
        }
    }

    /// INVALID_SIZE when one of the `size`-byte ranges starting at `ranges` (each named: "olMemcpy
    /// destination") starts inside a known allocation or registered host range and runs past its end. One
    /// table lock for all, and none when every range starts outside the allocations' span; the registered
    /// ranges are only looked at while some exist.
    #[inline(always)]
    pub fn check_ranges<const N: usize>(
        &self,
        devices: &[Arc<Device>],
        ranges: [(&str, usize); N],
        size: usize,
    ) -> OlResult<()> {
        let (lo, hi) = (self.span_lo.load(Ordering::Relaxed), self.span_hi.load(Ordering::Relaxed));
        if REGISTERED.load(Ordering::Relaxed) == 0 && ranges.iter().all(|&(_, ptr)| ptr < lo || ptr >= hi) {
            return Ok(());
        }
        self.check_ranges_locked(devices, ranges, size)
    }

    #[inline(never)]
    fn check_ranges_locked<const N: usize>(
        &self,
        devices: &[Arc<Device>],
        ranges: [(&str, usize); N],
        size: usize,
    ) -> OlResult<()> {
        let mut in_table = [false; N];
        {
            let map = self.map.lock();
            for (i, &(what, ptr)) in ranges.iter().enumerate() {
                if let Some((_, a)) = map.range(..=ptr).next_back()
                    && ptr < a.base.saturating_add(a.size)
                {
                    in_table[i] = true;
                    let ty = match a.kind {
                        AllocKind::Host => "host",
                        AllocKind::Device => "device",
                        AllocKind::Managed => "managed",
                    };
                    past_end(what, ptr, size, a.base, a.size, format_args!("the {ty} allocation"))?;
                }
            }
        }
        if REGISTERED.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        for (i, &(what, ptr)) in ranges.iter().enumerate() {
            if in_table[i] {
                continue;
            }
            if let Some((base, len)) = devices.iter().find_map(|d| match &d.kind {
                super::DeviceKind::Plugin(p) => p.registered_range(ptr),
                super::DeviceKind::Host => None,
            }) {
                past_end(what, ptr, size, base, len, format_args!("the registered host range"))?;
            }
        }
        Ok(())
    }

    /// `olGetMemInfo`: the allocation containing any pointer inside it.
    pub fn info(&self, ptr: usize) -> OlResult<Allocation> {
        self.find(ptr).ok_or_else(|| OlError::not_found("allocated memory information not found"))
    }

    /// The allocation containing `ptr`, if any.
    pub fn find(&self, ptr: usize) -> Option<Allocation> {
        let map = self.map.lock();
        match map.range(..=ptr).next_back() {
            Some((_, a)) if ptr < a.base.saturating_add(a.size) => Some(a.clone()),
            _ => None,
        }
    }

    /// Shutdown (every queue drained): free what the user did not, and what waits for fences.
    pub fn release_all(&self) {
        let deferred = std::mem::take(&mut *self.deferred.lock());
        self.deferred_bytes.store(0, Ordering::Relaxed);
        let all = {
            let mut map = self.map.lock();
            let all = std::mem::take(&mut *map);
            self.note_span(&map);
            self.live_host_bytes.store(0, Ordering::Relaxed);
            all
        };
        for a in all.into_values().chain(deferred.into_iter().map(|d| d.alloc)) {
            if let Ok(p) = a.device.plugin() {
                let _ = p.free(a.base, a.kind);
            }
        }
    }
}

/// INVALID_SIZE unless `[ptr, ptr+size)` ends inside `[base, base+len)` (which contains `ptr`). `owner` is
/// formatted only into the error: a range that fits costs no allocation.
fn past_end(
    what: &str,
    ptr: usize,
    size: usize,
    base: usize,
    len: usize,
    owner: std::fmt::Arguments<'_>,
) -> OlResult<()> {
    let end = base + len;
    if ptr.checked_add(size).is_some_and(|e| e <= end) {
        return Ok(());
    }
    Err(OlError::invalid_size(format!(
        "{what}: {size} bytes at 0x{ptr:x} run past the end of {owner} at 0x{base:x} of {len} bytes \
         (0x{ptr:x} is {} bytes into it, {} bytes left)",
        ptr - base,
        end - ptr
    )))
}

/// Registered host ranges (uses) made through the API and not yet unregistered, on every device: while
/// there are none, range checks skip the plugins' registration tables.
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

/// `olMemRegister`; 23.1 page-locks only with `OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY` (`lock`).
pub fn register_with(dev: &Device, ptr: usize, size: usize, lock: bool) -> OlResult<usize> {
    let p = dev.plugin()?;
    let pinned = if lock { p.register_host(ptr, size)? } else { p.register_host_unlocked(ptr, size)? };
    REGISTERED.fetch_add(1, Ordering::Relaxed);
    Ok(pinned)
}

/// `olMemUnregister` after validation: waits for the work enqueued on every queue so far (see the
/// module docs), then drops one use of the registered range containing `ptr`.
pub fn unregister(dev: &Device, ptr: usize) -> OlResult<()> {
    let pdev = dev.plugin()?;
    if pdev.registered_range(ptr).is_none() {
        return Err(OlError::invalid_argument("cannot find locked buffer"));
    }
    hostfn::refuse_in_host_fn("olMemUnregister")?;
    for f in queue_fences() {
        if let Fence::Event(e) = f {
            // the work's own errors are for its queue's sync
            let _ = e.sync();
        }
    }
    pdev.unregister_host(ptr)?;
    REGISTERED.fetch_sub(1, Ordering::Relaxed);
    Ok(())
}

/// `olMemPrefetch` (23.1) after validation: every range must lie inside one allocation of the queue's
/// device (or of a host-addressable device); the plugin then migrates it (a no-op where memory is read in
/// place, as on the CPU device).
pub fn prefetch(ctx: &Context, q: &Queue, ranges: &[(usize, usize)], to_host: bool) -> OlResult<()> {
    let pdev = q.device.plugin()?;
    for &(ptr, size) in ranges {
        let Some(a) = ctx.allocs.find(ptr) else {
            return Err(OlError::invalid_argument(format!(
                "olMemPrefetch: {ptr:#x} is not inside an allocation made by olMemAlloc"
            )));
        };
        if size > a.base + a.size - ptr {
            return Err(OlError::new(
                OL_ERRC_INVALID_SIZE,
                format!(
                    "olMemPrefetch: {size} bytes at {ptr:#x} run past the end of its allocation ({} bytes at {:#x})",
                    a.size, a.base
                ),
            ));
        }
        pdev.prefetch(ptr, size, to_host)?;
    }
    Ok(())
}

/// `olMemcpy` after validation. Host to host (LLVM 22's plain `memcpy`, the small-copy path callers
/// measure) is inlined into the entry point; copies that involve a device go out of line.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `size` bytes on their devices, until the copy
/// has run (it may be queued).
#[inline(always)]
pub unsafe fn memcpy(
    ctx: &Context,
    queue: Option<&Arc<Queue>>,
    dst: usize,
    dst_dev: &Arc<Device>,
    src: usize,
    src_dev: &Arc<Device>,
    size: usize,
) -> OlResult<()> {
    if !(dst_dev.is_host() && src_dev.is_host()) {
        // SAFETY: this function's contract.
        return unsafe { memcpy_device(ctx, queue, dst, dst_dev, src, src_dev, size) };
    }
    if size > 0 {
        ctx.allocs.check_ranges(&ctx.devices, [("olMemcpy destination", dst), ("olMemcpy source", src)], size)?;
    }
    if queue.is_some() {
        // LLVM 22's text, typo included, so clients matching on it keep working.
        return Err(OlError::invalid_argument(
            "ane of DstDevice and SrcDevice must be a non-host device if queue is specified",
        ));
    }
    if size > 0 {
        // SAFETY: host<->host copy of caller-provided pointers (validated non-NULL), exactly as LLVM 22
        // does with memcpy; the caller guarantees both ranges are valid for `size` bytes.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
    }
    Ok(())
}

/// Whether host memory at `src` is pageable: not an allocation of ours, not in a registered range.
fn is_pageable(ctx: &Context, src: usize) -> bool {
    if ctx.allocs.find(src).is_some() {
        return false;
    }
    REGISTERED.load(Ordering::Relaxed) == 0
        || !ctx.devices.iter().any(|d| match &d.kind {
            super::DeviceKind::Plugin(p) => p.registered_range(src).is_some(),
            super::DeviceKind::Host => false,
        })
}

/// Bytes of pageable sources copied aside for queued copies and not yet copied by their queues.
static STAGED: AtomicUsize = AtomicUsize::new(0);
/// What staging may hold at once; past it a copy waits for its queue instead (not in a host function).
const STAGE_MAX: usize = 256 << 20;

/// A queued copy from pageable host memory takes the data before returning, as CUDA does for
/// `cuMemcpyHtoDAsync` from pageable memory (clients written for GPUs free or reuse the source right
/// after the call): on an idle queue it is copied now, else the source is copied aside into memory the
/// device gives for it ([`crate::plugin::Device::stage`]: page-locked on a GPU, whose driver would
/// otherwise wait for the stream; bounded by [`STAGE_MAX`]; past it, or when the device has none, the
/// call waits for its queue) and the queued copy reads that.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `size` bytes (now; `dst` until the queue runs).
unsafe fn memcpy_pageable(q: &Arc<Queue>, dst: usize, src: usize, size: usize) -> OlResult<()> {
    let exec = q.device.plugin()?;
    if q.inner.is_empty()? {
        // SAFETY: both ranges are valid now (this function's contract).
        return Ok(unsafe { exec.memcpy_sync(dst, src, size) }?);
    }
    let own_queue = hostfn::running() == Some(q.id);
    let staged = if STAGED.load(Ordering::Relaxed).saturating_add(size) > STAGE_MAX && !own_queue {
        None
    } else {
        exec.stage(size)?
    };
    let Some(staged) = staged else {
        // SAFETY: as above; the source stays valid until this call returns, after the sync.
        unsafe { q.inner.memcpy(dst, src, size) }?;
        return Ok(q.inner.sync()?);
    };
    // SAFETY: `src` is valid for reading `size` bytes now; the staged block holds at least `size`.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, staged.ptr() as *mut u8, size) };
    let at = staged.ptr();
    let staged = Arc::new(StagedCopy::new(staged, size));
    // SAFETY: the staged block stays alive until the host function below, which runs after the copy.
    if let Err(e) = unsafe { q.inner.memcpy(dst, at, size) } {
        staged.give_back();
        return Err(e.into());
    }
    let in_queue = staged.clone();
    if let Err(e) = q.inner.host_fn(Box::new(move || in_queue.give_back())) {
        // the copy is queued: keep its source until it has run
        let _ = q.inner.sync();
        staged.give_back();
        return Err(e.into());
    }
    Ok(())
}

/// A staged source, counted in [`STAGED`] until it is given back (once, by whichever comes first: the
/// host function queued after its copy, or the error path that synced the queue).
struct StagedCopy(plugin::HeldBlock, usize);

impl StagedCopy {
    fn new(block: Box<dyn plugin::Staged>, size: usize) -> StagedCopy {
        STAGED.fetch_add(size, Ordering::Relaxed);
        StagedCopy(plugin::HeldBlock::new(block), size)
    }
    fn give_back(&self) {
        if self.0.give_back() {
            STAGED.fetch_sub(self.1, Ordering::Relaxed);
        }
    }
}

/// [`memcpy`] when one side is a device.
///
/// # Safety
/// As for [`memcpy`].
#[inline(never)]
unsafe fn memcpy_device(
    ctx: &Context,
    queue: Option<&Arc<Queue>>,
    dst: usize,
    dst_dev: &Arc<Device>,
    src: usize,
    src_dev: &Arc<Device>,
    size: usize,
) -> OlResult<()> {
    if size == 0 {
        return Ok(());
    }
    ctx.allocs.check_ranges(&ctx.devices, [("olMemcpy destination", dst), ("olMemcpy source", src)], size)?;
    match queue {
        Some(q) => {
            let exec = q.device.plugin()?;
            // A queue of a host-addressable device (CPU) cannot reach a GPU's memory.
            for side in [dst_dev, src_dev] {
                if let super::DeviceKind::Plugin(p) = &side.kind
                    && !Arc::ptr_eq(p, exec)
                    && !p.host_addressable()
                    && exec.host_addressable()
                {
                    return Err(OlError::unsupported(
                        "olMemcpy: the queue's device cannot reach the other device's memory; \
                         enqueue the copy on a queue of the GPU device instead",
                    ));
                }
            }
            if src_dev.is_host() && is_pageable(ctx, src) {
                // SAFETY: `src` is valid for reading `size` bytes now (this function's contract).
                return unsafe { memcpy_pageable(q, dst, src, size) };
            }
            // SAFETY: both ranges are valid until the copy has run (this function's contract).
            unsafe { q.inner.memcpy(dst, src, size) }?;
        }
        None => {
            // Prefer the device that is not host-addressable (a GPU) to perform the copy.
            let pick = |d: &Arc<Device>| match &d.kind {
                super::DeviceKind::Plugin(p) => Some(p.clone()),
                super::DeviceKind::Host => None,
            };
            let cands: Vec<_> = [pick(dst_dev), pick(src_dev)].into_iter().flatten().collect();
            let exec = cands
                .iter()
                .find(|p| !p.host_addressable())
                .or(cands.first())
                .cloned()
                .ok_or_else(|| OlError::invalid_argument("olMemcpy needs a device"))?;
            // SAFETY: both ranges are valid for the call (this function's contract).
            unsafe { exec.memcpy_sync(dst, src, size) }?;
        }
    }
    Ok(())
}

/// `olMemFill` after validation. A NULL queue (documented optional) fills synchronously on the device
/// that owns `ptr` (LLVM 22 crashes there).
///
/// # Safety
/// `ptr` must be valid for writing `size` bytes until the fill has run (it may be queued).
pub unsafe fn fill(ctx: &Context, queue: Option<&Arc<Queue>>, ptr: usize, pattern: &[u8], size: usize) -> OlResult<()> {
    if size == 0 {
        return Ok(());
    }
    ctx.allocs.check_ranges(&ctx.devices, [("olMemFill", ptr)], size)?;
    match queue {
        Some(q) => {
            // A queue of a host-addressable device (CPU) would write through a GPU address (GPU host
            // and managed memory are host-addressable).
            if let Ok(exec) = q.device.plugin()
                && exec.host_addressable()
                && let Some(a) = ctx.allocs.find(ptr)
                && a.kind == AllocKind::Device
                && let super::DeviceKind::Plugin(owner) = &a.device.kind
                && !owner.host_addressable()
            {
                return Err(OlError::unsupported(
                    "olMemFill: the queue's device cannot reach the other device's memory; \
                     enqueue the fill on a queue of the device that owns it",
                ));
            }
            // SAFETY: the range is valid until the fill has run (this function's contract).
            Ok(unsafe { q.inner.fill(ptr, pattern, size) }?)
        }
        None => {
            let a = ctx.allocs.find(ptr).ok_or_else(|| {
                OlError::invalid_argument(
                    "olMemFill without a queue needs memory allocated by olMemAlloc (to know its device); \
                     pass a queue for other memory",
                )
            })?;
            let pdev = a.device.plugin()?;
            let q = pdev.create_queue()?;
            // SAFETY: the range is valid until the fill has run, which is before this returns.
            unsafe { q.fill(ptr, pattern, size) }?;
            Ok(q.sync()?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::{Device as _, DeviceInfo, Kernel, LaunchDims, PluginResult, Program};
    use std::sync::mpsc;

    /// The CPU device's allocator behind a device that claims 1 MiB of global memory.
    struct SmallDevice {
        info: DeviceInfo,
    }

    impl plugin::Device for SmallDevice {
        fn info(&self) -> &DeviceInfo {
            &self.info
        }
        fn global_mem_size(&self) -> u64 {
            1 << 20
        }
        fn host_addressable(&self) -> bool {
            true
        }
        fn alloc(&self, size: usize, kind: AllocKind) -> PluginResult<usize> {
            plugin::cpu::device().alloc(size, kind)
        }
        fn free(&self, ptr: usize, kind: AllocKind) -> PluginResult<()> {
            plugin::cpu::device().free(ptr, kind)
        }
        fn register_host(&self, _: usize, _: usize) -> PluginResult<usize> {
            unimplemented!()
        }
        fn unregister_host(&self, _: usize) -> PluginResult<()> {
            unimplemented!()
        }
        fn registered_range(&self, _: usize) -> Option<(usize, usize)> {
            None
        }
        unsafe fn memcpy_sync(&self, _: usize, _: usize, _: usize) -> PluginResult<()> {
            unimplemented!()
        }
        fn is_valid_binary(&self, _: &[u8]) -> bool {
            false
        }
        fn load_program(&self, _: &[u8]) -> PluginResult<Arc<dyn Program>> {
            unimplemented!()
        }
        fn create_queue(&self) -> PluginResult<Arc<dyn plugin::Queue>> {
            unimplemented!()
        }
        fn optimal_group_size(&self, _: &dyn Kernel, _: usize) -> PluginResult<usize> {
            unimplemented!()
        }
        fn launch_sync(&self, _: Arc<dyn Kernel>, _: plugin::LaunchArgs<'_>, _: LaunchDims) -> PluginResult<()> {
            unimplemented!()
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    /// The tests that watch a gated queue fence every free of the process: one at a time.
    static GATED: crate::sync::Mutex<()> = crate::sync::Mutex::new(());

    #[test]
    fn frees_behind_queued_work_are_deferred_and_bounded() {
        let _g = GATED.lock();
        let pdev: Arc<dyn plugin::Device> = Arc::new(SmallDevice { info: plugin::cpu::device().info().clone() });
        let dev = Arc::new(Device { handle: 1, platform: 2, kind: super::super::DeviceKind::Plugin(pdev) });
        let table = AllocTable::default();
        let q: Arc<dyn plugin::Queue> = Arc::new(plugin::cpu::CpuQueue::new());
        watch_queue(&q);
        // a queue blocked until `open` is sent
        let gate = |q: &Arc<dyn plugin::Queue>| {
            let (open, wait) = mpsc::channel::<()>();
            q.host_fn(Box::new(move || {
                let _ = wait.recv();
            }))
            .unwrap();
            open
        };

        let open = gate(&q);
        let a = table.alloc(&dev, 1, 100 << 10).unwrap();
        table.free(a).unwrap();
        assert!(table.find(a).is_none(), "the address is unknown at once");
        assert_eq!(table.deferred_bytes.load(Ordering::Relaxed), 100 << 10, "held while the queue is busy");
        let b = table.alloc(&dev, 1, 100 << 10).unwrap();
        assert_ne!(a, b, "not handed out again while the queue may still use it");
        open.send(()).unwrap();
        q.sync().unwrap();
        table.free(b).unwrap();
        assert_eq!(table.deferred_bytes.load(Ordering::Relaxed), 0, "released once the queue has passed");

        // more than half of the device's memory deferred: the next allocation waits for the queue
        let open = gate(&q);
        let blocks: Vec<usize> = (0..4).map(|_| table.alloc(&dev, 1, 100 << 10).unwrap()).collect();
        for p in blocks {
            table.free(p).unwrap();
        }
        assert_eq!(table.deferred_bytes.load(Ordering::Relaxed), 400 << 10);
        let opener = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            open.send(()).unwrap();
        });
        let c = table.alloc(&dev, 1, 200 << 10).unwrap();
        assert_eq!(table.deferred_bytes.load(Ordering::Relaxed), 0, "waited for the queue, then released");
        assert!(q.is_empty().unwrap());
        opener.join().unwrap();
        table.free(c).unwrap();
        table.release_all();
    }

    /// RAM of a host-addressable device (a memory cgroup's limit): deferred blocks count with the live
    /// ones, so a job with at most half its memory live never has more than three quarters of it held;
    /// in a host function, which cannot wait, the allocation past that bound is OUT_OF_RESOURCES.
    #[test]
    fn deferral_counts_live_memory_and_host_functions_are_bounded() {
        let _g = GATED.lock();
        let pdev: Arc<dyn plugin::Device> = Arc::new(SmallDevice { info: plugin::cpu::device().info().clone() });
        let dev = Arc::new(Device { handle: 1, platform: 2, kind: super::super::DeviceKind::Plugin(pdev) });
        let table = Arc::new(AllocTable::default());
        let q: Arc<dyn plugin::Queue> = Arc::new(plugin::cpu::CpuQueue::new());
        watch_queue(&q);
        let gate = |q: &Arc<dyn plugin::Queue>| {
            let (open, wait) = mpsc::channel::<()>();
            q.host_fn(Box::new(move || {
                let _ = wait.recv();
            }))
            .unwrap();
            open
        };
        let live = table.alloc(&dev, 1, 500 << 10).unwrap();
        let open = gate(&q);
        let a = table.alloc(&dev, 1, 200 << 10).unwrap();
        table.free(a).unwrap();
        assert_eq!(table.deferred_bytes.load(Ordering::Relaxed), 200 << 10);
        // 500 K live + 200 K deferred + 100 K new > 768 K (deferred alone is far below half): from inside
        // a host function (of another queue), an error, and the process goes on
        let (tx, rx) = mpsc::channel();
        let (t2, d2) = (table.clone(), dev.clone());
        hostfn::wrap(
            7,
            Box::new(move || {
                tx.send(t2.alloc(&d2, 1, 100 << 10)).unwrap();
            }),
        )();
        let inside = rx.recv().unwrap();
        let e = inside.expect_err("past the bound in a host function");
        assert_eq!(e.code, OL_ERRC_OUT_OF_RESOURCES);
        assert!(e.details.contains("a host function cannot wait"), "{}", e.details);
        // outside a host function the same allocation waits for the queue, then succeeds
        let opener = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            open.send(()).unwrap();
        });
        let b = table.alloc(&dev, 1, 100 << 10).unwrap();
        assert_eq!(table.deferred_bytes.load(Ordering::Relaxed), 0, "waited for the queue, then released");
        opener.join().unwrap();
        table.free(b).unwrap();
        table.free(live).unwrap();
        table.release_all();
    }

    /// The lock-free span filter in front of the table never hides a live allocation: as blocks come and
    /// go (the lowest and the highest included), a range starting in each live one and running past its
    /// end is INVALID_SIZE, and ranges in freed blocks or outside are the caller's business.
    #[test]
    fn range_checks_see_every_live_allocation() {
        let pdev: Arc<dyn plugin::Device> = Arc::new(SmallDevice { info: plugin::cpu::device().info().clone() });
        let dev = Arc::new(Device { handle: 1, platform: 2, kind: super::super::DeviceKind::Plugin(pdev) });
        let devices = [dev.clone()];
        let table = AllocTable::default();
        let check = |p: usize, size: usize| table.check_ranges(&devices, [("olMemcpy destination", p)], size);
        let host = [0u8; 64];
        assert!(check(host.as_ptr() as usize, 1 << 20).is_ok(), "an empty table holds nothing");
        let mut live: Vec<usize> = (0..4).map(|_| table.alloc(&dev, 1, 4096).unwrap()).collect();
        live.sort();
        // free the lowest, then the highest, then one in the middle, checking every block each time
        let mut freed = Vec::new();
        for step in 0..3 {
            for &p in &live {
                assert_eq!(check(p + 4000, 200).unwrap_err().code, OL_ERRC_INVALID_SIZE, "{p:#x} is live");
                assert!(check(p, 4096).is_ok());
            }
            for &p in &freed {
                assert!(check(p + 4000, 200).is_ok(), "{p:#x} was freed");
            }
            let victim = [0, live.len() - 1, 1][step];
            let p = live.remove(victim);
            table.free(p).unwrap();
            freed.push(p);
        }
        assert_eq!(check(live[0] + 1, 4096).unwrap_err().code, OL_ERRC_INVALID_SIZE);
        table.free(live[0]).unwrap();
        assert!(check(live[0] + 1, 4096).is_ok(), "every block freed");
    }

    #[test]
    fn oversized_allocations_are_out_of_resources() {
        let pdev: Arc<dyn plugin::Device> = Arc::new(SmallDevice { info: plugin::cpu::device().info().clone() });
        let dev = Arc::new(Device { handle: 1, platform: 2, kind: super::super::DeviceKind::Plugin(pdev) });
        let table = AllocTable::default();
        for ty in [0, 1, 2, 77] {
            let e = table.alloc(&dev, ty, (1 << 20) + 1).unwrap_err();
            assert_eq!(e.code, OL_ERRC_OUT_OF_RESOURCES);
            assert!(e.details.contains("GLOBAL_MEM_SIZE = 1048576 bytes"), "{}", e.details);
        }
        let p = table.alloc(&dev, 77, 1 << 20).unwrap();
        assert_eq!(table.info(p + 5).unwrap().raw_type, 77);
        table.free(p).unwrap();
    }
}
