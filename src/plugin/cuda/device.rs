//! Layer 3: safe objects over the driver table. This file: the device (context, memory, stream pool);
//! beside it the program, kernel, queue (stream) and event.

use std::any::Any;
use std::ffi::{c_int, c_void};
use std::panic::catch_unwind;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::sync::Mutex;

use crate::plugin::{
    AllocKind, Device, DeviceInfo, Kernel, LaunchArgs, LaunchDims, PluginError, PluginResult, Program, Queue,
};

use super::debug;
use super::driver::*;
use super::image::{self, CudaImageKind};
use super::program::image_load_error;
use super::ptx::{self, PtxImage};
use crate::plugin::host_ranges::HostRanges;

use super::context::DeviceInner;
use super::kernel::CudaKernel;
use super::program::CudaProgram;
use super::queue::CudaQueue;

/// One CUDA device (its primary context).
pub struct CudaDevice {
    pub(crate) inner: Arc<DeviceInner>,
}

fn attr(drv: &Driver, dev: CUdevice, a: c_int) -> PluginResult<i32> {
    let mut v = 0;
    // SAFETY: out-pointer valid; dev is a device ordinal from cuDeviceGet.
    drv.check(unsafe { (drv.cuDeviceGetAttribute)(&mut v, a, dev) }, "cuDeviceGetAttribute")?;
    Ok(v)
}

impl CudaDevice {
    /// Open device `ordinal`: retain its primary context, read its attributes.
    pub(crate) fn open(drv: &'static Driver, ordinal: i32, driver_version: i32) -> PluginResult<Self> {
        let mut dev: CUdevice = 0;
        // SAFETY: out-pointer valid.
        drv.check(unsafe { (drv.cuDeviceGet)(&mut dev, ordinal) }, "cuDeviceGet")?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer valid; dev from cuDeviceGet.
        drv.check(unsafe { (drv.cuDevicePrimaryCtxRetain)(&mut ctx, dev) }, "cuDevicePrimaryCtxRetain")?;

        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: buffer of the given length.
        drv.check(unsafe { (drv.cuDeviceGetName)(name.as_mut_ptr(), name.len() as c_int, dev) }, "cuDeviceGetName")?;
        name[255] = 0;
        // SAFETY: NUL-terminated within the buffer (forced above).
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();

        let mut uuid = [0u8; 16];
        let uuid_fn = drv.cuDeviceGetUuid_v2.or(drv.cuDeviceGetUuid);
        if let Some(f) = uuid_fn {
            // SAFETY: CUuuid is 16 bytes.
            drv.check(unsafe { f(&mut uuid, dev) }, "cuDeviceGetUuid")?;
        }
        let mut total = 0usize;
        // SAFETY: out-pointer valid.
        drv.check(unsafe { (drv.cuDeviceTotalMem)(&mut total, dev) }, "cuDeviceTotalMem")?;

        let a = |x| attr(drv, dev, x);
        let u = |v: i32| v.max(0) as u32;
        // Informational attributes (clock rates): 0 when a driver no longer reports them, rather than
        // losing the device.
        let informational = |x| {
            a(x).map(u).unwrap_or_else(|e| {
                debug(&format!("device {ordinal}: attribute {x} unavailable ({e}); reporting 0"));
                0
            })
        };
        let major = u(a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?);
        let minor = u(a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?);
        let max_threads = u(a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?);
        let block = [
            u(a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?),
            u(a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?),
            u(a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?),
        ];
        let grid = [
            u(a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?),
            u(a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?),
            u(a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?),
        ];
        let cap = |x: u64| x.min(u32::MAX as u64) as u32;
        let work = [0, 1, 2].map(|i| cap(grid[i] as u64 * block[i] as u64));
        let info = DeviceInfo {
            name: name.clone(),
            product_name: name,
            uid: image::uid_string(&uuid),
            vendor: "NVIDIA Corporation".into(),
            driver_version: image::driver_version_string(driver_version),
            device_type: 2,
            max_work_group_size: max_threads,
            max_work_group_size_per_dim: block,
            max_work_size: cap(grid[0] as u64 * max_threads as u64),
            max_work_size_per_dim: work,
            vendor_id: 0x10de,
            num_compute_units: u(a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
            max_clock_frequency: informational(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000,
            memory_clock_rate: informational(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000,
            address_bits: 64,
            max_mem_alloc_size: total as u64,
            global_mem_size: total as u64,
            work_group_local_mem_size: u(a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?) as u64,
            single_fp_config: 0x7F,
            double_fp_config: 0x7F,
            half_fp_config: 0,
            native_vector_width: [1, 1, 1, 1, 1, 1, 0],
        };
        let inner = DeviceInner {
            drv,
            dev,
            ctx,
            max_grid: grid,
            major,
            minor,
            ptx_isa: image::ptx_isa_for_driver(driver_version),
            info,
            pool: Mutex::new(Vec::new()),
            registered: Mutex::new(HostRanges::default()),
            staging: Arc::default(),
        };
        Ok(CudaDevice { inner: Arc::new(inner) })
    }

    fn kernel_of<'k>(&self, kernel: &'k dyn Kernel) -> PluginResult<&'k CudaKernel> {
        kernel
            .as_any()
            .downcast_ref::<CudaKernel>()
            .ok_or_else(|| PluginError::InvalidArgument("kernel does not belong to a CUDA device".into()))
    }

    /// PTX ISA version (e.g. 84) used for bitcode compiled for this device.
    pub fn ptx_isa(&self) -> u32 {
        self.inner.ptx_isa
    }
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    fn host_addressable(&self) -> bool {
        false
    }

    fn alloc(&self, size: usize, kind: AllocKind) -> PluginResult<usize> {
        let d = &*self.inner;
        d.bind()?;
        let ptr = match kind {
            AllocKind::Device => {
                let mut p: CUdeviceptr = 0;
                // SAFETY: out-pointer valid; context current.
                d.drv.check(unsafe { (d.drv.cuMemAlloc)(&mut p, size) }, "cuMemAlloc")?;
                p as usize
            }
            AllocKind::Host => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: as above.
                d.drv.check(unsafe { (d.drv.cuMemAllocHost)(&mut p, size) }, "cuMemAllocHost")?;
                p as usize
            }
            AllocKind::Managed => {
                let mut p: CUdeviceptr = 0;
                // SAFETY: as above.
                let r = unsafe { (d.drv.cuMemAllocManaged)(&mut p, size, CU_MEM_ATTACH_GLOBAL) };
                d.drv.check(r, "cuMemAllocManaged")?;
                p as usize
            }
        };
        if ptr == 0 {
            return Err(PluginError::OutOfResources("failed to allocate from device allocator".into()));
        }
        Ok(ptr)
    }

