//! The CPU lowering's transforms by name (src/jit/llvm/lower/README.md describes each): which run
//! (`OFFLOAD_RS_JIT_LOWERING`, for bisecting a miscompile or measuring one transform) and what each did
//! per kernel (`OFFLOAD_RS_JIT_STATS=1`, like LLVM's `-stats`). The C++ side gets the choice as a bit mask
//! (`OlRsLowerOptions::transforms`) and reports the counts per kernel (`OlRsKernelInfo::stats`).
//!
//! `OFFLOAD_RS_JIT_LOWERING` is a comma list: `ol-x,ol-y` runs only those; `-ol-x,-ol-y` runs all but those;
//! `none` runs none of them (the lowering's required steps always run); empty or unset runs all. The
//! workarounds of LLVM bugs ([`WORKAROUNDS`]) run unless named with a `-`: without them LLVM miscompiles.
//! An unknown name fails the compile with the list of names. The same list switches the JIT's passes in
//! LLVM's optimisation pipeline that are optimisations of kernels ([`PIPELINE_NAMES`]; they run after the
//! loop vectoriser and `OFFLOAD_RS_JIT_STATS` does not count them).

use std::cell::RefCell;
use std::ffi::c_char;
use std::fmt;

use super::abi::OlRsLowerOptions;

/// The transforms, in the order of `enum Transform` in src/jit/llvm/lower/lowering.h (bit i, count i).
pub(crate) const NAMES: [&str; 38] = [
    "ol-uniform-barriers",
    "ol-once-regions",
    "ol-implicit-loop-barriers",
    "ol-rematerialise",
    "ol-share-header-slot",
    "ol-scope-slots",
    "ol-hoist-slot-stores",
    "ol-narrow-guards",
    "ol-run-guards",
    "ol-short-runs",
    "ol-equality-split",
    "ol-speculate-shared-stores",
    "ol-flatten-decision",
    "ol-unswitch-region-exit",
    "ol-plain-shared-atomics",
    "ol-runtime-divisors",
    "ol-block-stride-loops",
    "ol-warp-lanes",
    "ol-lockstep-loops",
    "ol-promote-slots",
    "ol-reload-slots",
    "ol-lane-offset-reads",
    "ol-reroll-loops",
    "ol-range-split",
    "ol-unswitch-warp-branches",
    "ol-alternate-exchanges",
    "ol-group-loops",
    "ol-warp-uniform-loops",
    "ol-unroll-barrier-loops",
    "ol-unroll-lane-vectors",
    "ol-early-exits",
    "ol-match-loops",
    "ol-chain-warp-regions",
    "ol-warp-local-slots",
    "ol-full-groups",
    "ol-warp-local-exchanges",
    "ol-unroll-private-loops",
    "ol-keep-short-rows",
];

/// The JIT's own passes in LLVM's optimisation pipeline that [`parse`] switches too (bit
/// [`PIPELINE_BIT`] + i; the lowering ignores those bits, src/jit/llvm/compile.rs hooks the passes in).
pub(crate) const PIPELINE_NAMES: [&str; 4] =
    ["ol-prefetch-streams", "ol-prefetch-next-group", "ol-nested-selects", "ol-group-order"];

/// The bit of `PIPELINE_NAMES[0]`.
const PIPELINE_BIT: usize = 48;

/// Every transform on.
pub(crate) const ALL: u64 = ((1 << NAMES.len()) - 1) | (((1 << PIPELINE_NAMES.len()) - 1) << PIPELINE_BIT);

/// The transforms that work around LLVM bugs (`ol-runtime-divisors`): on unless switched off by name.
pub(crate) const WORKAROUNDS: u64 = 1 << 15;

/// The transforms a quick specialisation (the first launch's version while the full one compiles) leaves
/// out: `ol-unroll-barrier-loops` (its copies' constant-bound regions cost the compile more than they save
/// in one launch: scan's quick version 16 -> 37 ms with it, its first launch 56 -> 102 ms; the full one, which
/// runs behind the first launches, 48 -> 66-87 ms) and `ol-full-groups` (a second copy of the body to
/// lower and compile).
pub(crate) fn quick_skips(quick: bool) -> u64 {
    if quick { bit("ol-unroll-barrier-loops").unwrap_or(0) | bit("ol-full-groups").unwrap_or(0) } else { 0 }
}

/// The index (bit, count) of the lowering transform called `name`.
fn index(name: &str) -> Option<usize> {
    NAMES.iter().position(|n| *n == name)
}

/// The bit of the lowering transform or pipeline pass called `name`.
pub(crate) fn bit(name: &str) -> Option<u64> {
    index(name).or_else(|| PIPELINE_NAMES.iter().position(|n| *n == name).map(|i| PIPELINE_BIT + i)).map(|i| 1 << i)
}

