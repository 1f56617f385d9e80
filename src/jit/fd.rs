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

/// Whether `bytes` more bytes may be written to a file under `RLIMIT_FSIZE` (a write past it raises
/// SIGXFSZ, which ends the client).
pub(crate) fn fits_fsize(bytes: usize) -> bool {
    // SAFETY: getrlimit into a zeroed struct.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_FSIZE, &mut rl) != 0
            || rl.rlim_cur == libc::RLIM_INFINITY
            || (bytes as u64) < rl.rlim_cur as u64
    }
}

/// Writes `data` as `name` in the debugging dump directory `dir` (`OFFLOAD_RS_JIT_DUMP_LOWERED`),
/// only when `dir` is a directory owned by the effective user and not writable by its group or
/// others (so nothing planted there can redirect the write), with `O_EXCL|O_NOFOLLOW` after removing
/// an earlier dump of that name, and within `RLIMIT_FSIZE`. Best effort: `OFFLOAD_RS_DEBUG` says why
/// a dump was not written.
#[cfg(feature = "llvm")]
pub(crate) fn write_dump(dir: &std::path::Path, name: &str, data: &[u8]) {
    let say = |why: String| super::debug(&format!("JIT dump {} not written: {why}", dir.join(name).display()));
    if !fits_fsize(data.len()) {
        return say("larger than RLIMIT_FSIZE".into());
    }
    let Ok(c) = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str())) else {
        return;
    };
    // SAFETY: open() of a NUL-terminated path; the descriptor is owned below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return say(format!("cannot open the directory ({})", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is a fresh descriptor we own.
    let dfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: fstat into a zeroed struct on our descriptor; geteuid has no preconditions.
    let (st, euid) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(dfd.as_raw_fd(), &mut st) != 0 {
            return;
        }
        (st, libc::geteuid())
    };
    if st.st_uid != euid {
        return say(format!("the directory is owned by uid {}, not by the effective user {euid}", st.st_uid));
    }
    if st.st_mode & 0o022 != 0 {
        return say(format!("the directory is writable by its group or others (mode {:o})", st.st_mode & 0o7777));
    }
    let Ok(n) = std::ffi::CString::new(name) else { return };
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: unlinkat/openat relative to our directory descriptor with a NUL-terminated name.
    let fd = unsafe {
        libc::unlinkat(dfd.as_raw_fd(), n.as_ptr(), 0);
        libc::openat(dfd.as_raw_fd(), n.as_ptr(), flags, 0o600 as libc::c_uint)
    };
    if fd < 0 {
        return say(format!("{}", std::io::Error::last_os_error()));
    }
    // SAFETY: fresh descriptor we own.
    let mut f = std::fs::File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    if let Err(e) = std::io::Write::write_all(&mut f, data) {
        say(e.to_string());
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

    /// Dumps never follow a planted symlink and never go into a directory others can write to.
    #[test]
    fn dumps_follow_no_symlink_and_need_a_private_directory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("offload-rs-dump-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("abc.lowered.ll")).unwrap();
        write_dump(&dir, "abc.lowered.ll", b"; module");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "the symlink's target was written");
        let meta = std::fs::symlink_metadata(dir.join("abc.lowered.ll")).unwrap();
        assert!(meta.file_type().is_file(), "a fresh file replaces the link");
        assert_eq!(std::fs::read(dir.join("abc.lowered.ll")).unwrap(), b"; module");
        // a world-writable directory (/tmp itself, say) is not written into
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        write_dump(&dir, "def.opt.ll", b"; module");
        assert!(!dir.join("def.opt.ll").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
