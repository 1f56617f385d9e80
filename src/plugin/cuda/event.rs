//! CUDA events.

use std::any::Any;
use std::sync::Arc;

use crate::plugin::{Event, PluginResult};

use super::driver::*;

use super::context::DeviceInner;

pub struct CudaEvent {
    pub(super) dev: Arc<DeviceInner>,
    pub(super) event: usize,
}

// SAFETY: CUDA events are usable from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

impl Event for CudaEvent {
    fn is_complete(&self) -> PluginResult<bool> {
        self.dev.bind()?;
        // SAFETY: live event.
        match unsafe { (self.dev.drv.cuEventQuery)(self.event as CUevent) } {
            CUDA_SUCCESS => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            r => Err(self.dev.drv.error(r, "cuEventQuery")),
        }
    }

    fn sync(&self) -> PluginResult<()> {
        self.dev.bind()?;
        // SAFETY: live event.
        let r = unsafe { (self.dev.drv.cuEventSynchronize)(self.event as CUevent) };
        self.dev.drv.check(r, "cuEventSynchronize")
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if self.dev.bind().is_ok() {
            // SAFETY: live event, never used again.
            let _ = unsafe { (self.dev.drv.cuEventDestroy)(self.event as CUevent) };
        }
    }
}
