//! The objects behind handles, and the operations of the queue/event/program/symbol entry points.

use std::sync::Arc;

use crate::sync::Mutex;

use super::handle::{self, Handle, Object};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::plugin::{self, GlobalInfo, LaunchArgs, LaunchDims};

use super::{Context, SymbolCache, hostfn};

pub struct Platform {
    pub handle: Handle,
    pub name: String,
    pub vendor: String,
    pub backend: ol_platform_backend_t,
}

pub enum DeviceKind {
    /// LLVM's "Virtual Host Device": info queries and host-side memcpy only.
    Host,
    Plugin(Arc<dyn plugin::Device>),
}

pub struct Device {
    pub handle: Handle,
    pub platform: Handle,
    pub kind: DeviceKind,
}

impl Device {
    /// The plugin device, or UNSUPPORTED for the virtual host device (where LLVM 22 crashes).
    pub fn plugin(&self) -> OlResult<&Arc<dyn plugin::Device>> {
        match &self.kind {
            DeviceKind::Plugin(p) => Ok(p),
            DeviceKind::Host => Err(OlError::unsupported(
                "not supported on the virtual host device: it only answers info queries and acts as the host \
                 side of olMemcpy (allocations, queues, programs and kernels need a CPU or GPU device)",
            )),
        }
    }
    pub fn is_host(&self) -> bool {
        matches!(self.kind, DeviceKind::Host)
    }
}

pub struct Queue {
    pub handle: Handle,
    pub id: u64,
    pub device: Arc<Device>,
    pub inner: Arc<dyn plugin::Queue>,
}

pub struct Event {
    pub handle: Handle,
    /// The creating queue's handle (may be destroyed since; still reported by OL_EVENT_INFO_QUEUE).
    pub queue: Handle,
    pub queue_id: u64,
    /// None: the queue was empty when the event was created, so it is complete forever.
    pub inner: Option<Arc<dyn plugin::Event>>,
    /// The creating queue's device (LLVM 23.1's `olGetEventElapsedTime` compares them).
    pub device: Handle,
    /// Created with `OL_EVENT_FLAGS_ENABLE_PROFILING` (23.1): when the queue reached the event, set in
    /// queue order by a step enqueued just before it.
    pub timestamp: Option<Arc<std::sync::OnceLock<std::time::Instant>>>,
}

pub struct Program {
    pub handle: Handle,
    pub device: Arc<Device>,
    pub inner: Arc<dyn plugin::Program>,
    pub symbols: Mutex<SymbolCache>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Kernel,
    Global,
}

impl SymbolKind {
    pub fn raw(self) -> ol_symbol_kind_t {
        match self {
            SymbolKind::Kernel => OL_SYMBOL_KIND_KERNEL,
            SymbolKind::Global => OL_SYMBOL_KIND_GLOBAL_VARIABLE,
        }
    }
}

pub struct Symbol {
    pub handle: Handle,
    pub program: Handle,
    pub name: String,
    pub kind: SymbolKind,
    pub kernel: Option<Arc<dyn plugin::Kernel>>,
    pub global: Option<GlobalInfo>,
}

// ---- queues -------------------------------------------------------------------------------------

pub fn create_queue(dev: &Arc<Device>) -> OlResult<Handle> {
    let inner = dev.plugin()?.create_queue()?;
    super::memory::watch_queue(&inner);
    let id = super::next_queue_id();
    let dev = dev.clone();
    Ok(handle::insert_with(|h| Object::Queue(Arc::new(Queue { handle: h, id, device: dev, inner }))))
}

/// After its handle was removed. Never blocks: pending work still completes (kept on the context's
/// outstanding list until shutdown).
pub fn destroy_queue(ctx: &Context, q: &Arc<Queue>) -> OlResult<()> {
    // The handle is gone already: a queue whose state cannot be read counts as busy, never as an error.
    let busy = !matches!(q.inner.is_empty(), Ok(true));
    let mut out = ctx.outstanding.lock();
    out.retain(|o| !matches!(o.is_empty(), Ok(true)));
    if busy {
        out.push(q.inner.clone());
    }
    Ok(())
}

/// `olSyncQueue`; refused from a host function of the same queue (it would wait for itself).
pub fn sync_queue(q: &Queue) -> OlResult<()> {
    hostfn::refuse_wait_for(q.id, "olSyncQueue of this queue")?;
    Ok(q.inner.sync()?)
}

pub fn create_event(q: &Arc<Queue>) -> OlResult<Handle> {
    create_event_with(q, false)
}

