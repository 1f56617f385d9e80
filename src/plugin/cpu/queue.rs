//! Asynchronous in-order queues and events of the CPU device.
//!
//! * A queue is a FIFO of operations with sequence numbers `1, 2, ...` (`enqueued` = last enqueued,
//!   `completed` = last completed; ops complete in order). Enqueueing only takes the queue's lock.
//! * Exactly one thread at a time executes a queue's ops: whoever holds the *executor token*
//!   (`executing`). Queues have no threads of their own: a queue with work nobody executes is
//!   *scheduled* on the *runners*, one process-wide set of library threads that take queues from a FIFO
//!   run list and run their ops in order (a runner is started when a queue is scheduled and no idle one
//!   will take it, and ends after [`IDLE_EXIT`] without work). An idle runner spins for [`SPIN`], then
//!   sleeps; the one that slept last is woken first (its caches are warm, and the others time out).
//! * The bound: at most [`runner_bound`] runners (the CPU device's thread count, at least 2) run work
//!   that does not block (copies, fills, launches; a kernel uses the work-group pool besides), plus at
//!   most [`BLOCKING_SLOTS`] (8) that are inside an op that may block: a host function, or a wait on
//!   another device's event. So the queues use at most [`max_queue_threads`] threads, however many
//!   have work (10 000 busy queues: 10 on a 2-core machine).
//! * A wait on a CPU event that has not completed never occupies a thread: the queue is *parked*, its
//!   `Op::Wait` left at the head, with a registration in the event's queue (`waiters`) that
//!   reschedules it when that queue completes the event's point. So queues waiting on each other can
//!   never starve the queue they wait for, however many there are.
//! * Host functions always run on a runner (as on CUDA/AMDGPU, never on a thread that called a sync and
//!   may hold the caller's locks), at most [`BLOCKING_SLOTS`] at once; a queue whose next op is a host
//!   function while all slots are taken waits in line (`slot_wait`) and gets the next slot that frees,
//!   while the other runners go on with other queues' work. A host function that blocks keeps its slot
//!   until it returns: eight host functions blocked at once on something only a later host function
//!   would do never return. That is the client's business, as on CUDA, whose callbacks of one context
//!   all run on one thread (there one blocked callback holds back every other).
//! * The runner counts belong to the process that started the runners: a `fork()`ed child, which has
//!   none of them, starts its own (`Runners::adopt`, as the JIT's helper pool does).
//! * A runner that has run one queue for [`SLICE`] while other queues wait moves it to the back of the
//!   run list; a runner whose queue ran dry spins for [`SPIN`] for its next op (pipelined launches)
//!   unless other queues wait.
//! * The sync fast path: a thread blocked in `sync` (of the queue or of one of its events) takes the
//!   token itself when nobody holds it and runs the ops up to the point it waits for, waits on other
//!   queues' events included (it blocks in them): a launch + sync then costs no thread wake-up at all,
//!   which on a loaded 2-vCPU VM is most of the latency (a futex round trip is tens of µs,
//!   cpu-kernels.md §4a). It stops before a host function and hands the rest to the runners. Kernel
//!   code never runs on the borrowed thread's own stack: a launch switches to a library stack first
//!   (`kernel_memory::on_kernel_stack`).
//! * Waiting threads spin for [`SPIN`] before they park on the condvar.
//! * Errors of queued work are kept with their sequence number. `Queue::sync` returns the first error
//!   not yet returned by an earlier `sync`; an event returns the first error raised after the last
//!   `sync` before it was recorded and up to its own point. Errors are never dropped silently.
//! * Dropping the handle ([`CpuQueue`]) does not wait: a queue with pending work is held by the run
//!   list, a runner, a syncing thread or the queue it is parked on, so the runners finish its work (host
//!   functions included). [`drain_all`] waits for every queue ever created.
//! * Ops hold everything they use (`Arc` of the kernel, owned argument and pattern bytes).
//! * A sync called from a host function that would wait for that host function, directly or through
//!   waits on CPU events (another queue made to wait for an event recorded after it), is UNSUPPORTED
//!   instead of a hang: the thread running a host function knows which one (`HOST_FN`), and the wait
//!   graph is walked before blocking ([`waits_for_running_host_fn`]).

