//! `olCreateQueue`, `olDestroyQueue`, `olSyncQueue`, `olWaitEvents`, `olGetQueueInfo(Size)`,
//! `olLaunchHostFunction`.

use std::ffi::c_void;

use crate::api::{entry, raw_handle, validate, write_out};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoQuery, InfoValue};
use crate::runtime::Context;
use crate::runtime::handle;
use crate::runtime::{Queue, objects};
use crate::trace;

/// Create an in-order queue on `Device`; work on it runs asynchronously to the caller.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (Queue), `INVALID_DEVICE`,
/// `UNSUPPORTED` (the virtual host device).
///
/// # Safety
/// `Queue` must be NULL or valid for writing a handle.
#[unsafe(export_name = "olCreateQueue")]
pub unsafe extern "C" fn ol_create_queue(Device: ol_device_handle_t, Queue: *mut ol_queue_handle_t) -> ol_result_t {
    entry(
        "olCreateQueue",
        |ctx| {
            validate(
                ctx,
                &[
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (Queue.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Queue"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            let q = objects::create_queue(d)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(Queue, q as usize as ol_queue_handle_t, "Queue") }?;
            Ok(())
        },
        || {
            format!(
                ".Device = {}, .Queue = {}",
                trace::ptr(Device), // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(Queue) }
            )
        },
    )
}

/// Destroy a queue without waiting: work already enqueued still completes, and events recorded on it stay
/// valid.
///
/// Errors: `INVALID_NULL_HANDLE`, `INVALID_QUEUE` (destroyed, stale or wrong-kind handle).
///
/// # Safety
/// Any value is safe to pass.
#[unsafe(export_name = "olDestroyQueue")]
pub unsafe extern "C" fn ol_destroy_queue(Queue: ol_queue_handle_t) -> ol_result_t {
    entry(
        "olDestroyQueue",
        |ctx| {
            validate(ctx, &[(Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue")])?;
            let q = handle::take_queue(ctx, raw_handle(Queue))?;
            objects::destroy_queue(ctx, q)
        },
        || format!(".Queue = {}", trace::ptr(Queue)),
    )
}

/// Block until all work enqueued so far has completed; returns the first error raised by that work.
///
/// Errors: `INVALID_NULL_HANDLE`, `INVALID_QUEUE`, `UNSUPPORTED` (from a host function of this queue), or
/// the error of failed queued work.
///
/// # Safety
/// Any value is safe to pass.
#[unsafe(export_name = "olSyncQueue")]
pub unsafe extern "C" fn ol_sync_queue(Queue: ol_queue_handle_t) -> ol_result_t {
    entry(
        "olSyncQueue",
        |ctx| {
            validate(ctx, &[(Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue")])?;
            let q = handle::queue(ctx, raw_handle(Queue))?;
            objects::sync_queue(q)
        },
        || format!(".Queue = {}", trace::ptr(Queue)),
    )
}

/// Make later work on `Queue` wait for every event in `Events`; the caller does not block.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Queue), `INVALID_NULL_POINTER` (Events, even with
/// NumEvents == 0, as in LLVM 22), `INVALID_QUEUE`, `INVALID_NULL_HANDLE` (a NULL entry),
/// `INVALID_EVENT` (a destroyed or stale entry), `UNSUPPORTED` (from a host function, an event of the host
/// function's own queue).
///
/// # Safety
/// `Events` must be NULL or valid for reading `NumEvents` handles.
#[unsafe(export_name = "olWaitEvents")]
pub unsafe extern "C" fn ol_wait_events(
    Queue: ol_queue_handle_t,
    Events: *mut ol_event_handle_t,
    NumEvents: usize,
) -> ol_result_t {
    entry(
        "olWaitEvents",
        |ctx| {
            validate(
                ctx,
                &[
                    (Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue"),
                    (Events.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Events"),
                ],
            )?;
            let q = handle::queue(ctx, raw_handle(Queue))?;
            if NumEvents == 0 {
                return Ok(());
            }
            // SAFETY: Events is valid for NumEvents handles (caller contract).
            let evs: Vec<u64> =
                unsafe { std::slice::from_raw_parts(Events, NumEvents) }.iter().map(|&e| raw_handle(e)).collect();
            objects::wait_events(ctx, q, &evs)
        },
        || {
            // SAFETY: only the first element is shown, as LLVM's tracer does; Events is valid if non-NULL.
            let first = (!Events.is_null() && NumEvents > 0).then(|| trace::ptr(unsafe { *Events }));
            format!(".Queue = {}, .Events = {}, .NumEvents = {NumEvents}", trace::ptr(Queue), trace::out(Events, first))
        },
    )
}

fn queue_info(q: &Queue, name: ol_queue_info_t) -> OlResult<InfoValue<'static>> {
    Ok(match name {
        OL_QUEUE_INFO_DEVICE => InfoValue::Ptr(q.device.handle),
        OL_QUEUE_INFO_EMPTY => InfoValue::Bool(q.inner.is_empty()?),
        other => return Err(OlError::invalid_enum(format!("olGetQueueInfo enum '{}' is invalid", other.0 as i32))),
    })
}

fn queue_info_name(n: ol_queue_info_t) -> &'static str {
    enumerator_name!(n;
        OL_QUEUE_INFO_DEVICE,
        OL_QUEUE_INFO_EMPTY,
    )
}

/// `olGetQueueInfo` / `olGetQueueInfoSize`.
pub(crate) enum QueueQuery {}

impl InfoQuery for QueueQuery {
    type Name = ol_queue_info_t;
    const FUNCTION: &'static str = "olGetQueueInfo";
    const SIZE_FUNCTION: &'static str = "olGetQueueInfoSize";
    const ARG: &'static str = "Queue";
    const NULL_CHECK: &'static str = "NULL == Queue";
    fn name(name: ol_queue_info_t) -> &'static str {
        queue_info_name(name)
    }
    #[inline(always)]
    fn value(ctx: &Context, obj: u64, name: ol_queue_info_t) -> OlResult<InfoValue<'_>> {
        queue_info(handle::queue(ctx, obj)?, name)
    }
}

/// Query a queue property (DEVICE, EMPTY: a non-blocking poll).
///
/// Errors, in order: `INVALID_SIZE` (PropSize == 0), `INVALID_NULL_HANDLE`, `INVALID_NULL_POINTER`
/// (PropValue), `INVALID_QUEUE`, `INVALID_ENUMERATION`, `INVALID_SIZE` (too small).
///
/// # Safety
/// `PropValue` must be NULL or valid for `PropSize` writable bytes.
#[unsafe(export_name = "olGetQueueInfo")]
pub unsafe extern "C" fn ol_get_queue_info(
    Queue: ol_queue_handle_t,
    PropName: ol_queue_info_t,
    PropSize: usize,
    PropValue: *mut c_void,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query::<QueueQuery>(Queue as usize as u64, PropName, PropSize, PropValue) }
}

/// Query the byte size of a queue property.
///
/// Errors, in order: `INVALID_NULL_HANDLE`, `INVALID_NULL_POINTER` (PropSizeRet), `INVALID_QUEUE`,
/// `INVALID_ENUMERATION`.
///
/// # Safety
/// `PropSizeRet` must be NULL or valid for writing a `size_t`.
#[unsafe(export_name = "olGetQueueInfoSize")]
pub unsafe extern "C" fn ol_get_queue_info_size(
    Queue: ol_queue_handle_t,
    PropName: ol_queue_info_t,
    PropSizeRet: *mut usize,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query_size::<QueueQuery>(Queue as usize as u64, PropName, PropSizeRet) }
}

/// User data handed to a host callback on another thread.
struct SendPtr(*mut c_void);
// SAFETY: the pointer is opaque to us and only handed back to the caller's own callback, as the API
// documents; the caller is responsible for what it points to.
unsafe impl Send for SendPtr {}

/// Enqueue `Callback(UserData)`: it runs in queue order on a library thread, after earlier work and
/// before later work, and may run after the queue has been destroyed. It must not call liboffload.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Queue), `INVALID_NULL_POINTER` (Callback), `INVALID_QUEUE`.
///
/// # Safety
/// `Callback` must be safe to call with `UserData` from another thread.
#[unsafe(export_name = "olLaunchHostFunction")]
pub unsafe extern "C" fn ol_launch_host_function(
    Queue: ol_queue_handle_t,
    Callback: ol_host_function_cb_t,
    UserData: *mut c_void,
) -> ol_result_t {
    entry(
        "olLaunchHostFunction",
        |ctx| {
            validate(
                ctx,
                &[
                    (Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue"),
                    (Callback.is_none(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"),
                ],
            )?;
            let q = handle::queue(ctx, raw_handle(Queue))?;
            // Checked above in both modes; unwrapped here with the same error.
            let Some(cb) = Callback else {
                return Err(OlError::validation(OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"));
            };
            let ud = SendPtr(UserData);
            objects::launch_host_function(
                q,
                Box::new(move || {
                    let ud = ud;
                    // SAFETY: the caller guarantees the callback may be called with its user data from
                    // another thread (API contract of olLaunchHostFunction).
                    unsafe { cb(ud.0) }
                }),
            )
        },
        || {
            format!(
                ".Queue = {}, .Callback = {}, .UserData = {}",
                trace::ptr(Queue),
                trace::fnptr(Callback.map_or(0, |f| f as usize)),
                trace::ptr(UserData)
            )
        },
    )
}
