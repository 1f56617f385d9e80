//! The fuzz harness of offload-rs, shared by the cargo-fuzz targets (`fuzz_targets/*.rs`) and the
//! regression test (`tests/fuzz_regressions.rs` includes `harness.rs` by path), so a crashing input is
//! replayed through exactly the code that found it.

// `cargo fuzz` builds with `--cfg fuzzing` and RUSTC_BOOTSTRAP=1 (see scripts/fuzz.sh).
#![cfg_attr(fuzzing, feature(cfg_sanitize))]

pub mod harness;

/// Keeps the sanitizer's crash reports in the library's forked JIT children from counting as fuzzer
/// crashes. LLVM runs on image bytes in a `fork()`ed child, and a corrupt image can make LLVM's (not
/// instrumented) bitcode reader read out of bounds; AddressSanitizer's `memcpy` interceptor catches that
/// *in the child* and calls libFuzzer's death callback there, which saves a "crash" artifact although the
/// child's death is contained and reported as `COMPILE_FAILURE` (the fuzzing process never crashes). In
/// every forked child, this clears that callback: the sanitizer still prints its report and ends the child
/// with an error status, which the library turns into an error. Without AddressSanitizer it does nothing.
pub fn contain_child_crashes() {
    #[cfg(fuzzing)]
    asan::clear_death_callback_in_children();
}

// Nested so that stable tools (clippy, the regression test) never evaluate the unstable cfg(sanitize).
#[cfg(fuzzing)]
mod asan {
    #[cfg(sanitize = "address")]
    pub fn clear_death_callback_in_children() {
        // The runtime is linked statically and not exported, so dlsym cannot find it: link to it.
        unsafe extern "C" {
            fn __sanitizer_set_death_callback(cb: Option<extern "C" fn()>);
        }
        extern "C" fn in_child() {
            // SAFETY: the sanitizer runtime's `void __sanitizer_set_death_callback(void (*)(void))`.
            unsafe { __sanitizer_set_death_callback(None) };
        }
        // SAFETY: registers a child-side fork handler that only calls into the sanitizer runtime.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    }

    #[cfg(not(sanitize = "address"))]
    pub fn clear_death_callback_in_children() {}
}
