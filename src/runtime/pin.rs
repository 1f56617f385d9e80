//! Which threads are inside an API call, for two jobs: the last `olShutDown` waits for the calls in
//! flight before it tears the context down, and the handle table frees a destroyed object only once
//! every call that could still be looking at it has returned (epoch-based reclamation, as in
//! crossbeam-epoch or the kernel's RCU, reduced to what this library needs).
//!
//! A call *pins* its thread: the thread's record announces the global epoch it entered at, and `0`
//! means "not in a call". Pins nest (a callback of `olIterateDevices` calling `olGetDeviceInfo`): only
//! the outermost one touches the record. The hot path is one thread-local access, one load and one
//! plain store, and one plain store on the way out: no lock, no shared counter, no reference count, no
//! fence.
//!
//! The announcement must be visible to a reclaimer before the thread reads the context or a handle slot
//! (else a reclaimer could miss the pin and free what the thread is about to read). Instead of a fence on
//! every call, the rare reclaimers pay for it (an asymmetric fence, as in liburcu's memb flavour or C++'s
//! proposed `asymmetric_thread_fence_heavy`): before they read the records they call
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which runs a full barrier on every thread of the
//! process, so every announcement made before it is visible and every load after a thread's barrier sees
//! what the reclaimer unlinked before it. Where the kernel refuses membarrier (older than 4.14, a
//! seccomp filter, valgrind), calls announce with a sequentially consistent store as before; which way
//! is decided once, at the first thread's registration, before any call is pinned.
//!
//! Work deferred with [`defer`] is tagged with the epoch at which its object was unlinked; it runs once
//! no thread is pinned at that epoch or earlier (a thread that pinned later could not have seen the
//! object). It runs on the thread that deferred it when that thread leaves its call and nothing older is
//! in flight (in a single-threaded program: at once), else at a later [`defer`]ing call's exit, or at
//! the last `olShutDown` ([`run_all_deferred`]).

use crate::threads::ThreadSlot;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*, compiler_fence};
use std::time::Duration;

use crate::sync::Mutex;

/// One thread's announcement, on its own cache line; reused by a later thread once its owner exits.
#[repr(C, align(64))]
struct Record {
    /// The epoch the thread's outermost call entered at; 0 when it is in no call.
    epoch: AtomicU64,
    in_use: AtomicBool,
}

/// The calling thread's view: its record (NULL until its first call, and again once its thread-locals
/// are being destroyed), how deeply its calls nest, whether it deferred work. Zero-initialised and
/// without a destructor; it lives in C (src/runtime/pin_tls.c) for the initial-exec TLS model, so the
/// hot path reaches it without a call to `__tls_get_addr`.
#[repr(C)]
struct Local {
    rec: Cell<*const Record>,
    depth: Cell<u32>,
    deferred: Cell<bool>,
}

unsafe extern "C" {
    /// The calling thread's `Local` (pin_tls.c; same layout).
    safe fn ol_rs_pin_local() -> *const Local;
}

/// The calling thread's `Local`: valid for the thread's whole life, including while its thread-locals
/// are destroyed; only this thread touches it.
#[inline(always)]
fn local() -> &'static Local {
    // SAFETY: pin_tls.c returns its thread's zero-initialised `struct ol_rs_pin_local`, laid out as `Local`
    // and never freed before the thread ends; `Local` is not `Sync`, so the reference stays on this thread
    // (a `'static` borrow of thread-local storage: nothing here sends it to another thread).
    unsafe { &*ol_rs_pin_local() }
}

/// Hands the thread's record back when the thread exits: a [`ThreadSlot`], as a `thread_local!`'s
/// destructor registration on a client thread's first call can end the process when memory is short.
static OWNER: ThreadSlot<Owner> = ThreadSlot::new();

struct Owner(Cell<*const Record>);

impl Drop for Owner {
    fn drop(&mut self) {
        let rec = self.0.get();
        if rec.is_null() {
            return;
        }
        // A call made later by this thread (from another thread-specific destructor) counts as anonymous.
        local().rec.set(std::ptr::null());
        let _all = RECORDS.lock();
        // SAFETY: records are leaked, never freed. The thread is in no call of ours, so it reads 0.
        unsafe { (*rec).in_use.store(false, Relaxed) };
    }
}

/// This thread's record: taken from the free ones or made, and registered for release at thread exit.
/// NULL when the thread is exiting (its thread-specific values are being destroyed) or there is no memory
/// for the record (the call then counts as anonymous: an error never ends the client's process here).
#[cold]
fn register() -> *const Record {
    let mut all = RECORDS.lock();
    if !FENCE_CHOSEN.replace(true) {
        ASYMMETRIC.store(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED), Relaxed);
    }
    let rec: &'static Record = match all.iter().find(|r| !r.in_use.load(Relaxed)) {
        Some(r) => r,
        None => {
            let one = crate::threads::try_box(Record { epoch: AtomicU64::new(0), in_use: AtomicBool::new(false) });
            let (Some(one), Ok(())) = (one, all.try_reserve(1)) else { return std::ptr::null() };
            let r: &'static Record = Box::leak(one);
            all.push(r);
            r
        }
    };
    if OWNER.with(|| Owner(Cell::new(std::ptr::null())), |o| o.0.set(rec)).is_none() {
        return std::ptr::null();
    }
    rec.in_use.store(true, Relaxed);
    rec
}