use super::launch::PreparedLaunch;
use super::memory;
use super::pool::{WORKER_STACK, spin_until};
use crate::plugin::{Event, PluginError, PluginResult, Queue, panic_text};
use crate::sync::{Condvar, Mutex, MutexGuard};
use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long a waiting thread spins before parking.
const SPIN: Duration = Duration::from_micros(30);
/// Errors kept per queue before the ones already returned by a sync are dropped.
const MAX_ERRORS: usize = 1024;
/// A runner without work for this long exits (a new one starts when a queue is scheduled).
const IDLE_EXIT: Duration = Duration::from_secs(1);
/// How long a runner runs one queue while other queues wait, before it moves it to the back of the list.
const SLICE: Duration = Duration::from_millis(2);
/// Ops that may block (host functions, waits on another device's events) running at once.
pub(crate) const BLOCKING_SLOTS: usize = 8;

pub(crate) enum Op {
    Copy { dst: usize, src: usize, size: usize },
    Fill { ptr: usize, pattern: Vec<u8>, size: usize },
    Launch(Box<PreparedLaunch>),
    Host(Box<dyn FnOnce() + Send>),
    Wait(Arc<dyn Event>),
}

impl Op {
    /// `at`: the queue (its `QueueShared` address) and sequence number of this op.
    fn execute(self, at: (usize, u64)) -> PluginResult<()> {
        match self {
            // SAFETY: the API caller guaranteed both ranges valid until the queue reaches this op
            // (liboffload's contract for asynchronous copies).
            Op::Copy { dst, src, size } => unsafe {
                memory::copy(dst, src, size);
                Ok(())
            },
            // SAFETY: as above, for the filled range.
            Op::Fill { ptr, pattern, size } => unsafe { memory::fill(ptr, &pattern, size) },
            Op::Launch(l) => l.execute(),
            Op::Host(f) => {
                let _restore = RestoreHostFn(HOST_FN.replace(Some(at)));
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                    .map_err(|p| PluginError::Backend(format!("host function panicked: {}", panic_text(&*p))))
            }
            Op::Wait(ev) => {
                ev.sync().map_err(|e| PluginError::Backend(format!("waiting on an event of another queue failed: {e}")))
            }
        }
    }
}

thread_local! {
    /// The queue (`QueueShared` address) and sequence number of the host function this thread runs.
    static HOST_FN: Cell<Option<(usize, u64)>> = const { Cell::new(None) };
}

struct RestoreHostFn(Option<(usize, u64)>);

impl Drop for RestoreHostFn {
    fn drop(&mut self) {
        HOST_FN.set(self.0);
    }
}

/// Would waiting for op `target` of `q` wait for the host function running on this thread, directly or
/// through `Wait` ops on CPU events (queued, or being executed)? Such a wait never ends. Foreign events
/// (another plugin's) are opaque: not followed.
fn waits_for_running_host_fn(q: &Arc<QueueShared>, target: u64) -> bool {
    let Some((hq, hseq)) = HOST_FN.get() else { return false };
    let mut todo = vec![(q.clone(), target)];
    let mut steps = 0;
    while let Some((q, target)) = todo.pop() {
        if Arc::as_ptr(&q) as usize == hq && target >= hseq {
            return true;
        }
        steps += 1;
        if steps > 10_000 {
            break;
        }
        let g = q.state.lock();
        if g.completed >= target {
            continue;
        }
        let mut follow = |ev: &Arc<dyn Event>| {
            if let Some(e) = ev.as_any().downcast_ref::<CpuEvent>() {
                todo.push((e.queue.clone(), e.target));
            }
        };
        if let Some(ev) = &g.waiting_on {
            follow(ev);
        }
        // the ops not started yet have sequence numbers (enqueued - len, enqueued]
        let first = g.enqueued + 1 - g.ops.len() as u64;
        for op in g.ops.iter().take((target + 1).saturating_sub(first) as usize) {
            if let Op::Wait(ev) = op {
                follow(ev);
            }
        }
    }
    false
}