/// `olCreateEvent`; with `profiling` (23.1's ENABLE_PROFILING) the event also records when the queue
/// reached it: a step enqueued before the event stores the time (one of the CPU device's queue threads or
/// CUDA's stream callback runs it when the work before it has finished).
pub fn create_event_with(q: &Arc<Queue>, profiling: bool) -> OlResult<Handle> {
    let timestamp = if profiling {
        let t = Arc::new(std::sync::OnceLock::new());
        let t2 = t.clone();
        q.inner.host_fn(Box::new(move || {
            let _ = t2.set(std::time::Instant::now());
        }))?;
        Some(t)
    } else {
        None
    };
    let inner = q.inner.record_event()?;
    let (queue, queue_id, device) = (q.handle, q.id, q.device.handle);
    Ok(handle::insert_with(|h| Object::Event(Arc::new(Event { handle: h, queue, queue_id, inner, device, timestamp }))))
}

/// `olGetEventElapsedTime`: milliseconds between two profiling events of one device.
pub fn event_elapsed_ms(start: &Event, end: &Event) -> OlResult<f32> {
    let (Some(a), Some(b)) = (&start.timestamp, &end.timestamp) else {
        return Err(OlError::invalid_argument(
            "olGetEventElapsedTime requires both events to be created with OL_EVENT_FLAGS_ENABLE_PROFILING",
        ));
    };
    if start.device != end.device {
        return Err(OlError::new(OL_ERRC_INVALID_DEVICE, "StartEvent and EndEvent must belong to the same device"));
    }
    let (Some(a), Some(b)) = (a.get(), b.get()) else {
        return Err(OlError::invalid_argument(
            "olGetEventElapsedTime: an event has not completed yet (olSyncEvent it first)",
        ));
    };
    let ms = if *b >= *a { (*b - *a).as_secs_f64() * 1e3 } else { -((*a - *b).as_secs_f64() * 1e3) };
    Ok(ms as f32)
}

/// `olQueryQueue`: whether everything enqueued so far has completed (never blocks).
pub fn query_queue(q: &Queue) -> OlResult<bool> {
    Ok(q.inner.is_empty()?)
}

pub fn event_is_complete(ev: &Event) -> OlResult<bool> {
    match &ev.inner {
        None => Ok(true),
        Some(e) => Ok(e.is_complete()?),
    }
}

/// Refused from a host function of the event's queue (an event recorded after the host function would
/// wait for it; asking which one it is would already be a driver call from a stream callback on CUDA).
pub fn sync_event(ev: &Event) -> OlResult<()> {
    match &ev.inner {
        None => Ok(()),
        Some(e) => {
            hostfn::refuse_wait_for(ev.queue_id, "olSyncEvent on an event of this queue")?;
            Ok(e.sync()?)
        }
    }
}

/// `olWaitEvents` after validation: `events` are raw handles, NULL entries are errors.
pub fn wait_events(ctx: &Context, q: &Arc<Queue>, events: &[Handle]) -> OlResult<()> {
    for &h in events {
        if h == 0 {
            return Err(OlError::new(OL_ERRC_INVALID_NULL_HANDLE, "olWaitEvents asked to wait on a NULL event"));
        }
        let ev = handle::event(ctx, h)?;
        if ev.queue_id == q.id {
            continue;
        }
        if let Some(inner) = &ev.inner {
            hostfn::refuse_wait_for(ev.queue_id, "olWaitEvents on an event of this queue")?;
            q.inner.wait_event(inner.clone())?;
        }
    }
    Ok(())
}

// ---- programs and symbols -------------------------------------------------------------------------

pub fn create_program(dev: &Arc<Device>, image: &[u8]) -> OlResult<Handle> {
    let inner = dev.plugin()?.load_program(image)?;
    let dev = dev.clone();
    Ok(handle::insert_with(|h| {
        Object::Program(Arc::new(Program { handle: h, device: dev, inner, symbols: Mutex::new(Default::default()) }))
    }))
}

pub fn is_valid_binary(dev: &Device, image: &[u8]) -> bool {
    match &dev.kind {
        DeviceKind::Host => false,
        DeviceKind::Plugin(p) => !image.is_empty() && p.is_valid_binary(image),
    }
}

/// After its handle was removed: its symbols go too, then it unloads.
pub fn destroy_program(p: &Arc<Program>) -> OlResult<()> {
    let syms: Vec<Handle> = p.symbols.lock().drain().map(|(_, h)| h).collect();
    for h in syms {
        handle::remove(h);
    }
    Ok(p.inner.unload()?)
}

