//! Where kernel code keeps its memory: per-group buffers followed by guard pages, and the stacks kernel
//! code runs on.
//!
//! * **Shared and scratch memory** ([`GuardedBuf`]): static `__gpu_local` memory, dynamic (`extern
//!   __gpu_local`) memory and the per-work-item scratch of barrier kernels each live in their own anonymous
//!   mapping, placed so that the buffer ends (rounded up to 64 bytes, the alignment the generated code
//!   assumes) where [`GUARD`] bytes of `PROT_NONE` pages begin. An overrun of more than that rounding
//!   faults at its first byte past the guard's start instead of writing into the heap; a zero-byte buffer
//!   points at the guard itself, so any touch faults.
//! * **Stacks**: kernel code runs only on stacks the library chose. The pool's workers and the queues'
//!   threads have [`KERNEL_STACK`]-byte stacks (with the guard page the thread library puts below them);
//!   any other thread that runs a launch (a thread in `olSyncQueue`/`olSyncEvent` helping its queue, a
//!   synchronous launch) switches to a per-thread [`KERNEL_STACK`]-byte mapping with a [`GUARD`] below it
//!   for the duration ([`on_kernel_stack`], a stack switch through the `psm` crate, a few ns; no thread
//!   hand-off, so launch latency is unchanged). How much stack a kernel needs is known when its program
//!   loads (the code generator's `.stack_sizes` section, see `jit::stack`); a launch that does not fit in
//!   [`KERNEL_STACK`] less [`STACK_RESERVE`] is `OUT_OF_RESOURCES` (`launch::prepare`).
//!
//! # What a fault does
//! The library installs no signal handler (it is a guest in the client's process), so a kernel touching a
//! guard page gets `SIGSEGV` as any wild store in host code would: with the default disposition the
//! process ends there, before the overrun can corrupt anything. That is the CPU device's counterpart of a
//! GPU's "illegal address" error, which also ends the context. To get an error instead (the launch
//! stopped, the violation reported at the next sync, the process going on), run with
//! `OFFLOAD_RS_MEMCHECK=1` (see `memcheck`).

use crate::threads::ThreadSlot;
use std::cell::{Cell, RefCell};

/// Bytes of `PROT_NONE` pages after each buffer and below each switched-to stack.
pub(crate) const GUARD: usize = 64 << 10;
/// Stack size of every thread that runs kernel code.
pub(crate) const KERNEL_STACK: usize = 16 << 20;
/// Stack kept for the library's own frames under a work-group function (the pool, the launch loop) and
/// for the library functions kernel code calls (libm, `memcpy`), whose frames the JIT cannot see.
pub(crate) const STACK_RESERVE: usize = 256 << 10;
/// Alignment of every buffer handed to kernel code.
pub(crate) const ALIGN: usize = 64;

/// The page size (4096 where `sysconf` cannot say); memory.rs uses it too.
pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// An anonymous read-write mapping of `len` bytes with `guard_below`/`guard_above` bytes of
/// `PROT_NONE` pages around it. Returns (mapping start, total length).
fn map_guarded(len: usize, guard_below: usize, guard_above: usize) -> Option<(*mut u8, usize)> {
    let total = len.checked_add(guard_below)?.checked_add(guard_above)?;
    // SAFETY: a fresh anonymous mapping; no existing memory is affected.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let base = p.cast::<u8>();
    // SAFETY: `[base + guard_below, + len)` lies inside the mapping just made.
    let rc = unsafe {
        libc::mprotect(base.add(guard_below).cast::<libc::c_void>(), len, libc::PROT_READ | libc::PROT_WRITE)
    };
    if rc != 0 {
        // SAFETY: unmapping the mapping made above, which nothing else references.
        unsafe { libc::munmap(p, total) };
        return None;
    }
    Some((base, total))
}

/// A buffer for kernel code that grows on demand (never shrinks) and ends at a guard; its contents are
/// not kept across calls that change the size (shared memory is uninitialised, as on a GPU).
pub struct GuardedBuf {
    /// start of the mapping (null: none yet)
    map: *mut u8,
    map_len: usize,
    /// usable bytes, `[map, map + cap)`; the guard follows
    cap: usize,
    /// the last `written` bytes of the usable part have been written (by `get`, then maybe by kernels)
    written: usize,
}

// SAFETY: the mapping is plain memory owned by this value; moving it between threads is fine.
unsafe impl Send for GuardedBuf {}

impl GuardedBuf {
    pub const fn new() -> Self {
        GuardedBuf { map: std::ptr::null_mut(), map_len: 0, cap: 0, written: 0 }
    }

