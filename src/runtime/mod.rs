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

use crate::sync::Mutex;

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::plugin;
use handle::{Handle, Object};

pub use objects::{Device, DeviceKind, Event, Platform, Program, Queue, Symbol, SymbolKind};

/// Everything `olInit` builds and the last `olShutDown` tears down.
pub struct Context {
    /// Which release's API the client speaks: set by the `olInit` that built the context (each library,
    /// `.so.22.1` or `.so.23.1`, exports one of them; see src/api/v23).
    pub abi: Abi,
    pub trace: bool,
    pub validate: bool,
    /// devices in iteration order (host device last)
    pub devices: Vec<Arc<Device>>,
    pub host_device: Handle,
    pub allocs: memory::AllocTable,
    /// 23.1's `olPlatformRegisterRPCCallback`: platform -> callback address (kept, never called: no
    /// device of ours makes RPC calls).
    pub rpc_callbacks: Mutex<HashMap<Handle, usize>>,
    /// Queues destroyed while busy: drained at shutdown.
    pub outstanding: Mutex<Vec<Arc<dyn plugin::Queue>>>,
}

/// The API release of the client: decides what differs between 22.1 and 23.1 below the entry points
/// (the device infos 23 appended, events always recorded, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    V22,
    V23,
}

/// The platforms a first `olInit` may create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlatformSet {
    pub cuda: bool,
    pub cpu: bool,
}

/// cbindgen:ignore
impl PlatformSet {
    pub const ALL: PlatformSet = PlatformSet { cuda: true, cpu: true };
}

/// What the first `olInit` builds: the client's ABI and the platforms it asked for (23's
/// `ol_init_args_t::Platforms`; every platform for 22 and for a NULL/empty list). The host platform is
/// always created (LLVM 22 and 23 both do: clients find the host side of `olMemcpy` there).
#[derive(Clone, Copy, Debug)]
pub struct InitOptions {
    pub abi: Abi,
    pub platforms: PlatformSet,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions { abi: Abi::V22, platforms: PlatformSet::ALL }
    }
}

/// `OFFLOAD_RS_PLATFORMS`: a comma list of `cpu`, `cuda`, `host` restricting the platforms the first
/// `olInit` creates (unset or empty: all). `host` is accepted and changes nothing: the host platform is
/// always there. Anything else is an error of `olInit` (INVALID_VALUE) naming the bad entry.
pub fn platforms_from_env(value: Option<&str>) -> OlResult<PlatformSet> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else { return Ok(PlatformSet::ALL) };
    let mut set = PlatformSet { cuda: false, cpu: false };
    for item in v.split(',').map(str::trim) {
        match item.to_ascii_lowercase().as_str() {
            "cpu" => set.cpu = true,
            "cuda" => set.cuda = true,
            "host" => {}
            _ => {
                return Err(OlError::new(
                    OL_ERRC_INVALID_VALUE,
                    format!(
                        "OFFLOAD_RS_PLATFORMS='{v}': unknown platform '{item}' (expected a comma-separated list of \
                         cpu, cuda, host)"
                    ),
                ));
            }
        }
    }
    Ok(set)
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
/// A repeated call only counts (its options are not looked at, as in LLVM 23).
pub fn init(opts: InitOptions) -> OlResult<()> {
    let mut st = INIT.lock();
    if st.refcount > 0 {
        st.refcount += 1;
        return Ok(());
    }
    let env = platforms_from_env(std::env::var("OFFLOAD_RS_PLATFORMS").ok().as_deref())?;
    let want = PlatformSet { cuda: env.cuda && opts.platforms.cuda, cpu: env.cpu && opts.platforms.cpu };
    if std::env::var_os("OFFLOAD_RS_DEBUG").is_some() {
        eprintln!("offload-rs: olInit ({:?}): platforms cuda={} cpu={} host=true", opts.abi, want.cuda, want.cpu);
    }
    let trace = std::env::var_os("OFFLOAD_TRACE").is_some();
    let validate = std::env::var_os("OFFLOAD_DISABLE_VALIDATION").is_none();
    crate::jit::set_memcheck(std::env::var_os("OFFLOAD_RS_MEMCHECK").is_some_and(|v| v == "1"));
    // OFFLOAD_RS_CPU_THREADS and OFFLOAD_RS_CPU_TARGET: a value the CPU device cannot use fails olInit
    // (when there is to be a CPU device)
    if want.cpu {
        plugin::cpu::check_settings()?;
    }
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
    if want.cuda {
        add_platform("CUDA", "Unknown platform vendor", OL_PLATFORM_BACKEND_CUDA, plugin_devs(plugin::cuda::devices()));
    }
    if want.cpu {
        add_platform("CPU", "offload-rs", OL_PLATFORM_BACKEND_CPU, plugin_devs(plugin::cpu::devices()));
    }
    // LLVM 23 names the host platform after its plugin, the CPU architecture ("x86_64")
    let host_name = if opts.abi == Abi::V23 { std::env::consts::ARCH } else { "Host" };
    add_platform(host_name, "Unknown platform vendor", OL_PLATFORM_BACKEND_HOST, vec![DeviceKind::Host]);
    let host_device = devices.last().map(|d| d.handle).unwrap_or(0);

    let ctx = Box::new(Context {
        abi: opts.abi,
        trace,
        validate,
        devices,
        host_device,
        allocs: memory::AllocTable::default(),
        rpc_callbacks: Mutex::new(HashMap::new()),
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

#[cfg(test)]
mod platform_env_tests {
    use super::*;

    #[test]
    fn offload_rs_platforms_values() {
        assert_eq!(platforms_from_env(None).ok(), Some(PlatformSet::ALL));
        assert_eq!(platforms_from_env(Some("  ")).ok(), Some(PlatformSet::ALL));
        assert_eq!(platforms_from_env(Some("cpu")).ok(), Some(PlatformSet { cuda: false, cpu: true }));
        assert_eq!(platforms_from_env(Some("CUDA, host")).ok(), Some(PlatformSet { cuda: true, cpu: false }));
        assert_eq!(platforms_from_env(Some("host")).ok(), Some(PlatformSet { cuda: false, cpu: false }));
        let e = platforms_from_env(Some("cpu,gpu")).err().map(|e| (e.code, e.details));
        let (code, details) = e.unwrap_or((OL_ERRC_SUCCESS, String::new()));
        assert_eq!(code, OL_ERRC_INVALID_VALUE);
        assert!(details.contains("unknown platform 'gpu'"), "{details}");
    }
}
