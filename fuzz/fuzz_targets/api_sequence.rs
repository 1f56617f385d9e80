//! Sequences of API calls over a pool of live, destroyed, stale, wrong-kind, garbage and NULL handles.
//! Input format: see `offload_rs_fuzz::harness::api_sequence`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        offload_rs_fuzz::contain_child_crashes();
        // Programs are destroyed at the end of every input (full olShutDown), which evicts the in-memory
        // JIT cache; the on-disk cache keeps re-loading the seed image cheap.
        if std::env::var_os("OFFLOAD_RS_JIT_CACHE_DIR").is_none() {
            let dir = std::env::temp_dir().join("offload-rs-fuzz-jit-cache");
            // SAFETY: set in the single-threaded init, before the library reads it.
            unsafe { std::env::set_var("OFFLOAD_RS_JIT_CACHE_DIR", dir) };
        }
    },
    |data: &[u8]| offload_rs_fuzz::harness::api_sequence(data)
);
