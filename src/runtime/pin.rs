//! Which threads are inside an API call, for two jobs: the last `olShutDown` waits for the calls in
//! flight before it tears the context down, and the handle table frees a destroyed object only once
//! every call that could still be looking at it has returned (epoch-based reclamation, as in
//! crossbeam-epoch or the kernel's RCU, reduced to what this library needs).
//!
//! A call *pins* its thread: the thread's record announces the global epoch it entered at, and `0`
//! means "not in a call". Pins nest (a callback of `olIterateDevices` calling `olGetDeviceInfo`): only
//! the outermost one touches the record. The hot path is one thread-local access, one load and one
//! store (the store is sequentially consistent: the announcement must be visible before the thread
//! reads the context or a handle slot), and one plain store on the way out: no lock, no shared
//! counter, no reference count.
//!
//! Work deferred with [`defer`] is tagged with the epoch at which its object was unlinked; it runs once
//! no thread is pinned at that epoch or earlier (a thread that pinned later could not have seen the
//! object). It runs on the thread that deferred it when that thread leaves its call and nothing older is
//! in flight (in a single-threaded program: at once), else at a later [`defer`]ing call's exit, or at
//! the last `olShutDown` ([`run_all_deferred`]).

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::time::Duration;

use parking_lot::Mutex;

/// One thread's announcement, on its own cache line; reused by a later thread once its owner exits.
#[repr(align(64))]
struct Record {
    /// The epoch the thread's outermost call entered at; 0 when it is in no call.
    epoch: AtomicU64,
    in_use: AtomicBool,
}

/// The calling thread's view: its record (NULL until its first call, and again once its thread-locals
/// are being destroyed), how deeply its calls nest, whether it deferred work. Constant-initialised and
/// without a destructor, so the hot path is a bare thread-local access.
struct Local {
    rec: Cell<*const Record>,
    depth: Cell<u32>,
    deferred: Cell<bool>,
}

thread_local! {
    static LOCAL: Local = const {
        Local { rec: Cell::new(std::ptr::null()), depth: Cell::new(0), deferred: Cell::new(false) }
    };
    /// Hands the thread's record back when the thread exits.
    static OWNER: Owner = const { Owner(Cell::new(std::ptr::null())) };
}

struct Owner(Cell<*const Record>);

impl Drop for Owner {
    fn drop(&mut self) {
        let rec = self.0.get();
        if rec.is_null() {
            return;
        }
        // A call made later by this thread (from another thread-local's destructor) counts as anonymous.
        let _ = LOCAL.try_with(|l| l.rec.set(std::ptr::null()));
        let _all = RECORDS.lock();
        // SAFETY: records are leaked, never freed. The thread is in no call of ours, so it reads 0.
        unsafe { (*rec).in_use.store(false, Relaxed) };
    }
}

/// This thread's record: taken from the free ones or made, and registered for release at thread exit.
/// NULL when the thread is exiting (its thread-locals are being destroyed).
#[cold]
fn register() -> *const Record {
    let mut all = RECORDS.lock();
    let rec: &'static Record = match all.iter().find(|r| !r.in_use.load(Relaxed)) {
        Some(r) => r,
        None => {
            let r: &'static Record =
                Box::leak(Box::new(Record { epoch: AtomicU64::new(0), in_use: AtomicBool::new(false) }));
            all.push(r);
            r
        }
    };
    if OWNER.try_with(|o| o.0.set(rec)).is_err() {
        return std::ptr::null();
    }
    rec.in_use.store(true, Relaxed);
    rec
}

/// Every record ever made (one per thread that has called us at the same time as others).
static RECORDS: Mutex<Vec<&'static Record>> = Mutex::new(Vec::new());
/// The global epoch: advanced by every [`defer`]; starts at 1 because 0 means "not in a call".
static EPOCH: AtomicU64 = AtomicU64::new(1);
/// Calls from threads whose thread-locals are already gone (a call from a thread-local destructor):
/// they count as pinned at the oldest epoch.
static ANONYMOUS: AtomicUsize = AtomicUsize::new(0);

struct Deferred {
    epoch: u64,
    run: fn(usize),
    arg: usize,
}
static DEFERRED: Mutex<Vec<Deferred>> = Mutex::new(Vec::new());

/// Proof that the current thread is pinned: while it lives, nothing unlinked after it was taken is
/// freed and the context is not torn down. Not `Send`: a pin belongs to its thread.
pub struct Guard {
    local: *const Local,
    _not_send: PhantomData<*const ()>,
}

