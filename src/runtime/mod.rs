//! Safe runtime objects and the process-global context. Nothing here sees a raw C pointer: addresses
//! are `usize`, buffers are slices, handles are [`Handle`] values.

pub mod handle;
pub mod hostfn;
pub mod memory;
pub mod objects;
pub mod pin;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use parking_lot::Mutex;

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
/// The live context (a leaked `Box`), or NULL. Read without a lock by pinned calls; the last
/// `olShutDown` clears it, waits for the calls in flight, then frees it.
static CTX: AtomicPtr<Context> = AtomicPtr::new(std::ptr::null_mut());
/// Process-unique queue ids, never reset (as in LLVM 22).
static QUEUE_IDS: AtomicU64 = AtomicU64::new(1);

/// The live context, or None before `olInit` / after the last `olShutDown`; valid while `_pin` lives.
pub fn context(_pin: &pin::Guard) -> Option<&Context> {
    // SAFETY: a non-NULL pointer is a live context; the last olShutDown frees it only after clearing the
    // pointer and waiting for every pinned call, and this load is ordered after the pin's announcement.
    unsafe { CTX.load(Ordering::SeqCst).as_ref() }
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
    crate::jit::set_memcheck(std::env::var_os("OFFLOAD_RS_MEMCHECK").is_some_and(|v| v == "1"));
    crate::plugin::cpu::devicelib::read_buffer_limit();

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

    let ctx = Box::new(Context {
        trace,
        validate,
        devices,
        host_device,
        allocs: memory::AllocTable::default(),
        outstanding: Mutex::new(Vec::new()),
    });
    CTX.store(Box::into_raw(ctx), Ordering::SeqCst);
    st.refcount = 1;
    Ok(())
}

/// `olShutDown`: at the last reference, wait for the calls in flight on other threads (calls starting
/// from now on get UNINITIALIZED), drain every queue, unload every program, invalidate every handle.
pub fn shutdown() -> OlResult<()> {
    // From a host function the last reference would drain (wait for) that host function's own queue.
    hostfn::refuse_in_host_fn("olShutDown")?;
    let mut st = INIT.lock();
    if st.refcount == 0 {
        return Err(OlError::new(
            OL_ERRC_UNINITIALIZED,
            "liboffload has not been initialized - please call olInit before using this API",
        ));
    }
    if st.refcount == 1 && pin::in_call() {
        return Err(OlError::unsupported(
            "the last olShutDown was called from inside another liboffload call on the same thread (a callback \
             of olIterateDevices or a host function run by olSyncQueue): that call still uses the library; \
             shut down after it returns",
        ));
    }
    st.refcount -= 1;
    if st.refcount > 0 {
        return Ok(());
    }
    let ctx = CTX.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if ctx.is_null() {
        return Ok(());
    }
    pin::wait_for_calls_in_flight();
    // SAFETY: made by Box::into_raw in init; no longer published and no call that read it is in flight.
    let ctx = unsafe { Box::from_raw(ctx) };
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
    // Work the plugins still run for queues whose handles are gone finishes before teardown.
    for d in &ctx.devices {
        if let DeviceKind::Plugin(p) = &d.kind {
            p.drain();
        }
    }
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