/// Every record ever made (one per thread that has called us at the same time as others).
static RECORDS: Mutex<Vec<&'static Record>> = Mutex::new(Vec::new());
/// Whether calls announce with a plain store and reclaimers fence with membarrier (see the module docs).
/// Set once, under the `RECORDS` lock, before the first record exists, and never changed after.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
/// Whether `ASYMMETRIC` was decided (only read and written under the `RECORDS` lock).
static FENCE_CHOSEN: LockedFlag = LockedFlag(std::cell::Cell::new(false));

/// A flag touched only under the `RECORDS` lock.
struct LockedFlag(std::cell::Cell<bool>);
impl LockedFlag {
    fn replace(&self, v: bool) -> bool {
        self.0.replace(v)
    }
}
// SAFETY: read and written only while holding the `RECORDS` lock.
unsafe impl Sync for LockedFlag {}

/// From `<linux/membarrier.h>` (the libc crate does not carry them).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// `membarrier(cmd, 0, 0)`; true on success.
fn membarrier(cmd: libc::c_long) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint, 0 as libc::c_int) == 0 }
}
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
    let l = local();
    let d = l.depth.get();
    if d == 0 {
        let mut rec = l.rec.get();
        if rec.is_null() {
            rec = register();
            if rec.is_null() {
                // The thread is exiting, or memory is short: its call counts as pinned at the oldest epoch.
                ANONYMOUS.fetch_add(1, SeqCst);
                return Guard { local: std::ptr::null(), _not_send: PhantomData };
            }
            l.rec.set(rec);
        }
        // Acquire: a slot read after the announcement is not read before the epoch (weakly ordered CPUs).
        let epoch = EPOCH.load(Acquire);
        // SAFETY: records are leaked, never freed.
        let rec = unsafe { &*rec };
        if ASYMMETRIC.load(Relaxed) {
            // Made visible to reclaimers by their membarrier; the compiler keeps the order.
            rec.epoch.store(epoch, Relaxed);
            compiler_fence(SeqCst);
        } else {
            rec.epoch.store(epoch, SeqCst);
        }
    }
    l.depth.set(d + 1);
    Guard { local: l, _not_send: PhantomData }
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
    local().depth.get() > 0
}

/// The oldest epoch a pinned thread other than the caller entered at; `u64::MAX` when no other thread is
/// in a call. Callers unlinked what they reclaim (or cleared the context) before calling this.
fn oldest_pinned() -> u64 {
    let all = RECORDS.lock();
    let mine = local().rec.get();
    let others = || all.iter().filter(|r| !std::ptr::eq(**r, mine) && r.in_use.load(Relaxed));
    // Make every other thread's announcement visible (see the module docs). Without another thread holding
    // a record none is needed: a thread that registers later does so under this lock, after the unlink.
    // Should the kernel fail its contract, everything counts as pinned (deferred work waits for shutdown).
    if ASYMMETRIC.load(Relaxed) && others().next().is_some() && !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
        return 0;
    }
    if ANONYMOUS.load(SeqCst) > 0 {
        return 0;
    }
    others().map(|r| r.epoch.load(SeqCst)).filter(|&e| e != 0).min().unwrap_or(u64::MAX)
}

/// Run `run(arg)` once no call that could have seen the just-unlinked object is still in flight.
/// Call it after the object became unreachable for new lookups.
pub fn defer(run: fn(usize), arg: usize) {
    let epoch = EPOCH.fetch_add(1, SeqCst);
    DEFERRED.lock().push(Deferred { epoch, run, arg });
    local().deferred.set(true);
}

/// Run the deferred work whose grace period has passed (outside every lock).
fn run_ready() {
    if DEFERRED.lock().is_empty() {
        return;
    }
    // Only work unlinked before the scan: an entry deferred during it may have been read by a call that
    // pinned after its record was scanned.
    let unlinked_before = EPOCH.load(SeqCst);
    let oldest = oldest_pinned().min(unlinked_before);
    let ready: Vec<Deferred> = {
        let mut d = DEFERRED.lock();
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

    /// The slot readers look at: a leaked cell, marked dead by the deferred work that would free it.
    static SLOT: std::sync::atomic::AtomicPtr<AtomicU64> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
    const LIVE: u64 = 1;
    const DEAD: u64 = 0xdead;
    fn mark_dead(p: usize) {
        // SAFETY: `p` is a leaked `AtomicU64` (never freed: the test checks the marks instead).
        unsafe { (*(p as *const AtomicU64)).store(DEAD, SeqCst) };
    }

    /// The tests of this module pin and defer on the process-wide records: one at a time (the race test's
    /// readers would keep the other's deferred work waiting).
    static SERIAL: crate::sync::Mutex<()> = crate::sync::Mutex::new(());

    #[test]
    fn a_pinned_reader_never_sees_what_it_read_reclaimed() {
        let _serial = SERIAL.lock();
        SLOT.store(Box::into_raw(Box::new(AtomicU64::new(LIVE))), SeqCst);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut reads = 0u64;
                    while !stop.load(Relaxed) {
                        let _g = pin();
                        // SAFETY: the cell is leaked; a live one stays live while this pin lives.
                        let cell = unsafe { &*SLOT.load(SeqCst) };
                        for _ in 0..16 {
                            assert_eq!(cell.load(SeqCst), LIVE, "reclaimed while a pinned call read it");
                        }
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        for _ in 0..20_000 {
            let _g = pin();
            let new = Box::into_raw(Box::new(AtomicU64::new(LIVE)));
            let old = SLOT.swap(new, SeqCst);
            defer(mark_dead, old as usize);
        }
        stop.store(true, Relaxed);
        let reads: u64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(reads > 0);
    }

    #[test]
    fn deferred_work_waits_for_an_older_call_on_another_thread() {
        let _serial = SERIAL.lock();
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
