//! 23.1's 8-argument `olLaunchKernel` and the new `olGetKernelMaxCooperativeGroupCount`.

use std::ffi::c_void;

use crate::api::{entry, raw_handle, validate, write_out};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::jit::ParamLayout;
use crate::plugin::{ArgSlots, ArgValues, LaunchArgs, LaunchDims};
use crate::runtime::handle;
use crate::runtime::objects;
use crate::trace;

/// A properties list longer than this without its `OL_KERNEL_LAUNCH_PROP_END` is refused (23 defines
/// one property; a list this long is a missing terminator, not a real list).
const MAX_PROPS: usize = 1024;

/// Walk `props` to its `NONE` entry: whether `IS_COOPERATIVE` is set (its `data` is a `bool *`).
///
/// # Safety
/// `props` must be NULL or a list ending with `OL_KERNEL_LAUNCH_PROP_END` within [`MAX_PROPS`] entries.
unsafe fn cooperative(props: *const ol_kernel_launch_prop_t) -> OlResult<bool> {
    let mut coop = false;
    if props.is_null() {
        return Ok(false);
    }
    for i in 0..MAX_PROPS {
        // SAFETY: entries up to the terminator are readable (caller contract).
        let p = unsafe { props.add(i).read_unaligned() };
        match p.r#type {
            OL_KERNEL_LAUNCH_PROP_TYPE_NONE => return Ok(coop),
            OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE => {
                if p.data.is_null() {
                    return Err(OlError::new(
                        OL_ERRC_INVALID_NULL_POINTER,
                        "OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE with a NULL data pointer (it takes a bool *)",
                    ));
                }
                // SAFETY: a non-NULL `bool *` per the property's type.
                coop = unsafe { p.data.cast::<u8>().read() } != 0;
            }
            t => {
                return Err(OlError::invalid_enum(format!(
                    "launch property {i} has type {} (not an ol_kernel_launch_prop_type_t)",
                    t.0
                )));
            }
        }
    }
    Err(OlError::invalid_argument(format!(
        "the launch properties list has no OL_KERNEL_LAUNCH_PROP_END within {MAX_PROPS} entries"
    )))
}

/// 23.1's `ArgPtrs`/`ArgSizes` after their checks ([`checked_args`]): the values the plugin copies into its
/// argument block, straight from the caller's memory.
struct CheckedArgs<'a> {
    ptrs: &'a [*mut c_void],
    sizes: &'a [usize],
}

