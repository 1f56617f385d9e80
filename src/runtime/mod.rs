//! Safe runtime objects and the process-global context. Nothing here sees a raw C pointer: addresses
//! are `usize`, buffers are slices, handles are [`Handle`] values.

pub mod handle;
pub mod memory;
pub mod objects;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::plugin;
use handle::{Handle, Object};

pub use objects::{Device, DeviceKind, Event, Platform, Program, Queue, Symbol, SymbolKind};

/// Everything `olInit` builds and the last `olShutDown` tears down.
pub struct Context {
    pub trace: bool,
    pub validate: bool,
    /// devices in iteration order (host device last)
    pub devices: Vec<Arc<Device>>,
    pub host_device: Handle,
    pub allocs: memory::AllocTable,
    /// Queues destroyed while busy: drained at shutdown.
    pub outstanding: Mutex<Vec<Arc<dyn plugin::Queue>>>,
}

struct InitState {
    refcount: usize,
}

static INIT: Mutex<InitState> = Mutex::new(InitState { refcount: 0 });
static CTX: RwLock<Option<Arc<Context>>> = RwLock::new(None);
/// Process-unique queue ids, never reset (as in LLVM 22).
static QUEUE_IDS: AtomicU64 = AtomicU64::new(1);

/// The live context, or None before `olInit` / after the last `olShutDown`.
pub fn context() -> Option<Arc<Context>> {
    CTX.read().clone()
}

/// `olInit`: reference counted; the first call builds platforms and devices and reads the environment.
pub fn init() -> OlResult<()> {
    let mut st = INIT.lock();
    if st.refcount > 0 {
        st.refcount += 1;
        return Ok(());
    }
    let trace = std::env::var_os("OFFLOAD_TRACE").is_some();
    let validate = std::env::var_os("OFFLOAD_DISABLE_VALIDATION").is_none();

    let mut devices = Vec::new();
    let mut add_platform = |name: &str, vendor: &str, backend: ol_platform_backend_t, devs: Vec<DeviceKind>| {
        if devs.is_empty() {
            return;
        }
        let plat = handle::insert_with(|h| {
            Object::Platform(Arc::new(Platform {
                handle: h,
                name: name.to_string(),
                vendor: vendor.to_string(),
                backend,
            }))
        });
        for kind in devs {
            let mut dev = None;
            handle::insert_with(|h| {
                let d = Arc::new(Device { handle: h, platform: plat, kind });
                dev = Some(d.clone());
                Object::Device(d)
            });
            devices.extend(dev);
        }
    };
    let plugin_devs = |v: Vec<Arc<dyn plugin::Device>>| v.into_iter().map(DeviceKind::Plugin).collect::<Vec<_>>();
    add_platform("CUDA", "Unknown platform vendor", OL_PLATFORM_BACKEND_CUDA, plugin_devs(plugin::cuda::devices()));
    add_platform("CPU", "offload-rs", OL_PLATFORM_BACKEND_CPU, plugin_devs(plugin::cpu::devices()));
    add_platform("Host", "Unknown platform vendor", OL_PLATFORM_BACKEND_HOST, vec![DeviceKind::Host]);
    let host_device = devices.last().map(|d| d.handle).unwrap_or(0);

    let ctx = Arc::new(Context {
        trace,
        validate,
        devices,
        host_device,
        allocs: memory::AllocTable::default(),
        outstanding: Mutex::new(Vec::new()),
    });
    *CTX.write() = Some(ctx);
    st.refcount = 1;
    Ok(())
}

/// `olShutDown`: at the last reference, drain every queue, unload every program, invalidate every handle.
pub fn shutdown() -> OlResult<()> {
    let mut st = INIT.lock();
    if st.refcount == 0 {
        return Err(OlError::new(
            OL_ERRC_UNINITIALIZED,
            "liboffload has not been initialized - please call olInit before using this API",
        ));
    }
    st.refcount -= 1;
    if st.refcount > 0 {
        return Ok(());
    }
    let Some(ctx) = CTX.write().take() else { return Ok(()) };
    let mut first_err = None;
    // Finish pending work first: queues still alive, then those destroyed while busy.
    let objs = handle::clear();
    for o in &objs {
        if let Object::Queue(q) = o
            && let Err(e) = q.inner.sync()
        {
            first_err.get_or_insert(OlError::from(e));
        }
    }
    let outstanding = std::mem::take(&mut *ctx.outstanding.lock());
    for q in outstanding {
        if let Err(e) = q.sync() {
            first_err.get_or_insert(OlError::from(e));
        }
    }
    // Queues the CPU plugin still runs (e.g. host functions of destroyed queues) finish before teardown.
    plugin::cpu::drain_all();
    // Programs unload (device global destructors run) when their last reference goes.
    for o in &objs {
        if let Object::Program(p) = o
            && let Err(e) = p.inner.unload()
        {
            first_err.get_or_insert(OlError::from(e));
        }
    }
    drop(objs);
    ctx.allocs.release_all();
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The next process-unique queue id.
pub fn next_queue_id() -> u64 {
    QUEUE_IDS.fetch_add(1, Ordering::Relaxed)
}

/// A map kept per program: (name, kind) -> symbol handle, so repeated lookups return the same handle.
pub type SymbolCache = HashMap<(String, SymbolKind), Handle>;
