//! The library's threads and per-thread values, without glibc's thread-local destructor registration.
//!
//! [`ThreadSlot`]: a value per thread, dropped when the thread exits. [`spawn_detached`]: a thread of the
//! library's own, started without `std::thread` (whose spawn registers such a destructor on the spawning
//! thread, a client's: its "spawn hooks").
//!
//! A `thread_local!` whose type needs dropping registers its destructor with glibc's
//! `__cxa_thread_atexit_impl` on first use, and glibc ends the process when it cannot allocate that
//! registration ("Fatal glibc error: failed to register TLS destructor: out of memory"): a client thread's
//! first call under a tight `RLIMIT_AS` or a full memory cgroup would kill the client. A [`ThreadSlot`] keeps
//! its value behind a POSIX thread-specific key instead: `pthread_setspecific` reports `ENOMEM`, and the
//! caller goes on without the slot. The key's destructor drops the value when the thread exits (after the
//! thread's `thread_local!` destructors; the main thread's value lives until the process ends).
//!
//! Thread-locals without a destructor (`Cell`s of plain values) need no registration and stay
//! `thread_local!`s.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::OnceLock;

/// `Box::new(v)`, or `None` when there is no memory for it (where `Box::new` would end the process with
/// Rust's allocation-failure abort).
pub fn try_box<T>(v: T) -> Option<Box<T>> {
    let mut one = Vec::new();
    one.try_reserve_exact(1).ok()?;
    one.push(v);
    // SAFETY: a one-element boxed slice is one `T` allocated with `T`'s layout, which is a `Box<T>`'s.
    Some(unsafe { Box::from_raw(Box::into_raw(one.into_boxed_slice()).cast::<T>()) })
}

/// A lazily made value of type `T` per thread ([`ThreadSlot::with`]), dropped at the thread's exit.
pub struct ThreadSlot<T: 'static> {
    key: OnceLock<Option<libc::pthread_key_t>>,
    _value: PhantomData<fn() -> T>,
}

impl<T: 'static> Default for ThreadSlot<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: 'static> ThreadSlot<T> {
    pub const fn new() -> Self {
        ThreadSlot { key: OnceLock::new(), _value: PhantomData }
    }

    fn key(&self) -> Option<libc::pthread_key_t> {
        unsafe extern "C" fn drop_value<T>(p: *mut c_void) {
            // SAFETY: the key only ever holds pointers from `Box::into_raw` in `with`; glibc calls this once
            // per value, with the slot already cleared.
            drop(unsafe { Box::from_raw(p.cast::<T>()) });
        }
        *self.key.get_or_init(|| {
            let mut k: libc::pthread_key_t = 0;
            // SAFETY: k is a valid out-pointer; the destructor has the signature pthread wants.
            (unsafe { libc::pthread_key_create(&mut k, Some(drop_value::<T>)) } == 0).then_some(k)
        })
    }

    /// `f` with this thread's value, made by `init` the first time; `None` (and `f` not called) when no
    /// slot can be had: no key (`PTHREAD_KEYS_MAX` reached), or no memory for the value or the slot.
    pub fn with<R>(&self, init: impl FnOnce() -> T, f: impl FnOnce(&T) -> R) -> Option<R> {
        let key = self.key()?;
        // SAFETY: reading this thread's slot of a live key.
        let mut p = unsafe { libc::pthread_getspecific(key) }.cast::<T>();
        if p.is_null() {
            let raw = Box::into_raw(try_box(init())?);
            // SAFETY: storing a pointer this thread owns in its slot of a live key.
            if unsafe { libc::pthread_setspecific(key, raw.cast()) } != 0 {
                // SAFETY: not stored: still ours alone.
                drop(unsafe { Box::from_raw(raw) });
                return None;
            }
            p = raw;
        }
        // SAFETY: the value lives until this thread exits (the key's destructor), so for the whole call; only
        // this thread reaches it, and `T` is not shared by the reference (it stays in `f`).
        Some(f(unsafe { &*p }))
    }
}

