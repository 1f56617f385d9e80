//! CUDA plugin: NVIDIA GPUs through `libcuda.so.1`, loaded at run time.
//!
//! Layers (cudarc-style): [`driver`] (raw fn table + `Result` wrappers) -> [`device`] (safe objects);
//! [`image`] holds the pure helpers and [`ptx`] the in-process NVPTX bitcode -> PTX compiler with its
//! content-addressed cache.
//!
//! * No driver library, a missing required entry point, a `cuInit` failure or zero devices: zero
//!   devices, never a panic (`OFFLOAD_RS_DEBUG=1` prints why on stderr).
//! * One primary context per device, made current on the calling thread before driver calls
//!   (`cuCtxGetCurrent` check, `cuCtxSetCurrent` when it differs).
//! * Programs: CUBIN ELF, PTX text, or NVPTX LLVM bitcode (compiled here to PTX for the device's
//!   `sm_XY` and the PTX ISA its driver accepts, cached by content, see [`ptx`]); fatbinaries are
//!   handed to the driver too. Anything else: INVALID_BINARY. Driver JIT failures carry the JIT
//!   error log. Device global constructors run after loading, destructors before unloading
//!   (`nvptx$device$init`/`fini` with the `__init_array_object_*` table sorted by priority, as
//!   LLVM 22's CUDA plugin does).
//! * Memory: HOST = `cuMemAllocHost`, DEVICE = `cuMemAlloc`, MANAGED = `cuMemAllocManaged` (global
//!   attach). Copies use `cuMemcpyAsync` with unified addressing (any direction, pageable host memory
//!   and the CPU device's memory included). `register_host` page-locks with `cuMemHostRegister`
//!   (PORTABLE) and falls back to bookkeeping when the driver refuses (LLVM 22 never pins).
//! * Queues are non-blocking streams; synchronous operations use a per-device pool of streams.
//!   Foreign events (another plugin's) are waited for by a host function that blocks the stream.
//! * Kernel arguments: one buffer passed with `CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE`. With
//!   `cuFuncGetParamInfo` (CUDA >= 12.4) the real parameter block is known: a larger buffer is cut
//!   to it, a buffer whose size equals the *packed* sum of the parameter sizes (Unified Runtime's
//!   adapter packs without padding) is repacked to the real offsets, any other smaller buffer is
//!   INVALID_ARGUMENT `mismatch in kernel arguments`. Without it the buffer is passed as given.
//!   LLVM 23.1's values (one per parameter) go straight to the block's offsets where their count and
//!   sizes match it; otherwise they are packed one after another and taken as such a buffer.
//!   See [`image::prepare_args`].

pub mod context;
pub mod device;
pub mod driver;
pub mod event;
pub mod image;
pub mod kernel;
pub mod program;
pub mod ptx;
pub mod queue;
pub mod staging;

use std::sync::{Arc, OnceLock};

use crate::plugin::Device;

use driver::{CUDA_ERROR_NO_DEVICE, CUDA_SUCCESS, Driver};

/// A debug line on stderr when `OFFLOAD_RS_DEBUG` is set.
pub(crate) fn debug(msg: &str) {
    if std::env::var_os("OFFLOAD_RS_DEBUG").is_some() {
        eprintln!("offload-rs cuda: {msg}");
    }
}

/// The driver table, loaded once per process (None: no usable driver; the reason is kept).
fn driver() -> Result<&'static Driver, String> {
    static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
    DRIVER.get_or_init(Driver::load).as_ref().map_err(Clone::clone)
}

/// The devices of this plugin; empty when there is no usable CUDA driver or GPU.
pub fn devices() -> Vec<Arc<dyn Device>> {
    match std::panic::catch_unwind(try_devices) {
        Ok(Ok(v)) => v,
        Ok(Err(why)) => {
            debug(&format!("no CUDA devices: {why}"));
            Vec::new()
        }
        Err(_) => {
            debug("no CUDA devices: panic during initialisation");
            Vec::new()
        }
    }
}

fn try_devices() -> Result<Vec<Arc<dyn Device>>, String> {
    let drv = driver()?;
    // SAFETY: cuInit has no preconditions.
    let r = unsafe { (drv.cuInit)(0) };
    if r == CUDA_ERROR_NO_DEVICE {
        return Ok(Vec::new());
    }
    drv.check(r, "cuInit").map_err(|e| e.to_string())?;
    let mut version = 0;
    // SAFETY: out-pointer valid.
    drv.check(unsafe { (drv.cuDriverGetVersion)(&mut version) }, "cuDriverGetVersion").map_err(|e| e.to_string())?;
    let mut count = 0;
    // SAFETY: out-pointer valid.
    let r = unsafe { (drv.cuDeviceGetCount)(&mut count) };
    if r != CUDA_SUCCESS {
        return Err(drv.error(r, "cuDeviceGetCount").to_string());
    }
    let mut out: Vec<Arc<dyn Device>> = Vec::new();
    for i in 0..count {
        match device::CudaDevice::open(drv, i, version) {
            Ok(d) => out.push(Arc::new(d)),
            Err(e) => debug(&format!("skipping CUDA device {i}: {e}")),
        }
    }
    if drv.cuFuncGetParamInfo.is_none() {
        debug("driver has no cuFuncGetParamInfo (CUDA < 12.4): kernel arguments are passed unchecked");
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