pub fn get_symbol(p: &Arc<Program>, name: &str, kind: SymbolKind) -> OlResult<Handle> {
    let key = (name.to_string(), kind);
    if let Some(&h) = p.symbols.lock().get(&key) {
        return Ok(h);
    }
    // Look up without holding the program's lock across the plugin call.
    let (kernel, global) = match kind {
        SymbolKind::Kernel => (Some(p.inner.kernel(name)?), None),
        SymbolKind::Global => (None, Some(p.inner.global(name)?)),
    };
    let mut syms = p.symbols.lock();
    if let Some(&h) = syms.get(&key) {
        return Ok(h);
    }
    let (program, name) = (p.handle, name.to_string());
    let h =
        handle::insert_with(|h| Object::Symbol(Arc::new(Symbol { handle: h, program, name, kind, kernel, global })));
    syms.insert(key, h);
    Ok(h)
}

// ---- launch -------------------------------------------------------------------------------------------

/// `olLaunchKernel`, both releases' forms (`args`: 22.1's buffer or 23.1's values, which the plugin copies
/// into its own argument block); `cooperative` (23.1's `IS_COOPERATIVE`): every group of the grid runs at
/// the same time, and a grid larger than [`max_cooperative_groups`] is refused.
pub fn launch_kernel(
    queue: Option<&Arc<Queue>>,
    dev: &Arc<Device>,
    sym: &Symbol,
    args: LaunchArgs<'_>,
    dims: LaunchDims,
    cooperative: bool,
) -> OlResult<()> {
    let kernel = launch_target(queue, dev, sym)?;
    launch_checked(queue, dev, kernel, args, dims, cooperative)
}

/// The launch's own checks, in LLVM's order: the queue is the device's (`INVALID_DEVICE`), the symbol a
/// kernel (`SYMBOL_KIND`). Returns the kernel.
pub fn launch_target<'s>(
    queue: Option<&Arc<Queue>>,
    dev: &Arc<Device>,
    sym: &'s Symbol,
) -> OlResult<&'s Arc<dyn plugin::Kernel>> {
    if let Some(q) = queue
        && q.device.handle != dev.handle
    {
        return Err(OlError::new(
            OL_ERRC_INVALID_DEVICE,
            "device specified does not match the device of the given queue",
        ));
    }
    sym.kernel.as_ref().ok_or_else(|| OlError::new(OL_ERRC_SYMBOL_KIND, "provided symbol is not a kernel"))
}

/// Launches `kernel` ([`launch_target`]'s answer) on `queue` (NULL: on the device, waiting for it).
pub fn launch_checked(
    queue: Option<&Arc<Queue>>,
    dev: &Arc<Device>,
    kernel: &Arc<dyn plugin::Kernel>,
    args: LaunchArgs<'_>,
    dims: LaunchDims,
    cooperative: bool,
) -> OlResult<()> {
    let pdev = dev.plugin()?;
    match (queue, cooperative) {
        (Some(q), false) => q.inner.launch(kernel.clone(), args, dims)?,
        (Some(q), true) => q.inner.launch_cooperative(kernel.clone(), args, dims)?,
        (None, false) => pdev.launch_sync(kernel.clone(), args, dims)?,
        (None, true) => pdev.launch_cooperative_sync(kernel.clone(), args, dims)?,
    }
    Ok(())
}

/// `olGetKernelMaxCooperativeGroupCount`.
pub fn max_cooperative_groups(dev: &Device, sym: &Symbol, group_size: [u32; 3], shared: usize) -> OlResult<u32> {
    let Some(kernel) = &sym.kernel else {
        return Err(OlError::new(OL_ERRC_SYMBOL_KIND, "provided symbol is not a kernel"));
    };
    Ok(dev.plugin()?.max_cooperative_groups(kernel.as_ref(), group_size, shared)?)
}

/// The kernel's parameter layout where its plugin knows it (23.1's `NumArgs` and `ArgSizes` are checked
/// against it).
pub fn kernel_params(sym: &Symbol) -> Option<&[crate::jit::ParamLayout]> {
    sym.kernel.as_ref().and_then(|k| k.params())
}

pub fn optimal_group_size(dev: &Device, sym: &Symbol, shared: usize) -> OlResult<usize> {
    let Some(kernel) = &sym.kernel else {
        return Err(OlError::new(OL_ERRC_SYMBOL_KIND, "provided symbol is not a kernel"));
    };
    Ok(dev.plugin()?.optimal_group_size(kernel.as_ref(), shared)?)
}

/// Host callbacks: run in queue order; they may outlive the queue handle.
pub fn launch_host_function(q: &Queue, f: Box<dyn FnOnce() + Send>) -> OlResult<()> {
    Ok(q.inner.host_fn(hostfn::wrap(q.id, f))?)
}