/// Pin the calling thread (nested pins are free).
#[inline]
pub fn pin() -> Guard {
    let local = LOCAL.with(|l| {
        let d = l.depth.get();
        if d == 0 {
            let mut rec = l.rec.get();
            if rec.is_null() {
                rec = register();
                if rec.is_null() {
                    return std::ptr::null();
                }
                l.rec.set(rec);
            }
            // SAFETY: records are leaked, never freed.
            unsafe { (*rec).epoch.store(EPOCH.load(SeqCst), SeqCst) };
        }
        l.depth.set(d + 1);
        l as *const Local
    });
    if local.is_null() {
        ANONYMOUS.fetch_add(1, SeqCst);
    }
    Guard { local, _not_send: PhantomData }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        if self.local.is_null() {
            ANONYMOUS.fetch_sub(1, Release);
            return;
        }
        // SAFETY: the guard is not Send, so it is dropped on the thread whose thread-local it points to;
        // that thread-local has no destructor and lives as long as the thread.
        let l = unsafe { &*self.local };
        let d = l.depth.get() - 1;
        l.depth.set(d);
        if d == 0 {
            // SAFETY: a pin at depth 0 stored a live record pointer (it is cleared only at depth 0, by the
            // thread's own exit); records are never freed.
            unsafe { (*l.rec.get()).epoch.store(0, Release) };
            if l.deferred.replace(false) {
                run_ready();
            }
        }
    }
}

/// Whether the calling thread is inside a call of ours (a callback calling back in).
pub fn in_call() -> bool {
    LOCAL.with(|l| l.depth.get() > 0)
}

/// The oldest epoch a pinned thread entered at; `u64::MAX` when no thread is in a call.
fn oldest_pinned() -> u64 {
    if ANONYMOUS.load(SeqCst) > 0 {
        return 0;
    }
    RECORDS.lock().iter().map(|r| r.epoch.load(SeqCst)).filter(|&e| e != 0).min().unwrap_or(u64::MAX)
}

/// Run `run(arg)` once no call that could have seen the just-unlinked object is still in flight.
/// Call it after the object became unreachable for new lookups.
pub fn defer(run: fn(usize), arg: usize) {
    let epoch = EPOCH.fetch_add(1, SeqCst);
    DEFERRED.lock().push(Deferred { epoch, run, arg });
    LOCAL.with(|l| l.deferred.set(true));
}

/// Run the deferred work whose grace period has passed (outside every lock).
fn run_ready() {
    let oldest = oldest_pinned();
    let ready: Vec<Deferred> = {
        let mut d = DEFERRED.lock();
        if d.is_empty() {
            return;
        }
        let (ready, keep) = std::mem::take(&mut *d).into_iter().partition(|x| x.epoch < oldest);
        *d = keep;
        ready
    };
    for x in ready {
        (x.run)(x.arg);
    }
}

/// Run all deferred work now: only when no call can be in flight (the last `olShutDown`, after
/// [`wait_for_calls_in_flight`]).
pub fn run_all_deferred() {
    let all = std::mem::take(&mut *DEFERRED.lock());
    for x in all {
        (x.run)(x.arg);
    }
}

/// Wait until no thread is inside a call. The caller must not be pinned itself, and must first have made
/// new calls return at once (the last `olShutDown` clears the context before it waits).
pub fn wait_for_calls_in_flight() {
    let mut spins = 0u32;
    while oldest_pinned() != u64::MAX {
        spins += 1;
        if spins < 100 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static RAN: AtomicUsize = AtomicUsize::new(0);
    fn count(n: usize) {
        RAN.fetch_add(n, SeqCst);
    }

    #[test]
    fn deferred_work_waits_for_an_older_call_on_another_thread() {
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (leave_tx, leave_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let _g = pin();
            entered_tx.send(()).unwrap();
            leave_rx.recv().unwrap();
        });
        entered_rx.recv().unwrap();
        {
            let _g = pin();
            let _nested = pin();
            defer(count, 1000);
        }
        assert_eq!(RAN.load(SeqCst) / 1000, 0, "ran while an older call was in flight");
        leave_tx.send(()).unwrap();
        t.join().unwrap();
        {
            let _g = pin();
            defer(count, 1);
        }
        // the second call's exit runs both: nothing older is pinned any more
        assert_eq!(RAN.load(SeqCst), 1001);
    }
}
