//! The kernel memory checker (`OFFLOAD_RS_MEMCHECK=1`, read at `olInit`): what NVIDIA's
//! compute-sanitizer memcheck gives on a GPU.
//!
//! Kernels are then compiled with a check before every load, store, atomic and memory intrinsic
//! (`src/jit/llvm/kernel_memory.cpp`, a separate JIT option and cache entry). The check, [`check_access`],
//! allows an access that lies wholly inside one of:
//! * the work-group's static shared memory, its dynamic shared memory, the barrier scratch of its
//!   work-items and the launch's argument buffer (this launch's buffers on this thread);
//! * the work-item's private memory: the stack of the work-group function between the check and the
//!   frame that called it;
//! * the program's globals (the whole mapping of the loaded instance, code, constants and variables, for
//!   a read; its writable part, the variables, for a write or an atomic, but never the hook pointer the
//!   checks call through);
//! * the allocation table: every live allocation of the CPU device and every registered host range.
//!
//! The program's constructors (at `olCreateProgram`) and destructors (at `olDestroyProgram`) are
//! instrumented too and run under [`run_structors`], with the program's globals, the allocation table
//! and their stack allowed: a violation there is skipped and fails that call (`OL_ERRC_BACKEND_FAILURE`,
//! "memcheck: the program's constructors: ..."), as a faulting constructor kernel fails a GPU's load.
//!
//! Anything else is a violation. The first one stops the launch: the access itself is skipped (a skipped
//! load reads zero), the work-groups not yet started are not run, and the launch's error, returned at the
//! queue's next sync (`OL_ERRC_BACKEND_FAILURE`), names the kernel, the work-group and work-item ids, the
//! address, the access size and kind, and the nearest allocation (or the freed allocation it falls in:
//! the last [`FREED_KEPT`] frees are remembered). Later violations of the same launch are not reported.
//!
//! Off (the default), nothing is compiled in and nothing here runs: the allocation hooks only test one
//! flag that stays false.

use crate::jit::Mapping;
use crate::sync::{Mutex, RwLock};
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How many freed allocations are remembered to explain a use after free.
pub(crate) const FREED_KEPT: usize = 4096;

/// What an entry of the table is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AllocKind {
    Device,
    Registered,
}

impl AllocKind {
    fn describe(self) -> &'static str {
        match self {
            AllocKind::Device => "CPU device memory",
            AllocKind::Registered => "registered host memory",
        }
    }
}

#[derive(Default)]
struct Table {
    live: BTreeMap<usize, (usize, AllocKind)>,
    freed: VecDeque<(usize, usize, AllocKind)>,
}

static TABLE: RwLock<Table> = RwLock::new(Table { live: BTreeMap::new(), freed: VecDeque::new() });
/// Set once anything was tracked; the free hooks do nothing before.
static USED: AtomicBool = AtomicBool::new(false);
/// Bumped whenever an entry leaves the table: invalidates the per-thread last-hit cache.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// An allocation or registration of `[ptr, ptr + size)` (when the checker is on).
pub(crate) fn track(ptr: usize, size: usize, kind: AllocKind) {
    if !crate::jit::memcheck() {
        return;
    }
    USED.store(true, Ordering::Relaxed);
    TABLE.write().live.insert(ptr, (size, kind));
}

/// The allocation or registration at `ptr` is gone.
pub(crate) fn untrack(ptr: usize) {
    if !USED.load(Ordering::Relaxed) {
        return;
    }
    let mut t = TABLE.write();
    if let Some((size, kind)) = t.live.remove(&ptr) {
        GENERATION.fetch_add(1, Ordering::Release);
        if t.freed.len() >= FREED_KEPT {
            t.freed.pop_front();
        }
        t.freed.push_back((ptr, size, kind));
    }
}

/// The launch-wide part of the checker's state (or that of one run of a program's constructors or
/// destructors).
pub(crate) struct LaunchCheck {
    /// the kernel's name, or which structors run
    kernel: String,
    structors: bool,
    /// the program's mapping
    program: Mapping,
    stopped: AtomicBool,
    violation: Mutex<Option<String>>,
}

impl LaunchCheck {
    pub(crate) fn new(kernel: &str, program: Mapping) -> LaunchCheck {
        LaunchCheck {
            kernel: kernel.to_string(),
            structors: false,
            program,
            stopped: AtomicBool::new(false),
            violation: Mutex::new(None),
        }
    }

