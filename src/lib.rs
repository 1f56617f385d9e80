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
//! * Memory (`runtime::memory`): `olMemFree` never blocks, and the freed block is not reused before the
//!   work queued before the free has finished; `olMemUnregister` waits for that work. A copy or fill
//!   that starts inside a known allocation or registered range and runs past its end is `INVALID_SIZE`.
//!   An allocation larger than the device's memory is `OUT_OF_RESOURCES` up front.
//! * Host functions (`runtime::hostfn`) may call the library, except what would wait for their own
//!   queue (`olSyncQueue` of it, `olSyncEvent`/`olWaitEvents` on its events, `olMemUnregister`,
//!   `olShutDown`): `UNSUPPORTED` instead of a hang. LLVM 22 forbids all calls there.
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
//! * `OFFLOAD_RS_JIT_SPECIALISE=0`: no launch-time specialisation per group shape;
//!   `OFFLOAD_RS_JIT_QUICK_FIRST`: `0` no quick version for first launches, `only` the quick version for
//!   every launch (`jit::Tiers`, `plugin::cpu::tier_up`; README's table says more).
//! * `OFFLOAD_RS_CPU_TARGET` (read at the first `olInit`): the CPU the JIT compiles for (`native`, an LLVM
//!   CPU name, optional `,+feature,-feature`; `jit::target`); `OFFLOAD_RS_CPU_THREADS`: the CPU device's
//!   threads (its `NUM_COMPUTE_UNITS`). A value the device cannot use fails `olInit` (`INVALID_VALUE`).
//! * `OFFLOAD_RS_JIT_CACHE_DIR`: the on-disk JIT cache's directory (default `$XDG_CACHE_HOME/offload-rs`,
//!   else `~/.cache/offload-rs`); `off` disables it. `OFFLOAD_RS_JIT_CACHE_SIZE`: its bound (256M).
//! * `OFFLOAD_RS_JIT_HELPER`: the compile helper executable (default `offload-rs/offload-rs-jit` beside the
//!   library); `OFFLOAD_RS_JIT_IN_PROCESS=1`: compile in the calling process instead.
//! * `OFFLOAD_RS_DEBUG` (presence): one stderr line for each thing worked around (no driver, no helper,
//!   a cache directory or entry not used) and why.
//! * `OFFLOAD_RS_JIT_TIME` (presence): per-stage compile times on stderr, and each compile's time as the
//!   client waits for it;
//!   `OFFLOAD_RS_JIT_DUMP_LOWERED=<dir>`: the lowered and optimised IR of each compile, written there (only
//!   into a directory owned by the user and not writable by others).
//! * `OFFLOAD_RS_MEMCHECK=1` (read at the first `olInit`): compile kernels with the kernel memory checker
//!   (`plugin::cpu::memcheck`); an invalid access stops its launch and is returned at the next sync.
//! * `OFFLOAD_RS_PRINTF_BUFFER` (bytes, read at the first `olInit`): kernel printf output kept per launch
//!   (`plugin::cpu::devicelib`, default 1 MiB); `OFFLOAD_RS_PERF_MAP=1`: perf's JIT map in
//!   `/tmp/perf-<pid>.map` (`jit::perfmap`).
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
pub mod sync;
pub mod threads;
pub mod trace;
