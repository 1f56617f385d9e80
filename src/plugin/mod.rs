//! Plugins: the devices behind the API. Each plugin takes and returns Rust types and
//! `Result<_, PluginError>`; nothing here sees an `ol_*` type or a raw C handle.
//!
//! * [`cpu`]: the CPU compute device (JIT-compiled GPU-style kernels on all cores).
//! * [`cuda`]: NVIDIA GPUs through a `libcuda.so.1` loaded at `olInit` (absent driver: zero devices).
//!
//! The virtual host device has no plugin (as in LLVM 22); the runtime answers for it.

pub mod cpu;
pub mod cuda;
pub mod host_ranges;

use std::any::Any;
use std::sync::Arc;

/// The text of a caught panic's payload (a `&str` or `String` message), for the error that reports it.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// Errors raised by a plugin. The `From<PluginError> for OlError` impl in `error.rs` is the only place
/// where these become `ol_errc_t` codes.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PluginError {
    /// -> `OL_ERRC_OUT_OF_RESOURCES`
    #[error("{0}")]
    OutOfResources(String),
    /// -> `OL_ERRC_INVALID_BINARY`
    #[error("{0}")]
    InvalidBinary(String),
    /// -> `OL_ERRC_NOT_FOUND`
    #[error("{0}")]
    NotFound(String),
    /// -> `OL_ERRC_INVALID_ARGUMENT`
    #[error("{0}")]
    InvalidArgument(String),
    /// -> `OL_ERRC_INVALID_SIZE`
    #[error("{0}")]
    InvalidSize(String),
    /// -> `OL_ERRC_UNSUPPORTED`
    #[error("{0}")]
    Unsupported(String),
    /// -> `OL_ERRC_COMPILE_FAILURE` (a JIT failure; the text says what failed)
    #[error("{0}")]
    Compile(String),
    /// -> `OL_ERRC_BACKEND_FAILURE`
    #[error("{0}")]
    Backend(String),
    /// A driver call failed -> `OL_ERRC_UNKNOWN`, like LLVM 22's driver-error mapping.
    #[error("{0}")]
    Driver(String),
    /// A configuration value (an environment variable) the device cannot use -> `OL_ERRC_INVALID_VALUE`
    #[error("{0}")]
    InvalidValue(String),
}

pub type PluginResult<T> = Result<T, PluginError>;

/// `ol_alloc_type_t` as a plugin sees it. Raw values >= 3 are allocated like `Managed` (LLVM 22); the
/// runtime keeps the raw value for `OL_MEM_INFO_TYPE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocKind {
    Host,
    Device,
    Managed,
}

/// Static properties of a device, answered by `olGetDeviceInfo`.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    pub product_name: String,
    pub uid: String,
    pub vendor: String,
    pub driver_version: String,
    /// raw `ol_device_type_t` value
    pub device_type: u32,
    pub max_work_group_size: u32,
    pub max_work_group_size_per_dim: [u32; 3],
    pub max_work_size: u32,
    pub max_work_size_per_dim: [u32; 3],
    pub vendor_id: u32,
    pub num_compute_units: u32,
    /// MHz
    pub max_clock_frequency: u32,
    /// MHz
    pub memory_clock_rate: u32,
    pub address_bits: u32,
    pub max_mem_alloc_size: u64,
    pub global_mem_size: u64,
    pub work_group_local_mem_size: u64,
    pub single_fp_config: u32,
    pub double_fp_config: u32,
    pub half_fp_config: u32,
    /// char, short, int, long, float, double, half
    pub native_vector_width: [u32; 7],
}

/// A launch's grid, as `ol_kernel_launch_size_args_t` gives it (`Dimensions` is ignored, as in LLVM 22).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    pub num_groups: [u32; 3],
    pub group_size: [u32; 3],
    pub dyn_shared_mem: usize,
}

