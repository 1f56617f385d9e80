//! JIT: TEMPORARY STUB for the `cpu` branch (replaced by the real module at merge).
//!
//! It has exactly the interface the CPU plugin builds on; loading always fails. The CPU plugin's
//! tests use hand-written work-group functions instead.

use std::sync::Arc;

/// Is `image` something [`load`] accepts for the CPU device?
pub fn is_valid_for_cpu(_image: &[u8]) -> bool {
    false
}

/// Load (JIT-compile) an image.
pub fn load(_image: &[u8]) -> Result<LoadedImage, JitError> {
    Err(JitError::InvalidBinary("the JIT is a stub on this branch".into()))
}

#[derive(thiserror::Error, Debug)]
pub enum JitError {
    #[error("{0}")]
    InvalidBinary(String),
    #[error("{0}")]
    Compile(String),
    #[error("{0}")]
    Link(String),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    NotFound(String),
}

/// A loaded image. `Send + Sync`; dropping it runs device global destructors and unmaps it.
pub struct LoadedImage {
    _private: (),
}

impl LoadedImage {
    pub fn kernel(&self, _name: &str) -> Option<KernelEntry> {
        None
    }
    pub fn global(&self, _name: &str) -> Option<(usize, usize)> {
        None
    }
}

#[derive(Clone)]
pub struct KernelEntry {
    pub name: String,
    pub wg_fn: WgFn,
    pub params: Vec<ParamLayout>,
    pub static_local_bytes: usize,
    pub scratch_bytes_per_wi: usize,
    pub has_barriers: bool,
    pub warp_size: u32,
    #[allow(dead_code)]
    keepalive: Arc<()>,
}

/// Size and alignment of one kernel parameter. An empty `params` vec means "raw buffer passed through
/// unchanged".
#[derive(Clone, Copy, Debug)]
pub struct ParamLayout {
    pub size: usize,
    pub align: usize,
}

/// One call runs one whole work-group on the calling thread.
pub type WgFn = unsafe extern "C" fn(ctx: *const WgCtx);

/// What a work-group function gets.
#[repr(C)]
pub struct WgCtx {
    /// arg buffer in natural C-struct layout of the params
    pub args: *const u8,
    /// static_local_bytes, 64-byte aligned, per worker
    pub local_mem: *mut u8,
    /// DynSharedMemory bytes, 64-byte aligned, per worker
    pub dyn_local_mem: *mut u8,
    /// scratch_bytes_per_wi * group_size.x*y*z, 64-byte aligned, per worker
    pub scratch: *mut u8,
    pub group_id: [u32; 3],
    pub num_groups: [u32; 3],
    pub group_size: [u32; 3],
    pub _pad: u32,
}
