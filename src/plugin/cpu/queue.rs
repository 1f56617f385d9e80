//! Asynchronous in-order queues and events of the CPU device.
//!
//! * A queue is a FIFO of operations with sequence numbers `1, 2, ...` (`enqueued` = last enqueued,
//!   `completed` = last completed; ops complete in order). Enqueueing only takes the queue's lock.
//! * Exactly one thread at a time executes a queue's ops: whoever holds the *executor token*
//!   (`executing`). Normally that is the queue's own thread, started on first use and ended after
//!   [`IDLE_EXIT`] without work (and restarted on demand). A thread blocked in `sync` (of the queue or
//!   of one of its events) takes the token itself when nobody holds it and runs the ops up to the
//!   point it waits for: a launch + sync then costs no thread wake-up at all, which on a loaded 2-vCPU
//!   VM is most of the latency (a futex round trip is tens of µs, cpu-kernels.md §4a). Host functions
//!   always run on the queue's thread (as on CUDA/AMDGPU, never on a thread that called a sync and may
//!   hold the caller's locks): a borrowed thread hands the token back before one. Kernel code never runs
//!   on the borrowed thread's own stack: a launch switches to a library stack first
//!   (`kernel_memory::on_kernel_stack`).
//! * Waiting threads spin for [`SPIN`] before they park on the condvar.
//! * Errors of queued work are kept with their sequence number. `Queue::sync` returns the first error
//!   not yet returned by an earlier `sync`; an event returns the first error raised after the last
//!   `sync` before it was recorded and up to its own point. Errors are never dropped silently.
//! * Dropping the handle ([`CpuQueue`]) does not wait: the queue's thread finishes the pending work
//!   (host functions included) and exits. [`drain_all`] waits for every queue ever created.
//! * Ops hold everything they use (`Arc` of the kernel, owned argument and pattern bytes).
//! * A sync called from a host function that would wait for that host function, directly or through
//!   waits on CPU events (another queue made to wait for an event recorded after it), is UNSUPPORTED
//!   instead of a hang: the thread running a host function knows which one (`HOST_FN`), and the wait
//!   graph is walked before blocking ([`waits_for_running_host_fn`]).

use super::launch::PreparedLaunch;
use super::memory;
use super::pool::{WORKER_STACK, spin_until};
use crate::plugin::{Event, PluginError, PluginResult, Queue, panic_text};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long a waiting thread spins before parking.
const SPIN: Duration = Duration::from_micros(30);
/// Errors kept per queue before the ones already returned by a sync are dropped.
const MAX_ERRORS: usize = 1024;
/// A queue thread without work for this long exits (a new one starts on the next enqueue).
const IDLE_EXIT: Duration = Duration::from_secs(1);

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
    thread_alive: bool,
    handle_alive: bool,
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
    /// mirrors of `QState::{completed, enqueued}` for lock-free polling
    completed: AtomicU64,
    enqueued: AtomicU64,
}

impl QueueShared {
    /// Run ops while holding the executor token, until `completed >= target` or no op is left; a
    /// borrowed thread (`inline`) also stops before a host function. Called with the lock held, the
    /// token free and work pending.
    fn drive<'a>(&'a self, mut g: MutexGuard<'a, QState>, target: u64, inline: bool) -> MutexGuard<'a, QState> {
        g.executing = true;
        while g.completed < target {
            if inline && matches!(g.ops.front(), Some(Op::Host(_))) {
                break;
            }
            let Some(op) = g.ops.pop_front() else { break };
            let at = (self as *const QueueShared as usize, g.completed + 1);
            g.waiting_on = if let Op::Wait(ev) = &op { Some(ev.clone()) } else { None };
            let r = MutexGuard::unlocked(&mut g, || op.execute(at));
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
        }
        g.executing = false;
        // another waiter (or the queue thread) may take over the rest
        self.cv.notify_all();
        g
    }

    /// Block until op `target` has completed, executing ops on this thread when nobody else does.
    fn wait_until(&self, target: u64) -> MutexGuard<'_, QState> {
        let mut g = self.state.lock();
        let mut spun = false;
        loop {
            if g.completed >= target {
                return g;
            }
            if !g.executing && g.ops.front().is_some_and(|op| !matches!(op, Op::Host(_))) {
                g = self.drive(g, target, true);
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

    /// Enqueue `op`; starts or wakes the queue's thread.
    fn push(self: &Arc<Self>, op: Op) -> PluginResult<()> {
        let mut g = self.state.lock();
        if !g.thread_alive {
            spawn_thread(self)?;
            g.thread_alive = true;
        }
        g.ops.push_back(op);
        g.enqueued += 1;
        self.enqueued.store(g.enqueued, Ordering::Release);
        if !g.executing {
            self.cv.notify_all();
        }
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

fn spawn_thread(shared: &Arc<QueueShared>) -> PluginResult<()> {
    let s = shared.clone();
    std::thread::Builder::new()
        .name("offload-cpu-queue".into())
        .stack_size(WORKER_STACK)
        .spawn(move || queue_thread(s))
        .map(|_| ())
        .map_err(|e| PluginError::OutOfResources(format!("cannot start a queue thread: {e}")))
}

fn queue_thread(shared: Arc<QueueShared>) {
    super::kernel_memory::mark_kernel_thread();
    let mut g = shared.state.lock();
    loop {
        if !g.executing && !g.ops.is_empty() {
            g = shared.drive(g, u64::MAX, false);
            continue;
        }
        if g.ops.is_empty() && !g.executing && !g.handle_alive {
            break;
        }
        // spin a little for the next op (pipelined launches), then park
        let seen = g.enqueued;
        let got = MutexGuard::unlocked(&mut g, || spin_until(SPIN, || shared.enqueued.load(Ordering::Acquire) != seen));
        // re-check what may have changed while the lock was free (a notify then was missed)
        if got || g.enqueued != seen || (!g.executing && !g.ops.is_empty()) {
            continue;
        }
        if g.ops.is_empty() && !g.executing && !g.handle_alive {
            break;
        }
        let timed_out = shared.cv.wait_for(&mut g, IDLE_EXIT).timed_out();
        if timed_out && g.ops.is_empty() && !g.executing {
            break;
        }
    }
    g.thread_alive = false;
    // wake `drain_all`/syncers that may wait on a state change
    shared.cv.notify_all();
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

/// The handle of a CPU queue. Dropping it does not wait for the pending work.
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
                thread_alive: false,
                handle_alive: true,
                errors: Vec::new(),
                reported_upto: 0,
                waiting_on: None,
            }),
            cv: Condvar::new(),
            completed: AtomicU64::new(0),
            enqueued: AtomicU64::new(0),
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

impl Drop for CpuQueue {
    fn drop(&mut self) {
        let mut g = self.shared.state.lock();
        g.handle_alive = false;
        if !g.ops.is_empty() && !g.thread_alive {
            // the thread exited idle after the last push; someone must finish the work
            if spawn_thread(&self.shared).is_ok() {
                g.thread_alive = true;
            }
        }
        self.shared.cv.notify_all();
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
        self.push(Op::Launch(Box::new(l)))
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
        self.push(Op::Launch(Box::new(l)))
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
