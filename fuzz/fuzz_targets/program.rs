//! Program loading: `olIsValidBinary` + `olCreateProgram` (+ symbols) on the CPU device.
//! Input format: see `offload_rs_fuzz::harness::program_image`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_rs::api::init::ol_init;

fuzz_target!(
    init: {
        offload_rs_fuzz::init_env();
        // One reference for the whole run, so each input's olInit/olShutDown pair stays cheap.
        // SAFETY: olInit takes no arguments.
        let r = unsafe { ol_init() };
        offload_rs_fuzz::harness::check(r, "olInit");
    },
    |data: &[u8]| offload_rs_fuzz::harness::program(data)
);