/// Copy `n` bytes from `src` to `dst`; the common argument sizes as one load and one store (no call).
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `n` bytes (any pointers when `n` is 0), not
/// overlapping.
#[inline(always)]
unsafe fn copy_value(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: `src` is readable and `dst` writable for `n` bytes, which each arm copies exactly (unaligned
    // accesses: arguments have any alignment in the caller's memory).
    unsafe {
        match n {
            8 => dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()),
            2 => dst.cast::<u16>().write_unaligned(src.cast::<u16>().read_unaligned()),
            1 => dst.write(src.read()),
            0 => {}
            n => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}

impl ArgValues for CheckedArgs<'_> {
    fn count(&self) -> usize {
        self.ptrs.len()
    }
    fn packed_size(&self) -> usize {
        // no overflow: `checked_args` added them up (without known parameters; with them they are the
        // parameters' sizes)
        self.sizes.iter().fold(0usize, |a, &s| a.saturating_add(s))
    }
    fn write(&self, slots: &ArgSlots, out: &mut [u8]) -> bool {
        let slots_of = slots.slots();
        if slots_of.len() != self.ptrs.len() || out.len() < slots.end() {
            return false;
        }
        let base = out.as_mut_ptr();
        for ((&p, &s), &(off, size)) in self.ptrs.iter().zip(self.sizes).zip(slots_of) {
            if s != size {
                return false;
            }
            // SAFETY: `ArgPtrs[i]` is valid for `ArgSizes[i]` bytes (olLaunchKernel's contract; NULL with a
            // size rejected by `checked_args`) and is the caller's memory, not the plugin's block; the slot
            // `off..off + s` lies inside `slots.end()` bytes (`ArgSlots`' invariant), which `out` has.
            unsafe { copy_value(p.cast_const().cast(), base.add(off), s) };
        }
        true
    }
    fn write_packed(&self, out: &mut [u8]) -> bool {
        let mut at = 0;
        for (&p, &s) in self.ptrs.iter().zip(self.sizes) {
            if s > out.len() - at {
                return false;
            }
            // SAFETY: as in `write`; `out` has `s` bytes from `at` (checked just above).
            unsafe { copy_value(p.cast_const().cast(), out.as_mut_ptr().add(at), s) };
            at += s;
        }
        true
    }
}

/// Check 23.1's arguments in the entry point's order: their count and sizes against the kernel's
/// parameters where the plugin knows them (`known`), then, argument by argument, that the sizes add up and
/// no pointer of a non-empty argument is NULL. Nothing is copied here: the plugin copies the values into its
/// own block ([`LaunchArgs::Values`]).
///
/// # Safety
/// `ptrs`/`sizes` must be valid for `n` entries (NULL allowed when `n` is 0) for `'a`.
unsafe fn checked_args<'a>(
    name: &str,
    known: Option<&[ParamLayout]>,
    n: usize,
    ptrs: *mut *mut c_void,
    sizes: *const usize,
) -> OlResult<CheckedArgs<'a>> {
    if n == 0 {
        if let Some(k) = known {
            return Err(OlError::invalid_argument(format!(
                "kernel '{name}' takes {} arguments, NumArgs is 0",
                k.len()
            )));
        }
        return Ok(CheckedArgs { ptrs: &[], sizes: &[] });
    }
    // SAFETY: n entries each (caller contract; NULL with n > 0 was rejected before).
    let (ptrs, sizes) =
        unsafe { (std::slice::from_raw_parts(ptrs.cast_const(), n), std::slice::from_raw_parts(sizes, n)) };
    let null = |i: usize| sizes[i] > 0 && ptrs[i].is_null();
    let null_error = |i: usize| {
        OlError::new(OL_ERRC_INVALID_NULL_POINTER, format!("ArgPtrs[{i}] is NULL (ArgSizes[{i}] = {})", sizes[i]))
    };
    if let Some(k) = known {
        if k.len() != n {
            return Err(OlError::invalid_argument(format!(
                "kernel '{name}' takes {} arguments, NumArgs is {n}",
                k.len()
            )));
        }
        // One pass for both checks (the sizes are the parameters', so they add up); the errors in their
        // order: a size first, then a NULL pointer.
        let (mut wrong, mut nulls) = (false, false);
        for ((p, &s), k) in ptrs.iter().zip(sizes).zip(k) {
            wrong |= k.size != s;
            nulls |= (s != 0) & p.is_null();
        }
        if wrong && let Some(i) = (0..n).find(|&i| k[i].size != sizes[i]) {
            return Err(OlError::invalid_argument(format!(
                "argument {i} of kernel '{name}' is {} bytes, ArgSizes[{i}] is {}",
                k[i].size, sizes[i]
            )));
        }
        if nulls && let Some(i) = (0..n).find(|&i| null(i)) {
            return Err(null_error(i));
        }
        return Ok(CheckedArgs { ptrs, sizes });
    }
    // Without known parameters the values are packed: their sizes must add up, argument by argument.
    let mut packed = 0usize;
    for (i, &s) in sizes.iter().enumerate() {
        packed = packed
            .checked_add(s)
            .ok_or_else(|| OlError::invalid_argument("the argument sizes add up to more than the address space"))?;
        if null(i) {
            return Err(null_error(i));
        }
    }
    Ok(CheckedArgs { ptrs, sizes })
}

