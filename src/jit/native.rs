//! Native x86-64 ELF shared objects: validated, written to a memfd and dlopen'ed from /proc/self/fd/N
//! (no file is left behind). Kernels are exported functions with the `WgFn` ABI.

use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::FromRawFd;

use object::{Object, ObjectSymbol};

use super::JitError;

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
        // SAFETY: memfd_create with a static name; the fd is owned by `file` below.
        let fd = unsafe { libc::memfd_create(c"offload-rs-image".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(JitError::Io(format!("memfd_create failed: {}", std::io::Error::last_os_error())));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.write_all(image).map_err(|e| JitError::Io(format!("writing the image to a memfd failed: {e}")))?;
        let path = CString::new(format!("/proc/self/fd/{fd}")).map_err(|e| JitError::Io(e.to_string()))?;
        // SAFETY: dlopen of a valid path; running the library's constructors is what loading means.
        let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        drop(file);
        if h.is_null() {
            // SAFETY: dlerror returns a thread-local string or NULL.
            let e = unsafe { libc::dlerror() };
            let msg = if e.is_null() {
                "unknown error".to_string()
            } else {
                // SAFETY: non-NULL NUL-terminated string from dlerror.
                unsafe { std::ffi::CStr::from_ptr(e) }.to_string_lossy().into_owned()
            };
            return Err(JitError::Link(format!("dlopen of the x86-64 shared object failed: {msg}")));
        }
        Ok(NativeLib { handle: h as usize, sizes })
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
        // SAFETY: handle from dlopen, closed once; no KernelEntry outlives us (keepalive).
        unsafe { libc::dlclose(self.handle as *mut libc::c_void) };
    }
}
