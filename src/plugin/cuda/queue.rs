//! CUDA queues: non-blocking streams, host functions, waits on foreign events.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::sync::Mutex;

use crate::plugin::{Event, HeldBlock, Kernel, LaunchArgs, LaunchDims, PluginError, PluginResult, Queue, panic_text};

use super::driver::*;
use super::image;

use super::context::{DeviceInner, Memory};
use super::event::CudaEvent;
use super::kernel::CudaKernel;

/// A queue: one non-blocking CUDA stream.
pub struct CudaQueue {
    pub(super) dev: Arc<DeviceInner>,
    pub(super) stream: usize,
    /// First error raised by queued host work (a panicking host function, a failed foreign wait).
    pub(super) error: Arc<Mutex<Option<PluginError>>>,
}

impl CudaQueue {
    fn s(&self) -> CUstream {
        self.stream as CUstream
    }

    fn enqueue_host(&self, f: Box<dyn FnOnce() -> PluginResult<()> + Send>) -> PluginResult<()> {
        self.dev.bind()?;
        let call = Box::new(HostCall { f, error: self.error.clone() });
        let p = Box::into_raw(call);
        // SAFETY: trampoline takes ownership of `p` exactly once when it runs.
        let r = unsafe { (self.dev.drv.cuLaunchHostFunc)(self.s(), host_trampoline, p.cast()) };
        if r != CUDA_SUCCESS {
            // SAFETY: the driver did not take the callback; reclaim it.
            drop(unsafe { Box::from_raw(p) });
            return Err(self.dev.drv.error(r, "cuLaunchHostFunc"));
        }
        Ok(())
    }
}

// SAFETY: the stream handle is usable from any thread; CUDA streams are thread-safe.
unsafe impl Send for CudaQueue {}
// SAFETY: as above.
unsafe impl Sync for CudaQueue {}

struct HostCall {
    f: Box<dyn FnOnce() -> PluginResult<()> + Send>,
    error: Arc<Mutex<Option<PluginError>>>,
}

unsafe extern "C" fn host_trampoline(p: *mut c_void) {
    // SAFETY: p is the Box<HostCall> leaked by enqueue_host; the driver calls us once.
    let call = unsafe { Box::from_raw(p.cast::<HostCall>()) };
    let HostCall { f, error } = *call;
    let err = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(panic) => Some(PluginError::Backend(format!("host function panicked: {}", panic_text(&*panic)))),
    };
    if let Some(e) = err {
        let mut slot = error.lock();
        if slot.is_none() {
            *slot = Some(e);
        }
    }
}

impl Queue for CudaQueue {
    /// `cuMemcpyAsync`, except where a copy touches host memory the driver handles outside stream order
    /// (CUDA's "API synchronization behavior", and measured on an H200: behind a host function that waits for
    /// the caller, the waits never end; a copy from pageable memory read it at the call, before the stream's
    /// earlier work had written it):
    /// * host to host (page-locked or not): the driver copies on the CPU, "fully synchronous with respect to
    ///   the host"; a host function of the stream copies instead, in order;
    /// * device to pageable host memory: the driver returns once the copy is done; the bytes go to a
    ///   page-locked block first ([`super::staging`]) and a host function copies them on;
    /// * pageable host memory to the device (the CPU device's memory: the runtime copies a client's pageable
    ///   source into a block itself, at the call, as CUDA does): the driver takes the bytes at the call; a host
    ///   function copies them into a block in order, and the block goes to the device after it.
    ///
    /// When no block can be had the driver's copy runs as it is.
    unsafe fn memcpy(&self, dst: usize, src: usize, size: usize) -> PluginResult<()> {
        self.dev.bind()?;
        if size == 0 {
            return Ok(());
        }
        let (to, from) = (self.dev.memory_at(dst), self.dev.memory_at(src));
        if to.is_host() && from.is_host() {
            return self.enqueue_host(Box::new(move || {
                // SAFETY: the caller keeps both ranges valid until the queue has run the copy.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
                Ok(())
            }));
        }
        if to != Memory::PageableHost && from != Memory::PageableHost {
            return self.dev.memcpy_async(dst, src, size, self.s());
        }
        let Some(block) = self.dev.stage(size)? else { return self.dev.memcpy_async(dst, src, size, self.s()) };
        let at = block.ptr();
        // Given back by the last host function below, or here once the stream has run what was queued.
        let block = Arc::new(HeldBlock::new(block));
        let held = block.clone();
        let r = if from == Memory::PageableHost {
            self.enqueue_host(Box::new(move || {
                // SAFETY: the block holds `size` bytes; the caller keeps `src` valid until the queue has run this.
                unsafe { std::ptr::copy_nonoverlapping(src as *const u8, at as *mut u8, size) };
                Ok(())
            }))
            .and_then(|()| self.dev.memcpy_async(dst, at, size, self.s()))
            .and_then(|()| {
                self.enqueue_host(Box::new(move || {
                    held.give_back();
                    Ok(())
                }))
            })
        } else {
            self.dev.memcpy_async(at, src, size, self.s()).and_then(|()| {
                self.enqueue_host(Box::new(move || {
                    // SAFETY: the copy before this host function wrote `size` bytes to the block; the caller
                    // keeps `dst` valid until the queue has run it.
                    unsafe { std::ptr::copy_nonoverlapping(at as *const u8, dst as *mut u8, size) };
                    held.give_back();
                    Ok(())
                }))
            })
        };
        if r.is_err() {
            let _ = self.dev.sync_stream(self.s());
            block.give_back();
        }
        r
    }