/// A launch's arguments as the entry point received them. The plugin copies them into its own argument
/// block before the launch call returns (the caller may reuse its memory right after), once: the entry
/// point lays nothing out itself.
#[derive(Clone, Copy)]
pub enum LaunchArgs<'a> {
    /// LLVM 22.1's `ArgumentsData`: one buffer laid out like the kernel's parameters in a naturally aligned
    /// C struct, or packed without padding (the Unified Runtime adapter's form).
    Buffer(&'a [u8]),
    /// LLVM 23.1's `ArgPtrs`/`ArgSizes`: one value per parameter, wherever the caller keeps it.
    Values(&'a dyn ArgValues),
}

impl LaunchArgs<'_> {
    /// The arguments as one buffer: the 22.1 form as given, the 23.1 form's values packed one after
    /// another (for a plugin that does not know where the kernel's parameters go).
    pub fn to_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match *self {
            LaunchArgs::Buffer(b) => std::borrow::Cow::Borrowed(b),
            LaunchArgs::Values(v) => {
                let mut out = vec![0u8; v.packed_size()];
                let written = v.write_packed(&mut out);
                debug_assert!(written, "a buffer of packed_size() bytes holds the packed values");
                std::borrow::Cow::Owned(out)
            }
        }
    }
}

/// Where each parameter of a kernel goes in its argument block: `(offset, size)` per parameter, every one
/// inside the block's first [`ArgSlots::end`] bytes (checked when made, so a copy into a block of that
/// length needs no check per parameter). The CPU device's natural layout, CUDA's `cuFuncGetParamInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgSlots {
    slots: Vec<(usize, usize)>,
    end: usize,
    packed: usize,
    /// the largest parameter alignment (64 when the alignments are not known)
    align: usize,
}

impl ArgSlots {
    /// Slots as given; None when one ends beyond the address space or the sizes add up beyond it.
    pub fn new(slots: Vec<(usize, usize)>) -> Option<ArgSlots> {
        let (mut end, mut packed) = (0usize, 0usize);
        for &(off, size) in &slots {
            end = end.max(off.checked_add(size)?);
            packed = packed.checked_add(size)?;
        }
        Some(ArgSlots { slots, end, packed, align: 64 })
    }
    /// The natural layout (a C struct's) of parameters of these sizes and alignments; None as for
    /// [`ArgSlots::new`].
    pub fn natural(params: &[crate::jit::ParamLayout]) -> Option<ArgSlots> {
        let mut slots = Vec::with_capacity(params.len());
        let (mut end, mut max_align) = (0usize, 1usize);
        for p in params {
            let align = p.align.max(1);
            max_align = max_align.max(align);
            let off = end.checked_next_multiple_of(align)?;
            slots.push((off, p.size));
            end = off.checked_add(p.size)?;
        }
        Some(ArgSlots { align: max_align, ..ArgSlots::new(slots)? })
    }
    pub fn slots(&self) -> &[(usize, usize)] {
        &self.slots
    }
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
    /// End of the last parameter: the bytes of the block the kernel reads.
    pub fn end(&self) -> usize {
        self.end
    }
    /// The sizes added up: the bytes the same arguments take packed without padding.
    pub fn packed(&self) -> usize {
        self.packed
    }
    /// The alignment the block needs: the largest parameter's (64 when not known).
    pub fn align(&self) -> usize {
        self.align
    }
}

/// LLVM 23.1's argument values behind [`LaunchArgs::Values`]. The entry point has checked them before
/// the launch reaches a plugin (their count and sizes against [`Kernel::params`] where the plugin knows
/// them, no NULL value, sizes that add up); the plugin has them copied into its own block, where it wants
/// each one.
pub trait ArgValues {
    /// How many values.
    fn count(&self) -> usize;
    /// Their sizes added up: the bytes they take packed one after another.
    fn packed_size(&self) -> usize;
    /// Copy value `i` to its slot `slots.slots()[i]` of `out`, for every `i`. False (with `out` partly
    /// written) when the count or a size differs from the slots, or `out` is shorter than
    /// [`ArgSlots::end`].
    fn write(&self, slots: &ArgSlots, out: &mut [u8]) -> bool;
    /// Copy the values one after another, without padding, to the start of `out`. False (with `out`
    /// partly written) when `out` is shorter than [`ArgValues::packed_size`].
    fn write_packed(&self, out: &mut [u8]) -> bool;
}

