//! Per-device state shared by every CUDA object of the device: the driver table, the primary context
//! (bound on each calling thread) and the pool of streams for synchronous work.

use std::ffi::{CString, c_uint, c_void};

use crate::sync::Mutex;

use crate::plugin::{DeviceInfo, GlobalInfo, LaunchDims, PluginError, PluginResult};

use super::driver::*;
use crate::plugin::host_ranges::HostRanges;

/// Memory as the driver sees it ([`DeviceInner::memory_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Memory {
    Device,
    PinnedHost,
    PageableHost,
}

impl Memory {
    pub(super) fn is_host(self) -> bool {
        self != Memory::Device
    }
}

/// Per-device state shared by every object of the device.
pub struct DeviceInner {
    pub(crate) drv: &'static Driver,
    /// The device ordinal (for releasing the primary context).
    pub(super) dev: CUdevice,
    pub(crate) ctx: CUcontext,
    /// CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X/Y/Z.
    pub(super) max_grid: [u32; 3],
    pub(crate) major: u32,
    pub(crate) minor: u32,
    pub(super) ptx_isa: u32,
    pub(super) info: DeviceInfo,
    /// Streams for the synchronous operations (memcpy_sync, launch_sync, ctors), reused.
    pub(super) pool: Mutex<Vec<usize>>,
    /// Registered host ranges; the data says whether we page-locked the range ourselves.
    pub(super) registered: Mutex<HostRanges<bool>>,
    /// Page-locked blocks for staged copies from pageable memory ([`super::staging`]).
    pub(super) staging: std::sync::Arc<Mutex<super::staging::StagePool>>,
}

// SAFETY: `ctx` is a CUDA primary context handle, usable from any thread (made current per call);
// everything else is Sync.
unsafe impl Send for DeviceInner {}
// SAFETY: as above.
unsafe impl Sync for DeviceInner {}

impl DeviceInner {
    /// Make the device's primary context current on this thread. Checked with `cuCtxGetCurrent`
    /// (a thread-local read in the driver) rather than cached on our side, so that other CUDA users
    /// in the process switching contexts cannot misroute our calls.
    #[inline]
    pub(crate) fn bind(&self) -> PluginResult<()> {
        let mut cur: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer valid.
        let r = unsafe { (self.drv.cuCtxGetCurrent)(&mut cur) };
        if r == CUDA_SUCCESS && cur == self.ctx {
            return Ok(());
        }
        // SAFETY: ctx is a retained primary context.
        self.drv.check(unsafe { (self.drv.cuCtxSetCurrent)(self.ctx) }, "cuCtxSetCurrent")
    }

