//! `olCreateEvent`, `olDestroyEvent`, `olSyncEvent`, `olGetEventInfo(Size)`.

use std::ffi::c_void;

use crate::api::{entry, raw_handle, validate, write_out};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoQuery, InfoValue};
use crate::runtime::Context;
use crate::runtime::handle;
use crate::runtime::{Event, objects};
use crate::trace;

/// Create an event marking everything enqueued on `Queue` so far (complete at once if the queue is idle).
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Queue), `INVALID_NULL_POINTER` (Event), `INVALID_QUEUE`.
///
/// # Safety
/// `Event` must be NULL or valid for writing a handle.
#[unsafe(export_name = "olCreateEvent")]
pub unsafe extern "C" fn ol_create_event(Queue: ol_queue_handle_t, Event: *mut ol_event_handle_t) -> ol_result_t {
    entry(
        "olCreateEvent",
        |ctx| {
            validate(
                ctx,
                &[
                    (Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue"),
                    (Event.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Event"),
                ],
            )?;
            let q = handle::queue(ctx, raw_handle(Queue))?;
            let e = objects::create_event(q)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(Event, e as usize as ol_event_handle_t, "Event") }?;
            Ok(())
        },
        || {
            format!(
                ".Queue = {}, .Event = {}",
                trace::ptr(Queue), // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(Event) }
            )
        },
    )
}

/// Destroy an event (also after its queue was destroyed).
///
/// Errors: `INVALID_NULL_HANDLE`, `INVALID_EVENT` (destroyed, stale or wrong-kind handle).
///
/// # Safety
/// Any value is safe to pass.
#[unsafe(export_name = "olDestroyEvent")]
pub unsafe extern "C" fn ol_destroy_event(Event: ol_event_handle_t) -> ol_result_t {
    entry(
        "olDestroyEvent",
        |ctx| {
            validate(ctx, &[(Event.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Event")])?;
            handle::take_event(ctx, raw_handle(Event))?;
            Ok(())
        },
        || format!(".Event = {}", trace::ptr(Event)),
    )
}

/// Block until the work the event marks has completed (also after its queue was destroyed).
///
/// Errors: `INVALID_NULL_HANDLE`, `INVALID_EVENT`, `UNSUPPORTED` (from a host function of the event's
/// queue), or the error of failed work before the event.
///
/// # Safety
/// Any value is safe to pass.
#[unsafe(export_name = "olSyncEvent")]
pub unsafe extern "C" fn ol_sync_event(Event: ol_event_handle_t) -> ol_result_t {
    entry(
        "olSyncEvent",
        |ctx| {
            validate(ctx, &[(Event.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Event")])?;
            let e = handle::event(ctx, raw_handle(Event))?;
            objects::sync_event(e)
        },
        || format!(".Event = {}", trace::ptr(Event)),
    )
}

fn event_info(e: &Event, name: ol_event_info_t) -> OlResult<InfoValue<'static>> {
    Ok(match name {
        OL_EVENT_INFO_QUEUE => InfoValue::Ptr(e.queue),
        OL_EVENT_INFO_IS_COMPLETE => InfoValue::Bool(objects::event_is_complete(e)?),
        other => return Err(OlError::invalid_enum(format!("olGetEventInfo enum '{}' is invalid", other.0 as i32))),
    })
}

fn event_info_name(n: ol_event_info_t) -> &'static str {
    enumerator_name!(n;
        OL_EVENT_INFO_QUEUE,
        OL_EVENT_INFO_IS_COMPLETE,
    )
}

/// `olGetEventInfo` / `olGetEventInfoSize`.
pub(crate) enum EventQuery {}

impl InfoQuery for EventQuery {
    type Name = ol_event_info_t;
    const FUNCTION: &'static str = "olGetEventInfo";
    const SIZE_FUNCTION: &'static str = "olGetEventInfoSize";
    const ARG: &'static str = "Event";
    const NULL_CHECK: &'static str = "NULL == Event";
    fn name(name: ol_event_info_t) -> &'static str {
        event_info_name(name)
    }
    #[inline(always)]
    fn value(ctx: &Context, obj: u64, name: ol_event_info_t) -> OlResult<InfoValue<'_>> {
        event_info(handle::event(ctx, obj)?, name)
    }
}

/// Query an event property (QUEUE, IS_COMPLETE: a non-blocking poll).
///
/// Errors, in order: `INVALID_SIZE` (PropSize == 0), `INVALID_NULL_HANDLE`, `INVALID_NULL_POINTER`
/// (PropValue), `INVALID_EVENT`, `INVALID_ENUMERATION`, `INVALID_SIZE` (too small).
///
/// # Safety
/// `PropValue` must be NULL or valid for `PropSize` writable bytes.
#[unsafe(export_name = "olGetEventInfo")]
pub unsafe extern "C" fn ol_get_event_info(
    Event: ol_event_handle_t,
    PropName: ol_event_info_t,
    PropSize: usize,
    PropValue: *mut c_void,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query::<EventQuery>(Event as usize as u64, PropName, PropSize, PropValue) }
}

/// Query the byte size of an event property.
///
/// Errors, in order: `INVALID_NULL_HANDLE`, `INVALID_NULL_POINTER` (PropSizeRet), `INVALID_EVENT`,
/// `INVALID_ENUMERATION`.
///
/// # Safety
/// `PropSizeRet` must be NULL or valid for writing a `size_t`.
#[unsafe(export_name = "olGetEventInfoSize")]
pub unsafe extern "C" fn ol_get_event_info_size(
    Event: ol_event_handle_t,
    PropName: ol_event_info_t,
    PropSizeRet: *mut usize,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query_size::<EventQuery>(Event as usize as u64, PropName, PropSizeRet) }
}