/// 23.1-style argument values held in Rust (the plugins' tests).
#[cfg(test)]
pub(crate) struct TestValues(pub Vec<Vec<u8>>);

#[cfg(test)]
impl ArgValues for TestValues {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn packed_size(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }
    fn write(&self, slots: &ArgSlots, out: &mut [u8]) -> bool {
        slots.slots().len() == self.0.len()
            && out.len() >= slots.end()
            && self.0.iter().zip(slots.slots()).all(|(v, &(off, size))| {
                v.len() == size && out.get_mut(off..off + size).map(|o| o.copy_from_slice(v)).is_some()
            })
    }
    fn write_packed(&self, out: &mut [u8]) -> bool {
        let mut at = 0;
        self.0.iter().all(|v| {
            let dst = out.get_mut(at..).and_then(|o| o.get_mut(..v.len()));
            at += v.len();
            dst.map(|d| d.copy_from_slice(v)).is_some()
        })
    }
}

/// Address and size of a device global variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalInfo {
    pub addr: usize,
    pub size: usize,
}

/// Host bytes that a queued copy reads in place of pageable client memory ([`Device::stage`]). Dropping
/// it gives the bytes back; that happens in a host function of the queue, so it calls no driver.
pub trait Staged: Send {
    /// The first byte; the block holds at least the size asked for.
    fn ptr(&self) -> usize;
}

impl Staged for Box<[std::mem::MaybeUninit<u8>]> {
    fn ptr(&self) -> usize {
        self.as_ptr() as usize
    }
}

/// A staged block that a queued copy reads or writes, shared between the host function queued after that
/// copy and the error path that syncs the queue instead: given back once, by whichever comes first.
pub struct HeldBlock(crate::sync::Mutex<Option<Box<dyn Staged>>>);

impl HeldBlock {
    pub fn new(block: Box<dyn Staged>) -> HeldBlock {
        HeldBlock(crate::sync::Mutex::new(Some(block)))
    }
    /// Gives the block back; whether this call did (false: it was given back already).
    pub fn give_back(&self) -> bool {
        self.0.lock().take().is_some()
    }
}

/// One device of a plugin.
pub trait Device: Send + Sync {
    /// Static info, read once at init.
    fn info(&self) -> &DeviceInfo;
    /// Memory currently free/total may be live; default: the static values.
    fn global_mem_size(&self) -> u64 {
        self.info().global_mem_size
    }
    /// True when pointers of this device's DEVICE allocations can be dereferenced by the host
    /// (the CPU device). The runtime then treats them as host memory for copies to other devices.
    fn host_addressable(&self) -> bool;

    fn alloc(&self, size: usize, kind: AllocKind) -> PluginResult<usize>;
    fn free(&self, ptr: usize, kind: AllocKind) -> PluginResult<()>;
    /// The user freed the allocation at `ptr`, whose [`Device::free`] waits behind queued work (the
    /// runtime defers it): from now on an access to it is a use after free for a memory checker.
    /// Default: nothing.
    fn freed_by_user(&self, _ptr: usize) {}
    /// Page-lock (or just account for) user host memory; returns the device-accessible pointer.
    fn register_host(&self, ptr: usize, size: usize) -> PluginResult<usize>;
    fn unregister_host(&self, ptr: usize) -> PluginResult<()>;
    /// The registered host range containing `ptr`, as (base, length).
    fn registered_range(&self, ptr: usize) -> Option<(usize, usize)>;

