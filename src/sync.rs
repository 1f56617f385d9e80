//! Locks for the library's shared state: `std::sync`'s, without poisoning, with the few conveniences the
//! code uses (`MutexGuard::unlocked`, a `Condvar` that waits on a guard in place).
//!
//! Not `parking_lot`'s: a thread that waits on one of those for the first time registers a thread-local
//! destructor (its parking data) with glibc, which ends the process when it cannot allocate that
//! registration; a client's thread under a tight `RLIMIT_AS` or in a full memory cgroup would die on lock
//! contention (see `threads`). `std::sync`'s futex-based locks keep nothing per thread.

use std::ops::{Deref, DerefMut};
use std::sync::PoisonError;
use std::time::Duration;

/// A mutual-exclusion lock whose `lock` never fails: a panic while it was held does not poison it (the
/// library catches panics at its boundary and its state stays consistent between statements).
#[derive(Default, Debug)]
pub struct Mutex<T: ?Sized>(std::sync::Mutex<T>);

/// The guard of a [`Mutex`]; the lock is released when it drops.
pub struct MutexGuard<'a, T: ?Sized> {
    lock: &'a std::sync::Mutex<T>,
    // None only inside `unlocked` and `Condvar::wait*`
    inner: Option<std::sync::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    pub const fn new(v: T) -> Mutex<T> {
        Mutex(std::sync::Mutex::new(v))
    }

    pub fn into_inner(self) -> T {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: ?Sized> Mutex<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        MutexGuard { lock: &self.0, inner: Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)) }
    }

    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Runs `f` with the lock released, and takes it again before returning.
    pub fn unlocked<R>(g: &mut MutexGuard<'a, T>, f: impl FnOnce() -> R) -> R {
        drop(g.inner.take());
        let r = f();
        g.inner = Some(g.lock.lock().unwrap_or_else(PoisonError::into_inner));
        r
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner.as_deref().expect("a MutexGuard is held outside unlocked() and waits")
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.inner.as_deref_mut().expect("a MutexGuard is held outside unlocked() and waits")
    }
}

/// A condition variable for [`Mutex`], waiting on a guard in place.
#[derive(Default, Debug)]
pub struct Condvar(std::sync::Condvar);

impl Condvar {
    pub const fn new() -> Condvar {
        Condvar(std::sync::Condvar::new())
    }

    pub fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
        let inner = g.inner.take().expect("a held guard");
        g.inner = Some(self.0.wait(inner).unwrap_or_else(PoisonError::into_inner));
    }

    /// Waits at most `d`; whether the time ran out.
    pub fn wait_for<T>(&self, g: &mut MutexGuard<'_, T>, d: Duration) -> std::sync::WaitTimeoutResult {
        let inner = g.inner.take().expect("a held guard");
        let (inner, r) = self.0.wait_timeout(inner, d).unwrap_or_else(PoisonError::into_inner);
        g.inner = Some(inner);
        r
    }

    pub fn notify_one(&self) {
        self.0.notify_one();
    }

    pub fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// A reader-writer lock whose `read` and `write` never fail (no poisoning).
#[derive(Default, Debug)]
pub struct RwLock<T: ?Sized>(std::sync::RwLock<T>);

impl<T> RwLock<T> {
    pub const fn new(v: T) -> RwLock<T> {
        RwLock(std::sync::RwLock::new(v))
    }
}

impl<T: ?Sized> RwLock<T> {
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, T> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn write(&self) -> std::sync::RwLockWriteGuard<'_, T> {
        self.0.write().unwrap_or_else(PoisonError::into_inner)
    }
}