    /// A 64-byte aligned pointer to `size` usable bytes whose end (rounded up to 64 bytes) is the start
    /// of a guard; `None` if the mapping failed. `size == 0` points at the guard.
    ///
    /// The bytes, and the page before them, are written (zeros) before they are first handed out.
    /// Kernel code reads memory it has not written (a vector load whose other lanes are masked off or
    /// discarded, a work-item reading shared memory before any writes it), and a page of an anonymous
    /// mapping that has only been read is the system's one shared zero page: every such page of every
    /// buffer the same physical memory under different addresses, which cores whose L1 is tagged by
    /// virtual address (AMD's) handle slowly. Measured: the warp-shuffle scan of bench/suite ran 2x
    /// slower in a process where its scratch was fresh than where an earlier kernel had written it, and
    /// as fast once its memory was written first (AMD EPYC with AVX-512, one or two threads; BENCHMARKS.md).
    pub fn get(&mut self, size: usize) -> Option<*mut u8> {
        let want = size.checked_next_multiple_of(ALIGN)?;
        if want > self.cap || self.map.is_null() {
            self.release();
            let cap = want.max(page_size()).checked_next_power_of_two()?;
            let (map, map_len) = map_guarded(cap, 0, GUARD)?;
            self.map = map;
            self.map_len = map_len;
            self.cap = cap;
            self.written = 0;
        }
        // (and the page before them: the vector loads of the first elements start there)
        let write = (want + page_size()).min(self.cap);
        if write > self.written {
            // SAFETY: `[cap - write, cap - written)` lies inside the usable part, and no kernel has been
            // handed any of it yet (every earlier result ended at the guard and was shorter than `written`).
            unsafe { std::ptr::write_bytes(self.map.add(self.cap - write), 0, write - self.written) };
            self.written = write;
        }
        // SAFETY: `want <= cap`, so the result lies inside the usable part of the mapping.
        Some(unsafe { self.map.add(self.cap - want) })
    }

    fn release(&mut self) {
        if !self.map.is_null() {
            // SAFETY: the mapping was made by `map_guarded` with this length and is owned by `self`.
            unsafe { libc::munmap(self.map.cast::<libc::c_void>(), self.map_len) };
            self.map = std::ptr::null_mut();
            self.map_len = 0;
            self.cap = 0;
            self.written = 0;
        }
    }
}

impl Default for GuardedBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        self.release();
    }
}

/// A [`KERNEL_STACK`]-byte stack with a [`GUARD`] below it, for threads the library did not start.
struct SwitchStack {
    map: *mut u8,
    map_len: usize,
}

impl Drop for SwitchStack {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `map_guarded` with this length; nothing runs on it any more
        // (a thread's TLS is destroyed after the thread stopped running code on the switched stack).
        unsafe { libc::munmap(self.map.cast::<libc::c_void>(), self.map_len) };
    }
}

thread_local! {
    /// Set on the library's own threads (whose stack is [`KERNEL_STACK`] bytes) and while a thread runs
    /// on its [`SwitchStack`].
    static ON_KERNEL_STACK: Cell<bool> = const { Cell::new(false) };
}

/// A client thread's switch stack: a [`ThreadSlot`], not a `thread_local!` (whose destructor registration
/// ends the process when glibc cannot allocate it).
static SWITCH_STACK: ThreadSlot<RefCell<Option<SwitchStack>>> = ThreadSlot::new();

/// Marks the calling thread as one the library started with a [`KERNEL_STACK`]-byte stack.
pub(crate) fn mark_kernel_thread() {
    ON_KERNEL_STACK.with(|c| c.set(true));
}

/// Calls `f` in a frame of its own: inlined into [`on_kernel_stack`], a closure with a large frame would
/// make that function's frame large, and its prologue touches it on the caller's stack before any switch.
#[inline(never)]
fn call_outlined<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Why [`on_kernel_stack`] could not run its closure.
#[derive(Debug)]
pub struct NoStack;

