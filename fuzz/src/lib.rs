//! The fuzz harness of offload-rs, shared by the cargo-fuzz targets (`fuzz_targets/*.rs`) and the
//! regression test (`tests/fuzz_regressions.rs` includes `harness.rs` by path), so a crashing input is
//! replayed through exactly the code that found it.

pub mod harness;

/// What every target sets up before the library runs: LLVM runs in the library's compile helper
/// (`offload-rs-jit`; scripts/fuzz.sh builds it and names it in `OFFLOAD_RS_JIT_HELPER`), so a corrupt image
/// that crashes LLVM kills the helper, not the fuzzer; the JIT's disk cache goes to a directory of the
/// fuzzer's own (never the user's `~/.cache`).
pub fn init_env() {
    if std::env::var_os("OFFLOAD_RS_JIT_CACHE_DIR").is_none() {
        let dir = std::env::temp_dir().join(format!("offload-rs-fuzz-jit-cache-{}", std::process::id()));
        // SAFETY: set in the single-threaded init, before the library reads it.
        unsafe { std::env::set_var("OFFLOAD_RS_JIT_CACHE_DIR", dir) };
    }
}
