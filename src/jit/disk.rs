//! The on-disk JIT cache: compiled objects kept across processes, returning the right program or nothing.
//!
//! * **Where**: `$XDG_CACHE_HOME/offload-rs`, else `~/.cache/offload-rs` (on by default, as PoCL's and
//!   CUDA's caches are); `OFFLOAD_RS_JIT_CACHE_DIR=<dir>` moves it, `OFFLOAD_RS_JIT_CACHE_DIR=off`
//!   disables it. Created with mode 0700. A directory not owned by the effective user, or writable by its
//!   group or others, is not used (as ssh treats `~/.ssh`); `OFFLOAD_RS_DEBUG` says why.
//! * **Size**: at most `OFFLOAD_RS_JIT_CACHE_SIZE` bytes (default 256 MiB; `K`/`M`/`G` suffixes); after
//!   each write the least recently used entries (oldest modification time, refreshed on every hit) are
//!   removed until the total fits.
//! * **Entries**: one file per key, named by its hex: `magic | format version | key (32 bytes) | build id
//!   (64 hex) | payload length | blake3(payload) | payload`. The key stored in the file is compared with
//!   the one asked for, and the build id with ours: an entry copied to another key's name, from another
//!   build, truncated or corrupt is ignored (and replaced by the next write).
//! * **Untrusted files**: everything is opened relative to the directory's descriptor; reads use
//!   `O_NOFOLLOW|O_NONBLOCK`, accept only regular files owned by the effective user and at most the size
//!   cap, and read a bounded size; writes go to a fresh `O_CREAT|O_EXCL|O_NOFOLLOW` temp file with a
//!   random name, renamed into place (concurrent writers of one key are fine: the last rename wins, both
//!   files are whole). What is read is then loaded by the checking ELF loader (elf.rs).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

const MAGIC: &[u8; 8] = b"OLRSJIT\0";
const VERSION: u32 = 2;
const HEADER: usize = 8 + 4 + 32 + 64 + 8 + 32;
const DEFAULT_SIZE: u64 = 256 << 20;

/// Tests point the disk layer at a private directory without touching the process environment; the
/// Rust unit tests never use the default directory.
#[cfg(test)]
pub(crate) static DIR_OVERRIDE: crate::sync::Mutex<Option<std::path::PathBuf>> = crate::sync::Mutex::new(None);

/// The LLVM that compiles, as the library knows it without loading it (part of every key): the version
/// the JIT was built against and the identity (device, inode, size, modification time) of the libLLVM
/// file the compile helper and the in-process module load, so an upgraded LLVM underneath the same build
/// is a miss, not an answer from the old one.
pub(crate) fn llvm_version() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| {
        let path = env!("OFFLOAD_RS_LIBLLVM");
        let id = std::fs::metadata(path).map_or_else(
            |_| "absent".to_string(),
            |m| {
                use std::os::unix::fs::MetadataExt;
                format!("{}:{}:{}:{}.{}", m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec())
            },
        );
        format!("{} {path} {id}", env!("OFFLOAD_RS_LLVM_BUILD_VERSION"))
    })
}

/// `OFFLOAD_RS_JIT_CACHE_SIZE`: bytes, with an optional K/M/G (KiB/MiB/GiB) suffix.
fn size_cap() -> u64 {
    let Some(v) = std::env::var("OFFLOAD_RS_JIT_CACHE_SIZE").ok() else {
        return DEFAULT_SIZE;
    };
    let t = v.trim().trim_end_matches("iB").trim_end_matches('B');
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok().and_then(|n| n.checked_mul(mul)).unwrap_or_else(|| {
        super::debug(&format!("OFFLOAD_RS_JIT_CACHE_SIZE={v} is not a size; using 256M"));
        DEFAULT_SIZE
    })
}

/// The default cache directory: `$XDG_CACHE_HOME/offload-rs` when that is absolute, else
/// `$HOME/.cache/offload-rs` when `HOME` is absolute; an empty or relative `HOME` (a daemon's, a
/// sandbox's) means no disk cache, never one under the current directory.
fn default_dir(xdg: Option<std::ffi::OsString>, home: Option<std::ffi::OsString>) -> Option<std::path::PathBuf> {
    let abs = |v: Option<std::ffi::OsString>| v.map(std::path::PathBuf::from).filter(|p| p.is_absolute());
    match abs(xdg) {
        Some(x) => Some(x.join("offload-rs")),
        None => Some(abs(home)?.join(".cache/offload-rs")),
    }
}

/// An open, checked cache directory.
pub(crate) struct Dir {
    fd: OwnedFd,
    cap: u64,
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

fn fstat(fd: i32) -> Option<libc::stat> {
    // SAFETY: fstat into a zeroed struct on a descriptor we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some(st)
    }
}