/// Run `f` on a stack of [`KERNEL_STACK`] bytes chosen by the library: directly on the library's own
/// threads, else on the calling thread's switch stack (made on first use, kept until the thread ends).
/// A panic in `f` is carried across the switch and resumed here; `Err` only when no stack could be mapped.
/// A thread whose TLS is already destroyed (a launch from a C++ static destructor or an `atexit` handler),
/// or without memory for its switch stack's slot, gets a stack mapped for the one call.
pub(crate) fn on_kernel_stack<R>(f: impl FnOnce() -> R) -> Result<R, NoStack> {
    match ON_KERNEL_STACK.try_with(|c| c.get()) {
        Ok(true) => Ok(call_outlined(f)),
        Ok(false) => {
            let base = SWITCH_STACK
                .with(RefCell::default, |s| {
                    let mut s = s.borrow_mut();
                    if s.is_none() {
                        let (map, map_len) = map_guarded(KERNEL_STACK, GUARD, 0)?;
                        *s = Some(SwitchStack { map, map_len });
                    }
                    // SAFETY: the usable part starts GUARD bytes into the mapping.
                    s.as_ref().map(|s| unsafe { s.map.add(GUARD) })
                })
                .flatten();
            let Some(base) = base else { return on_stack_for_one_call(f) };
            ON_KERNEL_STACK.with(|c| c.set(true));
            // SAFETY: `base` is the usable start of this thread's switch stack, not in use: the flag was
            // false, so we are not running on it, and it stays set until we are off it again, so a nested
            // call does not switch to it a second time.
            let r = unsafe { run_on(base, f) };
            ON_KERNEL_STACK.with(|c| c.set(false));
            Ok(r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
        }
        // this thread's TLS is being destroyed (a launch from a C++ static destructor or an atexit handler)
        Err(_) => on_stack_for_one_call(f),
    }
}

/// [`on_kernel_stack`] on a stack of its own for this call.
fn on_stack_for_one_call<R>(f: impl FnOnce() -> R) -> Result<R, NoStack> {
    let (map, map_len) = map_guarded(KERNEL_STACK, GUARD, 0).ok_or(NoStack)?;
    let stack = SwitchStack { map, map_len };
    // SAFETY: a fresh mapping owned by this call (unmapped when `stack` drops, after the switch back); the
    // usable part starts GUARD bytes into it.
    let r = unsafe { run_on(stack.map.add(GUARD), f) };
    drop(stack);
    Ok(r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
}

/// Runs `f` with the stack pointer at the top of `[base, base + KERNEL_STACK)`; a panic in `f` comes
/// back as the `Err` (for the caller to resume once its state is restored).
///
/// # Safety
/// `base` must be page-aligned with `KERNEL_STACK` bytes mapped read-write, used by nothing else for the
/// duration of the call.
unsafe fn run_on<R>(base: *mut u8, f: impl FnOnce() -> R) -> std::thread::Result<R> {
    // SAFETY: the caller's obligations are psm's (an aligned, sized, unused stack); the callback cannot
    // unwind: a panic is caught inside it.
    unsafe { psm::on_stack(base, KERNEL_STACK, || std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes never handed out before are written (zeros) first, also when a buffer grows inside its
    /// mapping; what a kernel wrote stays (nothing is handed out twice as fresh).
    #[test]
    fn guarded_buf_writes_fresh_bytes_once() {
        let mut b = GuardedBuf::new();
        let p = b.get(100).unwrap();
        // SAFETY: `p` points at 100 usable bytes.
        let fresh = unsafe { std::slice::from_raw_parts_mut(p, 100) };
        assert!(fresh.iter().all(|&x| x == 0));
        fresh.fill(7);
        let map = b.map;
        let q = b.get(1000).unwrap();
        assert_eq!(b.map, map, "grown inside its mapping");
        // SAFETY: `q` points at 1000 usable bytes; its last 128 (100 rounded up) are what `p` held.
        let grown = unsafe { std::slice::from_raw_parts(q, 1000) };
        let old = 1000usize.next_multiple_of(ALIGN) - 128;
        assert!(grown[..old].iter().all(|&x| x == 0));
        assert!(grown[old..old + 100].iter().all(|&x| x == 7));
    }

    #[test]
    fn guarded_buf_ends_at_the_guard() {
        let mut b = GuardedBuf::new();
        for n in [0usize, 1, 100, 5000, 3, 64] {
            let p = b.get(n).unwrap();
            assert_eq!(p as usize % ALIGN, 0);
            // SAFETY: p points to at least n bytes.
            unsafe { std::ptr::write_bytes(p, 0xAB, n) };
            assert_eq!(p as usize + n.next_multiple_of(ALIGN), b.map as usize + b.cap, "size {n}");
        }
    }

    /// A 4 MiB frame.
    fn deep() -> u64 {
        let mut big = [0u8; 4 << 20];
        big[12345] = 7;
        std::hint::black_box(&mut big);
        big.iter().map(|&b| b as u64).sum::<u64>()
    }

    #[test]
    fn kernel_stack_runs_deep_frames_from_a_small_thread() {
        let t = std::thread::Builder::new().stack_size(256 << 10).spawn(|| on_kernel_stack(deep).unwrap()).unwrap();
        assert_eq!(t.join().unwrap(), 7);
    }

    #[test]
    fn a_panic_comes_back_and_the_next_call_switches_again() {
        let t = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let r = std::panic::catch_unwind(|| on_kernel_stack(|| panic!("inside")));
                assert!(r.is_err());
                on_kernel_stack(deep).unwrap()
            })
            .unwrap();
        assert_eq!(t.join().unwrap(), 7);
    }
}
