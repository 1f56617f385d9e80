//! Page-locked host blocks for copies from pageable client memory that a stream runs later
//! ([`crate::plugin::Device::stage`], runtime::memory's staging).
//!
//! NVIDIA's driver copies from pageable memory through its own staging, and may wait for the stream
//! first: measured on an H200 (driver 13.0), a 1 MiB `cuMemcpyAsync` from pageable memory queued behind
//! a host function that waits for the client never returned. A copy from page-locked memory is queued
//! and returns. So the runtime's copy of the client's bytes goes to a block from here.
//!
//! Blocks (power-of-two sizes from 64 KiB) are reused and kept, [`CAP`] bytes at most in all, until the
//! device goes (`DeviceInner`'s drop frees them): a block is given back in a stream callback, where no
//! driver call is allowed, and `cuMemFreeHost` may wait for the device's work. Past the cap the caller
//! waits for its queue instead, as the driver itself would.

use std::sync::Arc;

use crate::sync::Mutex;

use crate::plugin::{PluginResult, Staged};

/// Page-locked bytes the pool may hold, given out or free.
pub(super) const CAP: usize = 64 << 20;
/// The smallest block.
const MIN_BLOCK: usize = 64 << 10;

/// The device's blocks: the free ones, and how many bytes exist in all.
#[derive(Default)]
pub(crate) struct StagePool {
    free: Vec<(usize, usize)>,
    total: usize,
}

impl StagePool {
    /// The free blocks, taken out (for the device's drop to free them).
    pub(super) fn take_free(&mut self) -> Vec<(usize, usize)> {
        std::mem::take(&mut self.free)
    }
}

/// A block given out; dropping it puts it back on the free list (no driver call).
struct PinnedBlock {
    pool: Arc<Mutex<StagePool>>,
    ptr: usize,
    cap: usize,
}

impl Staged for PinnedBlock {
    fn ptr(&self) -> usize {
        self.ptr
    }
}

impl Drop for PinnedBlock {
    fn drop(&mut self) {
        self.pool.lock().free.push((self.ptr, self.cap));
    }
}

/// A free block of at least `size` bytes from `pool` (the smallest that fits), or a new one from `alloc`
/// (`cuMemAllocHost` of the block's size, called without the pool's lock) while the pool is under [`CAP`],
/// or `None`.
pub(super) fn take(
    pool: &Arc<Mutex<StagePool>>,
    size: usize,
    alloc: impl FnOnce(usize) -> PluginResult<usize>,
) -> PluginResult<Option<Box<dyn Staged>>> {
    let Some(cap) = size.checked_next_power_of_two().map(|c| c.max(MIN_BLOCK)) else { return Ok(None) };
    let mut p = pool.lock();
    let fit = p.free.iter().enumerate().filter(|(_, b)| b.1 >= size).min_by_key(|(_, b)| b.1).map(|(i, _)| i);
    if let Some(i) = fit {
        let (ptr, cap) = p.free.swap_remove(i);
        return Ok(Some(Box::new(PinnedBlock { pool: pool.clone(), ptr, cap })));
    }
    if p.total + cap > CAP {
        return Ok(None);
    }
    p.total += cap;
    drop(p);
    match alloc(cap) {
        Ok(ptr) if ptr != 0 => Ok(Some(Box::new(PinnedBlock { pool: pool.clone(), ptr, cap }))),
        r => {
            pool.lock().total -= cap;
            r.map(|_| None)
        }
    }
}