    /// 1/2/4-byte patterns: `cuMemsetD8/16/32Async`. Larger patterns: one strided 2-D memset per
    /// pattern element (pitch = pattern size, width 1, height = repetitions) with the largest
    /// element size of 4/2/1 that divides the pattern size and the address (as LLVM 22 does).
    unsafe fn fill(&self, ptr: usize, pattern: &[u8], size: usize) -> PluginResult<()> {
        let plen = pattern.len();
        if size == 0 || plen == 0 {
            return Ok(());
        }
        if !size.is_multiple_of(plen) {
            return Err(PluginError::InvalidSize("fill size is not a multiple of the pattern size".into()));
        }
        let d = &*self.dev;
        d.bind()?;
        let p = ptr as CUdeviceptr;
        let s = self.s();
        let elem = image::fill_element_size(plen, ptr);
        // The caller guarantees `size` writable bytes at `ptr` (all memsets below).
        match (plen, elem) {
            (1, _) => {
                // SAFETY: see above.
                let r = unsafe { (d.drv.cuMemsetD8Async)(p, pattern[0], size, s) };
                return d.drv.check(r, "cuMemsetD8Async");
            }
            (2, 2) => {
                let v = u16::from_le_bytes([pattern[0], pattern[1]]);
                // SAFETY: see above; ptr is 2-byte aligned (elem == 2).
                let r = unsafe { (d.drv.cuMemsetD16Async)(p, v, size / 2, s) };
                return d.drv.check(r, "cuMemsetD16Async");
            }
            (4, 4) => {
                let v = u32::from_le_bytes([pattern[0], pattern[1], pattern[2], pattern[3]]);
                // SAFETY: see above; ptr is 4-byte aligned (elem == 4).
                let r = unsafe { (d.drv.cuMemsetD32Async)(p, v, size / 4, s) };
                return d.drv.check(r, "cuMemsetD32Async");
            }
            _ => {}
        }
        let height = size / plen;
        for j in 0..plen / elem {
            let at = p + (j * elem) as u64;
            let b = &pattern[j * elem..(j + 1) * elem];
            // Rows of `plen` bytes, `height` of them, inside [ptr, ptr+size); `at` aligned to elem.
            let r = match elem {
                4 => {
                    let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    // SAFETY: see above.
                    unsafe { (d.drv.cuMemsetD2D32Async)(at, plen, v, 1, height, s) }
                }
                2 => {
                    let v = u16::from_le_bytes([b[0], b[1]]);
                    // SAFETY: see above.
                    unsafe { (d.drv.cuMemsetD2D16Async)(at, plen, v, 1, height, s) }
                }
                // SAFETY: see above.
                _ => unsafe { (d.drv.cuMemsetD2D8Async)(at, plen, b[0], 1, height, s) },
            };
            d.drv.check(r, "cuMemsetD2DAsync")?;
        }
        Ok(())
    }

    fn launch(&self, kernel: Arc<dyn Kernel>, args: LaunchArgs<'_>, dims: LaunchDims) -> PluginResult<()> {
        let k = kernel
            .as_any()
            .downcast_ref::<CudaKernel>()
            .ok_or_else(|| PluginError::InvalidArgument("kernel does not belong to a CUDA device".into()))?;
        self.dev.bind()?;
        k.launch_on(&self.dev, args, &dims, self.s())
    }

    fn host_fn(&self, f: Box<dyn FnOnce() + Send>) -> PluginResult<()> {
        self.enqueue_host(Box::new(move || {
            f();
            Ok(())
        }))
    }

    fn record_event(&self) -> PluginResult<Option<Arc<dyn Event>>> {
        let d = &*self.dev;
        d.bind()?;
        // SAFETY: live stream.
        match unsafe { (d.drv.cuStreamQuery)(self.s()) } {
            CUDA_SUCCESS => return Ok(None),
            CUDA_ERROR_NOT_READY => {}
            r => return Err(d.drv.error(r, "cuStreamQuery")),
        }
        let mut ev: CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        d.drv.check(unsafe { (d.drv.cuEventCreate)(&mut ev, CU_EVENT_DISABLE_TIMING) }, "cuEventCreate")?;
        let event = CudaEvent { dev: self.dev.clone(), event: ev as usize };
        // SAFETY: live event and stream.
        d.drv.check(unsafe { (d.drv.cuEventRecord)(ev, self.s()) }, "cuEventRecord")?;
        Ok(Some(Arc::new(event)))
    }

    fn wait_event(&self, event: Arc<dyn Event>) -> PluginResult<()> {
        if let Some(ce) = event.as_any().downcast_ref::<CudaEvent>() {
            self.dev.bind()?;
            // SAFETY: live event (kept alive by `event` for the call; the driver records the dependency).
            let r = unsafe { (self.dev.drv.cuStreamWaitEvent)(self.s(), ce.event as CUevent, 0) };
            return self.dev.drv.check(r, "cuStreamWaitEvent");
        }
        // A foreign event (another plugin's): block the stream with a host function until it completes.
        if matches!(event.is_complete(), Ok(true)) {
            return Ok(());
        }
        self.enqueue_host(Box::new(move || event.sync()))
    }

    fn sync(&self) -> PluginResult<()> {
        self.dev.bind()?;
        self.dev.sync_stream(self.s())?;
        match self.error.lock().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn is_empty(&self) -> PluginResult<bool> {
        self.dev.bind()?;
        // SAFETY: live stream.
        match unsafe { (self.dev.drv.cuStreamQuery)(self.s()) } {
            CUDA_SUCCESS => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            r => Err(self.dev.drv.error(r, "cuStreamQuery")),
        }
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        // cuStreamDestroy does not wait: pending work completes, then the stream is released.
        if self.dev.bind().is_ok() {
            // SAFETY: live stream, never used again.
            let _ = unsafe { (self.dev.drv.cuStreamDestroy)(self.s()) };
        }
    }
}