/// The transforms `spec` (`OFFLOAD_RS_JIT_LOWERING`'s syntax, see the module docs) runs, as a bit mask.
pub(crate) fn parse(spec: &str) -> Result<u64, String> {
    let items: Vec<&str> = spec.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items == ["none"] {
        return Ok(WORKAROUNDS);
    }
    let known = |n: &str| {
        bit(n).ok_or_else(|| {
            format!(
                "OFFLOAD_RS_JIT_LOWERING: unknown transform '{n}' (the transforms: none, {}, {})",
                NAMES.join(", "),
                PIPELINE_NAMES.join(", ")
            )
        })
    };
    let (removed, chosen): (Vec<&str>, Vec<&str>) = items.iter().partition(|s| s.starts_with('-'));
    let mut mask = if chosen.is_empty() { ALL } else { WORKAROUNDS };
    for n in chosen {
        mask |= known(n)?;
    }
    for n in removed {
        mask &= !known(&n[1..])?;
    }
    Ok(mask)
}

/// What each transform did in one kernel (loops narrowed, values recomputed, stores made selects, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stats(pub [u32; NAMES.len()]);

impl Default for Stats {
    fn default() -> Self {
        Stats([0; NAMES.len()])
    }
}

impl Stats {
    /// The count of the transform called `name` (0 for an unknown name).
    #[cfg(test)]
    pub(crate) fn of(&self, name: &str) -> u32 {
        index(name).map_or(0, |i| self.0[i])
    }
}

impl fmt::Display for Stats {
    /// `ol-narrow-guards 2, ol-scope-slots 5` (the transforms that did something), or `nothing`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut any = false;
        for (n, c) in NAMES.iter().zip(self.0).filter(|(_, c)| *c > 0) {
            write!(f, "{}{n} {c}", if any { ", " } else { "" })?;
            any = true;
        }
        if !any {
            f.write_str("nothing")?;
        }
        Ok(())
    }
}

/// `OFFLOAD_RS_JIT_STATS=1`: whether compiles print what the lowering's transforms did.
pub(crate) fn printing() -> bool {
    std::env::var_os("OFFLOAD_RS_JIT_STATS").is_some_and(|v| v != "0")
}

