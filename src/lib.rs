//! offload-rs: a drop-in Rust re-implementation of LLVM 22's liboffload C API (`libLLVMOffload.so.22.1`).
//!
//! # API conventions (as in LLVM 22, except where noted)
//! * Every entry point returns `ol_result_t`: NULL on success, else a pointer to an immortal, interned
//!   `{Code, Details}` record (the same pair always gives the same pointer; never free it). `Details` is
//!   never NULL and says what failed.
//! * Every call except `olInit` returns `OL_ERRC_UNINITIALIZED` before `olInit` / after the last
//!   `olShutDown`. Validation runs in the header's `@returns` order with LLVM's texts.
//! * Handles are generation-checked table keys, never pointers: a destroyed, stale (earlier `olInit`),
//!   wrong-kind or garbage handle gets the kind's error code (`INVALID_PLATFORM/DEVICE/QUEUE/EVENT`,
//!   `INVALID_ARGUMENT` for programs and symbols). LLVM 22 crashes or misbehaves there.
//! * Calls that LLVM 22 crashes on (the virtual host device allocating, queueing or loading programs,
//!   `olMemFill` with `PatternSize == 0` or a NULL queue) return errors or work.
//! * No panic crosses the C boundary: it becomes `OL_ERRC_UNKNOWN` with the panic text.
//! * Thread safety: every entry point may be called from any thread at once. Reading the context and
//!   looking handles up take no lock; of several concurrent destroys of one handle exactly one succeeds;
//!   the last `olShutDown` waits for the calls in flight on other threads (later ones get UNINITIALIZED).
//!
//! # Devices
//! CUDA GPUs (when `libcuda.so.1` loads), then the CPU compute device (platform backend
//! `OL_PLATFORM_BACKEND_CPU = 0x100`, our extension), then LLVM's "Virtual Host Device" last.
//!
//! # Environment
//! * `OFFLOAD_TRACE` (presence): trace every call to stderr in LLVM 22's format.
//! * `OFFLOAD_DISABLE_VALIDATION` (presence): skip the validation prologue's size checks; its NULL checks
//!   still run, so NULL arguments get the same errors in both modes.
//! * `LIBOMPTARGET_JIT_OPT_LEVEL`: JIT optimisation level (default 3).
//! * `OFFLOAD_RS_JIT_CACHE_DIR`: enable the on-disk JIT cache in that directory (off by default).
//!
//! # Modules
//! `ffi` (C types) -> `api` (exports) -> `runtime` (objects, context) -> `plugin` / `jit`.

pub mod api;
pub mod error;
pub mod ffi;
pub mod info;
pub mod jit;
pub mod plugin;
pub mod runtime;
pub mod trace;
