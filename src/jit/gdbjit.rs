//! GDB's JIT interface (`__jit_debug_register_code`, `__jit_debug_descriptor`): every JIT'd object with
//! DWARF (bitcode built with `-g`) is registered while it is loaded, so gdb (and lldb) know its functions,
//! line table and variables: `break <kernel>` works, pending until the program is loaded. The in-memory
//! object handed over is the compiled ELF relocatable object with each allocated section's `sh_addr` set to
//! where the loader put it (what LLVM's own JIT does); the debugger applies the debug sections'
//! relocations. It is unregistered when the object is unloaded (`olDestroyProgram`).
//!
//! The descriptor and the breakpoint function: the library, which has no LLVM in it, defines them itself
//! (`#[no_mangle]`, found by the debugger in its symbol table, as every JIT that is not LLVM's does);
//! built with the `llvm` feature (the Rust tests), libLLVM's, which it links. Entries are linked and
//! unlinked under one lock here.

use crate::sync::Mutex;

#[repr(C)]
struct CodeEntry {
    next: *mut CodeEntry,
    prev: *mut CodeEntry,
    symfile_addr: *const u8,
    symfile_size: u64,
}

#[repr(C)]
struct Descriptor {
    version: u32,
    action_flag: u32,
    relevant_entry: *mut CodeEntry,
    first_entry: *mut CodeEntry,
}

const JIT_REGISTER_FN: u32 = 1;
const JIT_UNREGISTER_FN: u32 = 2;

#[cfg(feature = "llvm")]
unsafe extern "C" {
    static mut __jit_debug_descriptor: Descriptor;
    fn __jit_debug_register_code();
}

/// GDB's JIT descriptor (version 1, nothing registered), which the debugger reads.
#[cfg(not(feature = "llvm"))]
#[unsafe(no_mangle)]
static mut __jit_debug_descriptor: Descriptor =
    Descriptor { version: 1, action_flag: 0, relevant_entry: std::ptr::null_mut(), first_entry: std::ptr::null_mut() };

/// Where the debugger puts its breakpoint: called after each change of the descriptor. Never inlined,
/// never empty to the optimiser.
#[cfg(not(feature = "llvm"))]
#[unsafe(no_mangle)]
#[inline(never)]
extern "C" fn __jit_debug_register_code() {
    // SAFETY: an empty asm statement: a call the compiler cannot drop or fold.
    unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
}

static LOCK: Mutex<()> = Mutex::new(());

/// One registered object; unregistered when dropped.
pub(crate) struct Registration {
    entry: Box<CodeEntry>,
    _image: Vec<u8>,
}

// SAFETY: the entry and image are owned; the descriptor list is only changed under LOCK.
unsafe impl Send for Registration {}
// SAFETY: see above; `&Registration` exposes nothing.
unsafe impl Sync for Registration {}

/// The object `data` with section `i`'s `sh_addr` set to `addr` for each `(i, addr)` of `sections`; None
/// if its section headers are not where its header says.
fn relocated_image(data: &[u8], sections: &[(usize, usize)]) -> Option<Vec<u8>> {
    let mut v = data.to_vec();
    let rd = |v: &[u8], at: usize, n: usize| -> Option<u64> {
        let b = v.get(at..at + n)?;
        Some(b.iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64))
    };
    let shoff = rd(&v, 0x28, 8)? as usize;
    let shentsize = rd(&v, 0x3a, 2)? as usize;
    let shnum = rd(&v, 0x3c, 2)? as usize;
    if shentsize < 0x18 {
        return None;
    }
    for &(i, addr) in sections {
        if i >= shnum {
            return None;
        }
        let at = shoff.checked_add(i.checked_mul(shentsize)?)?.checked_add(0x10)?;
        v.get_mut(at..at + 8)?.copy_from_slice(&(addr as u64).to_le_bytes());
    }
    Some(v)
}

/// Registers the object `data` (loaded with its sections at `sections`) if it has DWARF.
pub(crate) fn register(data: &[u8], sections: &[(usize, usize)]) -> Option<Registration> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(data).ok()?;
    file.section_by_name(".debug_info").filter(|s| s.size() > 0)?;
    let image = relocated_image(data, sections)?;
    let mut entry = Box::new(CodeEntry {
        next: std::ptr::null_mut(),
        prev: std::ptr::null_mut(),
        symfile_addr: image.as_ptr(),
        symfile_size: image.len() as u64,
    });
    let _g = LOCK.lock();
    // SAFETY: libLLVM's descriptor, changed only under LOCK here; `entry` is boxed (its address stays)
    // and lives until `Drop` unlinks it.
    unsafe {
        let d = &raw mut __jit_debug_descriptor;
        let e: *mut CodeEntry = &mut *entry;
        (*e).next = (*d).first_entry;
        if !(*d).first_entry.is_null() {
            (*(*d).first_entry).prev = e;
        }
        (*d).first_entry = e;
        (*d).relevant_entry = e;
        (*d).action_flag = JIT_REGISTER_FN;
        __jit_debug_register_code();
    }
    Some(Registration { entry, _image: image })
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _g = LOCK.lock();
        // SAFETY: as in `register`: the entry is linked in the descriptor's list, unlinked here once.
        unsafe {
            let d = &raw mut __jit_debug_descriptor;
            let e: *mut CodeEntry = &mut *self.entry;
            if !(*e).prev.is_null() {
                (*(*e).prev).next = (*e).next;
            } else {
                (*d).first_entry = (*e).next;
            }
            if !(*e).next.is_null() {
                (*(*e).next).prev = (*e).prev;
            }
            (*d).relevant_entry = e;
            (*d).action_flag = JIT_UNREGISTER_FN;
            __jit_debug_register_code();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::relocated_image;

    /// A minimal ELF64 header with `n` section headers of 64 bytes at offset 64.
    fn elf(n: u16) -> Vec<u8> {
        let mut v = vec![0u8; 64 + 64 * n as usize];
        v[..4].copy_from_slice(b"\x7fELF");
        v[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
        v[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        v[0x3c..0x3e].copy_from_slice(&n.to_le_bytes());
        v
    }

    #[test]
    fn section_addresses_are_patched_and_bad_headers_refused() {
        let img = relocated_image(&elf(3), &[(2, 0x7f00_1234_5000)]).unwrap();
        let at = 64 + 2 * 64 + 0x10;
        assert_eq!(u64::from_le_bytes(img[at..at + 8].try_into().unwrap()), 0x7f00_1234_5000);
        assert!(img[64 + 0x10..64 + 0x18].iter().all(|&b| b == 0));
        // a section index past the table, a truncated table, a header too short
        assert!(relocated_image(&elf(3), &[(3, 1)]).is_none());
        assert!(relocated_image(&elf(3)[..100], &[(2, 1)]).is_none());
        assert!(relocated_image(&[0u8; 16], &[]).is_none());
    }
}