fn hex(key: &[u8; 32]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

impl Dir {
    /// The cache directory, created if needed and checked; None when disabled or unusable.
    pub(crate) fn open() -> Option<Dir> {
        #[cfg(test)]
        let path = DIR_OVERRIDE.lock().clone()?;
        #[cfg(not(test))]
        let path = {
            let v = std::env::var_os("OFFLOAD_RS_JIT_CACHE_DIR").filter(|v| !v.is_empty());
            match v {
                Some(v) if v == "off" => return None,
                Some(v) => std::path::PathBuf::from(v),
                None => default_dir(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))?,
            }
        };
        let refuse = |why: String| {
            super::debug(&format!("JIT disk cache {} not used: {why}", path.display()));
            None
        };
        if !path.exists() {
            use std::os::unix::fs::DirBuilderExt;
            if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&path) {
                return refuse(format!("cannot create it ({e})"));
            }
        }
        let c = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())).ok()?;
        // SAFETY: open() of a NUL-terminated path; the descriptor is owned below.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            return refuse(format!("cannot open it ({})", std::io::Error::last_os_error()));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = fstat(fd.as_raw_fd())?;
        if st.st_uid != euid() {
            return refuse(format!("owned by uid {}, not by the effective user {}", st.st_uid, euid()));
        }
        if st.st_mode & 0o022 != 0 {
            return refuse(format!("writable by its group or others (mode {:o})", st.st_mode & 0o7777));
        }
        Some(Dir { fd, cap: size_cap() })
    }

    /// The payload stored for `key`, if a valid entry is there.
    pub(crate) fn read(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        let name = cstr(&hex(key));
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
        // SAFETY: openat relative to our directory descriptor with a NUL-terminated name.
        let fd = unsafe { libc::openat(self.fd.as_raw_fd(), name.as_ptr(), flags) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = fstat(fd.as_raw_fd())?;
        let why = if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            Some("not a regular file".to_string())
        } else if st.st_uid != euid() {
            Some(format!("owned by uid {}", st.st_uid))
        } else if st.st_size as u64 > self.cap || (st.st_size as usize) < HEADER {
            Some(format!("size {} outside [{HEADER}, {}]", st.st_size, self.cap))
        } else {
            None
        };
        if let Some(why) = why {
            super::debug(&format!("JIT disk cache entry {} ignored: {why}", hex(key)));
            return None;
        }
        // (an entry without memory to read it into is a miss, not Rust's allocation-failure abort)
        let mut data = Vec::new();
        if data.try_reserve_exact(st.st_size as usize).is_err() {
            return None;
        }
        data.resize(st.st_size as usize, 0);
        let mut off = 0;
        while off < data.len() {
            // SAFETY: reading into the live buffer's remaining part.
            let n =
                unsafe { libc::read(fd.as_raw_fd(), data[off..].as_mut_ptr() as *mut libc::c_void, data.len() - off) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 {
                return None;
            }
            off += n as usize;
        }
        let payload = match decode_entry(&data, key) {
            Ok(p) => p,
            Err(why) => {
                super::debug(&format!("JIT disk cache entry {} ignored: {why}", hex(key)));
                return None;
            }
        };
        // a hit refreshes the entry's time for the LRU eviction
        // SAFETY: futimens with NULL times (now) on our descriptor.
        unsafe { libc::futimens(fd.as_raw_fd(), std::ptr::null()) };
        Some(payload.to_vec())
    }

    /// Stores `payload` for `key` (best effort: a failure only means no entry).
    pub(crate) fn write(&self, key: &[u8; 32], payload: &[u8]) {
        let data = encode_entry(key, payload);
        if data.len() as u64 > self.cap {
            return;
        }
        if !super::fd::fits_fsize(data.len()) {
            super::debug(&format!("JIT disk cache entry {} not written: larger than RLIMIT_FSIZE", hex(key)));
            return;
        }
        let mut rnd = [0u8; 16];
        // SAFETY: getrandom into a live buffer.
        let got = unsafe { libc::getrandom(rnd.as_mut_ptr() as *mut libc::c_void, rnd.len(), 0) };
        if got != rnd.len() as isize {
            return;
        }
        let tmp = cstr(&format!(".tmp-{}", rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()));
        let dfd = self.fd.as_raw_fd();
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: openat relative to our directory descriptor with a NUL-terminated name.
        let fd = unsafe { libc::openat(dfd, tmp.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            return;
        }
        // SAFETY: fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut off = 0;
        let mut ok = true;
        while off < data.len() {
            // SAFETY: writing from the live buffer's remaining part.
            let n =
                unsafe { libc::write(fd.as_raw_fd(), data[off..].as_ptr() as *const libc::c_void, data.len() - off) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 {
                ok = false;
                break;
            }
            off += n as usize;
        }
        drop(fd);
        let name = cstr(&hex(key));
        // SAFETY: renameat/unlinkat relative to our directory descriptor with NUL-terminated names.
        unsafe {
            if !ok || libc::renameat(dfd, tmp.as_ptr(), dfd, name.as_ptr()) != 0 {
                libc::unlinkat(dfd, tmp.as_ptr(), 0);
                return;
            }
        }
        self.evict();
    }

    /// Removes the least recently used entries (and abandoned temp files) until the total fits the cap.
    fn evict(&self) {
        // SAFETY: a new descriptor for the same directory, owned by the DIR stream (closedir closes it).
        let dup = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return;
        }
        // SAFETY: fdopendir takes ownership of `dup` on success.
        let dir = unsafe { libc::fdopendir(dup) };
        if dir.is_null() {
            // SAFETY: still ours on failure.
            unsafe { libc::close(dup) };
            return;
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let mut entries: Vec<(i64, u64, CString)> = Vec::new();
        let mut total = 0u64;
        let mut stale_tmp: Vec<CString> = Vec::new();
        loop {
            // SAFETY: readdir on the live stream; the entry is valid until the next call.
            let e = unsafe { libc::readdir(dir) };
            if e.is_null() {
                break;
            }
            // SAFETY: d_name is NUL-terminated within the entry.
            let name = unsafe { std::ffi::CStr::from_ptr((*e).d_name.as_ptr()) }.to_owned();
            let b = name.as_bytes();
            let ours = b.len() == 64 && b.iter().all(u8::is_ascii_hexdigit);
            let tmp = b.starts_with(b".tmp-");
            if !ours && !tmp {
                continue;
            }
            // SAFETY: fstatat without following links, relative to our directory.
            let st = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                (libc::fstatat(self.fd.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0)
                    .then_some(st)
            };
            let Some(st) = st else { continue };
            if st.st_uid != euid() || st.st_mode & libc::S_IFMT != libc::S_IFREG {
                continue;
            }
            if tmp {
                // a writer that died between create and rename, an hour ago or more
                if now - st.st_mtime > 3600 {
                    stale_tmp.push(name);
                }
                continue;
            }
            total += st.st_size as u64;
            entries.push((st.st_mtime, st.st_size as u64, name));
        }
        // SAFETY: closing the stream (and `dup`) once.
        unsafe { libc::closedir(dir) };
        entries.sort();
        let mut victims = stale_tmp;
        for (_, size, name) in entries {
            if total <= self.cap {
                break;
            }
            total -= size;
            victims.push(name);
        }
        for v in victims {
            // SAFETY: unlinkat relative to our directory.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), v.as_ptr(), 0) };
        }
    }
}

pub(crate) fn encode_entry(key: &[u8; 32], payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + payload.len());
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&VERSION.to_le_bytes());
    v.extend_from_slice(key);
    v.extend_from_slice(super::BUILD_ID.as_bytes());
    v.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    v.extend_from_slice(blake3::hash(payload).as_bytes());
    v.extend_from_slice(payload);
    v
}