    /// Synchronous copy between any memory this device or the host can address (the driver tells the
    /// sides apart by address, as CUDA's unified addressing does).
    ///
    /// # Safety
    /// `src` must be valid for reading and `dst` for writing `size` bytes (on their sides) for the
    /// duration of the call.
    unsafe fn memcpy_sync(&self, dst: usize, src: usize, size: usize) -> PluginResult<()>;

    /// `olIsValidBinary`: never fails, garbage is `false`.
    fn is_valid_binary(&self, image: &[u8]) -> bool;
    /// `olCreateProgram`: load (JIT-compiling where needed) and run device global constructors.
    fn load_program(&self, image: &[u8]) -> PluginResult<Arc<dyn Program>>;
    fn create_queue(&self) -> PluginResult<Arc<dyn Queue>>;
    /// `olCalculateOptimalOccupancy`: a 1-D group size for `kernel`.
    fn optimal_group_size(&self, kernel: &dyn Kernel, dyn_shared_mem: usize) -> PluginResult<usize>;
    /// Blocking launch (`olLaunchKernel` with a NULL queue).
    fn launch_sync(&self, kernel: Arc<dyn Kernel>, args: LaunchArgs<'_>, dims: LaunchDims) -> PluginResult<()>;
    /// The last `olShutDown`, after every live queue was synced: wait for work the plugin still runs for
    /// queues whose handles are gone (e.g. host functions of destroyed queues). Errors are the queues'.
    fn drain(&self) {}

    // ---- LLVM 23.1's additions (src/api/v23); the defaults are what a device without them answers ----

    /// `olMemAllocAligned`: `align` is a power of two. Default: alignments up to 256 (what cuMemAlloc
    /// guarantees) from [`Device::alloc`], larger ones UNSUPPORTED (as 23's CUDA plugin answers).
    fn alloc_aligned(&self, size: usize, kind: AllocKind, align: usize) -> PluginResult<usize> {
        if align <= 256 {
            return self.alloc(size, kind);
        }
        Err(PluginError::Unsupported(format!(
            "an alignment of {align} bytes is more than this device's allocator guarantees (256)"
        )))
    }
    /// `olMemRegister` without `OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY`: account for the range, no page-lock.
    /// Default: as [`Device::register_host`] (devices that never page-lock).
    fn register_host_unlocked(&self, ptr: usize, size: usize) -> PluginResult<usize> {
        self.register_host(ptr, size)
    }
    /// `olGetKernelMaxCooperativeGroupCount`: how many work-groups of `group_size` work-items (with
    /// `dyn_shared_mem`) can run at the same time, so that a grid-wide barrier completes. Default: none.
    fn max_cooperative_groups(
        &self,
        _kernel: &dyn Kernel,
        _group_size: [u32; 3],
        _dyn_shared_mem: usize,
    ) -> PluginResult<u32> {
        Err(PluginError::Unsupported("cooperative launches are not supported on this device".into()))
    }
    /// `OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT`.
    fn cooperative_launch_support(&self) -> bool {
        false
    }
    /// A blocking cooperative launch: every group of the grid runs at the same time.
    fn launch_cooperative_sync(
        &self,
        _kernel: Arc<dyn Kernel>,
        _args: LaunchArgs<'_>,
        _dims: LaunchDims,
    ) -> PluginResult<()> {
        Err(PluginError::Unsupported("cooperative launches are not supported on this device".into()))
    }
    /// Host memory for a copy from pageable client memory that a queue of this device runs later
    /// (runtime::memory copies the source into it before `olMemcpy` returns, as CUDA takes pageable data):
    /// `size` bytes the device's queues copy from without waiting for anything else, or `None` when none
    /// can be had now (the caller then waits for its queue). Default: the process heap.
    fn stage(&self, size: usize) -> PluginResult<Option<Box<dyn Staged>>> {
        let mut v: Vec<std::mem::MaybeUninit<u8>> = Vec::new();
        v.try_reserve_exact(size)
            .map_err(|_| PluginError::OutOfResources(format!("cannot allocate {size} bytes to stage a copy")))?;
        // SAFETY: MaybeUninit<u8> needs no initialisation; the capacity is at least `size`.
        unsafe { v.set_len(size) };
        Ok(Some(Box::new(v.into_boxed_slice())))
    }
    /// `olMemPrefetch` of `[ptr, ptr+size)` (inside an allocation of this device). Default: a no-op (memory
    /// the device reads where it is).
    fn prefetch(&self, _ptr: usize, _size: usize, _to_host: bool) -> PluginResult<()> {
        Ok(())
    }

    fn as_any(&self) -> &dyn Any;
}

/// A loaded program. Dropping the last reference unloads it (device global destructors run then);
/// `unload` does it explicitly so that `olDestroyProgram` can report a failure.
pub trait Program: Send + Sync {
    fn kernel(&self, name: &str) -> PluginResult<Arc<dyn Kernel>>;
    fn global(&self, name: &str) -> PluginResult<GlobalInfo>;
    fn unload(&self) -> PluginResult<()>;
}

pub trait Kernel: Send + Sync {
    fn name(&self) -> &str;
    /// Size and alignment of each parameter, where the plugin knows the kernel's signature.
    fn params(&self) -> Option<&[crate::jit::ParamLayout]> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

/// An in-order stream of work on one device, asynchronous to the caller.
/// Errors raised by queued work are kept and returned by the next `sync` (or the event's `sync`).
pub trait Queue: Send + Sync {
    /// Enqueue a copy; the sides as in [`Device::memcpy_sync`].
    ///
    /// # Safety
    /// `src` must stay valid for reading and `dst` for writing `size` bytes until the copy has run.
    unsafe fn memcpy(&self, dst: usize, src: usize, size: usize) -> PluginResult<()>;
    /// Enqueue a fill of `size` bytes at `ptr` with `pattern` repeated (`size % pattern.len() == 0`).
    ///
    /// # Safety
    /// `ptr` must stay valid for writing `size` bytes until the fill has run.
    unsafe fn fill(&self, ptr: usize, pattern: &[u8], size: usize) -> PluginResult<()>;
    fn launch(&self, kernel: Arc<dyn Kernel>, args: LaunchArgs<'_>, dims: LaunchDims) -> PluginResult<()>;
    /// Enqueue a host callback; it runs in queue order and may outlive the queue's handle.
    fn host_fn(&self, f: Box<dyn FnOnce() + Send>) -> PluginResult<()>;
    /// Enqueue a cooperative launch (LLVM 23.1): every group of the grid runs at the same time.
    fn launch_cooperative(
        &self,
        _kernel: Arc<dyn Kernel>,
        _args: LaunchArgs<'_>,
        _dims: LaunchDims,
    ) -> PluginResult<()> {
        Err(PluginError::Unsupported("cooperative launches are not supported on this device".into()))
    }
    /// Mark everything enqueued so far. `None` when the queue is already empty (always complete).
    fn record_event(&self) -> PluginResult<Option<Arc<dyn Event>>>;
    /// Later work on this queue waits for `event` (which may belong to another device or plugin);
    /// the caller does not block.
    fn wait_event(&self, event: Arc<dyn Event>) -> PluginResult<()>;
    /// Block until everything enqueued so far has completed; returns the first error raised by it.
    fn sync(&self) -> PluginResult<()>;
    /// Non-blocking: is there no pending work?
    fn is_empty(&self) -> PluginResult<bool>;
}

/// A point in a queue.
pub trait Event: Send + Sync {
    fn is_complete(&self) -> PluginResult<bool>;
    fn sync(&self) -> PluginResult<()>;
    fn as_any(&self) -> &dyn Any;
}
