//! 23.1's `olMemRegister` (flags meaningful), `olMemUnregister(Device, Ptr, Flags)`, and the new
//! `olMemAllocAligned` and `olMemPrefetch`.

use std::ffi::c_void;

use crate::api::{entry, raw_handle, validate, write_out};
use crate::error::OlError;
use crate::ffi::*;
use crate::runtime::handle;
use crate::runtime::memory;
use crate::trace;

/// Allocate `Size` bytes of `Type` memory on `Device` at a multiple of `Alignment` (a power of two). The
/// CPU device gives any alignment up to 1 GiB; CUDA up to 256 bytes (its allocator's guarantee), larger
/// ones are UNSUPPORTED as in LLVM 23's CUDA plugin.
///
/// Errors, in order: `INVALID_SIZE` (Size == 0), `INVALID_ARGUMENT` (Alignment == 0; not a power of
/// two), `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (AllocationOut), `INVALID_DEVICE`,
/// `UNSUPPORTED` (alignment more than the device gives; the virtual host device), `OUT_OF_RESOURCES`.
///
/// # Safety
/// `AllocationOut` must be NULL or writable.
#[unsafe(export_name = "offload_rs_v23_olMemAllocAligned")]
pub unsafe extern "C" fn ol_mem_alloc_aligned(
    Device: ol_device_handle_t,
    Type: ol_alloc_type_t,
    Size: usize,
    Alignment: usize,
    AllocationOut: *mut *mut c_void,
) -> ol_result_t {
    entry(
        "olMemAllocAligned",
        |ctx| {
            validate(
                ctx,
                &[
                    (Size == 0, OL_ERRC_INVALID_SIZE, "Size == 0"),
                    (Alignment == 0, OL_ERRC_INVALID_ARGUMENT, "Alignment == 0"),
                    (!Alignment.is_power_of_two(), OL_ERRC_INVALID_ARGUMENT, "(Alignment & (Alignment - 1)) != 0"),
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (AllocationOut.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == AllocationOut"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            // kept with validation off too: the allocators need a non-zero size and a power of two
            if Size == 0 || !Alignment.is_power_of_two() {
                return Err(OlError::invalid_argument(format!(
                    "cannot allocate {Size} bytes aligned to {Alignment}: the size must be non-zero and the \
                     alignment a power of two"
                )));
            }
            let p = ctx.allocs.alloc_aligned(d, Type.0, Size, Some(Alignment))?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(AllocationOut, p as *mut c_void, "AllocationOut") }
        },
        || {
            format!(
                ".Device = {}, .Type = {}, .Size = {Size}, .Alignment = {Alignment}, .AllocationOut = {}",
                trace::ptr(Device),
                crate::api::memory::alloc_type_name(Type),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(AllocationOut) }
            )
        },
    )
}

/// Enqueue a migration of `Count` ranges (`Mems[i]`, `Sizes[i]` bytes, each inside one allocation) to
/// the queue's device (`HOST_TO_DEVICE`) or to the host (`DEVICE_TO_HOST`). On the CPU device memory is
/// read where it is: the ranges are checked and nothing moves. `Count == 0` does nothing.
///
/// Errors, in order: `INVALID_NULL_POINTER` (Count > 0 with Mems or Sizes NULL), `INVALID_ENUMERATION`
/// (Flags outside HOST_TO_DEVICE | DEVICE_TO_HOST), `INVALID_NULL_HANDLE` (Queue), `INVALID_QUEUE`,
/// `INVALID_ARGUMENT` (a range outside every allocation), `INVALID_SIZE` (a range past its allocation's end).
///
/// # Safety
/// `Mems` and `Sizes` must be NULL or valid for `Count` entries.
#[unsafe(export_name = "offload_rs_v23_olMemPrefetch")]
pub unsafe extern "C" fn ol_mem_prefetch(
    Queue: ol_queue_handle_t,
    Count: usize,
    Mems: *const *const c_void,
    Sizes: *const usize,
    Flags: ol_mem_migration_flags_t,
) -> ol_result_t {
    entry(
        "olMemPrefetch",
        |ctx| {
            const ALL: u32 = OL_MEM_MIGRATION_FLAG_HOST_TO_DEVICE | OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST;
            validate(
                ctx,
                &[
                    (Count > 0 && Mems.is_null(), OL_ERRC_INVALID_NULL_POINTER, "Count > 0 && Mems == NULL"),
                    (Count > 0 && Sizes.is_null(), OL_ERRC_INVALID_NULL_POINTER, "Count > 0 && Sizes == NULL"),
                    (Flags & !ALL != 0, OL_ERRC_INVALID_ENUMERATION, "Flags & ~(HOST_TO_DEVICE | DEVICE_TO_HOST)"),
                    (Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue"),
                ],
            )?;
            let q = handle::queue(ctx, raw_handle(Queue))?;
            if Count == 0 {
                return Ok(());
            }
            // SAFETY: Count entries each, non-NULL (checked), per the caller contract.
            let (mems, sizes) =
                unsafe { (std::slice::from_raw_parts(Mems, Count), std::slice::from_raw_parts(Sizes, Count)) };
            let ranges: Vec<(usize, usize)> = mems.iter().zip(sizes).map(|(&m, &s)| (m as usize, s)).collect();
            memory::prefetch(ctx, q, &ranges, Flags & OL_MEM_MIGRATION_FLAG_DEVICE_TO_HOST != 0)
        },
        || {
            let (mems, sizes) = if Count > 0 {
                // SAFETY: NULL or valid for Count > 0 entries per the caller contract.
                unsafe { (super::print::pointee(Mems, trace::ptr), super::print::pointee(Sizes, |s| s.to_string())) }
            } else {
                (trace::ptr(Mems), trace::ptr(Sizes))
            };
            format!(
                ".Queue = {}, .Count = {Count}, .Mems = {mems}, .Sizes = {sizes}, .Flags = {Flags}",
                trace::ptr(Queue)
            )
        },
    )
}

/// Register `Size` bytes of user host memory at `Ptr` with `Device`; with
/// `OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY` also page-lock it (CUDA), otherwise only account for it (23.1).
///
/// Errors, in order: `INVALID_SIZE` (Size == 0), `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER`
/// (Ptr, PinnedPtr), `INVALID_DEVICE`, `UNSUPPORTED` (virtual host device), `INVALID_ARGUMENT` (overlaps
/// another registered range).
///
/// # Safety
/// `[Ptr, Ptr+Size)` must be the caller's live host memory until unregistered; `PinnedPtr` NULL or writable.
#[unsafe(export_name = "offload_rs_v23_olMemRegister")]
pub unsafe extern "C" fn ol_mem_register(
    Device: ol_device_handle_t,
    Ptr: *mut c_void,
    Size: usize,
    Flags: ol_memory_register_flags_t,
    PinnedPtr: *mut *mut c_void,
) -> ol_result_t {
    let lock = Flags & OL_MEMORY_REGISTER_FLAG_LOCK_MEMORY != 0;
    // SAFETY: the caller's contract, passed on.
    unsafe { crate::api::memory::mem_register(Device, Ptr, Size, Flags, PinnedPtr, lock) }
}

/// Undo one `olMemRegister` of the range containing `Ptr`, after the work queued so far has finished.
/// A range this library page-locked is unlocked when its last registration goes, with or without
/// `OL_MEMORY_REGISTER_FLAG_UNLOCK_MEMORY` (a lock is never left behind).
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (Ptr), `INVALID_DEVICE`,
/// `UNSUPPORTED` (virtual host device; a host function), `INVALID_ARGUMENT` ("cannot find locked buffer").
///
/// # Safety
/// Any values are safe to pass.
#[unsafe(export_name = "offload_rs_v23_olMemUnregister")]
pub unsafe extern "C" fn ol_mem_unregister(
    Device: ol_device_handle_t,
    Ptr: *mut c_void,
    Flags: ol_memory_register_flags_t,
) -> ol_result_t {
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
        || format!(".Device = {}, .Ptr = {}, .Flags = {Flags}", trace::ptr(Device), trace::ptr(Ptr)),
    )
}