fn refuse_host_fn_deadlock(q: &Arc<QueueShared>, target: u64) -> PluginResult<()> {
    if waits_for_running_host_fn(q, target) {
        return Err(PluginError::Unsupported(
            "a sync called from a host function would wait for that host function itself (its own queue, or \
             a queue made to wait for an event recorded after it), which cannot finish before it returns"
                .into(),
        ));
    }
    Ok(())
}

struct QState {
    ops: VecDeque<Op>,
    enqueued: u64,
    completed: u64,
    /// the executor token
    executing: bool,
    /// in the run list or the list of queues waiting for a blocking slot, or taken from there by a
    /// runner that has not let it go yet
    scheduled: bool,
    /// parked on an incomplete CPU event: a registration with generation `park_gen` is in the event's
    /// queue's `waiters`, which reschedules this queue when the event completes
    parked: bool,
    park_gen: u64,
    /// queues parked on a point of this one: (sequence number, their `park_gen`, the queue)
    waiters: Vec<(u64, u64, Arc<QueueShared>)>,
    /// the smallest sequence number in `waiters` (`u64::MAX` when none)
    next_wake: u64,
    /// (sequence number of the failed op, its error)
    errors: Vec<(u64, PluginError)>,
    /// errors up to here were returned by `Queue::sync`
    reported_upto: u64,
    /// the event the op being executed waits for (an `Op::Wait`)
    waiting_on: Option<Arc<dyn Event>>,
}

pub(crate) struct QueueShared {
    state: Mutex<QState>,
    cv: Condvar,
    /// mirrors of `QState::{completed, enqueued, executing}` for lock-free polling
    completed: AtomicU64,
    enqueued: AtomicU64,
    executing: AtomicBool,
}

/// What the head op needs before a runner may start it.
enum Need {
    /// nothing: it does not block (a copy, fill, launch, or a wait on a completed event)
    Nothing,
    /// a blocking slot: a host function, or a wait on another device's event that has not completed
    Slot,
    /// a CPU event that has not completed: park the queue on it
    Park(Arc<QueueShared>, u64),
}

impl QueueShared {
    fn take_token(&self, g: &mut QState) {
        g.executing = true;
        self.executing.store(true, Ordering::Release);
    }

    fn release_token(&self, g: &mut QState) {
        g.executing = false;
        self.executing.store(false, Ordering::Release);
        // another waiter (or a runner) may take over the rest
        self.cv.notify_all();
    }

    /// Work that nobody executes (for a runner spinning on its queue).
    fn has_free_work(&self) -> bool {
        !self.executing.load(Ordering::Acquire)
            && self.completed.load(Ordering::Acquire) < self.enqueued.load(Ordering::Acquire)
    }

