//! The fuzz harness of offload-rs, shared by the cargo-fuzz targets (`fuzz_targets/*.rs`) and the
//! regression test (`tests/fuzz_regressions.rs` includes `harness.rs` by path), so a crashing input is
//! replayed through exactly the code that found it.

pub mod harness;
