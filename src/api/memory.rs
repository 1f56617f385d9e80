//! `olMemAlloc`, `olMemFree`, `olGetMemInfo(Size)`, `olMemcpy`, `olMemFill`, `olMemRegister`,
//! `olMemUnregister`.

use std::ffi::c_void;

use crate::api::{bytes, entry, raw_handle, validate, write_out};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoQuery, InfoValue};
use crate::runtime::handle;
use crate::runtime::{Context, memory};
use crate::trace;

pub(crate) fn alloc_type_name(t: ol_alloc_type_t) -> &'static str {
    enumerator_name!(t;
        OL_ALLOC_TYPE_HOST,
        OL_ALLOC_TYPE_DEVICE,
        OL_ALLOC_TYPE_MANAGED,
    )
}

fn mem_info_name(n: ol_mem_info_t) -> &'static str {
    enumerator_name!(n;
        OL_MEM_INFO_DEVICE,
        OL_MEM_INFO_BASE,
        OL_MEM_INFO_SIZE,
        OL_MEM_INFO_TYPE,
    )
}

/// Allocate `Size` bytes of `Type` memory on `Device` (the CPU device: 64-byte aligned host memory).
///
/// Errors, in order: `INVALID_SIZE` (Size == 0), `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER`
/// (AllocationOut), `INVALID_DEVICE`, `UNSUPPORTED` (the virtual host device), `OUT_OF_RESOURCES` (more
/// than the device's GLOBAL_MEM_SIZE, or the allocator failed). Unknown types are allocated like MANAGED.
///
/// # Safety
/// `AllocationOut` must be NULL or valid for writing a pointer.
#[unsafe(export_name = "olMemAlloc")]
pub unsafe extern "C" fn ol_mem_alloc(
    Device: ol_device_handle_t,
    Type: ol_alloc_type_t,
    Size: usize,
    AllocationOut: *mut *mut c_void,
) -> ol_result_t {
    entry(
        "olMemAlloc",
        |ctx| {
            validate(
                ctx,
                &[
                    (Size == 0, OL_ERRC_INVALID_SIZE, "Size == 0"),
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (AllocationOut.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == AllocationOut"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            if Size == 0 {
                return Err(OlError::new(OL_ERRC_OUT_OF_RESOURCES, "failed to allocate from device allocator"));
            }
            let p = ctx.allocs.alloc(d, Type.0, Size)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(AllocationOut, p as *mut c_void, "AllocationOut") }?;
            Ok(())
        },
        || {
            format!(
                ".Device = {}, .Type = {}, .Size = {Size}, .AllocationOut = {}",
                trace::ptr(Device),
                alloc_type_name(Type),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(AllocationOut) }
            )
        },
    )
}

/// Free memory from `olMemAlloc`; only the exact base address is accepted. Never blocks: the block is
/// reused only after the work queued before the free has finished.
///
/// Errors: `INVALID_NULL_POINTER` (Address), `INVALID_ARGUMENT` ("address is not a known allocation":
/// interior pointers, double frees, foreign memory).
///
/// # Safety
/// Any value is safe to pass.
#[unsafe(export_name = "olMemFree")]
pub unsafe extern "C" fn ol_mem_free(Address: *mut c_void) -> ol_result_t {
    entry(
        "olMemFree",
        |ctx| {
            validate(ctx, &[(Address.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Address")])?;
            ctx.allocs.free(Address as usize)
        },
        || format!(".Address = {}", trace::ptr(Address)),
    )
}

fn mem_info(ctx: &Context, ptr: usize, name: ol_mem_info_t) -> OlResult<InfoValue<'static>> {
    let m = ctx.allocs.info(ptr)?;
    Ok(match name {
        OL_MEM_INFO_DEVICE => InfoValue::Ptr(m.device.handle),
        OL_MEM_INFO_BASE => InfoValue::Ptr(m.base as u64),
        OL_MEM_INFO_SIZE => InfoValue::U64(m.size as u64),
        OL_MEM_INFO_TYPE => InfoValue::Enum(m.raw_type, |t| alloc_type_name(ol_alloc_type_t(t))),
        other => return Err(OlError::invalid_enum(format!("olGetMemInfo enum '{}' is invalid", other.0 as i32))),
    })
}

/// `olGetMemInfo` / `olGetMemInfoSize`.
pub(crate) enum MemQuery {}

impl InfoQuery for MemQuery {
    type Name = ol_mem_info_t;
    const FUNCTION: &'static str = "olGetMemInfo";
    const SIZE_FUNCTION: &'static str = "olGetMemInfoSize";
    const ARG: &'static str = "Ptr";
    const NULL_CHECK: &'static str = "NULL == Ptr";
    const NULL_CODE: ol_errc_t = OL_ERRC_INVALID_NULL_POINTER;
    fn name(name: ol_mem_info_t) -> &'static str {
        mem_info_name(name)
    }
    #[inline(always)]
    fn value(ctx: &Context, obj: u64, name: ol_mem_info_t) -> OlResult<InfoValue<'_>> {
        mem_info(ctx, obj as usize, name)
    }
}

