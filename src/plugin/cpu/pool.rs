//! The persistent thread pool that runs work-groups (and large copies) on all cores.
//!
//! Design (shared/reference/cpu-kernels.md §2.11, §4a/b):
//! * `available_parallelism() - 1` persistent workers with 16 MiB stacks; the submitting thread is the
//!   last worker, so a 1-core machine has no worker threads at all.
//! * Several jobs may be in flight (launches from many threads and queues, copies). Each submitting
//!   thread works on its own job until no item of it is left, with its own thread-local
//!   [`WorkerSlot`]; the workers help the oldest job that has items left, then the next. So every
//!   launch makes progress even while another one runs for a long time (two kernels that wait for
//!   each other work, as they would side by side on a GPU), and a worker's slot is only ever used by
//!   the one chunk it runs.
//! * Items are handed out in chunks through one atomic counter per job (one atomic per work-group
//!   measured 4x slower than 256-group chunks on saxpy). Chunk size: `total / (threads * 8)`, clamped
//!   to `1..=MAX_CHUNK`, so each thread gets about 8 chunks (load balance) and tiny work-groups still
//!   amortise the atomic.
//! * A job of one item (an empty or single-group kernel) runs inline on the submitter, waking nobody.
//! * Wake-up is spin-then-park: an idle worker spins on the job epoch for [`SPIN`] and then parks on a
//!   condvar (a futex wait); the submitter only touches the condvar when some worker is parked. The
//!   submitter waits for stragglers the same way. A condvar round trip costs ~80 µs on the 2-vCPU VM
//!   we measured, a spin ~0.3 µs, so back-to-back launches stay in the spin window.
//! * A worker that wakes late only touches the job's counters (kept alive by an `Arc`), never the
//!   task, whose borrow ends when `run` returns.

