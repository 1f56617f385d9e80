//! Files of ours that live beside the library: the compile helper (helper.rs) and the in-process LLVM
//! module (module.rs), found from where our code was loaded.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A file of ours that lives beside the library: the one `env` names, else the first of `names` (paths
/// relative to the library's directory) that `usable` accepts, beside the library's real file first (a
/// library reached through a symlink: Spack and Nix views, modules, /usr/lib links), then beside the
/// name it was loaded by.
pub(crate) fn beside_library(env: &str, names: &[&str], usable: fn(&Path) -> bool) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let me = own_file().ok_or("cannot tell where the library was loaded from")?;
    let real = std::fs::canonicalize(&me).ok();
    let dirs: Vec<&Path> =
        real.iter().chain(std::iter::once(&me)).map(|p| p.parent().unwrap_or(Path::new("/"))).collect();
    let found = dirs.iter().flat_map(|dir| names.iter().map(|n| dir.join(n))).find(|c| usable(c));
    found.ok_or_else(|| {
        format!("no {} beside {} (installed by `make install`)", names[0], real.as_ref().unwrap_or(&me).display())
    })
}

pub(crate) fn is_executable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() on a NUL-terminated path.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// The file our code was loaded from: the library (or the executable it is linked into).
pub(crate) fn own_file() -> Option<PathBuf> {
    let addr = own_file as *const () as usize;
    // SAFETY: dladdr fills `info` for an address inside a loaded object; the strings it points to live
    // as long as the object stays loaded (we are inside it).
    let from_dladdr = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            Some(PathBuf::from(OsStr::from_bytes(CStr::from_ptr(info.dli_fname).to_bytes())))
        } else {
            None
        }
    };
    if let Some(p) = &from_dladdr
        && p.is_absolute()
    {
        return from_dladdr;
    }
    // A relative name (LD_LIBRARY_PATH=build/lib) is relative to the directory at load time: ask the
    // kernel which file maps our code.
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let range = f.next()?;
        let (lo, hi) = range.split_once('-')?;
        let (lo, hi) = (usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?);
        if (lo..hi).contains(&addr) {
            let path = f.nth(4)?;
            return Some(PathBuf::from(path));
        }
    }
    from_dladdr
}
