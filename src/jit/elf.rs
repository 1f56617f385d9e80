//! A small loader for the x86-64 ELF relocatable objects the JIT emits.
//!
//! Every load maps a fresh copy of all allocatable sections (so each instance has its own globals):
//! `[text][stubs] | [rodata][GOT] | [data][bss]`, page-aligned groups, mapped RW, filled, relocated, then
//! text+stubs made RX and rodata+GOT R. Undefined symbols are resolved with `dlsym(RTLD_DEFAULT)` (then
//! libm) and reached through a GOT entry and a `jmp *GOT(%rip)` stub, so PC32/PLT32 calls to far library
//! functions work.
//!
//! The input is untrusted (it may come from the disk cache): every section range, symbol value and
//! relocation offset is checked against the mapping, alignments and sizes are bounded, arithmetic never
//! overflows, and an unknown relocation type is an error.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::OnceLock;

use object::read::elf::ElfFile64;
use object::{
    Endianness, Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionIndex, SectionKind,
    SymbolIndex, SymbolKind, SymbolSection,
};

use super::JitError;

const PAGE: usize = 4096;
/// Largest mapping one object may ask for.
const MAX_MAP: usize = 1 << 30;

fn align_up(v: usize, a: usize) -> usize {
    let a = a.max(1);
    v.div_ceil(a) * a
}

/// One mapped, relocated instance of an object.
pub(crate) struct LoadedObject {
    base: *mut u8,
    len: usize,
    symbols: HashMap<String, (usize, usize, bool /*data*/)>,
    /// length of the executable part at the start of the mapping (text and stubs)
    exec_len: usize,
    /// offset of the writable part (data and bss, up to the end)
    rw_start: usize,
    /// set once the constructors ran: only then do destructors run on drop
    initialized: std::sync::atomic::AtomicBool,
    /// what calls the constructors and destructors (the memory checker), when not called directly
    runner: Option<super::StructorRunner>,
    /// the registration with GDB's JIT interface (objects with DWARF)
    gdb: Option<super::gdbjit::Registration>,
}

// SAFETY: the mapping is owned exclusively by this value; after loading it is only read (code) or
// accessed through raw addresses handed to kernels, which is the caller's synchronisation business.
unsafe impl Send for LoadedObject {}
// SAFETY: see above; `&LoadedObject` only exposes immutable lookups.
unsafe impl Sync for LoadedObject {}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Exec,
    Ro,
    Rw,
}