    /// A violation stopped the launch: skip the groups not started yet.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// The first violation's report.
    pub(crate) fn take_violation(&self) -> Option<String> {
        self.violation.lock().take()
    }
}

/// Runs the constructors or destructors (`which`) of an instrumented program mapped at `program`
/// (`call` calls them; the [`crate::jit::StructorRunner`] of the CPU device): their accesses are checked
/// like a kernel's, with no shared memory, scratch or arguments (their ids read 0). The first violation
/// is skipped, makes every later checked access a skipped one, and is returned.
pub(crate) fn run_structors(which: &'static str, program: Mapping, call: &mut dyn FnMut()) -> Result<(), String> {
    let launch = LaunchCheck { structors: true, ..LaunchCheck::new(which, program) };
    let top = 0u8;
    let frame = GroupFrame {
        launch: &launch,
        regions: [(0, 0); 4],
        stack_top: std::hint::black_box(&top) as *const u8 as usize,
        group: Cell::new([0; 3]),
        hits: Cell::new(Hits::EMPTY),
    };
    {
        let _registered = enter(&frame);
        call();
    }
    launch.take_violation().map_or(Ok(()), Err)
}

/// What the check needs about the work-groups running on this thread. Lives on the stack of the launch
/// loop, which registers it with [`enter`] for the duration of its chunk of groups.
pub(crate) struct GroupFrame<'a> {
    pub launch: &'a LaunchCheck,
    /// (start, length): static shared, dynamic shared, scratch, arguments
    pub regions: [(usize, usize); 4],
    /// top of the work-group function's stack (an address in the launch loop's frame)
    pub stack_top: usize,
    /// the group running now
    pub group: Cell<[u32; 3]>,
    pub hits: Cell<Hits>,
}

impl Hits {
    pub(crate) const EMPTY: Hits = Hits { ranges: [(0, 0); HIT_CACHE], next: 0, generation: u64::MAX };
}

const REGION_NAMES: [&str; 4] =
    ["static shared memory", "dynamic shared memory", "private scratch", "kernel arguments"];

/// Table entries remembered per thread (a kernel typically streams through a few buffers).
const HIT_CACHE: usize = 4;

/// The last table entries this thread's accesses hit: (start, end) each, valid for one generation of
/// the table.
#[derive(Clone, Copy)]
pub(crate) struct Hits {
    ranges: [(usize, usize); HIT_CACHE],
    next: usize,
    generation: u64,
}

thread_local! {
    static FRAME: Cell<*const GroupFrame<'static>> = const { Cell::new(std::ptr::null()) };
}

/// Registers `frame` as this thread's current work-group until the guard is dropped.
pub(crate) fn enter<'a>(frame: &'a GroupFrame<'a>) -> FrameGuard<'a> {
    let p = (frame as *const GroupFrame<'a>).cast::<GroupFrame<'static>>();
    let prev = FRAME.with(|c| c.replace(p));
    FrameGuard { prev, _frame: std::marker::PhantomData }
}

pub(crate) struct FrameGuard<'a> {
    prev: *const GroupFrame<'static>,
    _frame: std::marker::PhantomData<&'a GroupFrame<'a>>,
}

impl Drop for FrameGuard<'_> {
    fn drop(&mut self) {
        FRAME.with(|c| c.set(self.prev));
    }
}

fn inside(addr: usize, end: usize, (lo, len): (usize, usize)) -> bool {
    addr >= lo && end <= lo.saturating_add(len)
}

