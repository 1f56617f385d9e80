//! CPU compute device: GPU-style kernels (JIT-compiled by [`crate::jit`] into work-group functions)
//! run on all cores.
//!
//! * [`machine`]: the device's properties, read from the machine once.
//! * [`memory`]: allocations (host memory, pooled), registered host ranges, copies and fills.
//! * [`pool`]: the persistent thread pool that runs work-groups in chunks.
//! * [`kernel_memory`]: guarded shared/scratch buffers and the stacks kernel code runs on.
//! * [`memcheck`]: the kernel memory checker (`OFFLOAD_RS_MEMCHECK=1`).
//! * [`launch`]: kernels, argument normalisation (natural vs packed layout), grid limits.
//! * [`queue`]: asynchronous in-order queues and their events; [`drain_all`] for `olShutDown`.
//! * [`tier_up`]: a kernel's full version, compiled beside the first launch at a group shape.
//!
//! Everything here is host memory, so the device is `host_addressable`: the runtime may hand its
//! pointers to other devices as host pointers.
//!
//! For the runtime: [`devices`] gives the one device (always the same `Arc`); its `Device::drain`
//! ([`drain_all`]) is what `olShutDown` calls to wait for the work of every queue, including queues whose
//! handle was destroyed while busy. Threads: the pool's workers start on the first launch (or large copy) and live as
//! long as the process (parked when idle); queues have no threads of their own: their work runs on a
//! bounded set of runner threads shared by every queue (see [`queue`]: at most
//! [`queue::max_queue_threads`], started on demand, ended after a second without work).
//!
//! Tests: `cargo test --lib plugin::cpu` (`jit_tests.rs` runs real kernels through the JIT);
//! timings: `cargo test --release --lib -- --ignored --nocapture bench_cpu` (see `bench.rs`) and
//! `... jit_saxpy_bench`.

pub mod devicelib;
pub mod kernel_memory;
pub mod launch;
pub mod machine;
pub mod memcheck;
pub mod memory;
pub mod pool;
pub mod queue;
pub mod tier_up;

#[cfg(test)]
mod bench;
#[cfg(test)]
mod jit_tests;
#[cfg(test)]
mod tests;

pub use launch::CpuKernel;
pub use queue::{CpuEvent, CpuQueue, drain_all};

use crate::jit::{self, JitError, LoadedImage};
use crate::plugin::{
    AllocKind, Device, DeviceInfo, GlobalInfo, Kernel, LaunchArgs, LaunchDims, PluginError, PluginResult, Program,
    Queue,
};
use crate::sync::Mutex;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Checks the CPU device's settings (read once, at the first `olInit`): `OFFLOAD_RS_CPU_THREADS`, the
/// JIT's target, `OFFLOAD_RS_CPU_TARGET` (a target this machine cannot run is refused here, not at the
/// first launch), and the time limit `OFFLOAD_RS_KERNEL_TIMEOUT` (read at every first `olInit`). An error is `OL_ERRC_INVALID_VALUE` from `olInit`.
pub fn check_settings() -> PluginResult<()> {
    machine::threads_setting().map_err(|e| PluginError::InvalidValue(e.to_string()))?;
    devicelib::read_timeout().map_err(PluginError::InvalidValue)?;
    jit::cpu_target_check().map_err(map_jit_error)
}

/// The CPU devices: exactly one, shared by every caller.
pub fn devices() -> Vec<Arc<dyn Device>> {
    vec![device() as Arc<dyn Device>]
}

/// The one CPU device.
pub fn device() -> Arc<CpuDevice> {
    static DEV: OnceLock<Arc<CpuDevice>> = OnceLock::new();
    DEV.get_or_init(|| Arc::new(CpuDevice::new())).clone()
}

/// Group size answered by `olCalculateOptimalOccupancy`: 256 work-items. On the CPU a work-group is a
/// loop on one thread, so the size only needs to be a multiple of the widest SIMD width (16 floats with
/// AVX-512) and large enough to amortise the per-group call; 256 is what the measurements in
/// cpu-kernels.md §4b used and keeps 256 x 4 bytes of a vector in L1. `SharedMemory` is taken as
/// dynamic local memory per work-group, as LLVM 22's CUDA plugin passes it: it does not change the
/// answer, but more than the device's local memory is `OutOfResources`.
pub(crate) const OPTIMAL_GROUP_SIZE: usize = 256;

pub struct CpuDevice {
    info: DeviceInfo,
    memory: memory::Memory,
}

impl CpuDevice {
    fn new() -> CpuDevice {
        CpuDevice { info: machine::read_device_info(), memory: memory::Memory::new() }
    }
}