/// Query an allocation by any pointer inside it.
///
/// Errors, in order: `INVALID_SIZE` (PropSize == 0), `INVALID_NULL_POINTER` (Ptr, PropValue),
/// `NOT_FOUND` (not inside a live allocation), `INVALID_ENUMERATION`, `INVALID_SIZE` (too small).
///
/// # Safety
/// `PropValue` must be NULL or valid for `PropSize` writable bytes.
#[unsafe(export_name = "olGetMemInfo")]
pub unsafe extern "C" fn ol_get_mem_info(
    Ptr: *const c_void,
    PropName: ol_mem_info_t,
    PropSize: usize,
    PropValue: *mut c_void,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query::<MemQuery>(Ptr as usize as u64, PropName, PropSize, PropValue) }
}

/// Query the byte size of an allocation property.
///
/// Errors, in order: `INVALID_NULL_POINTER` (Ptr, PropSizeRet), `NOT_FOUND`, `INVALID_ENUMERATION`.
///
/// # Safety
/// `PropSizeRet` must be NULL or valid for writing a `size_t`.
#[unsafe(export_name = "olGetMemInfoSize")]
pub unsafe extern "C" fn ol_get_mem_info_size(
    Ptr: *const c_void,
    PropName: ol_mem_info_t,
    PropSizeRet: *mut usize,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query_size::<MemQuery>(Ptr as usize as u64, PropName, PropSizeRet) }
}

