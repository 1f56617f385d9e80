//! CUDA kernels: launch limits, the parameter layout from the driver, argument buffers.

use std::any::Any;
use std::ffi::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::plugin::{ArgSlots, DeviceInfo, Kernel, LaunchArgs, LaunchDims, PluginError, PluginResult};

use super::driver::*;
use super::image;

use super::context::DeviceInner;

/// A grid within the device's limits (block dims, threads per block, grid dims; none zero), else
/// INVALID_ARGUMENT saying which limit, as the CPU device does (the driver would only say
/// CUDA_ERROR_INVALID_VALUE).
pub(crate) fn check_dims(name: &str, info: &DeviceInfo, max_grid: [u32; 3], dims: &LaunchDims) -> PluginResult<()> {
    let bad = |s: String| Err(PluginError::InvalidArgument(format!("invalid launch of kernel '{name}': {s}")));
    for (d, axis) in ["x", "y", "z"].iter().enumerate() {
        let (gs, max) = (dims.group_size[d], info.max_work_group_size_per_dim[d]);
        if gs == 0 || gs > max {
            return bad(format!("group size {gs} in dimension {axis} is outside 1..={max}"));
        }
        let (ng, max) = (dims.num_groups[d], max_grid[d]);
        if ng == 0 || ng > max {
            return bad(format!("{ng} work-groups in dimension {axis}; the device allows 1..={max}"));
        }
    }
    let wis: u64 = dims.group_size.iter().map(|&g| g as u64).product();
    if wis > info.max_work_group_size as u64 {
        let [x, y, z] = dims.group_size;
        return bad(format!(
            "group size {x}x{y}x{z} = {wis} work-items exceeds the device's limit of {}",
            info.max_work_group_size
        ));
    }
    Ok(())
}

/// `(offset, size)` of every parameter via `cuFuncGetParamInfo`; None when the driver lacks it (or reports
/// a parameter beyond the address space).
pub(super) fn param_layout(drv: &Driver, func: CUfunction) -> Option<ArgSlots> {
    let f = drv.cuFuncGetParamInfo?;
    let mut params = Vec::new();
    for i in 0..4096usize {
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: out-pointers valid; func from cuModuleGetFunction.
        let r = unsafe { f(func, i, &mut off, &mut size) };
        if r == CUDA_ERROR_INVALID_VALUE {
            break; // past the last parameter
        }
        if r != CUDA_SUCCESS {
            return None;
        }
        params.push((off, size));
    }
    ArgSlots::new(params)
}

pub struct CudaKernel {
    pub(super) name: String,
    pub(super) func: usize,
    pub(super) layout: Option<ArgSlots>,
    /// CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (0 when the driver did not say).
    pub(super) static_shared: usize,
    /// The dynamic shared memory limit we raised the function to (0: never).
    pub(super) dyn_shared_raised: AtomicUsize,
    /// The program's "a kernel was launched" flag.
    pub(super) launched: Arc<AtomicBool>,
}

impl CudaKernel {
    pub(crate) fn func(&self) -> CUfunction {
        self.func as CUfunction
    }

    /// Real parameter block (`None`: unknown, the driver predates `cuFuncGetParamInfo`).
    pub fn param_layout(&self) -> Option<&ArgSlots> {
        self.layout.as_ref()
    }

    pub(super) fn launch_on(
        &self,
        d: &DeviceInner,
        args: LaunchArgs<'_>,
        dims: &LaunchDims,
        stream: CUstream,
    ) -> PluginResult<()> {
        check_dims(&self.name, &d.info, d.max_grid, dims)?;
        let args = image::prepare_args(args, self.layout.as_ref())?;
        let shm = dims.dyn_shared_mem;
        // Static plus dynamic shared memory over the default per-block limit (48 KiB) needs the
        // function's dynamic limit raised (up to the opt-in maximum, which the driver checks).
        let default_limit = d.info.work_group_local_mem_size as usize;
        if shm > 0
            && self.static_shared.saturating_add(shm) > default_limit
            && self.dyn_shared_raised.load(Ordering::Relaxed) < shm
        {
            // SAFETY: valid function handle.
            let r = unsafe {
                (d.drv.cuFuncSetAttribute)(self.func(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shm as c_int)
            };
            d.drv.check(r, "cuFuncSetAttribute")?;
            self.dyn_shared_raised.fetch_max(shm, Ordering::Relaxed);
        }
        if !self.launched.load(Ordering::Relaxed) {
            self.launched.store(true, Ordering::Release);
        }
        d.launch_raw(self.func(), &self.name, &args, dims, stream)
    }
}

impl Kernel for CudaKernel {
    fn name(&self) -> &str {
        &self.name
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