impl Device for CpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn host_addressable(&self) -> bool {
        true
    }

    fn alloc(&self, size: usize, _kind: AllocKind) -> PluginResult<usize> {
        self.memory.alloc(size)
    }

    fn free(&self, ptr: usize, _kind: AllocKind) -> PluginResult<()> {
        self.memory.free(ptr)
    }

    fn freed_by_user(&self, ptr: usize) {
        memcheck::untrack(ptr);
    }

    fn register_host(&self, ptr: usize, size: usize) -> PluginResult<usize> {
        self.memory.register_host(ptr, size)
    }

    fn unregister_host(&self, ptr: usize) -> PluginResult<()> {
        self.memory.unregister_host(ptr)
    }

    fn registered_range(&self, ptr: usize) -> Option<(usize, usize)> {
        self.memory.registered_range(ptr)
    }

    unsafe fn memcpy_sync(&self, dst: usize, src: usize, size: usize) -> PluginResult<()> {
        // SAFETY: the API caller guarantees both ranges valid (olMemcpy's contract); every side is
        // host memory on this device.
        unsafe { memory::copy(dst, src, size) };
        Ok(())
    }

    fn is_valid_binary(&self, image: &[u8]) -> bool {
        jit::is_valid_for_cpu(image)
    }

    fn load_program(&self, image: &[u8]) -> PluginResult<Arc<dyn Program>> {
        let checker = jit::Checker { hook: memcheck::check_access, structors: memcheck::run_structors };
        jit::set_runtime_functions(devicelib::functions());
        let _ = devicelib::take_outside_failure();
        let img = jit::load_with(image, Some(checker)).map_err(map_jit_error);
        // a constructor's failed assert or trap fails the load (the instance goes, destructors run)
        if let Some(f) = devicelib::take_outside_failure() {
            return Err(PluginError::Backend(f.describe_constructor()));
        }
        let img = img?;
        Ok(Arc::new(CpuProgram { image: Mutex::new(Some(Arc::new(img))), kernels: Mutex::new(HashMap::new()) }))
    }

    fn create_queue(&self) -> PluginResult<Arc<dyn Queue>> {
        Ok(Arc::new(CpuQueue::new()))
    }

    fn optimal_group_size(&self, kernel: &dyn Kernel, dyn_shared_mem: usize) -> PluginResult<usize> {
        let Some(k) = kernel.as_any().downcast_ref::<CpuKernel>() else {
            return Err(PluginError::InvalidArgument(format!(
                "kernel '{}' does not belong to the CPU device",
                kernel.name()
            )));
        };
        let local = (k.static_local_bytes() as u64).saturating_add(dyn_shared_mem as u64);
        if local > machine::LOCAL_MEM_PER_GROUP {
            return Err(PluginError::OutOfResources(format!(
                "kernel '{}' with {dyn_shared_mem} bytes of dynamic local memory needs {local} bytes per \
                 work-group; the CPU device has {}",
                k.name(),
                machine::LOCAL_MEM_PER_GROUP
            )));
        }
        Ok(OPTIMAL_GROUP_SIZE)
    }

    fn launch_sync(&self, kernel: Arc<dyn Kernel>, args: LaunchArgs<'_>, dims: LaunchDims) -> PluginResult<()> {
        launch::prepare(kernel, args, dims)?.execute()
    }

    fn drain(&self) {
        drain_all();
        tier_up::drain();
    }

    fn alloc_aligned(&self, size: usize, _kind: AllocKind, align: usize) -> PluginResult<usize> {
        self.memory.alloc_aligned(size, align)
    }

    fn max_cooperative_groups(
        &self,
        kernel: &dyn Kernel,
        group_size: [u32; 3],
        dyn_shared_mem: usize,
    ) -> PluginResult<u32> {
        launch::max_cooperative_groups(kernel, group_size, dyn_shared_mem)
    }

    fn cooperative_launch_support(&self) -> bool {
        true
    }

    fn launch_cooperative_sync(
        &self,
        kernel: Arc<dyn Kernel>,
        args: LaunchArgs<'_>,
        dims: LaunchDims,
    ) -> PluginResult<()> {
        launch::prepare_cooperative(kernel, args, dims)?.execute()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// JIT errors as LLVM 22 reports them.
pub fn map_jit_error(e: JitError) -> PluginError {
    match e {
        JitError::InvalidBinary(m) => PluginError::InvalidBinary(m),
        JitError::Compile(m) | JitError::Link(m) | JitError::Io(m) => {
            PluginError::Compile(format!("failure to jit IR image: {m}"))
        }
        JitError::NotFound(m) => PluginError::NotFound(m),
        JitError::Run(m) => PluginError::Backend(m),
        JitError::InvalidTarget(m) => PluginError::InvalidValue(m),
        JitError::OutOfResources(m) => PluginError::OutOfResources(m),
    }
}

/// A loaded program. `unload` drops the image (device global destructors run then). Kernel lookups
/// are cached: the same name gives the same kernel object.
pub struct CpuProgram {
    image: Mutex<Option<Arc<LoadedImage>>>,
    kernels: Mutex<HashMap<String, Arc<CpuKernel>>>,
}

impl CpuProgram {
    fn image(&self) -> PluginResult<Arc<LoadedImage>> {
        self.image.lock().clone().ok_or_else(|| PluginError::InvalidArgument("the program was unloaded".into()))
    }
}

impl Program for CpuProgram {
    fn kernel(&self, name: &str) -> PluginResult<Arc<dyn Kernel>> {
        let image = self.image()?;
        if let Some(k) = self.kernels.lock().get(name) {
            return Ok(k.clone());
        }
        let entry =
            image.kernel(name).ok_or_else(|| PluginError::NotFound(format!("could not find kernel '{name}'")))?;
        let k = self
            .kernels
            .lock()
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(CpuKernel::from_entry(entry, image.mapping())))
            .clone();
        Ok(k)
    }

    fn global(&self, name: &str) -> PluginResult<GlobalInfo> {
        let (addr, size) = self
            .image()?
            .global(name)
            .map_err(map_jit_error)?
            .ok_or_else(|| PluginError::NotFound(format!("could not find global variable '{name}'")))?;
        Ok(GlobalInfo { addr, size })
    }

    fn unload(&self) -> PluginResult<()> {
        // kernels keep the code alive through their entries; the image (and its destructors) goes now
        let image = self.image.lock().take();
        self.kernels.lock().clear();
        // the destructors run now unless a launch still holds a kernel; the memory checker's finding in
        // them is this call's error
        match image.and_then(Arc::into_inner) {
            Some(img) => img.close().map_err(map_jit_error),
            None => Ok(()),
        }
    }
}