fn resolve_external(name: &str) -> Option<usize> {
    if name.starts_with("__ol_rs_rt_") {
        // the CPU device's runtime (devicelib.rs): never a symbol of the process
        return super::runtime_function(name);
    }
    let c = CString::new(name).ok()?;
    if name.starts_with("_ZGV") {
        // glibc's vector math (the JIT's vectorised math calls, src/jit/llvm/math.rs): from libmvec, loaded on
        // first need and kept local (its names are not added to the client's global namespace)
        static LIBMVEC: OnceLock<usize> = OnceLock::new();
        let h = *LIBMVEC.get_or_init(|| {
            // SAFETY: dlopen of glibc's vector math library by its soname.
            unsafe { libc::dlopen(c"libmvec.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) as usize }
        });
        if h != 0 {
            // SAFETY: h is a live handle from dlopen (never closed).
            let p = unsafe { libc::dlsym(h as *mut libc::c_void, c.as_ptr()) };
            if !p.is_null() {
                return Some(p as usize);
            }
        }
    }
    // SAFETY: dlsym with RTLD_DEFAULT and a valid NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) };
    if !p.is_null() {
        return Some(p as usize);
    }
    static LIBM: OnceLock<usize> = OnceLock::new();
    let h = *LIBM.get_or_init(|| {
        // SAFETY: dlopen of the system math library by its soname.
        unsafe { libc::dlopen(c"libm.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) as usize }
    });
    if h != 0 {
        // SAFETY: h is a live handle from dlopen (never closed).
        let p = unsafe { libc::dlsym(h as *mut libc::c_void, c.as_ptr()) };
        if !p.is_null() {
            return Some(p as usize);
        }
    }
    None
}

impl LoadedObject {
    /// Maps and relocates an instance of `data`, registered with GDB's JIT interface if it has DWARF.
    pub(crate) fn load(data: &[u8]) -> Result<Self, JitError> {
        Self::load_inner(data, true)
    }

    /// Whether `data` loads (a cached object's check; the instance is unmapped again and never shown to a
    /// debugger).
    pub(crate) fn loads(data: &[u8]) -> bool {
        Self::check(data).is_ok()
    }

    /// Why `data` does not load, if it does not (as [`LoadedObject::loads`]: never shown to a debugger,
    /// whose pending breakpoints a load and unload of a throwaway copy would disturb).
    pub(crate) fn check(data: &[u8]) -> Result<(), JitError> {
        Self::load_inner(data, false).map(|_| ())
    }

    fn load_inner(data: &[u8], debugger: bool) -> Result<Self, JitError> {
        let link = |m: String| JitError::Link(m);
        let file = ElfFile64::<Endianness>::parse(data).map_err(|e| link(format!("bad JIT object: {e}")))?;
        // 1. choose sections
        let mut placed: HashMap<SectionIndex, (Class, usize /*offset in class*/)> = HashMap::new();
        let mut class_size = [0usize; 3];
        let mut secs = Vec::new();
        for s in file.sections() {
            let (alloc, write, exec) = match s.flags() {
                object::SectionFlags::Elf { sh_flags } => (sh_flags & 2 != 0, sh_flags & 1 != 0, sh_flags & 4 != 0),
                _ => (false, false, false),
            };
            let name = s.name().unwrap_or("");
            if !alloc || name.starts_with(".eh_frame") || s.size() == 0 {
                continue;
            }
            if matches!(s.kind(), SectionKind::Tls | SectionKind::UninitializedTls) {
                return Err(link(format!("thread-local section '{name}' is not supported")));
            }
            let class = if exec {
                Class::Exec
            } else if write {
                Class::Rw
            } else {
                Class::Ro
            };
            let ci = class as usize;
            if s.align() > PAGE as u64 || !s.align().max(1).is_power_of_two() {
                return Err(link(format!("section '{name}' has alignment {}", s.align())));
            }
            let size = usize::try_from(s.size()).ok().filter(|&n| n <= MAX_MAP);
            let off = align_up(class_size[ci], s.align() as usize);
            class_size[ci] = size
                .and_then(|n| off.checked_add(n))
                .filter(|&e| e <= MAX_MAP)
                .ok_or_else(|| link(format!("section '{name}' is too large ({} bytes)", s.size())))?;
            placed.insert(s.index(), (class, off));
            secs.push(s);
        }
        // 2. GOT/stub needs
        let mut got_idx: HashMap<SymbolIndex, usize> = HashMap::new();
        let mut stub_idx: HashMap<SymbolIndex, usize> = HashMap::new();
        for s in &secs {
            for (_, r) in s.relocations() {
                let RelocationTarget::Symbol(si) = r.target() else {
                    continue;
                };
                let sym = file.symbol_by_index(si).map_err(|e| link(e.to_string()))?;
                let n = got_idx.len();
                if sym.is_undefined() {
                    got_idx.entry(si).or_insert(n);
                    let m = stub_idx.len();
                    stub_idx.entry(si).or_insert(m);
                } else if let RelocationFlags::Elf { r_type: 9 | 41 | 42 } = r.flags() {
                    got_idx.entry(si).or_insert(n);
                }
            }
        }
        if got_idx.len() > MAX_MAP / 16 {
            return Err(link("too many relocation targets".into()));
        }
        let stubs_off = align_up(class_size[0], 16);
        let exec_len = stubs_off + stub_idx.len() * 8;
        let got_off = align_up(class_size[1], 8);
        let ro_len = got_off + got_idx.len() * 8;
        let exec_start = 0;
        let ro_start = align_up(exec_len, PAGE);
        let rw_start = ro_start + align_up(ro_len, PAGE);
        let total = (rw_start + align_up(class_size[2], PAGE)).max(PAGE);
        // SAFETY: anonymous private mapping, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(JitError::Io(format!("mmap of {total} bytes for JIT code failed")));
        }
        let mut obj = LoadedObject {
            base: base as *mut u8,
            len: total,
            symbols: HashMap::new(),
            exec_len,
            rw_start,
            initialized: Default::default(),
            runner: None,
            gdb: None,
        };
        let class_base = [exec_start, ro_start, rw_start];
        let base_addr = obj.base as usize;
        let sec_addr = |idx: SectionIndex| -> Option<usize> {
            placed.get(&idx).map(|(c, off)| base_addr + class_base[*c as usize] + off)
        };
        let loaded_at: Vec<(usize, usize)> =
            placed.iter().map(|(i, (c, off))| (i.0, base_addr + class_base[*c as usize] + off)).collect();
        // 3. copy section contents (bss stays zero)
        for s in &secs {
            if s.kind() == SectionKind::UninitializedData {
                continue;
            }
            let bytes = s.data().map_err(|e| link(e.to_string()))?;
            let Some(dst) = sec_addr(s.index()) else {
                continue;
            };
            let n = bytes.len().min(s.size() as usize);
            // SAFETY: dst..dst+n lies inside the fresh mapping (layout computed above).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, n) };
        }
        // 4. symbols
        let mut sym_addr: HashMap<SymbolIndex, usize> = HashMap::new();
        let sec_size: HashMap<SectionIndex, u64> = secs.iter().map(|s| (s.index(), s.size())).collect();
        for sym in file.symbols() {
            let addr = match sym.section() {
                SymbolSection::Section(si) => match sec_addr(si) {
                    Some(a) => {
                        let size = sec_size.get(&si).copied().unwrap_or(0);
                        if sym.address().checked_add(sym.size()).is_none_or(|e| e > size) {
                            return Err(link(format!(
                                "symbol '{}' lies outside its section",
                                sym.name().unwrap_or("?")
                            )));
                        }
                        a + sym.address() as usize
                    }
                    None => continue,
                },
                SymbolSection::Absolute if sym.kind() == SymbolKind::File => continue,
                SymbolSection::Absolute => {
                    // a value, not an address in the mapping: usable by relocations, never as a symbol
                    sym_addr.insert(sym.index(), sym.address() as usize);
                    continue;
                }
                SymbolSection::Common => {
                    return Err(link(format!("common symbol '{}' is not supported", sym.name().unwrap_or("?"))));
                }
                _ => continue,
            };
            sym_addr.insert(sym.index(), addr);
            if let Ok(name) = sym.name()
                && !name.is_empty()
                && sym.kind() != SymbolKind::Section
            {
                let is_data = matches!(sym.kind(), SymbolKind::Data | SymbolKind::Unknown);
                let e = obj.symbols.entry(name.to_string()).or_insert((addr, sym.size() as usize, is_data));
                if sym.is_global() {
                    *e = (addr, sym.size() as usize, is_data);
                }
            }
        }
        // externals, GOT and stubs
        let got_base = base_addr + ro_start + got_off;
        let stub_base = base_addr + exec_start + stubs_off;
        for (si, gi) in &got_idx {
            let sym = file.symbol_by_index(*si).map_err(|e| link(e.to_string()))?;
            let target = if sym.is_undefined() {
                let name = sym.name().unwrap_or("");
                match resolve_external(name) {
                    Some(a) => a,
                    None if sym.is_weak() => 0,
                    None => {
                        return Err(link(format!(
                            "undefined symbol '{name}': not found in the process, libm or libmvec (device libraries such as libdevice/ocml are not linked by the CPU JIT)"
                        )));
                    }
                }
            } else {
                *sym_addr
                    .get(si)
                    .ok_or_else(|| link(format!("symbol '{}' has no address", sym.name().unwrap_or("?"))))?
            };
            sym_addr.entry(*si).or_insert(target);
            // SAFETY: inside the mapping.
            unsafe { ((got_base + gi * 8) as *mut u64).write_unaligned(target as u64) };
        }
        for (si, st) in &stub_idx {
            let stub = stub_base + st * 8;
            let got = got_base + got_idx[si] * 8;
            let disp = (got as i64 - (stub as i64 + 6)) as i32;
            let mut code = [0xffu8, 0x25, 0, 0, 0, 0, 0xcc, 0xcc];
            code[2..6].copy_from_slice(&disp.to_le_bytes());
            // SAFETY: inside the mapping.
            unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), stub as *mut u8, 8) };
        }
        // 5. relocations
        for s in &secs {
            let Some(sbase) = sec_addr(s.index()) else {
                continue;
            };
            for (off, r) in s.relocations() {
                let RelocationFlags::Elf { r_type } = r.flags() else {
                    return Err(link("non-ELF relocation".into()));
                };
                let width = match r_type {
                    1 | 24 => 8,
                    2 | 4 | 9 | 41 | 42 | 10 | 11 => 4,
                    other => return Err(link(format!("unsupported x86-64 relocation type {other}"))),
                };
                if s.kind() == SectionKind::UninitializedData || off.checked_add(width).is_none_or(|e| e > s.size()) {
                    return Err(link(format!(
                        "relocation at offset {off:#x} lies outside section '{}'",
                        s.name().unwrap_or("?")
                    )));
                }
                let p = sbase + off as usize;
                let a = r.addend();
                let (s_addr, undef, si) = match r.target() {
                    RelocationTarget::Symbol(si) => {
                        let sym = file.symbol_by_index(si).map_err(|e| link(e.to_string()))?;
                        let addr = *sym_addr.get(&si).ok_or_else(|| {
                            link(format!(
                                "relocation against symbol '{}' in a section that is not loaded",
                                sym.name().unwrap_or("?")
                            ))
                        })?;
                        (addr as i64, sym.is_undefined(), Some(si))
                    }
                    RelocationTarget::Section(sec) => (
                        sec_addr(sec).ok_or_else(|| link("relocation against an unloaded section".into()))? as i64,
                        false,
                        None,
                    ),
                    RelocationTarget::Absolute => (0, false, None),
                    _ => return Err(link("unsupported relocation target".into())),
                };
                let pi = p as i64;
                let call_target = |x: i64| -> i64 {
                    match si.and_then(|si| stub_idx.get(&si)) {
                        Some(st) if undef => (stub_base + st * 8) as i64,
                        _ => x,
                    }
                };
                let write32 = |v: i64, signed: bool| -> Result<(), JitError> {
                    let ok = if signed { i32::try_from(v).is_ok() } else { u32::try_from(v).is_ok() };
                    if !ok {
                        return Err(link(format!("relocation type {r_type} overflows 32 bits")));
                    }
                    // SAFETY: p..p+4 is inside a loaded section of the mapping.
                    unsafe { (p as *mut u32).write_unaligned(v as u32) };
                    Ok(())
                };
                match r_type {
                    1 => {
                        // R_X86_64_64
                        // SAFETY: p..p+8 inside the mapping.
                        unsafe { (p as *mut u64).write_unaligned(s_addr.wrapping_add(a) as u64) };
                    }
                    2 | 4 => write32(call_target(s_addr).wrapping_add(a).wrapping_sub(pi), true)?, // PC32, PLT32
                    9 | 41 | 42 => {
                        // GOTPCREL, GOTPCRELX, REX_GOTPCRELX
                        let gi = si.and_then(|si| got_idx.get(&si)).ok_or_else(|| link("GOT entry missing".into()))?;
                        write32(((got_base + gi * 8) as i64).wrapping_add(a).wrapping_sub(pi), true)?;
                    }
                    10 => write32(s_addr.wrapping_add(a), false)?, // 32
                    11 => write32(s_addr.wrapping_add(a), true)?,  // 32S
                    24 => {
                        // PC64
                        // SAFETY: inside the mapping.
                        unsafe { (p as *mut u64).write_unaligned(s_addr.wrapping_add(a).wrapping_sub(pi) as u64) };
                    }
                    other => return Err(link(format!("unsupported x86-64 relocation type {other}"))),
                }
            }
        }
        // 6. protections
        let prot = |start: usize, len: usize, p: i32| -> Result<(), JitError> {
            if len == 0 {
                return Ok(());
            }
            // SAFETY: page-aligned range inside our mapping.
            let rc = unsafe { libc::mprotect(obj.base.add(start) as *mut libc::c_void, align_up(len, PAGE), p) };
            if rc != 0 {
                return Err(JitError::Io("mprotect of JIT code failed".into()));
            }
            Ok(())
        };
        prot(exec_start, exec_len, libc::PROT_READ | libc::PROT_EXEC)?;
        prot(ro_start, ro_len, libc::PROT_READ)?;
        obj.symbols.shrink_to_fit();
        if debugger {
            obj.gdb = super::gdbjit::register(data, &loaded_at);
        }
        Ok(obj)
    }

    /// The whole mapping (code, constants and globals of this instance) and its writable part.
    pub(crate) fn mapping(&self) -> super::Mapping {
        let base = self.base as usize;
        super::Mapping {
            all: (base, self.len),
            writable: (base + self.rw_start, self.len - self.rw_start),
            reserved: self.data_symbol("__ol_rs_memcheck_hook").unwrap_or_default(),
        }
    }

    /// Any defined symbol: (address, size).
    pub(crate) fn symbol(&self, name: &str) -> Option<(usize, usize)> {
        self.symbols.get(name).map(|&(a, s, _)| (a, s))
    }

    /// A defined function: its address, which lies in the executable part of the mapping.
    pub(crate) fn code_symbol(&self, name: &str) -> Option<usize> {
        let &(a, _, data) = self.symbols.get(name)?;
        let start = self.base as usize;
        (!data && (start..start + self.exec_len).contains(&a)).then_some(a)
    }

    /// The defined functions with a size: (address, size, name), by address.
    pub(crate) fn functions(&self) -> Vec<(usize, usize, &str)> {
        let start = self.base as usize;
        let mut v: Vec<_> = self
            .symbols
            .iter()
            .filter(|(_, (a, s, data))| !*data && *s > 0 && (start..start + self.exec_len).contains(a))
            .map(|(n, &(a, s, _))| (a, s, n.as_str()))
            .collect();
        v.sort();
        v
    }

    /// A defined data object: (address, size).
    pub(crate) fn data_symbol(&self, name: &str) -> Option<(usize, usize)> {
        self.symbols.get(name).filter(|e| e.2).map(|&(a, s, _)| (a, s))
    }

    /// Constructors and destructors are called through `runner` from now on.
    pub(crate) fn set_structor_runner(&mut self, runner: super::StructorRunner) {
        self.runner = Some(runner);
    }

    /// Runs the image's global constructors (`__ol_rs_init`). An error (from the runner) means they
    /// did not complete: the destructors will not run.
    pub(crate) fn run_init(&self) -> Result<(), String> {
        self.initialized.store(true, std::sync::atomic::Ordering::Release);
        let r = self.call("__ol_rs_init", "constructors");
        if r.is_err() {
            self.initialized.store(false, std::sync::atomic::Ordering::Release);
        }
        r
    }

    /// Runs the image's global destructors (`__ol_rs_fini`) if the constructors ran and the
    /// destructors did not yet (otherwise they run when the object is dropped).
    pub(crate) fn run_fini(&self) -> Result<(), String> {
        if self.initialized.swap(false, std::sync::atomic::Ordering::AcqRel) {
            return self.call("__ol_rs_fini", "destructors");
        }
        Ok(())
    }

    fn call(&self, name: &str, which: &'static str) -> Result<(), String> {
        let Some(a) = self.code_symbol(name) else { return Ok(()) };
        // SAFETY: `__ol_rs_init`/`__ol_rs_fini` are generated by normalise.rs as `void(void)` C functions
        // in this mapping, which is alive for the duration of the call.
        let f: unsafe extern "C" fn() = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(a) };
        // Stoppable (src/jit/stop.rs): an endless constructor is stopped at the time limit.
        let mut call = || {
            // SAFETY: see above.
            unsafe { super::stop::run_void(f) };
        };
        match self.runner {
            Some(run) => run(which, self.mapping(), &mut call),
            None => {
                call();
                Ok(())
            }
        }
    }
}

impl Drop for LoadedObject {
    fn drop(&mut self) {
        // a destructor's error has nobody to go to here (see `run_fini`); the runner skipped the access
        let _ = self.run_fini();
        drop(self.gdb.take()); // the debugger lets go before the code goes
        // SAFETY: we own the mapping; nothing references it any more (KernelEntry keepalive ensures that).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}