/// Launch `Kernel` on `Device` over `LaunchSizeArgs`. `ArgPtrs[i]` points to argument `i` of
/// `ArgSizes[i]` bytes (copied before return, straight into the plugin's argument block; count and sizes
/// checked against the kernel's parameters where known).
/// `Properties` (NULL or a list ending with `OL_KERNEL_LAUNCH_PROP_END`) may ask for a cooperative launch:
/// every group runs at the same time, at most `olGetKernelMaxCooperativeGroupCount` groups. A NULL
/// queue blocks until the kernel has finished.
///
/// Errors, in order: `INVALID_ARGUMENT` (exactly one of ArgPtrs/ArgSizes NULL; NumArgs > 0 with either
/// NULL), `INVALID_NULL_HANDLE` (Device, Kernel), `INVALID_NULL_POINTER` (LaunchSizeArgs),
/// `INVALID_QUEUE`, `INVALID_DEVICE`, `INVALID_ARGUMENT` (stale symbol), `INVALID_DEVICE` (queue of another
/// device), `SYMBOL_KIND`, `INVALID_ENUMERATION` (unknown property), `INVALID_ARGUMENT` (no list end;
/// argument count or size mismatch; bad grid; cooperative grid too large), `UNSUPPORTED` (cooperative on
/// a device without it).
///
/// # Safety
/// `ArgPtrs`/`ArgSizes` valid for `NumArgs` entries, each pointer for its size; `Properties` NULL or
/// terminated; `LaunchSizeArgs` NULL or valid; pointers inside the arguments valid for the kernel.
#[unsafe(export_name = "offload_rs_v23_olLaunchKernel")]
pub unsafe extern "C" fn ol_launch_kernel(
    Queue: ol_queue_handle_t,
    Device: ol_device_handle_t,
    Kernel: ol_symbol_handle_t,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
    Properties: *const ol_kernel_launch_prop_t,
    NumArgs: usize,
    ArgPtrs: *mut *mut c_void,
    ArgSizes: *const usize,
) -> ol_result_t {
    entry(
        "olLaunchKernel",
        |ctx| {
            validate(
                ctx,
                &[
                    (
                        ArgPtrs.is_null() != ArgSizes.is_null(),
                        OL_ERRC_INVALID_ARGUMENT,
                        "(ArgPtrs == NULL) != (ArgSizes == NULL)",
                    ),
                    (
                        NumArgs > 0 && (ArgPtrs.is_null() || ArgSizes.is_null()),
                        OL_ERRC_INVALID_ARGUMENT,
                        "NumArgs > 0 && (ArgPtrs == NULL || ArgSizes == NULL)",
                    ),
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Kernel.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"),
                    (LaunchSizeArgs.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == LaunchSizeArgs"),
                ],
            )?;
            if NumArgs > 0 && (ArgPtrs.is_null() || ArgSizes.is_null()) {
                return Err(OlError::new(OL_ERRC_INVALID_NULL_POINTER, "NumArgs > 0 with NULL ArgPtrs or ArgSizes"));
            }
            let q = if Queue.is_null() { None } else { Some(handle::queue(ctx, raw_handle(Queue))?) };
            let d = handle::device(ctx, raw_handle(Device))?;
            let k = handle::symbol(ctx, raw_handle(Kernel))?;
            // as 23's implementation: the queue's device and the symbol's kind, then the properties
            let kernel = objects::launch_target(q, d, k)?;
            // SAFETY: NULL or terminated per the caller contract.
            let coop = unsafe { cooperative(Properties) }?;
            // SAFETY: non-NULL and valid per the caller contract.
            let la = unsafe { LaunchSizeArgs.read_unaligned() };
            let dims = LaunchDims {
                num_groups: [la.NumGroups.x, la.NumGroups.y, la.NumGroups.z],
                group_size: [la.GroupSize.x, la.GroupSize.y, la.GroupSize.z],
                dyn_shared_mem: la.DynSharedMemory,
            };
            // SAFETY: NumArgs entries per the caller contract.
            let args = unsafe { checked_args(&k.name, kernel.params(), NumArgs, ArgPtrs, ArgSizes) }?;
            objects::launch_checked(q, d, kernel, LaunchArgs::Values(&args), dims, coop)
        },
        || {
            // SAFETY: NULL or valid per the caller contract.
            let la = unsafe { super::print::pointee(LaunchSizeArgs, super::print::launch_size) };
            // SAFETY: NULL or a terminated list per the caller contract (its first entry is shown).
            let props = unsafe { super::print::pointee(Properties, super::print::launch_prop) };
            let (ptrs, sizes) = if NumArgs > 0 {
                // SAFETY: NumArgs > 0 entries each per the caller contract (NULL is shown as nullptr).
                unsafe {
                    (
                        super::print::pointee(ArgPtrs.cast_const(), |p| trace::ptr(p.cast_const())),
                        super::print::pointee(ArgSizes, |s| s.to_string()),
                    )
                }
            } else {
                (trace::ptr(ArgPtrs), trace::ptr(ArgSizes))
            };
            format!(
                ".Queue = {}, .Device = {}, .Kernel = {}, .LaunchSizeArgs = {la}, .Properties = {props}, .NumArgs = {NumArgs}, .ArgPtrs = {ptrs}, .ArgSizes = {sizes}",
                trace::ptr(Queue),
                trace::ptr(Device),
                trace::ptr(Kernel),
            )
        },
    )
}

/// How many work-groups of `LaunchSizeArgs->GroupSize` (with its dynamic shared memory) a cooperative
/// launch of `Kernel` on `Device` may have: on the CPU device one per compute unit.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device, Kernel), `INVALID_NULL_POINTER` (LaunchSizeArgs,
/// MaxGroupCount), `INVALID_DEVICE`, `INVALID_ARGUMENT` (stale symbol; bad group size), `SYMBOL_KIND`,
/// `UNSUPPORTED` (a device without cooperative launches).
///
/// # Safety
/// `LaunchSizeArgs` NULL or valid; `MaxGroupCount` NULL or writable.
#[unsafe(export_name = "offload_rs_v23_olGetKernelMaxCooperativeGroupCount")]
pub unsafe extern "C" fn ol_get_kernel_max_cooperative_group_count(
    Device: ol_device_handle_t,
    Kernel: ol_symbol_handle_t,
    LaunchSizeArgs: *const ol_kernel_launch_size_args_t,
    MaxGroupCount: *mut u32,
) -> ol_result_t {
    entry(
        "olGetKernelMaxCooperativeGroupCount",
        |ctx| {
            validate(
                ctx,
                &[
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Kernel.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Kernel"),
                    (LaunchSizeArgs.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == LaunchSizeArgs"),
                    (MaxGroupCount.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == MaxGroupCount"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            let k = handle::symbol(ctx, raw_handle(Kernel))?;
            // SAFETY: non-NULL and valid per the caller contract.
            let la = unsafe { LaunchSizeArgs.read_unaligned() };
            let gs = [la.GroupSize.x, la.GroupSize.y, la.GroupSize.z];
            let n = objects::max_cooperative_groups(d, k, gs, la.DynSharedMemory)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(MaxGroupCount, n, "MaxGroupCount") }
        },
        || {
            // SAFETY: NULL or valid per the caller contract.
            let la = unsafe { super::print::pointee(LaunchSizeArgs, super::print::launch_size) };
            // SAFETY: the out-parameter is NULL or valid (caller contract).
            let n = unsafe { super::print::pointee(MaxGroupCount.cast_const(), |n| n.to_string()) };
            format!(
                ".Device = {}, .Kernel = {}, .LaunchSizeArgs = {la}, .MaxGroupCount = {n}",
                trace::ptr(Device),
                trace::ptr(Kernel),
            )
        },
    )
}