/// Copy `Size` bytes. The devices say where each side lives (the virtual host device for host memory);
/// a NULL queue blocks until the copy is done, otherwise the copy is enqueued.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (DstDevice, SrcDevice), `INVALID_NULL_POINTER` (DstPtr,
/// SrcPtr), `INVALID_QUEUE`/`INVALID_DEVICE` (stale handles), `INVALID_SIZE` (a range that starts inside an
/// allocation or registered host range runs past its end), `INVALID_ARGUMENT` (host to host with a queue).
///
/// # Safety
/// Both ranges must be valid for `Size` bytes on their devices until the copy completes.
#[unsafe(export_name = "olMemcpy")]
pub unsafe extern "C" fn ol_memcpy(
    Queue: ol_queue_handle_t,
    DstPtr: *mut c_void,
    DstDevice: ol_device_handle_t,
    SrcPtr: *const c_void,
    SrcDevice: ol_device_handle_t,
    Size: usize,
) -> ol_result_t {
    entry(
        "olMemcpy",
        |ctx| {
            validate(
                ctx,
                &[
                    (DstDevice.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == DstDevice"),
                    (SrcDevice.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == SrcDevice"),
                    (DstPtr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == DstPtr"),
                    (SrcPtr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == SrcPtr"),
                ],
            )?;
            let q = if Queue.is_null() { None } else { Some(handle::queue(ctx, raw_handle(Queue))?) };
            let dst_dev = handle::device(ctx, raw_handle(DstDevice))?;
            let src_dev = handle::device(ctx, raw_handle(SrcDevice))?;
            // SAFETY: both ranges are valid for Size bytes until the copy completes (caller contract).
            unsafe { memory::memcpy(ctx, q, DstPtr as usize, dst_dev, SrcPtr as usize, src_dev, Size) }
        },
        || {
            format!(
                ".Queue = {}, .DstPtr = {}, .DstDevice = {}, .SrcPtr = {}, .SrcDevice = {}, .Size = {Size}",
                trace::ptr(Queue),
                trace::ptr(DstPtr),
                trace::ptr(DstDevice),
                trace::ptr(SrcPtr),
                trace::ptr(SrcDevice)
            )
        },
    )
}

/// Fill `FillSize` bytes at `Ptr` with the `PatternSize`-byte pattern. With a NULL queue (LLVM 22
/// crashes) the fill is synchronous on the device that allocated `Ptr`.
///
/// Errors, in order: `INVALID_SIZE` (PatternSize == 0, or FillSize % PatternSize != 0),
/// `INVALID_NULL_POINTER` (Ptr, PatternPtr), `INVALID_QUEUE`, `INVALID_SIZE` (the range starts inside an
/// allocation or registered host range and runs past its end).
///
/// # Safety
/// `Ptr` must be valid for `FillSize` bytes on the queue's device; `PatternPtr` for `PatternSize` bytes.
#[unsafe(export_name = "olMemFill")]
pub unsafe extern "C" fn ol_mem_fill(
    Queue: ol_queue_handle_t,
    Ptr: *mut c_void,
    PatternSize: usize,
    PatternPtr: *const c_void,
    FillSize: usize,
) -> ol_result_t {
    entry(
        "olMemFill",
        |ctx| {
            // LLVM 22 evaluates `FillSize % PatternSize` here and dies of SIGFPE when PatternSize is 0.
            if PatternSize == 0 {
                return Err(OlError::validation(OL_ERRC_INVALID_SIZE, "PatternSize == 0"));
            }
            validate(
                ctx,
                &[
                    (!FillSize.is_multiple_of(PatternSize), OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0"),
                    (Ptr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Ptr"),
                    (PatternPtr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == PatternPtr"),
                ],
            )?;
            // Kept with validation off too: the plugins' fills rely on it.
            if !FillSize.is_multiple_of(PatternSize) {
                return Err(OlError::validation(OL_ERRC_INVALID_SIZE, "FillSize % PatternSize != 0"));
            }
            let q = if Queue.is_null() { None } else { Some(handle::queue(ctx, raw_handle(Queue))?) };
            // SAFETY: PatternPtr is valid for PatternSize bytes (caller contract); copied before return.
            let pattern = unsafe { bytes(PatternPtr, PatternSize) };
            // SAFETY: Ptr is valid for FillSize bytes until the fill completes (caller contract).
            unsafe { memory::fill(ctx, q, Ptr as usize, pattern, FillSize) }
        },
        || {
            format!(
                ".Queue = {}, .Ptr = {}, .PatternSize = {PatternSize}, .PatternPtr = {}, .FillSize = {FillSize}",
                trace::ptr(Queue),
                trace::ptr(Ptr),
                trace::ptr(PatternPtr)
            )
        },
    )
}

/// Make user host memory accessible to `Device`; returns the device-accessible pointer.
///
/// Errors, in order: `INVALID_SIZE` (Size == 0), `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER`
/// (Ptr, PinnedPtr), `INVALID_DEVICE`, `UNSUPPORTED` (virtual host device), `INVALID_ARGUMENT`
/// (partial overlap with a registered range).
///
/// # Safety
/// `Ptr` must be valid for `Size` bytes while registered; `PinnedPtr` NULL or writable.
#[unsafe(export_name = "olMemRegister")]
pub unsafe extern "C" fn ol_mem_register(
    Device: ol_device_handle_t,
    Ptr: *mut c_void,
    Size: usize,
    Flags: ol_memory_register_flags_t,
    PinnedPtr: *mut *mut c_void,
) -> ol_result_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { mem_register(Device, Ptr, Size, Flags, PinnedPtr, true) }
}

/// `olMemRegister` of either release: 22.1 always page-locks (`lock`), 23.1 only with its flag.
///
/// # Safety
/// As [`ol_mem_register`].
pub(crate) unsafe fn mem_register(
    Device: ol_device_handle_t,
    Ptr: *mut c_void,
    Size: usize,
    Flags: ol_memory_register_flags_t,
    PinnedPtr: *mut *mut c_void,
    lock: bool,
) -> ol_result_t {
    entry(
        "olMemRegister",
        |ctx| {
            validate(
                ctx,
                &[
                    (Size == 0, OL_ERRC_INVALID_SIZE, "Size == 0"),
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Ptr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Ptr"),
                    (PinnedPtr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == PinnedPtr"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            // Kept with validation off too: a zero-length range cannot be registered.
            if Size == 0 {
                return Err(OlError::validation(OL_ERRC_INVALID_SIZE, "Size == 0"));
            }
            let pinned = memory::register_with(d, Ptr as usize, Size, lock)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(PinnedPtr, pinned as *mut c_void, "PinnedPtr") }?;
            Ok(())
        },
        || {
            format!(
                ".Device = {}, .Ptr = {}, .Size = {Size}, .Flags = {Flags}, .PinnedPtr = {}",
                trace::ptr(Device),
                trace::ptr(Ptr),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(PinnedPtr) }
            )
        },
    )
}

/// Undo one `olMemRegister` of the range containing `Ptr`, after the work queued so far has finished.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (Ptr), `INVALID_DEVICE`,
/// `UNSUPPORTED` (virtual host device), `INVALID_ARGUMENT` ("cannot find locked buffer"), `UNSUPPORTED`
/// (called from a host function).
///
/// # Safety
/// Any values are safe to pass.
#[unsafe(export_name = "olMemUnregister")]
pub unsafe extern "C" fn ol_mem_unregister(Device: ol_device_handle_t, Ptr: *mut c_void) -> ol_result_t {
    entry(
        "olMemUnregister",
        |ctx| {
            validate(
                ctx,
                &[
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Ptr.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Ptr"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            memory::unregister(d, Ptr as usize)
        },
        || format!(".Device = {}, .Ptr = {}", trace::ptr(Device), trace::ptr(Ptr)),
    )
}