/// The payload of a whole entry for `key`, or why the entry is not one.
pub(crate) fn decode_entry<'a>(data: &'a [u8], key: &[u8; 32]) -> Result<&'a [u8], &'static str> {
    if data.len() < HEADER || &data[..8] != MAGIC {
        return Err("not a cache entry");
    }
    if data[8..12] != VERSION.to_le_bytes() {
        return Err("another entry format");
    }
    if &data[12..44] != key {
        return Err("stored for another key");
    }
    if &data[44..108] != super::BUILD_ID.as_bytes() {
        return Err("written by another build");
    }
    let len = u64::from_le_bytes(data[108..116].try_into().map_err(|_| "truncated")?);
    let payload = &data[HEADER..];
    if payload.len() as u64 != len {
        return Err("truncated or extended");
    }
    if blake3::hash(payload).as_bytes() != &data[116..148] {
        return Err("corrupt (checksum)");
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_relative_home_means_no_cache() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(default_dir(None, os("/home/u")), Some("/home/u/.cache/offload-rs".into()));
        assert_eq!(default_dir(os("/x/cache"), os("/home/u")), Some("/x/cache/offload-rs".into()));
        assert_eq!(default_dir(os("rel"), os("/home/u")), Some("/home/u/.cache/offload-rs".into()));
        assert_eq!(default_dir(None, os("")), None);
        assert_eq!(default_dir(None, os("relative/home")), None);
        assert_eq!(default_dir(os(""), None), None);
    }
}
