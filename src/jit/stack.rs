//! How much stack a work-group function needs, from the code generator's own numbers.
//!
//! Every JIT'd object is emitted with LLVM's `.stack_sizes` section (`EmitStackSizeSection`): for each
//! function, its address (a relocation against the function or its section) and the ULEB128 size of
//! its frame. Kernels are fully inlined into their work-group function and recursion is rejected, so a
//! work-group function's need is bounded by its own frame plus the frames of every other function in the
//! object that is not a work-group function or a constructor (the helpers it may call, each at most
//! once per call chain). Calls into the C library (libm, `memcpy`) are not in the object; the plugin
//! keeps a reserve for them (`plugin::cpu::kernel_memory::STACK_RESERVE`). LLVM writes no entry for a
//! function with variable-sized stack objects (a VLA, `alloca(n)`): such a kernel's need is unknown and
//! not checked at launch; an overflow then stops at the stack's guard page.

use std::collections::HashMap;

use object::read::elf::ElfFile64;
use object::{Endianness, Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolKind, SymbolSection};

/// Frame size of every function in `.stack_sizes`, by symbol name (empty if the section is missing or
/// malformed: the caller then knows nothing and says so).
pub(crate) fn frame_sizes(object: &[u8]) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let Ok(file) = ElfFile64::<Endianness>::parse(object) else {
        return out;
    };
    // (section, address) -> function name, for relocations against a section symbol
    let mut by_addr = HashMap::new();
    for s in file.symbols() {
        if s.kind() == SymbolKind::Text
            && let SymbolSection::Section(idx) = s.section()
            && let Ok(name) = s.name()
        {
            by_addr.insert((idx, s.address()), name.to_string());
        }
    }
    for sec in file.sections() {
        if sec.name() != Ok(".stack_sizes") {
            continue;
        }
        let Ok(data) = sec.data() else { continue };
        for (off, rel) in sec.relocations() {
            let RelocationTarget::Symbol(si) = rel.target() else { continue };
            let Ok(sym) = file.symbol_by_index(si) else { continue };
            let name = if sym.kind() == SymbolKind::Section {
                match sym.section() {
                    SymbolSection::Section(idx) => by_addr.get(&(idx, rel.addend() as u64)).cloned(),
                    _ => None,
                }
            } else {
                sym.name().ok().map(str::to_string)
            };
            let (Some(name), Some(size)) = (name, uleb128(data, off as usize + 8)) else { continue };
            out.insert(name, size);
        }
    }
    out
}

fn uleb128(data: &[u8], mut at: usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(at)?;
        at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Stack needed by the work-group function `wg_symbol`: its frame plus every frame of a function that is
/// not one of `wg_symbols` nor a constructor/destructor. `None` when the object has no frame size for it.
pub(crate) fn wg_stack_bytes(frames: &HashMap<String, u64>, wg_symbol: &str, wg_symbols: &[&str]) -> Option<u64> {
    let own = *frames.get(wg_symbol)?;
    let helpers: u64 = frames
        .iter()
        .filter(|(n, _)| {
            !wg_symbols.contains(&n.as_str()) && !n.starts_with("__ol_rs_init") && !n.starts_with("__ol_rs_fini")
        })
        .map(|(_, s)| *s)
        .sum();
    Some(own.saturating_add(helpers))
}
