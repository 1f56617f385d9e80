//! 23.1's `olCreateEvent(Queue, Flags, &Event)` and the new `olGetEventElapsedTime`.

use crate::api::{entry, raw_handle, validate, write_out};
use crate::ffi::*;
use crate::runtime::handle;
use crate::runtime::objects;
use crate::trace;

fn event_flags_name(f: ol_event_flags_t) -> &'static str {
    enumerator_name!(f; OL_EVENT_FLAGS_NONE, OL_EVENT_FLAGS_ENABLE_PROFILING)
}

/// Create an event marking everything enqueued on `Queue` so far. With `OL_EVENT_FLAGS_ENABLE_PROFILING`
/// the event also records when the queue reached it, for `olGetEventElapsedTime`; any other value is
/// an event without profiling (LLVM 23 tests `Flags == ENABLE_PROFILING`).
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Queue), `INVALID_NULL_POINTER` (Event), `INVALID_QUEUE`.
///
/// # Safety
/// `Event` must be NULL or valid for writing a handle.
#[unsafe(export_name = "offload_rs_v23_olCreateEvent")]
pub unsafe extern "C" fn ol_create_event(
    Queue: ol_queue_handle_t,
    Flags: ol_event_flags_t,
    Event: *mut ol_event_handle_t,
) -> ol_result_t {
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
            let e = objects::create_event_with(q, Flags == OL_EVENT_FLAGS_ENABLE_PROFILING)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(Event, e as usize as ol_event_handle_t, "Event") }?;
            Ok(())
        },
        || {
            format!(
                ".Queue = {}, .Flags = {}, .Event = {}",
                trace::ptr(Queue),
                event_flags_name(Flags),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(Event) }
            )
        },
    )
}

/// Milliseconds between two events created with `OL_EVENT_FLAGS_ENABLE_PROFILING` on one device, both
/// completed (host timestamps taken when each queue reached its event).
///
/// Errors, in order: `INVALID_NULL_HANDLE` (StartEvent, EndEvent), `INVALID_NULL_POINTER` (ElapsedTime),
/// `INVALID_EVENT`, `INVALID_ARGUMENT` (an event without profiling), `INVALID_DEVICE` (events of two
/// devices), `INVALID_ARGUMENT` (an event not completed yet).
///
/// # Safety
/// `ElapsedTime` must be NULL or writable.
#[unsafe(export_name = "offload_rs_v23_olGetEventElapsedTime")]
pub unsafe extern "C" fn ol_get_event_elapsed_time(
    StartEvent: ol_event_handle_t,
    EndEvent: ol_event_handle_t,
    ElapsedTime: *mut f32,
) -> ol_result_t {
    entry(
        "olGetEventElapsedTime",
        |ctx| {
            validate(
                ctx,
                &[
                    (StartEvent.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == StartEvent"),
                    (EndEvent.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == EndEvent"),
                    (ElapsedTime.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == ElapsedTime"),
                ],
            )?;
            let a = handle::event(ctx, raw_handle(StartEvent))?;
            let b = handle::event(ctx, raw_handle(EndEvent))?;
            let ms = objects::event_elapsed_ms(a, b)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(ElapsedTime, ms, "ElapsedTime") }
        },
        || {
            format!(
                ".StartEvent = {}, .EndEvent = {}, .ElapsedTime = {}",
                trace::ptr(StartEvent),
                trace::ptr(EndEvent),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { super::print::pointee(ElapsedTime, super::print::float) }
            )
        },
    )
}