    pub(super) fn pooled_stream(&self) -> PluginResult<PooledStream<'_>> {
        self.bind()?;
        if let Some(s) = self.pool.lock().pop() {
            return Ok(PooledStream { dev: self, s: s as CUstream });
        }
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer valid; context current.
        self.drv.check(unsafe { (self.drv.cuStreamCreate)(&mut s, CU_STREAM_NON_BLOCKING) }, "cuStreamCreate")?;
        Ok(PooledStream { dev: self, s })
    }

    pub(super) fn sync_stream(&self, s: CUstream) -> PluginResult<()> {
        // SAFETY: s is a live stream of this context.
        self.drv.check(unsafe { (self.drv.cuStreamSynchronize)(s) }, "cuStreamSynchronize")
    }

    pub(super) fn memcpy_async(&self, dst: usize, src: usize, size: usize, s: CUstream) -> PluginResult<()> {
        if size == 0 {
            return Ok(());
        }
        // SAFETY: with unified addressing the driver resolves both pointers (device, pinned or
        // pageable host memory); the caller guarantees `size` valid bytes at both.
        let r = unsafe { (self.drv.cuMemcpyAsync)(dst as CUdeviceptr, src as CUdeviceptr, size, s) };
        self.drv.check(r, "cuMemcpyAsync")
    }

    /// What the driver knows of the memory at `p`: page-locked host memory, pageable host memory it does
    /// not know (an error from `cuPointerGetAttribute`), or device (or managed) memory. Without
    /// `cuPointerGetAttribute`, or on any other error, device: the copy goes to the driver as it is.
    pub(super) fn memory_at(&self, p: usize) -> Memory {
        let Some(get) = self.drv.cuPointerGetAttribute else { return Memory::Device };
        let mut t: c_uint = 0;
        // SAFETY: MEMORY_TYPE writes one CUmemorytype (an unsigned int) to the out-pointer.
        let r = unsafe { get((&mut t as *mut c_uint).cast(), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p as CUdeviceptr) };
        match r {
            CUDA_SUCCESS if t == CU_MEMORYTYPE_HOST => Memory::PinnedHost,
            CUDA_ERROR_INVALID_VALUE => Memory::PageableHost,
            _ => Memory::Device,
        }
    }

    /// A page-locked block of at least `size` bytes for a staged copy ([`super::staging`]), or `None`.
    pub(super) fn stage(&self, size: usize) -> PluginResult<Option<Box<dyn crate::plugin::Staged>>> {
        super::staging::take(&self.staging, size, |cap| {
            self.bind()?;
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: out-pointer valid; context current.
            self.drv.check(unsafe { (self.drv.cuMemAllocHost)(&mut p, cap) }, "cuMemAllocHost")?;
            Ok(p as usize)
        })
    }

    pub(super) fn function(&self, module: CUmodule, name: &str) -> PluginResult<CUfunction> {
        let what = || format!("cuModuleGetFunction('{name}')");
        let c =
            CString::new(name).map_err(|_| PluginError::NotFound(format!("error in {}: name contains NUL", what())))?;
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: module is loaded; c is NUL-terminated.
        let r = unsafe { (self.drv.cuModuleGetFunction)(&mut f, module, c.as_ptr()) };
        self.drv.check(r, &what())?;
        Ok(f)
    }

    pub(super) fn global(&self, module: CUmodule, name: &str) -> PluginResult<GlobalInfo> {
        let what = || format!("cuModuleGetGlobal for '{name}'");
        let c =
            CString::new(name).map_err(|_| PluginError::NotFound(format!("error in {}: name contains NUL", what())))?;
        let mut addr: CUdeviceptr = 0;
        let mut size = 0usize;
        // SAFETY: module is loaded; out-pointers valid.
        let r = unsafe { (self.drv.cuModuleGetGlobal)(&mut addr, &mut size, module, c.as_ptr()) };
        if r != CUDA_SUCCESS {
            // NVIDIA's driver (13.0, measured on an H200) answers a kernel's name with CUDA_ERROR_INVALID_VALUE
            // (an unknown error for the caller): a kernel is simply not a global variable.
            let mut f: CUfunction = std::ptr::null_mut();
            // SAFETY: module is loaded; c is NUL-terminated; out-pointer valid.
            if unsafe { (self.drv.cuModuleGetFunction)(&mut f, module, c.as_ptr()) } == CUDA_SUCCESS {
                return Err(PluginError::NotFound(format!(
                    "error in {}: '{name}' is a kernel of the module, not a global variable",
                    what()
                )));
            }
        }
        self.drv.check(r, &what())?;
        Ok(GlobalInfo { addr: addr as usize, size })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_raw(
        &self,
        func: CUfunction,
        name: &str,
        args: &[u8],
        dims: &LaunchDims,
        stream: CUstream,
    ) -> PluginResult<()> {
        let shmem = u32::try_from(dims.dyn_shared_mem).map_err(|_| {
            PluginError::InvalidArgument(format!("dynamic shared memory size {} too large", dims.dyn_shared_mem))
        })?;
        // The driver copies the argument block at launch; keep it 8-byte aligned.
        let mut stack = [0u64; 64];
        let mut heap = Vec::new();
        let buf: &mut [u64] = if args.len() <= 512 {
            &mut stack[..args.len().div_ceil(8)]
        } else {
            heap.resize(args.len().div_ceil(8), 0u64);
            &mut heap
        };
        // SAFETY: buf has at least args.len() bytes; u64 has no invalid bit patterns.
        unsafe { std::ptr::copy_nonoverlapping(args.as_ptr(), buf.as_mut_ptr().cast::<u8>(), args.len()) };
        let mut size = args.len();
        let mut extra = [
            CU_LAUNCH_PARAM_BUFFER_POINTER,
            buf.as_mut_ptr().cast::<c_void>(),
            CU_LAUNCH_PARAM_BUFFER_SIZE,
            (&mut size as *mut usize).cast::<c_void>(),
            CU_LAUNCH_PARAM_END,
        ];
        let extra_ptr = if args.is_empty() { std::ptr::null_mut() } else { extra.as_mut_ptr() };
        let [gx, gy, gz] = dims.num_groups;
        let [bx, by, bz] = dims.group_size;
        // SAFETY: func belongs to a loaded module of this context; `extra` and the buffers it
        // points to outlive the call (the driver copies the arguments before returning).
        let r = unsafe {
            (self.drv.cuLaunchKernel)(func, gx, gy, gz, bx, by, bz, shmem, stream, std::ptr::null_mut(), extra_ptr)
        };
        // (the message is formatted only on failure: this is the launch hot path)
        if r == CUDA_SUCCESS { Ok(()) } else { Err(self.drv.error(r, &format!("cuLaunchKernel for '{name}'"))) }
    }
}

impl Drop for DeviceInner {
    /// The last object of the device is gone (after `olShutDown`): destroy the pooled streams and release
    /// the primary context retained by `open`, so that an init/shutdown cycle leaks nothing in the driver.
    fn drop(&mut self) {
        let pool = std::mem::take(&mut *self.pool.lock());
        let blocks = self.staging.lock().take_free();
        if self.bind().is_ok() {
            for s in pool {
                // SAFETY: a stream of this context, idle (its PooledStream was dropped), never used again.
                let _ = unsafe { (self.drv.cuStreamDestroy)(s as CUstream) };
            }
            for (p, _) in blocks {
                // SAFETY: a free staging block from cuMemAllocHost of this context, never used again.
                let _ = unsafe { (self.drv.cuMemFreeHost)(p as *mut c_void) };
            }
        }
        if let Some(release) = self.drv.cuDevicePrimaryCtxRelease {
            // SAFETY: balances the cuDevicePrimaryCtxRetain of `open`.
            let _ = unsafe { release(self.dev) };
        }
    }
}

/// A stream borrowed from the device's pool; returned on drop.
pub(super) struct PooledStream<'a> {
    dev: &'a DeviceInner,
    pub(super) s: CUstream,
}

impl Drop for PooledStream<'_> {
    fn drop(&mut self) {
        self.dev.pool.lock().push(self.s as usize);
    }
}
