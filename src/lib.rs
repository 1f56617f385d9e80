//! offload-rs: a drop-in Rust re-implementation of LLVM 22's liboffload C API.
pub mod ffi;
pub mod plugin;
pub mod jit;