    fn free(&self, ptr: usize, kind: AllocKind) -> PluginResult<()> {
        let d = &*self.inner;
        d.bind()?;
        match kind {
            // SAFETY: ptr came from cuMemAllocHost (the runtime records the kind).
            AllocKind::Host => d.drv.check(unsafe { (d.drv.cuMemFreeHost)(ptr as *mut c_void) }, "cuMemFreeHost"),
            // SAFETY: ptr came from cuMemAlloc/cuMemAllocManaged.
            _ => d.drv.check(unsafe { (d.drv.cuMemFree)(ptr as CUdeviceptr) }, "cuMemFree"),
        }
    }

    /// Page-locks the range (`cuMemHostRegister`, PORTABLE) and returns the same pointer (unified
    /// addressing). Memory that is already page-locked, or that the driver refuses to lock, is only
    /// accounted for (LLVM 22 never pins at all). As in LLVM 22's pinned-buffer table, a range that
    /// lies inside a registered one only adds a use of it, and one that overlaps a registered range
    /// without being contained in it is INVALID_ARGUMENT.
    fn register_host(&self, ptr: usize, size: usize) -> PluginResult<usize> {
        let d = &*self.inner;
        let mut reg = d.registered.lock();
        if reg.add_use(ptr, size)? {
            return Ok(ptr);
        }
        d.bind()?;
        // SAFETY: the caller guarantees [ptr, ptr+size) is its live host memory.
        let r = unsafe { (d.drv.cuMemHostRegister)(ptr as *mut c_void, size, CU_MEMHOSTREGISTER_PORTABLE) };
        let pinned = r == CUDA_SUCCESS;
        if !pinned && r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED {
            super::debug(&format!("register_host: not pinned ({})", d.drv.error(r, "cuMemHostRegister")));
        }
        reg.insert(ptr, size, pinned);
        Ok(ptr)
    }

