//! A kernel's full version, compiled beside its first launch at a new group shape.
//!
//! The first launch of a kernel with a group shape it has not run with needs code for that shape
//! (`launch.rs`: its launch-time specialisation). The full version (`default<O3>`, code generation at
//! -O3) takes 15-250 ms to compile for the suite's kernels, and the launch used to wait for all of it.
//! Now the first launch compiles a **quick** version (the same lowering, then a short pipeline and -O1:
//! src/jit/llvm/compile.rs's `QUICK_PIPELINE`; 10-43 ms for the same kernels) and starts running it, while
//! the full version compiles on the tier-up thread (in a compile helper, beside the launch; with two CPUs
//! or more submitted before the quick version's compile starts, so that the two compile at once). The launch
//! moves to the full version between work-groups once it is there (each work-group looks, one load), so a
//! long first launch costs about the full compile and a full-speed run, not a slow run; **every later
//! launch runs the full version**, waiting for the rest of its compile if it has not finished. Both
//! versions come from the same lowering and run the same work-groups with the same memory; work-groups
//! are independent on the GPU too, so running some with one and some with the other is one of the
//! executions the kernel allows. Their results can differ only where the kernel's own flags let LLVM
//! choose (fast-math reassociation) or where it has undefined behaviour. A kernel built with debug info
//! (`-g`) runs its full version from the first launch on: a debugger is to see the same code at every
//! launch (and the quick version keeps fewer variables).
//!
//! A [`Deferred`] is a compile that someone will run: the tier-up thread, or the first launch that needs
//! its result before the thread got to it (that launch then compiles it itself, on its own thread, rather
//! than wait behind other kernels' compiles). One tier-up thread per process runs the jobs in order; it is
//! started on demand and ends after [`IDLE_EXIT`] without work. A job whose kernel was destroyed before its
//! turn is skipped. `olShutDown` waits for the job in progress ([`drain`]) and drops those not started: a
//! later launch of their kernels compiles them itself.
//!
//! `OFFLOAD_RS_JIT_QUICK_FIRST=0` turns the quick version off (`jit::tiers`): every first launch waits
//! for the full version, as before; `OFFLOAD_RS_JIT_QUICK_FIRST=only` runs the quick version for every
//! launch (the exactness tests of the quick pipeline: scripts/test.sh).

use crate::sync::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// The tier-up thread ends after this long without work (the next job starts a new one).
const IDLE_EXIT: Duration = Duration::from_secs(1);

/// A computation of a `T` (a compile) that runs once, on whichever thread gets to it first; `None` when
/// it failed (or panicked).
pub(super) struct Deferred<T> {
    state: Mutex<State<T>>,
    done: Condvar,
    /// set (Release) once `state` is `Done`: a launch's work-groups look here ([`Deferred::try_get`])
    ready: AtomicBool,
}

enum State<T> {
    Queued(Box<dyn FnOnce() -> Option<T> + Send>),
    Running,
    Done(Option<T>),
}

impl<T: Clone> Deferred<T> {
    pub(super) fn new(job: impl FnOnce() -> Option<T> + Send + 'static) -> Arc<Deferred<T>> {
        Arc::new(Deferred {
            state: Mutex::new(State::Queued(Box::new(job))),
            done: Condvar::new(),
            ready: AtomicBool::new(false),
        })
    }

    /// The result where no job was run for it yet (a cache hit): the job is dropped.
    pub(super) fn fulfil(&self, value: Option<T>) {
        let mut st = self.state.lock();
        if matches!(*st, State::Queued(_)) {
            *st = State::Done(value);
            self.ready.store(true, Ordering::Release);
            self.done.notify_all();
        }
    }

    /// Runs the job here if nobody has started it.
    fn run_if_queued(&self) {
        let job = {
            let mut st = self.state.lock();
            match std::mem::replace(&mut *st, State::Running) {
                State::Queued(job) => job,
                other => {
                    *st = other;
                    return;
                }
            }
        };
        // a panic is a failed compile, and must not leave the waiters waiting
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(None);
        *self.state.lock() = State::Done(r);
        self.ready.store(true, Ordering::Release);
        self.done.notify_all();
    }

