//! Sequences of API calls over a pool of live, destroyed, stale, wrong-kind, garbage and NULL handles.
//! Input format: see `offload_rs_fuzz::harness::api_sequence`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // Programs are destroyed at the end of every input (full olShutDown), which evicts the in-memory
        // JIT cache; the on-disk cache keeps re-loading the seed image cheap.
        offload_rs_fuzz::init_env();
    },
    |data: &[u8]| offload_rs_fuzz::harness::api_sequence(data)
);