use super::kernel_memory::{GuardedBuf, KERNEL_STACK, mark_kernel_thread};
use crate::sync::{Condvar, Mutex};
use crate::threads::ThreadSlot;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle thread spins before parking.
const SPIN: Duration = Duration::from_micros(50);
/// Wait for `done()` for up to `limit`: a few pure spins (a hot hand-off takes well under a
/// microsecond), then `sched_yield` between polls, so that a spinning thread never keeps a thread it
/// waits for off a CPU (on an oversubscribed 2-vCPU VM a plain spin made every wait last the whole
/// spin window). `true` when `done()` became true.
pub fn spin_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..128 {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    let t0 = Instant::now();
    loop {
        if done() {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Upper bound of a chunk, in items.
const MAX_CHUNK: u64 = 1024;
/// Stack of each worker: JIT'd kernels keep private arrays on the stack.
pub(crate) const WORKER_STACK: usize = KERNEL_STACK;
/// Jobs are limited to this many items so that the chunk counter cannot overflow.
pub(crate) const MAX_ITEMS: u64 = 1 << 62;

/// Work the pool can run: items `0..total`, split into ranges.
pub trait Task: Sync {
    /// Run items `[start, end)` on the calling thread with its per-thread buffers. `false`: failed
    /// (the job reports [`PoolError`]).
    fn run(&self, start: u64, end: u64, slot: &mut WorkerSlot) -> bool;
}

/// A job's task failed on some thread.
#[derive(Debug)]
pub struct PoolError;

/// Per-thread buffers reused across jobs: static local memory, dynamic local memory, scratch.
#[derive(Default)]
pub struct WorkerSlot {
    pub local: GuardedBuf,
    pub dyn_local: GuardedBuf,
    pub scratch: GuardedBuf,
}

/// A `&dyn Task` with its lifetime erased; see the module docs for why it stays valid.
#[derive(Clone, Copy)]
struct TaskPtr(*const (dyn Task + 'static));
// SAFETY: the pointee is `Sync`; the pointer is only dereferenced while `Pool::run` keeps it alive.
unsafe impl Send for TaskPtr {}
// SAFETY: as above.
unsafe impl Sync for TaskPtr {}

struct Job {
    task: TaskPtr,
    total: u64,
    chunk: u64,
    next: AtomicU64,
    done: AtomicU64,
    failed: AtomicBool,
    fin: Mutex<()>,
    fin_cv: Condvar,
}

impl Job {
    /// Claim and run chunks until none are left.
    fn help(&self, slot: &mut WorkerSlot) {
        loop {
            let start = self.next.fetch_add(self.chunk, Ordering::Relaxed);
            if start >= self.total {
                return;
            }
            let end = (start + self.chunk).min(self.total);
            // SAFETY: we claimed items [start, end) < total, so `Pool::run` has not returned yet (it
            // waits for `done == total`) and the task it borrowed is alive.
            let ok = unsafe { (*self.task.0).run(start, end, slot) };
            if !ok {
                self.failed.store(true, Ordering::Relaxed);
            }
            let n = end - start;
            if self.done.fetch_add(n, Ordering::AcqRel) + n == self.total {
                let _g = self.fin.lock();
                self.fin_cv.notify_all();
            }
        }
    }

    fn has_work(&self) -> bool {
        self.next.load(Ordering::Relaxed) < self.total
    }

    fn finished(&self) -> bool {
        self.done.load(Ordering::Acquire) == self.total
    }
}

struct Shared {
    /// bumped for every job; workers watch it
    epoch: AtomicU64,
    /// jobs in flight, oldest first
    jobs: Mutex<Vec<Arc<Job>>>,
    sleepers: AtomicUsize,
    park: Mutex<()>,
    park_cv: Condvar,
}

/// The pool. One per process: [`pool`].
pub struct Pool {
    shared: Arc<Shared>,
    workers: usize,
}

/// The buffers of a thread that submits jobs (queue threads, callers of synchronous launches): a
/// [`ThreadSlot`], as client threads submit and a `thread_local!`'s destructor registration can end the process.
static SUBMITTER_SLOT: ThreadSlot<std::cell::RefCell<WorkerSlot>> = ThreadSlot::new();

/// The process-wide pool, started on first use.
pub fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool::new(super::machine::num_compute_units() as usize - 1))
}

impl Pool {
    /// A pool with `workers` threads besides the submitter. Threads that fail to start are skipped.
    pub fn new(workers: usize) -> Pool {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            jobs: Mutex::new(Vec::new()),
            sleepers: AtomicUsize::new(0),
            park: Mutex::new(()),
            park_cv: Condvar::new(),
        });
        let mut started = 0;
        for i in 0..workers {
            let s = shared.clone();
            let r = crate::threads::spawn_detached(
                &format!("offload-cpu-{i}"),
                WORKER_STACK,
                Box::new(move || worker_main(s)),
            );
            if r.is_ok() {
                started += 1;
            }
        }
        Pool { shared, workers: started }
    }

    /// Threads that run a job: the workers plus the submitter.
    pub fn threads(&self) -> usize {
        self.workers + 1
    }

    /// Run items `0..total` of `task` on this thread and the idle workers; returns when all have run.
    /// `total` must be at most [`MAX_ITEMS`].
    pub fn run(&self, task: &(dyn Task + '_), total: u64) -> Result<(), PoolError> {
        let mut result = None;
        // No slot (no memory for it), or a borrowed one (a task submitted a job itself; none does
        // today): fresh buffers.
        let _ = SUBMITTER_SLOT.with(std::cell::RefCell::default, |cell| {
            if let Ok(mut slot) = cell.try_borrow_mut() {
                result = Some(self.run_with(&mut slot, task, total));
            }
        });
        result.unwrap_or_else(|| self.run_with(&mut WorkerSlot::default(), task, total))
    }

    fn run_with(&self, slot: &mut WorkerSlot, task: &(dyn Task + '_), total: u64) -> Result<(), PoolError> {
        if total == 0 {
            return Ok(());
        }
        assert!(total <= MAX_ITEMS, "pool job of {total} items");
        if self.workers == 0 || total == 1 {
            return if task.run(0, total, slot) { Ok(()) } else { Err(PoolError) };
        }
        let threads = self.threads() as u64;
        let chunk = (total / (threads * 8)).clamp(1, MAX_CHUNK);
        // SAFETY: only the lifetime is erased; see `Job::help` for why the pointee outlives its uses.
        let task_ptr: *const (dyn Task + 'static) =
            unsafe { std::mem::transmute::<*const (dyn Task + '_), *const (dyn Task + 'static)>(task as *const _) };
        let job = Arc::new(Job {
            task: TaskPtr(task_ptr),
            total,
            chunk,
            next: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            fin: Mutex::new(()),
            fin_cv: Condvar::new(),
        });
        self.shared.jobs.lock().push(job.clone());
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        if self.shared.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.shared.park.lock();
            self.shared.park_cv.notify_all();
        }
        job.help(slot);
        // wait for the chunks other threads claimed
        if !spin_until(SPIN, || job.finished()) {
            let mut g = job.fin.lock();
            while !job.finished() {
                job.fin_cv.wait(&mut g);
            }
        }
        self.shared.jobs.lock().retain(|j| !Arc::ptr_eq(j, &job));
        if job.failed.load(Ordering::Relaxed) { Err(PoolError) } else { Ok(()) }
    }
}

fn worker_main(shared: Arc<Shared>) {
    mark_kernel_thread();
    let mut slot = WorkerSlot::default();
    loop {
        // read the epoch before looking for work: a job added after the look moves it
        let seen = shared.epoch.load(Ordering::SeqCst);
        loop {
            let job = shared.jobs.lock().iter().find(|j| j.has_work()).cloned();
            match job {
                Some(job) => job.help(&mut slot),
                None => break,
            }
        }
        // spin, then park, until the epoch moves
        if !spin_until(SPIN, || shared.epoch.load(Ordering::Acquire) != seen) {
            let mut g = shared.park.lock();
            shared.sleepers.fetch_add(1, Ordering::SeqCst);
            while shared.epoch.load(Ordering::SeqCst) == seen {
                shared.park_cv.wait(&mut g);
            }
            shared.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(Vec<AtomicU64>);
    impl Task for Count {
        fn run(&self, start: u64, end: u64, _slot: &mut WorkerSlot) -> bool {
            for i in start..end {
                self.0[i as usize].fetch_add(1, Ordering::Relaxed);
            }
            true
        }
    }

    #[test]
    fn every_item_runs_once() {
        for workers in [0, 1, 3] {
            let p = Pool::new(workers);
            for total in [0u64, 1, 2, 7, 1000, 100_000] {
                let t = Count((0..total).map(|_| AtomicU64::new(0)).collect());
                p.run(&t, total).unwrap();
                assert!(t.0.iter().all(|c| c.load(Ordering::Relaxed) == 1), "workers {workers} total {total}");
            }
        }
    }

    struct Fail;
    impl Task for Fail {
        fn run(&self, start: u64, end: u64, _slot: &mut WorkerSlot) -> bool {
            !(start..end).contains(&5)
        }
    }

    #[test]
    fn failure_is_reported() {
        let p = Pool::new(2);
        assert!(p.run(&Fail, 100).is_err());
        assert!(p.run(&Fail, 3).is_ok());
    }
}