    /// The result if it is there (`Some(None)`: the job failed), without running or waiting for the job:
    /// one load while it is not.
    pub(super) fn try_get(&self) -> Option<Option<T>> {
        if !self.ready.load(Ordering::Acquire) {
            return None;
        }
        match &*self.state.lock() {
            State::Done(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// The result: run here if nobody has started the job, waited for if someone has.
    pub(super) fn get(&self) -> Option<T> {
        let mut st = self.state.lock();
        loop {
            match &*st {
                State::Done(v) => return v.clone(),
                State::Running => self.done.wait(&mut st),
                State::Queued(_) => {
                    drop(st);
                    self.run_if_queued();
                    st = self.state.lock();
                }
            }
        }
    }

    /// Whether the result is there (tests).
    #[cfg(test)]
    pub(super) fn is_done(&self) -> bool {
        self.try_get().is_some()
    }
}

/// A job of the tier-up thread: runs its [`Deferred`] if that still exists and nobody started it.
type Job = Box<dyn FnOnce() + Send>;

struct Worker {
    state: Mutex<WorkerState>,
    /// signalled when a job is queued, and when the thread finished one
    cv: Condvar,
}

struct WorkerState {
    /// the process these threads belong to: a `fork()`ed child starts afresh
    owner: u32,
    jobs: VecDeque<Job>,
    /// whether a tier-up thread exists (it ends itself when idle)
    thread: bool,
    /// whether it is running a job now
    busy: bool,
}

impl WorkerState {
    fn fresh() -> WorkerState {
        WorkerState { owner: std::process::id(), jobs: VecDeque::new(), thread: false, busy: false }
    }
}

fn worker() -> &'static Worker {
    static W: OnceLock<Worker> = OnceLock::new();
    W.get_or_init(|| Worker { state: Mutex::new(WorkerState::fresh()), cv: Condvar::new() })
}

/// Queues `d` for the tier-up thread (started if there is none). Without a thread (none could start),
/// the first launch that needs the result runs the job itself.
pub(super) fn submit<T: Clone + Send + 'static>(d: &Arc<Deferred<T>>) {
    let weak: Weak<Deferred<T>> = Arc::downgrade(d);
    let w = worker();
    let mut st = w.state.lock();
    if st.owner != std::process::id() {
        *st = WorkerState::fresh();
    }
    st.jobs.push_back(Box::new(move || {
        if let Some(d) = weak.upgrade() {
            d.run_if_queued();
        }
    }));
    if st.thread {
        w.cv.notify_all();
        return;
    }
    st.thread = true;
    drop(st);
    // (the stack of the threads that run launches: without a compile helper, LLVM runs on this thread)
    let stack = super::pool::WORKER_STACK;
    if crate::threads::spawn_detached("ol-rs-tier-up", stack, Box::new(run_worker)).is_err() {
        let mut st = w.state.lock();
        st.thread = false;
        st.jobs.clear();
    }
}

fn run_worker() {
    let w = worker();
    let mut st = w.state.lock();
    loop {
        if let Some(job) = st.jobs.pop_front() {
            st.busy = true;
            drop(st);
            // (the job catches its compile's panics; this is for the state below)
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            st = w.state.lock();
            st.busy = false;
            w.cv.notify_all();
            continue;
        }
        if w.cv.wait_for(&mut st, IDLE_EXIT).timed_out() && st.jobs.is_empty() {
            st.thread = false;
            return;
        }
    }
}

/// For `olShutDown`: drops the jobs not started and waits for the one in progress.
pub fn drain() {
    let w = worker();
    let mut st = w.state.lock();
    if st.owner != std::process::id() {
        return;
    }
    st.jobs.clear();
    while st.busy {
        w.cv.wait(&mut st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// Waits until the tier-up thread ran `d` (queued again now and then: another test's `olShutDown`
    /// drops the queued jobs).
    fn wait_for_the_thread<T: Clone + Send + 'static>(d: &Arc<Deferred<T>>) {
        let t = std::time::Instant::now();
        while !d.is_done() {
            assert!(t.elapsed() < Duration::from_secs(60), "the tier-up thread did not run the job");
            std::thread::sleep(Duration::from_millis(10));
            submit(d);
        }
    }

    #[test]
    fn a_deferred_job_runs_once_whoever_asks() {
        let runs = Arc::new(AtomicU32::new(0));
        let r = runs.clone();
        let d = Deferred::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            Some(7u32)
        });
        submit(&d);
        let got: Vec<Option<u32>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| d.get())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|g| *g == Some(7)), "{got:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(d.is_done());
    }

    #[test]
    fn the_tier_up_thread_runs_jobs_nobody_waits_for() {
        let d = Deferred::new(|| Some(1u8));
        submit(&d);
        wait_for_the_thread(&d);
        assert_eq!(d.get(), Some(1));
    }

    #[test]
    fn a_panicking_job_is_a_failure_not_a_hang() {
        let d: Arc<Deferred<u8>> = Deferred::new(|| panic!("a compile that panics"));
        assert_eq!(d.get(), None);
        assert_eq!(d.get(), None);
        // and on the tier-up thread
        let d: Arc<Deferred<u8>> = Deferred::new(|| panic!("a compile that panics"));
        submit(&d);
        assert_eq!(d.get(), None);
    }

    #[test]
    fn a_fulfilled_job_does_not_run_and_a_dropped_one_is_skipped() {
        let d = Deferred::new(|| -> Option<u8> { panic!("must not run") });
        d.fulfil(Some(3));
        submit(&d);
        assert_eq!(d.get(), Some(3));
        // fulfil after the result is there changes nothing
        d.fulfil(Some(4));
        assert_eq!(d.get(), Some(3));
        let runs = Arc::new(AtomicU32::new(0));
        let r = runs.clone();
        let gone = Deferred::new(move || Some(r.fetch_add(1, Ordering::SeqCst)));
        // hold the thread with a slow job so that `gone` is dropped before its turn
        let slow = Deferred::new(|| {
            std::thread::sleep(Duration::from_millis(50));
            Some(0u32)
        });
        submit(&slow);
        submit(&gone);
        drop(gone);
        assert_eq!(slow.get(), Some(0));
        let last = Deferred::new(|| Some(0u32));
        submit(&last);
        wait_for_the_thread(&last);
        assert_eq!(runs.load(Ordering::SeqCst), 0, "a job whose kernel is gone ran");
    }
}