    /// Pop and execute the head op with the token held; the lock is free while it runs.
    fn execute_next(&self, g: &mut MutexGuard<'_, QState>) {
        let Some(op) = g.ops.pop_front() else { return };
        // a parked queue whose wait a syncing thread executes: the registration is stale now
        g.parked = false;
        let at = (self as *const QueueShared as usize, g.completed + 1);
        g.waiting_on = if let Op::Wait(ev) = &op { Some(ev.clone()) } else { None };
        let r = MutexGuard::unlocked(g, || op.execute(at));
        g.waiting_on = None;
        g.completed += 1;
        let seq = g.completed;
        self.completed.store(seq, Ordering::Release);
        if let Err(e) = r {
            if g.errors.len() >= MAX_ERRORS {
                // keep what a sync has not returned yet; events recorded before that sync lose
                // their copy only when a queue fails this often
                let upto = g.reported_upto;
                g.errors.retain(|(s, _)| *s > upto);
            }
            g.errors.push((seq, e));
        }
        self.cv.notify_all();
        if seq >= g.next_wake {
            let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut g.waiters).into_iter().partition(|w| w.0 <= seq);
            g.next_wake = rest.iter().map(|w| w.0).min().unwrap_or(u64::MAX);
            g.waiters = rest;
            // this thread holds the token: nobody executes this queue meanwhile
            MutexGuard::unlocked(g, || {
                for (_, generation, q) in due {
                    q.wake(generation);
                }
            });
        }
    }

    /// Run ops on a thread blocked in a sync, until `completed >= target`, no op is left or the next is
    /// a host function (those run on runners only). Called with the lock held, the token free and work
    /// pending.
    fn drive_inline<'a>(self: &'a Arc<Self>, mut g: MutexGuard<'a, QState>, target: u64) -> MutexGuard<'a, QState> {
        self.take_token(&mut g);
        while g.completed < target && g.ops.front().is_some_and(|op| !matches!(op, Op::Host(_))) {
            self.execute_next(&mut g);
        }
        self.release_token(&mut g);
        if !g.ops.is_empty() && !g.scheduled && !g.parked {
            // the rest (a host function, or ops past the target) goes to the runners; a runner that
            // cannot be started now is started by the next enqueue on any queue
            let _ = RUNNERS.submit(self.clone());
            g.scheduled = true;
        }
        g
    }

    /// Block until op `target` has completed, executing ops on this thread when nobody else does.
    fn wait_until(self: &Arc<Self>, target: u64) -> MutexGuard<'_, QState> {
        let mut g = self.state.lock();
        let mut spun = false;
        loop {
            if g.completed >= target {
                return g;
            }
            if !g.executing && g.ops.front().is_some_and(|op| !matches!(op, Op::Host(_))) {
                g = self.drive_inline(g, target);
                continue;
            }
            if !spun {
                spun = true;
                MutexGuard::unlocked(&mut g, || {
                    spin_until(SPIN, || self.completed.load(Ordering::Acquire) >= target);
                });
                continue;
            }
            self.cv.wait(&mut g);
        }
    }

    fn need(&self, g: &QState) -> Need {
        match g.ops.front() {
            Some(Op::Host(_)) => Need::Slot,
            Some(Op::Wait(ev)) => match ev.as_any().downcast_ref::<CpuEvent>() {
                Some(e) if e.queue.completed.load(Ordering::Acquire) < e.target => {
                    Need::Park(e.queue.clone(), e.target)
                }
                Some(_) => Need::Nothing,
                None if matches!(ev.is_complete(), Ok(true)) => Need::Nothing,
                None => Need::Slot,
            },
            _ => Need::Nothing,
        }
    }

    /// Park this queue on op `target` of `on`, with the lock held and the token free. `true`: parked
    /// (the registration reschedules it); `false`: the point was reached meanwhile, go on.
    fn park(self: &Arc<Self>, g: &mut MutexGuard<'_, QState>, on: &Arc<QueueShared>, target: u64) -> bool {
        g.parked = true;
        g.park_gen += 1;
        let generation = g.park_gen;
        // the token keeps other executors away while the lock is free; no queue lock is held while
        // another is taken (two queues parking on each other must not deadlock on their locks)
        self.take_token(g);
        let registered = MutexGuard::unlocked(g, || {
            let mut o = on.state.lock();
            if o.completed >= target {
                return false;
            }
            o.waiters.push((target, generation, self.clone()));
            o.next_wake = o.next_wake.min(target);
            true
        });
        self.release_token(g);
        if registered && g.parked && g.park_gen == generation {
            return true;
        }
        g.parked = false;
        false
    }

    /// A registration of [`QueueShared::park`] fired: `on` reached the point this queue waits for.
    fn wake(self: &Arc<Self>, generation: u64) {
        let mut g = self.state.lock();
        if !g.parked || g.park_gen != generation {
            return;
        }
        g.parked = false;
        if !g.executing && !g.scheduled && !g.ops.is_empty() {
            let _ = RUNNERS.submit(self.clone());
            g.scheduled = true;
        }
    }

    /// A runner took this queue from the run list (`scheduled` is set; `slot`: it holds a blocking
    /// slot given to this queue). Runs ops until none is left (after a short spin for the next one),
    /// another thread executes them, the queue parks or waits for a slot, or its time slice is over
    /// while other queues wait.
    fn run(self: &Arc<Self>, mut slot: bool) {
        let mut g = self.state.lock();
        let t0 = Instant::now();
        loop {
            if g.executing || g.ops.is_empty() {
                if slot {
                    RUNNERS.leave_blocking();
                    slot = false;
                }
                // spin a little for the next op (pipelined launches, or what a syncing thread that
                // holds the token leaves), unless other queues wait
                let spin = RUNNERS.queued.load(Ordering::Relaxed) == 0;
                if spin {
                    MutexGuard::unlocked(&mut g, || {
                        spin_until(SPIN, || self.has_free_work() || RUNNERS.queued.load(Ordering::Relaxed) > 0)
                    });
                }
                if spin && !g.executing && !g.ops.is_empty() {
                    continue;
                }
                // a syncing thread that holds the token submits what it leaves
                g.scheduled = false;
                return;
            }
            match self.need(&g) {
                Need::Nothing => {
                    if slot {
                        RUNNERS.leave_blocking();
                        slot = false;
                    }
                    self.take_token(&mut g);
                    self.execute_next(&mut g);
                    self.release_token(&mut g);
                }
                Need::Slot => {
                    if !slot && !RUNNERS.enter_blocking_or_wait(self) {
                        // in the slot queue now (still `scheduled`); a slot that frees comes with it
                        return;
                    }
                    self.take_token(&mut g);
                    self.execute_next(&mut g);
                    self.release_token(&mut g);
                    RUNNERS.leave_blocking();
                    slot = false;
                }
                Need::Park(on, target) => {
                    if slot {
                        RUNNERS.leave_blocking();
                        slot = false;
                    }
                    if self.park(&mut g, &on, target) {
                        g.scheduled = false;
                        return;
                    }
                }
            }
            if RUNNERS.queued.load(Ordering::Relaxed) > 0 && !g.ops.is_empty() && t0.elapsed() >= SLICE {
                // others wait: to the back of the run list (`scheduled` stays set)
                if RUNNERS.submit(self.clone()).is_ok() {
                    return;
                }
            }
        }
    }

    /// Enqueue `op`; schedules the queue on the runners when nobody has it.
    fn push(self: &Arc<Self>, op: Op) -> PluginResult<()> {
        let mut g = self.state.lock();
        if !g.scheduled && !g.executing && !g.parked {
            if let Err(e) = RUNNERS.submit(self.clone()) {
                RUNNERS.withdraw(self);
                return Err(e);
            }
            g.scheduled = true;
        }
        g.ops.push_back(op);
        g.enqueued += 1;
        self.enqueued.store(g.enqueued, Ordering::Release);
        Ok(())
    }

    /// First error with sequence number in `(from, to]`.
    fn first_error(g: &QState, from: u64, to: u64) -> PluginResult<()> {
        match g.errors.iter().find(|(s, _)| *s > from && *s <= to) {
            Some((_, e)) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

// ---- the runners: the bounded set of threads that run queue work ----------------------------------------

struct RunState {
    /// the process these counts belong to (a `fork()`ed child has none of its parent's runners)
    owner: u32,
    /// queues with work nobody executes, oldest first; `true`: it comes with a blocking slot
    run: VecDeque<(Arc<QueueShared>, bool)>,
    /// queues whose next op needs a blocking slot while all are taken, oldest first
    slot_wait: VecDeque<Arc<QueueShared>>,
    /// runner threads alive
    threads: usize,
    /// runners without a queue (spinning or sleeping)
    idle: usize,
    /// the sleeping ones, the most recent last (woken first: its caches are warmest)
    sleepers: Vec<Arc<Sleeper>>,
    /// runners inside an op that may block (a host function, a wait on another device's event)
    blocking: usize,
}

/// The process's runner threads ([`RUNNERS`]); see the module docs.
struct Runners {
    state: Mutex<RunState>,
    /// `run.len()`, for lock-free polling
    queued: AtomicUsize,
}

static RUNNERS: Runners = Runners {
    state: Mutex::new(RunState {
        owner: 0,
        run: VecDeque::new(),
        slot_wait: VecDeque::new(),
        threads: 0,
        idle: 0,
        sleepers: Vec::new(),
        blocking: 0,
    }),
    queued: AtomicUsize::new(0),
};

/// Runners that run queue work that does not block: the CPU device's thread count, at least 2 (so that
/// one long kernel never holds back every other queue).
pub(crate) fn runner_bound() -> usize {
    static BOUND: OnceLock<usize> = OnceLock::new();
    *BOUND.get_or_init(|| (super::machine::num_compute_units() as usize).max(2))
}

/// The most threads the CPU device's queues use at once, however many queues have work.
pub fn max_queue_threads() -> usize {
    runner_bound() + BLOCKING_SLOTS
}

impl Runners {
    /// Put `q` in the run list and see that a runner takes it. `Err` when no runner exists and none can
    /// be started: `q` stays in the list for the next runner that starts.
    fn submit(&self, q: Arc<QueueShared>) -> PluginResult<()> {
        let mut s = self.state.lock();
        Self::adopt(&mut s);
        s.run.push_back((q, false));
        self.queued.store(s.run.len(), Ordering::Relaxed);
        let r = self.ensure_runner(&mut s);
        drop(s);
        r.map(Sleeper::wake)
    }

    /// In a `fork()`ed child (as the JIT's helper pool does): none of the parent's runners exist here, so
    /// start counting from none; the queues that were in line go to the run list for the child's runners.
    /// (A queue a parent's runner was running at the fork stays with that runner, which the child lacks.)
    fn adopt(s: &mut RunState) {
        let me = std::process::id();
        if s.owner != me {
            s.owner = me;
            (s.threads, s.idle, s.blocking) = (0, 0, 0);
            s.sleepers.clear();
            let in_line: Vec<_> = s.slot_wait.drain(..).map(|q| (q, false)).collect();
            s.run.extend(in_line);
        }
    }

    /// Take `q` out of the run list again (its enqueue failed).
    fn withdraw(&self, q: &Arc<QueueShared>) {
        let mut s = self.state.lock();
        s.run.retain(|(r, _)| !Arc::ptr_eq(r, q));
        self.queued.store(s.run.len(), Ordering::Relaxed);
    }

    /// Wake a sleeping runner when the spinning ones are fewer than the queued queues; start one when
    /// all idle ones are, while fewer than [`runner_bound`] runners run non-blocking work.
    fn ensure_runner(&self, s: &mut RunState) -> PluginResult<Option<Arc<Sleeper>>> {
        let mut woken = None;
        if s.run.len() > s.idle - s.sleepers.len() {
            woken = s.sleepers.pop();
            if let Some(w) = &woken {
                w.woken.store(true, Ordering::Release);
            }
        }
        if s.run.len() > s.idle && s.threads.saturating_sub(s.blocking) < runner_bound() {
            let started = crate::threads::spawn_detached("offload-cpu-queue", WORKER_STACK, Box::new(runner_main));
            match started {
                Ok(_) => {
                    s.threads += 1;
                    s.idle += 1;
                }
                Err(e) if s.threads == 0 => {
                    return Err(PluginError::OutOfResources(format!("cannot start a queue thread: {e}")));
                }
                // the runners there are take the work
                Err(_) => {}
            }
        }
        Ok(woken)
    }

    /// Take a blocking slot for `q`'s next op, or (all [`BLOCKING_SLOTS`] taken, or others in line for
    /// one) put `q` in line: `false`.
    fn enter_blocking_or_wait(&self, q: &Arc<QueueShared>) -> bool {
        let mut s = self.state.lock();
        if s.blocking < BLOCKING_SLOTS && s.slot_wait.is_empty() {
            s.blocking += 1;
            // this runner may block now: another one may take the queued non-blocking work
            let r = self.ensure_runner(&mut s);
            drop(s);
            if let Ok(w) = r {
                Sleeper::wake(w);
            }
            return true;
        }
        s.slot_wait.push_back(q.clone());
        false
    }

    /// A blocking op ended: its slot goes to the first queue in line, if any (to the front of the run
    /// list, with the slot).
    fn leave_blocking(&self) {
        let mut s = self.state.lock();
        match s.slot_wait.pop_front() {
            Some(q) => {
                s.run.push_front((q, true));
                self.queued.store(s.run.len(), Ordering::Relaxed);
                let r = self.ensure_runner(&mut s);
                drop(s);
                if let Ok(w) = r {
                    Sleeper::wake(w);
                }
            }
            None => s.blocking = s.blocking.saturating_sub(1),
        }
    }
}

/// Runner threads alive now (tests).
#[cfg(test)]
pub(crate) fn runner_threads() -> usize {
    RUNNERS.state.lock().threads
}

/// A sleeping runner; a waker takes it out of `sleepers`, sets `woken` and unparks it (after the lock).
struct Sleeper {
    thread: std::thread::Thread,
    woken: AtomicBool,
}

impl Sleeper {
    fn wake(w: Option<Arc<Sleeper>>) {
        if let Some(w) = w {
            w.thread.unpark();
        }
    }
}

fn runner_main() {
    super::kernel_memory::mark_kernel_thread();
    let r = &RUNNERS;
    let mut s = r.state.lock();
    loop {
        if let Some((q, slot)) = s.run.pop_front() {
            r.queued.store(s.run.len(), Ordering::Relaxed);
            s.idle -= 1;
            drop(s);
            q.run(slot);
            drop(q);
            s = r.state.lock();
            s.idle += 1;
            continue;
        }
        // spin a little for the next queue, then sleep; a runner without work for IDLE_EXIT exits
        let got = MutexGuard::unlocked(&mut s, || spin_until(SPIN, || r.queued.load(Ordering::Relaxed) > 0));
        if got || !s.run.is_empty() {
            continue;
        }
        let me = Arc::new(Sleeper { thread: std::thread::current(), woken: AtomicBool::new(false) });
        s.sleepers.push(me.clone());
        let deadline = Instant::now() + IDLE_EXIT;
        MutexGuard::unlocked(&mut s, || {
            while !me.woken.load(Ordering::Acquire) {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                std::thread::park_timeout(deadline - now);
            }
        });
        if !me.woken.load(Ordering::Acquire) {
            s.sleepers.retain(|w| !Arc::ptr_eq(w, &me));
            if s.run.is_empty() {
                s.idle -= 1;
                s.threads -= 1;
                return;
            }
        }
    }
}

/// Every queue ever created (for [`drain_all`]).
static REGISTRY: Mutex<Vec<Weak<QueueShared>>> = Mutex::new(Vec::new());

/// Block until every queue created so far has completed all work enqueued before the call.
/// For `olShutDown`. Errors are left for the queues' own `sync`.
pub fn drain_all() {
    let queues: Vec<Arc<QueueShared>> = REGISTRY.lock().iter().filter_map(Weak::upgrade).collect();
    for q in queues {
        let target = q.state.lock().enqueued;
        drop(q.wait_until(target));
    }
}

/// The handle of a CPU queue. Dropping it does not wait for the pending work (the runners finish it).
pub struct CpuQueue {
    shared: Arc<QueueShared>,
}

impl CpuQueue {
    pub fn new() -> CpuQueue {
        let shared = Arc::new(QueueShared {
            state: Mutex::new(QState {
                ops: VecDeque::new(),
                enqueued: 0,
                completed: 0,
                executing: false,
                scheduled: false,
                parked: false,
                park_gen: 0,
                waiters: Vec::new(),
                next_wake: u64::MAX,
                errors: Vec::new(),
                reported_upto: 0,
                waiting_on: None,
            }),
            cv: Condvar::new(),
            completed: AtomicU64::new(0),
            enqueued: AtomicU64::new(0),
            executing: AtomicBool::new(false),
        });
        let mut r = REGISTRY.lock();
        if r.len() >= 64 && r.len().is_power_of_two() {
            r.retain(|w| w.strong_count() > 0);
        }
        r.push(Arc::downgrade(&shared));
        CpuQueue { shared }
    }

    pub(crate) fn push(&self, op: Op) -> PluginResult<()> {
        self.shared.push(op)
    }
}

impl Default for CpuQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl Queue for CpuQueue {
    unsafe fn memcpy(&self, dst: usize, src: usize, size: usize) -> PluginResult<()> {
        if size == 0 {
            return Ok(());
        }
        self.push(Op::Copy { dst, src, size })
    }

    unsafe fn fill(&self, ptr: usize, pattern: &[u8], size: usize) -> PluginResult<()> {
        if pattern.is_empty() || !size.is_multiple_of(pattern.len()) {
            return Err(PluginError::InvalidSize(format!(
                "fill size {size} is not a multiple of the pattern size {}",
                pattern.len()
            )));
        }
        if size == 0 {
            return Ok(());
        }
        self.push(Op::Fill { ptr, pattern: pattern.to_vec(), size })
    }

    fn launch(
        &self,
        kernel: Arc<dyn crate::plugin::Kernel>,
        args: crate::plugin::LaunchArgs<'_>,
        dims: crate::plugin::LaunchDims,
    ) -> PluginResult<()> {
        let l = super::launch::prepare(kernel, args, dims)?;
        self.push(Op::Launch(l))
    }

    fn host_fn(&self, f: Box<dyn FnOnce() + Send>) -> PluginResult<()> {
        self.push(Op::Host(f))
    }

    fn launch_cooperative(
        &self,
        kernel: Arc<dyn crate::plugin::Kernel>,
        args: crate::plugin::LaunchArgs<'_>,
        dims: crate::plugin::LaunchDims,
    ) -> PluginResult<()> {
        let l = super::launch::prepare_cooperative(kernel, args, dims)?;
        self.push(Op::Launch(l))
    }

    fn record_event(&self) -> PluginResult<Option<Arc<dyn Event>>> {
        let g = self.shared.state.lock();
        if g.completed == g.enqueued {
            return Ok(None);
        }
        Ok(Some(Arc::new(CpuEvent { queue: self.shared.clone(), target: g.enqueued, from: g.reported_upto })))
    }

    fn wait_event(&self, event: Arc<dyn Event>) -> PluginResult<()> {
        if let Some(e) = event.as_any().downcast_ref::<CpuEvent>() {
            if Arc::ptr_eq(&e.queue, &self.shared) {
                // same queue: in order anyway
                return Ok(());
            }
            if e.queue.completed.load(Ordering::Acquire) >= e.target && e.sync().is_ok() {
                return Ok(());
            }
        }
        self.push(Op::Wait(event))
    }

    fn sync(&self) -> PluginResult<()> {
        let target = self.shared.enqueued.load(Ordering::Acquire);
        refuse_host_fn_deadlock(&self.shared, target)?;
        let mut g = self.shared.wait_until(target);
        let from = g.reported_upto;
        if target > from {
            g.reported_upto = target;
        }
        QueueShared::first_error(&g, from, target)
    }

    fn is_empty(&self) -> PluginResult<bool> {
        Ok(self.shared.completed.load(Ordering::Acquire) == self.shared.enqueued.load(Ordering::Acquire))
    }
}

/// A point in a CPU queue: op `target` and everything before it.
pub struct CpuEvent {
    queue: Arc<QueueShared>,
    target: u64,
    /// errors up to here had been returned by a queue sync when the event was recorded
    from: u64,
}

impl Event for CpuEvent {
    fn is_complete(&self) -> PluginResult<bool> {
        Ok(self.queue.completed.load(Ordering::Acquire) >= self.target)
    }

    fn sync(&self) -> PluginResult<()> {
        refuse_host_fn_deadlock(&self.queue, self.target)?;
        let g = self.queue.wait_until(self.target);
        QueueShared::first_error(&g, self.from, self.target)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
