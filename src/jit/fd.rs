//! Descriptors the library keeps across calls (helper sockets, their pidfds, native images' memfds),
//! recognised before every use.
//!
//! A client may close every descriptor from 3 up (daemons and sandboxes do), or `dup2` onto one of
//! ours; the number then names the client's file. Each kept descriptor therefore remembers its device
//! and inode, is checked (`fstat`) before it is used, and is closed only while it is still ours: a
//! number that names something else is forgotten, never read, written or closed. Kept descriptors are
//! close-on-exec and moved to high numbers (at least [`HIGH_FD`] when `RLIMIT_NOFILE` allows), out of
//! the range clients open and `dup2` onto.

use std::os::fd::{AsRawFd, OwnedFd};

/// Lowest number kept descriptors are moved to.
pub(crate) const HIGH_FD: i32 = 600;

fn identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: fstat into a zeroed struct; an fd that is not open is EBADF.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev, st.st_ino))
    }
}

/// The lowest number to move kept descriptors to: [`HIGH_FD`], or lower under a small `RLIMIT_NOFILE`.
fn high_floor() -> i32 {
    // SAFETY: getrlimit into a zeroed struct.
    let soft = unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return 3;
        }
        rl.rlim_cur
    };
    if soft >= 2 * HIGH_FD as libc::rlim_t { HIGH_FD } else { (soft / 2).max(3) as i32 }
}

/// A descriptor of ours, with the identity it had when we made it.
#[derive(Debug)]
pub(crate) struct KeptFd {
    fd: i32,
    dev: u64,
    ino: u64,
}

impl KeptFd {
    /// Takes `fd` (a fresh descriptor of ours), moving it to a close-on-exec descriptor numbered at
    /// least `min` (or [`HIGH_FD`] when `min` is `None`; lower when `RLIMIT_NOFILE` is small).
    pub(crate) fn keep_from(fd: OwnedFd, min: Option<i32>) -> std::io::Result<KeptFd> {
        let floor = min.unwrap_or_else(high_floor);
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own; the result is a new descriptor we own.
        let mut high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, floor) };
        if high < 0 {
            // out of high numbers: the original, made close-on-exec
            // SAFETY: as above, from 3 up.
            high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
            if high < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        drop(fd);
        let Some((dev, ino)) = identity(high) else {
            let e = std::io::Error::last_os_error();
            // SAFETY: `high` is the descriptor fcntl just made for us.
            unsafe { libc::close(high) };
            return Err(e);
        };
        Ok(KeptFd { fd: high, dev, ino })
    }

    /// [`KeptFd::keep_from`] with the default floor.
    pub(crate) fn keep(fd: impl Into<OwnedFd>) -> std::io::Result<KeptFd> {
        KeptFd::keep_from(fd.into(), None)
    }

    /// The number, when it still names our file; `None` when the client closed it or put something
    /// else there (we then never touch that number again).
    pub(crate) fn get(&self) -> Option<i32> {
        (self.fd >= 0 && identity(self.fd) == Some((self.dev, self.ino))).then_some(self.fd)
    }

    /// The number, unchecked: for what names the descriptor (`/proc/self/fd/N`) or a call right after
    /// a [`KeptFd::get`].
    pub(crate) fn raw(&self) -> i32 {
        self.fd
    }

    /// Gives the descriptor up without closing it (it stays open, and ours, until the process exits).
    pub(crate) fn leak(mut self) {
        self.fd = -1;
    }
}

impl Drop for KeptFd {
    fn drop(&mut self) {
        if let Some(fd) = self.get() {
            // SAFETY: the descriptor is still ours (same device and inode), closed once.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_descriptor_replaced_behind_our_back_is_never_touched() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        let k = KeptFd::keep(a).expect("keep");
        assert!(k.raw() >= 3);
        assert_eq!(k.get(), Some(k.raw()));
        // SAFETY: F_GETFD on our descriptor.
        assert_eq!(unsafe { libc::fcntl(k.raw(), libc::F_GETFD) } & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        // the "client" dup2s a file of its own over our number
        let f = std::fs::File::open("/proc/self/exe").expect("open");
        // SAFETY: dup2 of a file we own onto the number; afterwards the number is that file's.
        assert_eq!(unsafe { libc::dup2(f.as_raw_fd(), k.raw()) }, k.raw());
        assert_eq!(k.get(), None);
        let n = k.raw();
        drop(k);
        // still open: the drop did not close the client's file
        // SAFETY: F_GETFD only asks whether the number is open.
        assert!(unsafe { libc::fcntl(n, libc::F_GETFD) } >= 0);
        // SAFETY: the test's own duplicate, closed once.
        unsafe { libc::close(n) };
    }
}
