//! `olLaunchKernel`, `olCalculateOptimalOccupancy`.

use std::ffi::c_void;

use crate::api::{bytes, entry, raw_handle, validate, write_out};
use crate::ffi::*;
use crate::plugin::{LaunchArgs, LaunchDims};
use crate::runtime::handle;
use crate::runtime::objects;
use crate::trace;

/// Launch `Kernel` on `Device` over `LaunchSizeArgs->NumGroups` work-groups of `GroupSize` work-items.
/// `ArgumentsData` is one buffer laid out like the kernel's parameters in a naturally aligned C struct
/// (LLVM 22's convention); a tightly packed buffer (the Unified Runtime adapter's) is recognised by its
/// size and accepted too. A NULL queue blocks until the kernel has finished.
///
/// Errors, in order: `INVALID_ARGUMENT` (ArgumentsSize > 0 && ArgumentsData == NULL),
/// `INVALID_NULL_HANDLE` (Device, Kernel), `INVALID_NULL_POINTER` (LaunchSizeArgs), `INVALID_QUEUE`,
/// `INVALID_DEVICE`, `INVALID_ARGUMENT` (stale symbol; argument size mismatch; bad grid),
/// `INVALID_DEVICE` (queue of another device), `SYMBOL_KIND` (not a kernel).
///
/// # Safety
/// `ArgumentsData` must be valid for `ArgumentsSize` bytes (copied before return); `LaunchSizeArgs`
/// NULL or valid; pointers inside the arguments must be valid for the kernel.
#[unsafe(export_name = "olLaunchKernel")]
pub unsafe extern "C" fn ol_launch_kernel(
    Queue: ol_queue_handle_t,
    Device: ol_device_handle_t,
    Kernel: ol_symbol_handle_t,
    ArgumentsData: *const c_void,
    ArgumentsSize: usize,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
) -> ol_result_t {
    entry(
        "olLaunchKernel",
        |ctx| {
            validate(
                ctx,
                &[
                    (
                        ArgumentsSize > 0 && ArgumentsData.is_null(),
                        OL_ERRC_INVALID_ARGUMENT,
                        "ArgumentsSize > 0 && ArgumentsData == NULL",
                    ),
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Kernel.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"),
                    (LaunchSizeArgs.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == LaunchSizeArgs"),
                ],
            )?;
            let q = if Queue.is_null() { None } else { Some(handle::queue(ctx, raw_handle(Queue))?) };
            let d = handle::device(ctx, raw_handle(Device))?;
            let k = handle::symbol(ctx, raw_handle(Kernel))?;
            // SAFETY: non-NULL and valid per the caller contract.
            let la = unsafe { LaunchSizeArgs.read_unaligned() };
            let dims = LaunchDims {
                num_groups: [la.NumGroups.x, la.NumGroups.y, la.NumGroups.z],
                group_size: [la.GroupSize.x, la.GroupSize.y, la.GroupSize.z],
                dyn_shared_mem: la.DynSharedMemory,
            };
            // SAFETY: ArgumentsData is valid for ArgumentsSize bytes; plugins copy it before returning.
            let args = unsafe { bytes(ArgumentsData, ArgumentsSize) };
            objects::launch_kernel(q, d, k, LaunchArgs::Buffer(args), dims, false)
        },
        || {
            let la = if LaunchSizeArgs.is_null() {
                "nullptr".to_string()
            } else {
                // SAFETY: non-NULL and valid per the caller contract.
                let a = unsafe { LaunchSizeArgs.read_unaligned() };
                format!(
                    "{:p} ((struct ol_kernel_launch_size_args_t){{.Dimensions = {}, .NumGroups = (struct ol_dimensions_t){{.x = {}, .y = {}, .z = {}}}, .GroupSize = (struct ol_dimensions_t){{.x = {}, .y = {}, .z = {}}}, .DynSharedMemory = {}}})",
                    LaunchSizeArgs,
                    a.Dimensions,
                    a.NumGroups.x,
                    a.NumGroups.y,
                    a.NumGroups.z,
                    a.GroupSize.x,
                    a.GroupSize.y,
                    a.GroupSize.z,
                    a.DynSharedMemory
                )
            };
            format!(
                ".Queue = {}, .Device = {}, .Kernel = {}, .ArgumentsData = {}, .ArgumentsSize = {ArgumentsSize}, .LaunchSizeArgs = {la}",
                trace::ptr(Queue),
                trace::ptr(Device),
                trace::ptr(Kernel),
                trace::ptr(ArgumentsData)
            )
        },
    )
}

/// A good 1-D work-group size for `Kernel` on `Device` with `SharedMemory` bytes of dynamic shared memory.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device, Kernel), `INVALID_NULL_POINTER` (GroupSize),
/// `INVALID_DEVICE`, `INVALID_ARGUMENT` (stale symbol), `SYMBOL_KIND`, `UNSUPPORTED` (virtual host device).
///
/// # Safety
/// `GroupSize` must be NULL or writable.
#[unsafe(export_name = "olCalculateOptimalOccupancy")]
pub unsafe extern "C" fn ol_calculate_optimal_occupancy(
    Device: ol_device_handle_t,
    Kernel: ol_symbol_handle_t,
    SharedMemory: usize,
    GroupSize: *mut usize,
) -> ol_result_t {
    entry(
        "olCalculateOptimalOccupancy",
        |ctx| {
            validate(
                ctx,
                &[
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Kernel.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"),
                    (GroupSize.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == GroupSize"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            let k = handle::symbol(ctx, raw_handle(Kernel))?;
            let n = objects::optimal_group_size(d, k, SharedMemory)?;
            // SAFETY: GroupSize is NULL (rejected) or writable per the caller contract.
            unsafe { write_out(GroupSize, n, "GroupSize") }?;
            Ok(())
        },
        || {
            format!(
                ".Device = {}, .Kernel = {}, .SharedMemory = {SharedMemory}, .GroupSize = {}",
                trace::ptr(Device),
                trace::ptr(Kernel),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_usize(GroupSize) }
            )
        },
    )
}