    /// `ptr` may be anywhere in a registered range.
    fn unregister_host(&self, ptr: usize) -> PluginResult<()> {
        let d = &*self.inner;
        let last = d.registered.lock().release(ptr)?;
        // The last use of a range we page-locked ourselves: unlock it.
        if let Some((base, true)) = last {
            d.bind()?;
            // SAFETY: base was registered by us.
            d.drv.check(unsafe { (d.drv.cuMemHostUnregister)(base as *mut c_void) }, "cuMemHostUnregister")?;
        }
        Ok(())
    }

    fn register_host_unlocked(&self, ptr: usize, size: usize) -> PluginResult<usize> {
        // 23.1 without OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY: accounted for, not page-locked
        let mut reg = self.inner.registered.lock();
        if !reg.add_use(ptr, size)? {
            reg.insert(ptr, size, false);
        }
        Ok(ptr)
    }

    fn registered_range(&self, ptr: usize) -> Option<(usize, usize)> {
        self.inner.registered.lock().find(ptr)
    }

    fn stage(&self, size: usize) -> PluginResult<Option<Box<dyn crate::plugin::Staged>>> {
        self.inner.stage(size)
    }

    unsafe fn memcpy_sync(&self, dst: usize, src: usize, size: usize) -> PluginResult<()> {
        if size == 0 {
            return Ok(());
        }
        let d = &*self.inner;
        let s = d.pooled_stream()?;
        d.memcpy_async(dst, src, size, s.s)?;
        d.sync_stream(s.s)
    }

    fn is_valid_binary(&self, image: &[u8]) -> bool {
        let (major, minor, isa) = (self.inner.major, self.inner.minor, self.inner.ptx_isa);
        catch_unwind(|| match image::classify(image) {
            CudaImageKind::Cubin => image::cubin_sm(image).is_some_and(|sm| image::sm_compatible(sm, major, minor)),
            CudaImageKind::Ptx => image::ptx_compatible(image, major, minor, isa),
            CudaImageKind::Bitcode => ptx::bitcode_triple(image).is_some_and(|t| t.starts_with("nvptx64")),
            CudaImageKind::Fatbin | CudaImageKind::Unknown(_) => false,
        })
        .unwrap_or(false)
    }