/// The hook every instrumented access calls (the [`crate::jit::MemcheckHook`] ABI): true if the access
/// may happen.
///
/// # Safety
/// Called only by instrumented kernel code, on the thread running the work-group (the frame registered
/// with [`enter`] is alive then).
pub(crate) unsafe extern "C" fn check_access(addr: usize, size: u64, kind: u32, x: u32, y: u32, z: u32) -> bool {
    let f = FRAME.with(|c| c.get());
    if f.is_null() || size == 0 {
        return true;
    }
    // SAFETY: registered by `enter` for the duration of the work-group's run, which this call is part of.
    let f = unsafe { &*f };
    if f.launch.stopped() {
        return false;
    }
    let end = addr.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
    let m = &f.launch.program;
    let program_ok = if kind == 0 {
        inside(addr, end, m.all)
    } else {
        // never the checker's own hook pointer: an overwritten hook would run anything
        inside(addr, end, m.writable) && (end <= m.reserved.0 || addr >= m.reserved.0.saturating_add(m.reserved.1))
    };
    if program_ok || f.regions.iter().any(|&r| inside(addr, end, r)) {
        return true;
    }
    let probe = 0u8;
    let sp = std::hint::black_box(&probe) as *const u8 as usize;
    if addr >= sp && end <= f.stack_top {
        return true;
    }
    let generation = GENERATION.load(Ordering::Acquire);
    let mut hits = f.hits.get();
    if hits.generation != generation {
        hits = Hits { generation, ..Hits::EMPTY };
    } else if hits.ranges.iter().any(|&(lo, hi)| addr >= lo && end <= hi) {
        return true;
    }
    {
        let t = TABLE.read();
        if let Some((&p, &(len, _))) = t.live.range(..=addr).next_back()
            && end <= p.saturating_add(len)
        {
            hits.ranges[hits.next] = (p, p + len);
            hits.next = (hits.next + 1) % HIT_CACHE;
            f.hits.set(hits);
            return true;
        }
    }
    report(f, addr, size, kind, [x, y, z]);
    false
}

fn report(f: &GroupFrame<'_>, addr: usize, size: u64, kind: u32, wi: [u32; 3]) {
    if f.launch.stopped.swap(true, Ordering::AcqRel) {
        return;
    }
    let what = match kind {
        0 => "read",
        1 => "write",
        _ => "atomic access",
    };
    let g = f.group.get();
    let near = nearest(f, addr, size);
    let whom = if f.launch.structors {
        format!("the program's {}", f.launch.kernel)
    } else {
        format!(
            "kernel '{}', work-group ({}, {}, {}), work-item ({}, {}, {})",
            f.launch.kernel, g[0], g[1], g[2], wi[0], wi[1], wi[2]
        )
    };
    let msg = format!("memcheck: {whom}: invalid {size}-byte {what} at {addr:#x}; {near}");
    *f.launch.violation.lock() = Some(msg);
}

/// "nearest allocation: ..." (or the freed allocation the access falls in).
fn nearest(f: &GroupFrame<'_>, addr: usize, size: u64) -> String {
    let t = TABLE.read();
    let end = addr.saturating_add(size as usize);
    if let Some(&(p, len, kind)) = t.freed.iter().rev().find(|&&(p, len, _)| addr < p.saturating_add(len) && end > p)
        && t.live.range(..=addr).next_back().is_none_or(|(&lp, &(ll, _))| addr >= lp + ll)
    {
        return format!("it is inside {len} bytes of {} at {p:#x} that were freed (use after free)", kind.describe());
    }
    let (r, rlen) = f.launch.program.reserved;
    if rlen > 0 && addr < r.saturating_add(rlen) && end > r {
        return format!(
            "it overlaps the memory checker's own {rlen}-byte hook pointer at {r:#x} in the program's globals"
        );
    }
    let mut cands: Vec<(usize, usize, String)> =
        f.regions.iter().zip(REGION_NAMES).filter(|(r, _)| r.1 > 0).map(|(r, n)| (r.0, r.1, n.to_string())).collect();
    let (p, len) = f.launch.program.writable;
    cands.push((p, len, "the program's globals".to_string()));
    if let Some((&p, &(len, k))) = t.live.range(..=addr).next_back() {
        cands.push((p, len, k.describe().to_string()));
    }
    if let Some((&p, &(len, k))) = t.live.range(addr..).next() {
        cands.push((p, len, k.describe().to_string()));
    }
    let dist = |&(p, len, _): &(usize, usize, String)| {
        if addr >= p.saturating_add(len) { addr - (p + len) } else { p.saturating_sub(end) }
    };
    let Some((p, len, what)) = cands.iter().min_by_key(|c| dist(c)) else {
        return "no allocation is known".to_string();
    };
    let rel = if addr >= p + len {
        format!("the access starts {} bytes after its end", addr - (p + len))
    } else if addr < *p {
        format!("the access starts {} bytes before it", p - addr)
    } else {
        format!("the access starts at offset {} and runs {} bytes past its end", addr - p, end.saturating_sub(p + len))
    };
    format!("nearest allocation: {len} bytes of {what} at {p:#x}; {rel}")
}
