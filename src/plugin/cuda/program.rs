//! CUDA programs: loaded modules (CUBIN, PTX, NVPTX bitcode through ptx), their globals and constructors.

use std::ffi::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::sync::Mutex;

use crate::plugin::{GlobalInfo, Kernel, LaunchDims, PluginError, PluginResult, Program};

use super::driver::*;
use super::kernel::param_layout;
use super::ptx::PtxImage;

use super::context::DeviceInner;
use super::kernel::CudaKernel;

/// What a failed `cuModuleLoadDataEx` means to the caller: an image the driver cannot use is
/// INVALID_BINARY, a PTX the driver's JIT rejects is COMPILE_FAILURE (LLVM 22 says UNKNOWN for both);
/// anything else keeps the general mapping.
pub(super) fn image_load_error(code: CUresult, msg: String) -> PluginError {
    match code {
        CUDA_ERROR_INVALID_IMAGE | CUDA_ERROR_NO_BINARY_FOR_GPU | CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
            PluginError::InvalidBinary(msg)
        }
        CUDA_ERROR_INVALID_PTX | CUDA_ERROR_JIT_COMPILER_NOT_FOUND | CUDA_ERROR_JIT_COMPILATION_DISABLED => {
            PluginError::Compile(msg)
        }
        _ => map_error(code, msg),
    }
}

/// A loaded CUDA module.
pub struct CudaProgram {
    pub(super) dev: Arc<DeviceInner>,
    /// `None` once unloaded.
    pub(super) module: Mutex<Option<usize>>,
    pub(super) dtors: Vec<String>,
    /// Set by the first launch of any of its kernels: unloading must then wait for the context's work
    /// (a queued launch of an unloaded module is an illegal address on the GPU).
    pub(super) launched: Arc<AtomicBool>,
    /// The cache entry this module was loaded from (keeps it alive; dropping evicts it).
    pub(super) _ptx: Option<Arc<PtxImage>>,
}

impl CudaProgram {
    fn module(&self) -> PluginResult<CUmodule> {
        self.module
            .lock()
            .map(|m| m as CUmodule)
            .ok_or_else(|| PluginError::InvalidArgument("program was unloaded".into()))
    }

    /// Run `nvptx$device$init` (or `fini`) the way LLVM's CUDA plugin does: read the function
    /// pointers stored in the `__init_array_object_*` constants (sorted by priority), write them to
    /// a device buffer, point `__init_array_start/end` at it and launch the kernel 1x1.
    pub(super) fn run_init_fini(&self, module: CUmodule, names: &[String], init: bool) -> PluginResult<()> {
        let d = &*self.dev;
        let kname = if init { "nvptx$device$init" } else { "nvptx$device$fini" };
        if names.is_empty() {
            return Ok(());
        }
        let func = match d.function(module, kname) {
            Ok(f) => f,
            Err(PluginError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let s = d.pooled_stream()?;
        let mut ptrs = vec![0u64; names.len()];
        for (i, n) in names.iter().enumerate() {
            let g = d.global(module, n)?;
            if g.size != 8 {
                return Err(PluginError::Driver(format!(
                    "constructor table entry '{n}' has size {} (expected 8)",
                    g.size
                )));
            }
            d.memcpy_async(&mut ptrs[i] as *mut u64 as usize, g.addr, 8, s.s)?;
        }
        d.sync_stream(s.s)?;
        let bytes = ptrs.len() * 8;
        let mut buf: CUdeviceptr = 0;
        // SAFETY: out-pointer valid; context current (pooled_stream bound it).
        d.drv.check(unsafe { (d.drv.cuMemAlloc)(&mut buf, bytes) }, "cuMemAlloc")?;
        let result = (|| {
            d.memcpy_async(buf as usize, ptrs.as_ptr() as usize, bytes, s.s)?;
            let (start, end) = if init {
                ("__init_array_start", "__init_array_end")
            } else {
                ("__fini_array_start", "__fini_array_end")
            };
            let bounds = [buf, buf + bytes as u64];
            for (sym, val) in [(start, &bounds[0]), (end, &bounds[1])] {
                let g = d.global(module, sym)?;
                d.memcpy_async(g.addr, val as *const u64 as usize, 8, s.s)?;
            }
            let dims = LaunchDims { num_groups: [1, 1, 1], group_size: [1, 1, 1], dyn_shared_mem: 0 };
            d.launch_raw(func, kname, &[], &dims, s.s)?;
            d.sync_stream(s.s)
        })();
        let _ = d.sync_stream(s.s);
        // SAFETY: buf allocated above; the stream was synchronized (or failed).
        let freed = d.drv.check(unsafe { (d.drv.cuMemFree)(buf) }, "cuMemFree");
        result.and(freed)
    }
}

impl Program for CudaProgram {
    fn kernel(&self, name: &str) -> PluginResult<Arc<dyn Kernel>> {
        let module = self.module()?;
        let d = &*self.dev;
        d.bind()?;
        let func = d.function(module, name)?;
        let layout = param_layout(d.drv, func);
        let mut static_shared: c_int = 0;
        // SAFETY: out-pointer valid; func from cuModuleGetFunction. A failure leaves 0 (unknown).
        let r = unsafe { (d.drv.cuFuncGetAttribute)(&mut static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func) };
        if r != CUDA_SUCCESS {
            static_shared = 0;
        }
        Ok(Arc::new(CudaKernel {
            name: name.to_string(),
            func: func as usize,
            layout,
            static_shared: static_shared.max(0) as usize,
            dyn_shared_raised: AtomicUsize::new(0),
            launched: self.launched.clone(),
        }))
    }

    fn global(&self, name: &str) -> PluginResult<GlobalInfo> {
        let module = self.module()?;
        self.dev.bind()?;
        self.dev.global(module, name)
    }

    fn unload(&self) -> PluginResult<()> {
        let mut guard = self.module.lock();
        let Some(m) = *guard else { return Ok(()) };
        let d = &*self.dev;
        d.bind()?;
        // Launches of its kernels may still be queued on any stream (olDestroyProgram does not wait
        // for queues): wait for the context's work first, as cuMemFree does. A sticky error of an
        // earlier fault is left to cuModuleUnload to report.
        if self.launched.load(Ordering::Acquire) {
            // SAFETY: context current; no arguments.
            let r = unsafe { (d.drv.cuCtxSynchronize)() };
            if r != CUDA_SUCCESS {
                super::debug(&format!("unload: {}", d.drv.error(r, "cuCtxSynchronize")));
            }
        }
        self.run_init_fini(m as CUmodule, &self.dtors, false)?;
        // SAFETY: module loaded by us; no kernel of it runs any more (context synchronized above,
        // dtor kernel synchronized).
        d.drv.check(unsafe { (d.drv.cuModuleUnload)(m as CUmodule) }, "cuModuleUnload")?;
        *guard = None;
        Ok(())
    }
}

impl Drop for CudaProgram {
    fn drop(&mut self) {
        if let Err(e) = self.unload() {
            super::debug(&format!("unloading a program on drop: {e}"));
        }
    }
}
