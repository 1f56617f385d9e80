//! 23.1's new `olQueryQueue`.

use crate::api::{entry, raw_handle, validate};
use crate::ffi::*;
use crate::runtime::handle;
use crate::runtime::objects;
use crate::trace;

/// Whether everything enqueued on `Queue` has completed, without blocking. `IsQueueWorkCompleted` may be
/// NULL (the call then only checks the queue).
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Queue), `INVALID_QUEUE`.
///
/// # Safety
/// `IsQueueWorkCompleted` must be NULL or writable.
#[unsafe(export_name = "offload_rs_v23_olQueryQueue")]
pub unsafe extern "C" fn ol_query_queue(Queue: ol_queue_handle_t, IsQueueWorkCompleted: *mut bool) -> ol_result_t {
    entry(
        "olQueryQueue",
        |ctx| {
            validate(ctx, &[(Queue.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Queue")])?;
            let q = handle::queue(ctx, raw_handle(Queue))?;
            let done = objects::query_queue(q)?;
            if !IsQueueWorkCompleted.is_null() {
                // SAFETY: non-NULL and writable per the caller contract.
                unsafe { IsQueueWorkCompleted.write_unaligned(done) };
            }
            Ok(())
        },
        || {
            format!(
                ".Queue = {}, .IsQueueWorkCompleted = {}",
                trace::ptr(Queue),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_bool(IsQueueWorkCompleted) }
            )
        },
    )
}
