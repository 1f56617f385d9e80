//! The allocation table (base -> device, type, size) and the memory operations.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::plugin::{self, AllocKind};

use super::{Context, Device, Queue};

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
    fn overlaps(map: &BTreeMap<usize, Allocation>, base: usize, size: usize) -> bool {
        let end = base.saturating_add(size);
        if let Some((_, a)) = map.range(..end).next_back() {
            return a.base.saturating_add(a.size) > base;
        }
        false
    }

    pub fn alloc(&self, dev: &Arc<Device>, raw_type: u32, size: usize) -> OlResult<usize> {
        let pdev = dev.plugin()?;
        let kind = kind_of(raw_type);
        let mut rejected = Vec::new();
        let mut result = Err(OlError::new(OL_ERRC_BACKEND_FAILURE, "failed to allocate non-overlapping memory"));
        // Different devices may hand out overlapping ranges: retry like LLVM 22 (50 attempts).
        for _ in 0..50 {
            let p = pdev.alloc(size, kind)?;
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
            result = Ok(p);
            break;
        }
        for p in rejected {
            let _ = pdev.free(p, kind);
        }
        result
    }

    pub fn free(&self, addr: usize) -> OlResult<()> {
        let rec = self
            .map
            .lock()
            .remove(&addr)
            .ok_or_else(|| OlError::invalid_argument("address is not a known allocation"))?;
        rec.device.plugin()?.free(rec.base, rec.kind)?;
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

    /// Shutdown: free what the user did not.
    pub fn release_all(&self) {
        let all = std::mem::take(&mut *self.map.lock());
        for (_, a) in all {
            if let Ok(p) = a.device.plugin() {
                let _ = p.free(a.base, a.kind);
            }
        }
    }
}

/// Where the bytes of one side of a copy live, relative to the plugin device that performs it.
fn on_device(side: &Device, exec: &Arc<dyn plugin::Device>) -> bool {
    match &side.kind {
        super::DeviceKind::Host => false,
        super::DeviceKind::Plugin(p) => Arc::ptr_eq(p, exec) || !p.host_addressable(),
    }
}

/// `olMemcpy` after validation.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `size` bytes on their devices, until the copy
/// has run (it may be queued).
pub unsafe fn memcpy(
    queue: Option<&Arc<Queue>>,
    dst: usize,
    dst_dev: &Arc<Device>,
    src: usize,
    src_dev: &Arc<Device>,
    size: usize,
) -> OlResult<()> {
    if dst_dev.is_host() && src_dev.is_host() {
        if queue.is_some() {
            // LLVM 22's text, typo included, so clients matching on it keep working.
            return Err(OlError::invalid_argument(
                "ane of DstDevice and SrcDevice must be a non-host device if queue is specified",
            ));
        }
        if size > 0 {
            // SAFETY: host<->host copy of caller-provided pointers (validated non-NULL), exactly as LLVM
            // 22 does with memcpy; the caller guarantees both ranges are valid for `size` bytes.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
        }
        return Ok(());
    }
    if size == 0 {
        return Ok(());
    }
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
            // SAFETY: both ranges are valid until the copy has run (this function's contract).
            unsafe { q.inner.memcpy(dst, on_device(dst_dev, exec), src, on_device(src_dev, exec), size) }?;
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
            unsafe { exec.memcpy_sync(dst, on_device(dst_dev, &exec), src, on_device(src_dev, &exec), size) }?;
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
