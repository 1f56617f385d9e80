//! Host functions that call back into the library.
//!
//! A host function (`olLaunchHostFunction`) runs in its queue's order: everything enqueued on that queue
//! after it waits until it returns. A call from inside it that would wait for that queue (`olSyncQueue`
//! of it, `olSyncEvent` on one of its events, `olWaitEvents` making another queue wait for one of them,
//! `olMemUnregister`, `olShutDown`) could only return after the host function did: a hang. (Events of
//! the queue recorded before the host function are complete, but telling them apart would take a driver
//! call from a stream callback on CUDA, which the driver refuses; all of them are refused.) Those calls return `OL_ERRC_UNSUPPORTED` instead, saying so (CUDA answers
//! `CUDA_ERROR_NOT_PERMITTED` to any driver call from a stream callback; LLVM 22 documents that callbacks
//! must not call liboffload and hangs). Everything else (work on other queues, allocations, frees,
//! copies with a NULL queue) works from a host function. A wait on another queue that was made to wait
//! for an event recorded after the host function is caught by the CPU plugin, which sees the wait graph
//! (`plugin::cpu::queue`); a CUDA driver refuses every call from a stream callback anyway.
//!
//! The marker is a thread-local set around the user's callback by [`wrap`], whatever thread the plugin
//! runs it on (one of the CPU device's queue threads, the CUDA driver's callback thread).

use std::cell::Cell;

use crate::error::{OlError, OlResult};

thread_local! {
    /// The id of the queue whose host function this thread is running.
    static RUNNING: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Restores the previous marker, also when the callback unwinds.
struct Restore(Option<u64>);

impl Drop for Restore {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(self.0));
    }
}

/// `f` marked as a host function of the queue with id `queue_id` while it runs.
pub fn wrap(queue_id: u64, f: Box<dyn FnOnce() + Send>) -> Box<dyn FnOnce() + Send> {
    Box::new(move || {
        let _restore = Restore(RUNNING.with(|r| r.replace(Some(queue_id))));
        f()
    })
}

/// The id of the queue whose host function is running on this thread, if any.
pub fn running() -> Option<u64> {
    RUNNING.with(Cell::get)
}

/// UNSUPPORTED if this thread runs a host function of queue `queue_id`: `what` would wait for it.
pub fn refuse_wait_for(queue_id: u64, what: &str) -> OlResult<()> {
    match running() {
        Some(q) if q == queue_id => Err(host_fn_error(what)),
        _ => Ok(()),
    }
}

/// UNSUPPORTED if this thread runs any host function: `what` would wait for every queue.
pub fn refuse_in_host_fn(what: &str) -> OlResult<()> {
    match running() {
        Some(_) => Err(host_fn_error(what)),
        None => Ok(()),
    }
}

fn host_fn_error(what: &str) -> OlError {
    OlError::unsupported(format!(
        "{what} called from a host function would wait for the host function's own queue, which cannot \
         go on before the host function returns; call it from another thread"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_set_only_while_the_callback_runs() {
        assert_eq!(running(), None);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
        let s = seen.clone();
        wrap(
            7,
            Box::new(move || {
                *s.lock().unwrap() =
                    Some((running(), refuse_wait_for(7, "x").is_err(), refuse_wait_for(8, "x").is_ok()));
            }),
        )();
        assert_eq!(*seen.lock().unwrap(), Some((Some(7), true, true)));
        assert_eq!(running(), None);
        assert!(refuse_in_host_fn("olShutDown").is_ok());
        // restored after a panic too
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| wrap(9, Box::new(|| panic!("boom")))()));
        assert!(r.is_err());
        assert_eq!(running(), None);
    }
}