thread_local! {
    /// What [`recorded`] collects on this thread.
    static RECORD: RefCell<Option<Vec<(String, Stats)>>> = const { RefCell::new(None) };
    /// Which compile this thread's lowering is for (see [`report`]), set by [`for_compile`].
    static COMPILE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f` (a compile's lowering) with its reports saying which version of the kernel it is for:
/// `spec` a launch-time specialisation (its shape, and whether it is the quick version), else the
/// program's generic code.
pub(crate) fn for_compile<R>(spec: Option<&crate::jit::compile::Spec>, f: impl FnOnce() -> R) -> R {
    let what =
        spec.map_or(String::new(), |s| format!(" at {}{}", s.shape(), if s.quick { ", quick version" } else { "" }));
    COMPILE.with(|c| *c.borrow_mut() = what);
    let r = f();
    COMPILE.with(|c| c.borrow_mut().clear());
    r
}

/// One kernel's counts, after its lowering: printed (`OFFLOAD_RS_JIT_STATS`) as
/// `offload-rs jit: lowering <kernel>[ at <shape>[, quick version]]: <stats>`, and kept for [`recorded`].
pub(crate) fn report(kernel: &str, stats: Stats) {
    if printing() {
        let what = COMPILE.with(|c| c.borrow().clone());
        crate::jit::compile::time_line(&format!("lowering {kernel}{what}: {stats}"));
    }
    RECORD.with(|r| {
        if let Some(v) = r.borrow_mut().as_mut() {
            v.push((kernel.to_string(), stats));
        }
    });
}

/// Runs `f` and returns what it returned with the counts of every kernel lowered on this thread meanwhile
/// (the tests' view of `OFFLOAD_RS_JIT_STATS`).
#[cfg(test)]
pub(crate) fn recorded<R>(f: impl FnOnce() -> R) -> (R, Vec<(String, Stats)>) {
    RECORD.with(|r| *r.borrow_mut() = Some(Vec::new()));
    let out = f();
    (out, RECORD.with(|r| r.borrow_mut().take().unwrap_or_default()))
}

/// Writes `text` NUL-terminated into `buf[..cap]`, cut at `cap - 1` bytes.
///
/// # Safety
/// `buf` is valid for `cap` bytes of writes (nothing is written when `cap` is 0).
unsafe fn write_c(text: &str, buf: *mut c_char, cap: usize) {
    if buf.is_null() || cap == 0 {
        return;
    }
    let n = text.len().min(cap - 1);
    // SAFETY: `n + 1 <= cap` bytes of `buf`, per the contract; `text` does not overlap it.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
}

/// For the `ol-lower` pass of the pass plugin (src/jit/llvm/lower/pass.cpp, `opt -passes=ol-lower<...>`):
/// fills in `*out`'s intrinsic table and transform mask for transforms `spec` (`len` bytes of
/// `OFFLOAD_RS_JIT_LOWERING`'s syntax); the caller sets the kernel, group size and warp width. Returns
/// true, or false with the error in `err[..cap]` (NUL-terminated, cut to fit).
///
/// # Safety
/// `spec` is valid for `len` bytes, `out` for a write of the options, `err` for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ol_rs_lowering_options(
    spec: *const u8,
    len: usize,
    out: *mut OlRsLowerOptions,
    err: *mut c_char,
    cap: usize,
) -> bool {
    // SAFETY: `len` bytes at `spec`, per the contract.
    let bytes = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(spec, len) } };
    let mask = std::str::from_utf8(bytes).map_err(|_| "the transforms are not UTF-8".to_string()).and_then(parse);
    match mask {
        Ok(transforms) => {
            // SAFETY: `out` is valid for writes, per the contract; only these two fields are set.
            unsafe {
                (*out).classify_intrinsic = super::intrinsics::classify_intrinsic;
                (*out).transforms = transforms;
            }
            true
        }
        Err(e) => {
            // SAFETY: `err` is valid for `cap` bytes, per the contract.
            unsafe { write_c(&e, err, cap) };
            false
        }
    }
}

/// For the `ol-lower` pass: one kernel's counts (`n` of them, in [`NAMES`] order) as
/// `OFFLOAD_RS_JIT_STATS` prints them (`ol-narrow-guards 2, ...` or `nothing`), into `buf[..cap]`
/// (NUL-terminated, cut to fit).
///
/// # Safety
/// `counts` is valid for `n` reads, `buf` for `cap` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ol_rs_lowering_stats_text(counts: *const u32, n: usize, buf: *mut c_char, cap: usize) {
    let mut stats = Stats::default();
    if !counts.is_null() {
        // SAFETY: `n` counts at `counts`, per the contract.
        let counts = unsafe { std::slice::from_raw_parts(counts, n) };
        for (s, c) in stats.0.iter_mut().zip(counts) {
            *s = *c;
        }
    }
    // SAFETY: `buf` is valid for `cap` bytes, per the contract.
    unsafe { write_c(&stats.to_string(), buf, cap) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_specs() {
        assert_eq!(parse(""), Ok(ALL));
        assert_eq!(parse("none"), Ok(WORKAROUNDS));
        assert_eq!(bit("ol-runtime-divisors"), Some(WORKAROUNDS));
        let two = bit("ol-run-guards").unwrap() | bit("ol-short-runs").unwrap();
        assert_eq!(parse("ol-run-guards, ol-short-runs"), Ok(two | WORKAROUNDS));
        assert_eq!(parse("-ol-run-guards"), Ok(ALL & !bit("ol-run-guards").unwrap()));
        assert_eq!(parse("ol-run-guards,-ol-run-guards"), Ok(WORKAROUNDS));
        assert_eq!(parse("ol-run-guards,-ol-runtime-divisors"), Ok(bit("ol-run-guards").unwrap()));
        let e = parse("ol-run-guard").unwrap_err();
        assert!(e.contains("unknown transform 'ol-run-guard'") && e.contains("ol-run-guards"), "{e}");
        assert!(parse("-nonsense").is_err());
        assert_eq!(bit(NAMES[15]), Some(1 << 15));
        let prefetch = bit("ol-prefetch-streams").unwrap();
        assert_eq!(prefetch, 1 << 48);
        assert_eq!(parse("-ol-prefetch-streams"), Ok(ALL & !prefetch));
        assert_eq!(parse("ol-prefetch-streams"), Ok(prefetch | WORKAROUNDS));
        assert_eq!(parse("none").unwrap() & prefetch, 0);
        assert!(parse("ol-run-guard").unwrap_err().contains("ol-prefetch-streams"));
    }

    #[test]
    fn stats_print_what_fired() {
        let mut s = Stats::default();
        assert_eq!(s.to_string(), "nothing");
        s.0[7] = 2;
        s.0[5] = 1;
        assert_eq!(s.to_string(), "ol-scope-slots 1, ol-narrow-guards 2");
        assert_eq!(s.of("ol-narrow-guards"), 2);
    }
}
