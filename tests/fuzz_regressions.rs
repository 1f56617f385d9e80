//! Replays every saved fuzz input in `fuzz/regressions/<target>/` through the fuzz targets' own code
//! (`fuzz/src/harness.rs`, included by path), so an input that once crashed or broke an invariant stays
//! fixed. Add a file there for every crash `scripts/fuzz.sh` finds (libFuzzer writes it to
//! `fuzz/artifacts/<target>/`).
//!
//! One test function: the targets initialise and shut the library down, which must not interleave.
//! Inputs named `llvm-child-*` crash LLVM itself; the library survives them only because LLVM runs in the
//! compile helper process (`offload-rs-jit`, this crate's binary, named by `OFFLOAD_RS_JIT_HELPER`), so
//! they are skipped when `OFFLOAD_RS_JIT_IN_PROCESS` turns that off. The disk cache is off here (the
//! user's `~/.cache` is neither read nor written).

#[path = "../fuzz/src/harness.rs"]
mod harness;

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let in_process = std::env::var_os("OFFLOAD_RS_JIT_IN_PROCESS").is_some_and(|v| !v.is_empty() && v != "0");
    for f in &files {
        if in_process && f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("llvm-child-")) {
            eprintln!("skipping {} (crashes LLVM; OFFLOAD_RS_JIT_IN_PROCESS is set)", f.display());
            continue;
        }
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        eprintln!("replaying {}", f.display());
        run(&data);
    }
    files.len()
}

#[test]
fn fuzz_regressions_replay_without_crashing() {
    // SAFETY: set before the library runs (and before any thread of this test binary reads the environment).
    unsafe {
        std::env::set_var("OFFLOAD_RS_JIT_HELPER", env!("CARGO_BIN_EXE_offload-rs-jit"));
        if std::env::var_os("OFFLOAD_RS_JIT_CACHE_DIR").is_none() {
            std::env::set_var("OFFLOAD_RS_JIT_CACHE_DIR", "off");
        }
    }
    let n = replay("program", harness::program) + replay("api_sequence", harness::api_sequence);
    assert!(n > 0, "no inputs in fuzz/regressions/");
}
