//! Native x86-64 ELF shared objects: validated, written to a memfd and dlopen'ed from /proc/self/fd/N
//! (no file is left behind). Kernels are exported functions with the `WgFn` ABI.
//!
//! Each load is its own object: glibc's `dlopen` returns an already-loaded object when the name matches
//! (before it looks at the file), so the memfd stays open, at a high number, for as long as the object
//! is loaded, and a name some loaded object still has is never used (checked with `RTLD_NOLOAD`).

use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::sync::Mutex;

use object::{Object, ObjectSymbol};

use super::JitError;
use super::fd::KeptFd;

/// Checks the ELF header: 64-bit little-endian x86-64 shared object (`ET_DYN`).
pub(crate) fn check_elf(image: &[u8]) -> Result<(), String> {
    if image.len() < 64 {
        return Err(format!("a truncated ELF header ({} bytes)", image.len()));
    }
    if image[4] != 2 || image[5] != 1 {
        return Err("an ELF file that is not 64-bit little-endian".into());
    }
    let e_type = u16::from_le_bytes([image[16], image[17]]);
    let e_machine = u16::from_le_bytes([image[18], image[19]]);
    if e_machine != 62 {
        return Err(format!("an ELF file for machine {e_machine} (x86-64 is 62)"));
    }
    if e_type != 3 {
        return Err(format!("an x86-64 ELF file of type {e_type} (a shared object, ET_DYN = 3, is required)"));
    }
    object::File::parse(image).map_err(|e| format!("a malformed x86-64 ELF shared object: {e}"))?;
    Ok(())
}

pub(crate) struct NativeLib {
    handle: usize,
    sizes: HashMap<String, usize>,
    /// The memfd the object was loaded from, open for the object's life: while it is open no other
    /// memfd (ours or the client's) can be named `/proc/self/fd/<its number>`, and glibc's `dlopen`,
    /// which finds an already-loaded object by the name it was opened under, never hands this object
    /// to another load.
    memfd: Option<KeptFd>,
    path: CString,
}

/// Loads are serialised: the check that a name is free and the load under it are one step.
static LOADING: Mutex<()> = Mutex::new(());

pub(crate) fn dl_error() -> String {
    // SAFETY: dlerror returns a thread-local string or NULL.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-NULL NUL-terminated string from dlerror.
        unsafe { std::ffi::CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Whether an object opened under `path` is loaded (`RTLD_NOLOAD` finds it by name without loading).
fn name_taken(path: &CString) -> bool {
    // SAFETY: RTLD_NOLOAD never loads or runs anything; a handle it returns holds a reference we drop.
    unsafe {
        let h = libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
    }
    true
}

impl NativeLib {
    pub(crate) fn open(image: &[u8]) -> Result<Self, JitError> {
        let mut sizes = HashMap::new();
        if let Ok(f) = object::File::parse(image) {
            for s in f.dynamic_symbols() {
                if let Ok(n) = s.name() {
                    sizes.insert(n.to_string(), s.size() as usize);
                }
            }
        }
        let io = |what: &str| JitError::Io(format!("{what} failed: {}", std::io::Error::last_os_error()));
        // SAFETY: memfd_create with a static name; the fd is owned by `memfd` below.
        let fd = unsafe { libc::memfd_create(c"offload-rs-image".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io("memfd_create"));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        std::fs::File::from(memfd.try_clone().map_err(|e| JitError::Io(format!("dup of a memfd failed: {e}")))?)
            .write_all(image)
            .map_err(|e| JitError::Io(format!("writing the image to a memfd failed: {e}")))?;
        let _g = LOADING.lock();
        // A number no loaded object is known by: a name glibc already knows (an object whose
        // descriptor the client closed, or one dlclose could not unload) would give us that object.
        let mut kept = KeptFd::keep(memfd).map_err(|e| JitError::Io(format!("keeping the image's memfd: {e}")))?;
        let path = loop {
            let path =
                CString::new(format!("/proc/self/fd/{}", kept.raw())).map_err(|e| JitError::Io(e.to_string()))?;
            if !name_taken(&path) {
                break path;
            }
            let again = kept.get().ok_or_else(|| io("keeping the image's memfd"))?;
            // SAFETY: F_DUPFD_CLOEXEC on our live memfd; the new descriptor is owned below.
            let next = unsafe { libc::fcntl(again, libc::F_DUPFD_CLOEXEC, again + 1) };
            if next < 0 {
                return Err(io("moving the image's memfd to a free descriptor"));
            }
            // SAFETY: `next` is the fresh descriptor from fcntl.
            let owned = unsafe { OwnedFd::from_raw_fd(next) };
            kept = KeptFd::keep_from(owned, Some(next)).map_err(|e| JitError::Io(format!("keeping the memfd: {e}")))?;
        };
        // SAFETY: dlopen of a valid path; running the library's constructors is what loading means.
        let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err(JitError::Link(format!("dlopen of the x86-64 shared object failed: {}", dl_error())));
        }
        Ok(NativeLib { handle: h as usize, sizes, memfd: Some(kept), path })
    }

    /// The memfd's number (tests close it behind the library's back, as a client's `closefrom` would).
    #[cfg(test)]
    pub(crate) fn memfd_number(&self) -> Option<i32> {
        self.memfd.as_ref().map(KeptFd::raw)
    }

    pub(crate) fn function(&self, name: &str) -> Option<usize> {
        self.symbol(name).map(|(a, _)| a)
    }

    pub(crate) fn symbol(&self, name: &str) -> Option<(usize, usize)> {
        let c = CString::new(name).ok()?;
        // SAFETY: live handle, valid name.
        let p = unsafe { libc::dlsym(self.handle as *mut libc::c_void, c.as_ptr()) };
        if p.is_null() {
            return None;
        }
        Some((p as usize, self.sizes.get(name).copied().unwrap_or(0)))
    }
}

impl Drop for NativeLib {
    fn drop(&mut self) {
        let _g = LOADING.lock();
        // SAFETY: handle from dlopen, closed once; no KernelEntry outlives us (keepalive).
        unsafe { libc::dlclose(self.handle as *mut libc::c_void) };
        if name_taken(&self.path) {
            // Still loaded (a `STB_GNU_UNIQUE` symbol, or the client holds it): keep the memfd, and
            // with it the name, so that no later load can be handed this object.
            if let Some(m) = self.memfd.take() {
                m.leak();
            }
        }
    }
}