/// Starts a detached thread named `name` (15 bytes at most are kept) with a stack of `stack` bytes that runs
/// `f`, with `pthread_create` rather than `std::thread`, whose spawn registers a thread-local destructor on
/// the calling thread (a client's), which glibc cannot fail without ending the process. A panic in `f` ends
/// the thread, not the process (the library's thread bodies report their errors themselves).
pub fn spawn_detached(name: &str, stack: usize, f: Box<dyn FnOnce() + Send>) -> std::io::Result<()> {
    extern "C" fn start(p: *mut c_void) -> *mut c_void {
        // SAFETY: `p` is the `Box<Start>` leaked below; this thread owns it now.
        let start = unsafe { Box::from_raw(p.cast::<Start>()) };
        // SAFETY: a NUL-terminated name; naming the calling thread.
        unsafe { libc::pthread_setname_np(libc::pthread_self(), start.name.as_ptr().cast()) };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(start.f));
        std::ptr::null_mut()
    }
    struct Start {
        name: [u8; 16],
        f: Box<dyn FnOnce() + Send>,
    }
    let mut short = [0u8; 16];
    for (d, s) in short.iter_mut().zip(name.bytes().filter(|&b| b != 0).take(15)) {
        *d = s;
    }
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: initialising, configuring and destroying a local attribute object.
    unsafe {
        let r = libc::pthread_attr_init(attr.as_mut_ptr());
        if r != 0 {
            return Err(std::io::Error::from_raw_os_error(r));
        }
        let stack = stack.max(libc::PTHREAD_STACK_MIN);
        let r = libc::pthread_attr_setstacksize(attr.as_mut_ptr(), stack);
        let r = if r == 0 {
            libc::pthread_attr_setdetachstate(attr.as_mut_ptr(), libc::PTHREAD_CREATE_DETACHED)
        } else {
            r
        };
        if r != 0 {
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            return Err(std::io::Error::from_raw_os_error(r));
        }
    }
    let start_box = try_box(Start { name: short, f }).ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOMEM))?;
    let p = Box::into_raw(start_box);
    let mut t: libc::pthread_t = 0;
    // SAFETY: `start` takes ownership of `p` when the thread starts; on failure it is still ours.
    let r = unsafe { libc::pthread_create(&mut t, attr.as_ptr(), start, p.cast()) };
    // SAFETY: the attribute object was initialised above.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    if r != 0 {
        // SAFETY: the thread was not started: `p` is still ours alone.
        drop(unsafe { Box::from_raw(p) });
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Runs `f(i)` for every `i` in `0..n`, each on a thread of its own ([`spawn_detached`], named `name`, with
/// `stack` bytes), and returns once every thread it started has returned from `f`: `Ok(true)` when every
/// call returned true, `Ok(false)` when one returned false or panicked. When thread `i` cannot be started,
/// `on_spawn_failure` runs (it must make the calls already running return, e.g. by opening a gate they
/// wait at), those are waited for, and the result is `Err(i)`. What `std::thread::scope` does, without its
/// spawn hooks' registration on the calling thread (a client's).
pub fn run_each_on_own_thread(
    n: u64,
    name: &str,
    stack: usize,
    f: &(dyn Fn(u64) -> bool + Sync),
    on_spawn_failure: &dyn Fn(),
) -> Result<bool, u64> {
    use crate::sync::{Condvar, Mutex};
    use std::sync::Arc;
    // (finished calls, all true so far); on the heap: a thread still unlocking it when the last wait
    // ends must not touch this frame
    let state = Arc::new((Mutex::new((0u64, true)), Condvar::new()));
    // SAFETY: the `'static` is never relied on: this function returns only after every thread started
    // below has finished its call of `f` (the count reaches `started`), and no thread touches `f` after
    // counting itself.
    let f: &'static (dyn Fn(u64) -> bool + Sync) = unsafe { std::mem::transmute(f) };
    let mut started = 0u64;
    let mut failed_at = None;
    for i in 0..n {
        let st = state.clone();
        let body = Box::new(move || {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))).unwrap_or(false);
            let (m, cv) = &*st;
            let mut g = m.lock();
            g.0 += 1;
            g.1 &= ok;
            cv.notify_all();
        });
        if spawn_detached(name, stack, body).is_err() {
            failed_at = Some(i);
            on_spawn_failure();
            break;
        }
        started += 1;
    }
    let (m, cv) = &*state;
    let mut g = m.lock();
    while g.0 < started {
        cv.wait(&mut g);
    }
    match failed_at {
        Some(i) => Err(i),
        None => Ok(g.1),
    }
}