    fn load_program(&self, image: &[u8]) -> PluginResult<Arc<dyn Program>> {
        let d = &self.inner;
        let (bytes, ctors, dtors, compiled): (Vec<u8>, Vec<String>, Vec<String>, Option<Arc<PtxImage>>) =
            match image::classify(image) {
                CudaImageKind::Bitcode => {
                    // What is_valid_binary rejects is not loaded either (the same reader, no LLVM).
                    match ptx::bitcode_triple(image) {
                        Some(t) if t.starts_with("nvptx64") => {}
                        Some(t) => return Err(image::invalid_binary(&format!("LLVM bitcode for target '{t}'"))),
                        None => return Err(image::invalid_binary("malformed LLVM bitcode")),
                    }
                    let p = ptx::compile_cached(image, d.major, d.minor, d.ptx_isa)?;
                    (Vec::new(), p.ctors.clone(), p.dtors.clone(), Some(p))
                }
                CudaImageKind::Ptx => {
                    let end = image.iter().position(|&b| b == 0).unwrap_or(image.len());
                    let text = String::from_utf8_lossy(&image[..end]).into_owned();
                    let (c, f) = image::ptx_ctor_dtor_names(&text)?;
                    let mut v = image[..end].to_vec();
                    v.push(0);
                    (v, c, f, None)
                }
                CudaImageKind::Cubin => {
                    let (c, f) = image::cubin_ctor_dtor_names(image)?;
                    (image.to_vec(), c, f, None)
                }
                CudaImageKind::Fatbin => (image.to_vec(), Vec::new(), Vec::new(), None),
                CudaImageKind::Unknown(what) => return Err(image::invalid_binary(&what)),
            };
        let data: &[u8] = match &compiled {
            Some(p) => &p.ptx,
            None => &bytes,
        };
        // Keep the image 8-byte aligned for the driver, with a NUL after it: the driver reads PTX up to its
        // NUL (`cuModuleLoadDataEx` takes "NUL-terminated PTX"), and the client's bytes need not have one.
        let mut aligned = vec![0u64; (data.len() + 1).div_ceil(8)];
        // SAFETY: aligned has room for data.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), data.len()) };

        d.bind()?;
        let mut err_log = vec![0u8; 16 * 1024];
        let mut info_log = vec![0u8; 16 * 1024];
        let mut opts = [
            CU_JIT_ERROR_LOG_BUFFER,
            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            CU_JIT_INFO_LOG_BUFFER,
            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut vals: [*mut c_void; 4] = [
            err_log.as_mut_ptr().cast(),
            err_log.len() as *mut c_void,
            info_log.as_mut_ptr().cast(),
            info_log.len() as *mut c_void,
        ];
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: image buffer live for the call; option arrays of equal length; log buffers of the
        // sizes given.
        let r = unsafe {
            (d.drv.cuModuleLoadDataEx)(
                &mut module,
                aligned.as_ptr().cast(),
                opts.len() as u32,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        };
        if r != CUDA_SUCCESS {
            let log =
                String::from_utf8_lossy(&err_log[..err_log.iter().position(|&b| b == 0).unwrap_or(err_log.len())])
                    .trim()
                    .to_string();
            let base = d.drv.error(r, "cuModuleLoadDataEx");
            let msg = if log.is_empty() { base.to_string() } else { format!("{base}: {log}") };
            return Err(image_load_error(r, msg));
        }
        let prog = CudaProgram {
            dev: d.clone(),
            module: Mutex::new(Some(module as usize)),
            dtors,
            launched: Arc::new(AtomicBool::new(false)),
            _ptx: compiled,
        };
        // Device global constructors, synchronously (LLVM 22). On failure the module is unloaded.
        if let Err(e) = prog.run_init_fini(module, &ctors, true) {
            // Don't run destructors of a program whose constructors failed.
            let m = prog.module.lock().take();
            if let Some(m) = m {
                // SAFETY: module loaded above, no longer used.
                let _ = unsafe { (d.drv.cuModuleUnload)(m as CUmodule) };
            }
            return Err(e);
        }
        Ok(Arc::new(prog))
    }

    fn create_queue(&self) -> PluginResult<Arc<dyn Queue>> {
        let d = &self.inner;
        d.bind()?;
        let mut s: CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer valid; context current.
        d.drv.check(unsafe { (d.drv.cuStreamCreate)(&mut s, CU_STREAM_NON_BLOCKING) }, "cuStreamCreate")?;
        Ok(Arc::new(CudaQueue { dev: d.clone(), stream: s as usize, error: Arc::new(Mutex::new(None)) }))
    }

    fn optimal_group_size(&self, kernel: &dyn Kernel, dyn_shared_mem: usize) -> PluginResult<usize> {
        let k = self.kernel_of(kernel)?;
        let d = &self.inner;
        d.bind()?;
        let (mut min_grid, mut block) = (0, 0);
        // SAFETY: out-pointers valid; function of a loaded module.
        let r = unsafe {
            (d.drv.cuOccupancyMaxPotentialBlockSize)(&mut min_grid, &mut block, k.func(), None, dyn_shared_mem, 0)
        };
        d.drv.check(r, "cuOccupancyMaxPotentialBlockSize")?;
        Ok(block.max(0) as usize)
    }

    fn launch_sync(&self, kernel: Arc<dyn Kernel>, args: LaunchArgs<'_>, dims: LaunchDims) -> PluginResult<()> {
        let k = self.kernel_of(&*kernel)?;
        let d = &*self.inner;
        let s = d.pooled_stream()?;
        k.launch_on(d, args, &dims, s.s)?;
        d.sync_stream(s.s)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
