//! What the fuzz targets do with one input, as plain functions: [`program`] and [`api_sequence`].
//!
//! Used by the cargo-fuzz targets in `fuzz/fuzz_targets/` and, by path, by `tests/fuzz_regressions.rs`
//! (which replays `fuzz/regressions/<target>/*`). A broken invariant is a panic: libFuzzer reports it as a
//! crash and saves the input; the regression test fails with the same message.
//!
//! Invariants checked on every call: the result is NULL or an error whose code is a known `ol_errc_t`
//! and whose `Details` is a non-empty C string.

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use offload_rs::api::device::{ol_get_device_info, ol_get_device_info_size, ol_iterate_devices};
use offload_rs::api::event::{
    ol_create_event, ol_destroy_event, ol_get_event_info, ol_get_event_info_size, ol_sync_event,
};
use offload_rs::api::init::{ol_init, ol_shut_down};
use offload_rs::api::kernel::{ol_calculate_optimal_occupancy, ol_launch_kernel};
use offload_rs::api::memory::{
    ol_get_mem_info, ol_get_mem_info_size, ol_mem_alloc, ol_mem_fill, ol_mem_free, ol_mem_register, ol_mem_unregister,
    ol_memcpy,
};
use offload_rs::api::platform::{ol_get_platform_info, ol_get_platform_info_size};
use offload_rs::api::program::{ol_create_program, ol_destroy_program, ol_is_valid_binary};
use offload_rs::api::queue::{
    ol_create_queue, ol_destroy_queue, ol_get_queue_info, ol_get_queue_info_size, ol_launch_host_function,
    ol_sync_queue, ol_wait_events,
};
use offload_rs::api::symbol::{ol_get_symbol, ol_get_symbol_info, ol_get_symbol_info_size};
use offload_rs::ffi::*;

/// Real device images (committed copies of `bash ffi-tests/build-device.sh` output, so that a saved
/// input replays against the same bytes it was found with).
pub const SEEDS: [&[u8]; 6] = [
    include_bytes!("../seeds/kernels.nvptx64.bc"),
    include_bytes!("../seeds/kernels.amdgcn.bc"),
    include_bytes!("../seeds/lanes.nvptx64.bc"),
    include_bytes!("../seeds/lanes.amdgcn.bc"),
    include_bytes!("../seeds/seed_a.nvptx64.bc"),
    include_bytes!("../seeds/seed_b.amdgcn.bc"),
];

/// A tiny x86-64 ELF shared object (`fuzz/seeds/tiny.c`, `cc -shared`): kernel `noargs`, global `value`.
pub const TINY_SO: &[u8] = include_bytes!("../seeds/tiny.so");

/// Checks the result invariant and returns the error code (`None` on success).
#[allow(clippy::not_unsafe_ptr_arg_deref, reason = "results come only from the API: NULL or an immortal record")]
pub fn check(r: ol_result_t, call: &str) -> Option<u32> {
    if r.is_null() {
        return None;
    }
    // SAFETY: a non-NULL ol_result_t points to an immortal interned error record (API contract).
    let e = unsafe { &*r };
    assert!(
        e.Code.0 >= OL_ERRC_UNKNOWN.0 && e.Code.0 < OL_ERRC_LAST.0,
        "{call}: error code {} is not a known ol_errc_t",
        e.Code.0
    );
    assert!(!e.Details.is_null(), "{call}: error {} with NULL Details", e.Code.0);
    // SAFETY: Details is a NUL-terminated immortal string (API contract, checked non-NULL above).
    let d = unsafe { CStr::from_ptr(e.Details) };
    assert!(!d.to_bytes().is_empty(), "{call}: error {} with empty Details", e.Code.0);
    Some(e.Code.0)
}

fn expect(r: ol_result_t, call: &str, want: Option<ol_errc_t>) {
    let got = check(r, call);
    let details = || {
        // SAFETY: check() accepted r: NULL or an immortal record with a non-NULL Details.
        (!r.is_null()).then(|| unsafe { CStr::from_ptr((*r).Details) }.to_string_lossy().into_owned())
    };
    assert_eq!(got, want.map(|c| c.0), "{call}: expected {want:?}, got {got:?} ({:?})", details());
}

extern "C" fn collect_device(d: ol_device_handle_t, user: *mut c_void) -> bool {
    // SAFETY: `user` is the `&mut Vec` passed by `devices` for the duration of olIterateDevices.
    let v = unsafe { &mut *(user as *mut Vec<ol_device_handle_t>) };
    v.push(d);
    true
}

/// `OFFLOAD_RS_FUZZ_BACKEND=cuda`: fuzz the CUDA device in the CPU device's place (with a driver, or with
/// the fake one of ffi-tests/fake_cuda first on LD_LIBRARY_PATH). Kernels then only get pointers into
/// allocations (a GPU cannot read the harness's pageable host buffers).
pub fn fuzzing_cuda() -> bool {
    static CUDA: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CUDA.get_or_init(|| std::env::var("OFFLOAD_RS_FUZZ_BACKEND").is_ok_and(|b| b == "cuda"))
}

/// (CPU device, virtual host device) of the current initialisation.
pub fn devices() -> (Option<ol_device_handle_t>, Option<ol_device_handle_t>) {
    let mut all: Vec<ol_device_handle_t> = Vec::new();
    // SAFETY: the callback matches ol_device_iterate_cb_t and `all` outlives the call.
    let r = unsafe { ol_iterate_devices(Some(collect_device), (&mut all as *mut Vec<_>).cast()) };
    if check(r, "olIterateDevices").is_some() {
        return (None, None);
    }
    let (mut cpu, mut host) = (None, None);
    for d in all {
        let mut p: ol_platform_handle_t = std::ptr::null_mut();
        let mut backend = 0u32;
        // SAFETY: out-buffers are ours and exactly the property sizes.
        let r = unsafe {
            ol_get_device_info(
                d,
                OL_DEVICE_INFO_PLATFORM,
                size_of::<ol_platform_handle_t>(),
                (&mut p as *mut ol_platform_handle_t).cast(),
            )
        };
        expect(r, "olGetDeviceInfo(PLATFORM)", None);
        // SAFETY: as above.
        let r = unsafe { ol_get_platform_info(p, OL_PLATFORM_INFO_BACKEND, 4, (&mut backend as *mut u32).cast()) };
        expect(r, "olGetPlatformInfo(BACKEND)", None);
        let want = if fuzzing_cuda() { OL_PLATFORM_BACKEND_CUDA.0 } else { OL_PLATFORM_BACKEND_CPU.0 };
        if backend == want && cpu.is_none() {
            cpu = Some(d);
        } else if backend == OL_PLATFORM_BACKEND_HOST.0 {
            host = Some(d);
        }
    }
    assert!(!fuzzing_cuda() || cpu.is_some(), "OFFLOAD_RS_FUZZ_BACKEND=cuda but the library lists no CUDA device");
    (cpu, host)
}

/// The image an input of the `program` target stands for.
///
/// * first byte < 0x80: the rest of the input is the image;
/// * first byte >= 0x80: a real image ([`SEEDS`] by the low bits; [`TINY_SO`] for index 7) XORed with a mask:
///   bytes 1..3 choose where the mask starts (past the 4-byte magic), the rest is the mask. This keeps the
///   fuzzer inside well-formed bitcode instead of at the magic check.
pub fn program_image(data: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = data.split_first() else { return Vec::new() };
    if mode < 0x80 {
        return rest.to_vec();
    }
    let idx = (mode & 0x7f) as usize % 8;
    let mut img = if idx < SEEDS.len() { SEEDS[idx].to_vec() } else { TINY_SO.to_vec() };
    if rest.len() < 2 {
        return img;
    }
    let at = u16::from_le_bytes([rest[0], rest[1]]) as usize;
    let start = 4 + at % (img.len() - 4);
    for (b, m) in img[start..].iter_mut().zip(&rest[2..]) {
        *b ^= m;
    }
    img
}

/// One input of the `program` target: `olIsValidBinary` and `olCreateProgram` on the CPU device (and
/// `olIsValidBinary` on the host device); for a loaded program, symbols and their info, then destroy.
///
/// Programs load under the kernel memory checker (as with `OFFLOAD_RS_MEMCHECK=1`): a mutated image is
/// well-formed bitcode often enough whose device code is wrong, and its constructors run at
/// `olCreateProgram`; an out-of-bounds access there is then an error (`BACKEND_FAILURE`, "memcheck: the
/// program's constructors: ..."), as a faulting constructor fails a GPU's load, instead of a fault.
///
/// and under a time limit ([`STRUCTOR_LIMIT`], as with `OFFLOAD_RS_KERNEL_TIMEOUT`): a mutated loop in a
/// constructor can run for ever, and then `olCreateProgram` fails at the limit ("the program's
/// constructors stopped at the time limit: ..."), as a GPU's watchdog ends a kernel, instead of hanging.
///
/// A mutated x86-64 ELF is only validated, never loaded: loading a shared object means letting the
/// system's dynamic loader map and relocate it and running its constructors, which no library can make
/// safe for arbitrary bytes (glibc's `ld.so` is not hardened against corrupt ELF files). The unmodified
/// [`TINY_SO`] is loaded.
/// The time limit of the `program` target's constructors and destructors (well inside libFuzzer's
/// per-input timeout).
pub const STRUCTOR_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

pub fn program(data: &[u8]) {
    // SAFETY: olInit takes no arguments.
    expect(unsafe { ol_init() }, "olInit", None);
    // after olInit, which sets them from OFFLOAD_RS_MEMCHECK and OFFLOAD_RS_KERNEL_TIMEOUT
    offload_rs::jit::set_memcheck(true);
    offload_rs::plugin::cpu::devicelib::set_timeout(Some(STRUCTOR_LIMIT));
    let (cpu, host) = devices();
    if let Some(cpu) = cpu {
        program_on(cpu, host, &program_image(data));
    }
    // SAFETY: olShutDown takes no arguments; it balances the olInit above.
    expect(unsafe { ol_shut_down() }, "olShutDown", None);
}

fn program_on(cpu: ol_device_handle_t, host: Option<ol_device_handle_t>, img: &[u8]) {
    // Never pass a dangling pointer for an empty image: ProgData must be non-NULL and valid for 0 bytes.
    let data: *const c_void = if img.is_empty() { [0u8; 1].as_ptr().cast() } else { img.as_ptr().cast() };
    let mut valid = false;
    // SAFETY: `data` is valid for img.len() bytes; `valid` is ours.
    let r = unsafe { ol_is_valid_binary(cpu, data, img.len(), &mut valid) };
    expect(r, "olIsValidBinary(CPU)", None);
    if let Some(host) = host {
        let mut hv = true;
        // SAFETY: as above.
        let r = unsafe { ol_is_valid_binary(host, data, img.len(), &mut hv) };
        expect(r, "olIsValidBinary(host)", None);
        assert!(!hv, "olIsValidBinary(host) said true");
    }
    let is_elf = img.starts_with(b"\x7fELF");
    if is_elf && img != TINY_SO {
        return;
    }
    let mut prog: ol_program_handle_t = std::ptr::null_mut();
    // SAFETY: `data` is valid for img.len() bytes; `prog` is ours.
    let r = unsafe { ol_create_program(cpu, data, img.len(), &mut prog) };
    let Some(code) = check(r, "olCreateProgram") else {
        assert!(!prog.is_null(), "olCreateProgram succeeded with a NULL program");
        assert!(valid, "olCreateProgram loaded an image olIsValidBinary rejected");
        symbols(prog);
        // SAFETY: a live program handle.
        let r = unsafe { ol_destroy_program(prog) };
        // the memory checker's finding in the destructors (the program is destroyed all the same)
        if !memcheck_error(r, "memcheck: the program's destructors") {
            expect(r, "olDestroyProgram", None);
        }
        // SAFETY: a destroyed handle is rejected without being dereferenced.
        let r = unsafe { ol_destroy_program(prog) };
        expect(r, "olDestroyProgram(destroyed)", Some(OL_ERRC_INVALID_ARGUMENT));
        return;
    };
    assert!(prog.is_null(), "olCreateProgram wrote its out-parameter on error");
    let ok = [OL_ERRC_INVALID_BINARY, OL_ERRC_COMPILE_FAILURE, OL_ERRC_LINK_FAILURE, OL_ERRC_HOST_IO];
    // a constructor the memory checker stopped, or one that trapped, failed an assertion or ran past the
    // time limit (a mutated image's constructor can reach a trap, or loop for ever)
    let structors = memcheck_error(r, "memcheck: the program's constructors")
        || memcheck_error(r, "the program's constructors stopped at");
    assert!(structors || ok.iter().any(|c| c.0 == code), "olCreateProgram failed with unexpected code {code}");
}

/// Whether `r` is a BACKEND_FAILURE (the memory checker's, or a constructor's trap) whose details start
/// with `prefix`.
fn memcheck_error(r: ol_result_t, prefix: &str) -> bool {
    if check(r, "") != Some(OL_ERRC_BACKEND_FAILURE.0) {
        return false;
    }
    // SAFETY: check() accepted r: an immortal record with a non-NULL, NUL-terminated Details.
    unsafe { CStr::from_ptr((*r).Details) }.to_bytes().starts_with(prefix.as_bytes())
}

const NAMES: [&CStr; 9] = [c"saxpy", c"foo", c"get", c"lanes", c"which", c"global_var", c"noargs", c"value", c""];

fn symbols(prog: ol_program_handle_t) {
    for name in NAMES {
        for kind in [OL_SYMBOL_KIND_KERNEL, OL_SYMBOL_KIND_GLOBAL_VARIABLE, ol_symbol_kind_t(7)] {
            let mut sym: ol_symbol_handle_t = std::ptr::null_mut();
            // SAFETY: live program, NUL-terminated name, our out-parameter.
            let r = unsafe { ol_get_symbol(prog, name.as_ptr(), kind, &mut sym) };
            let Some(code) = check(r, "olGetSymbol") else {
                assert!(!sym.is_null(), "olGetSymbol succeeded with a NULL symbol");
                for prop in 0..4u32 {
                    symbol_info(sym, ol_symbol_info_t(prop));
                }
                continue;
            };
            if kind.0 == 7 {
                assert_eq!(code, OL_ERRC_INVALID_ENUMERATION.0, "olGetSymbol(kind 7)");
            }
        }
    }
}

fn symbol_info(sym: ol_symbol_handle_t, prop: ol_symbol_info_t) {
    let mut size = 0usize;
    // SAFETY: our out-parameter.
    let r1 = unsafe { ol_get_symbol_info_size(sym, prop, &mut size) };
    let mut buf = [0u64; 8];
    // SAFETY: `buf` is 64 writable bytes.
    let r2 = unsafe { ol_get_symbol_info(sym, prop, 64, buf.as_mut_ptr().cast()) };
    sizes_agree("olGetSymbolInfo", r1, size, r2);
    if check(r1, "").is_none() && size > 1 {
        // SAFETY: `buf` is 64 writable bytes; size - 1 < 64.
        let r = unsafe { ol_get_symbol_info(sym, prop, size - 1, buf.as_mut_ptr().cast()) };
        expect(r, "olGetSymbolInfo(too small)", Some(OL_ERRC_INVALID_SIZE));
    }
}

/// `*InfoSize` and `*Info` (with a large enough buffer) agree: both fail with the same code, or both
/// succeed with a size that fits the buffer.
fn sizes_agree(call: &str, size_r: ol_result_t, size: usize, info_r: ol_result_t) {
    let a = check(size_r, call);
    let b = check(info_r, call);
    match a {
        None => {
            assert!(size > 0, "{call}Size returned 0");
            if size <= 64 {
                assert_eq!(b, None, "{call}: size {size} but the 64-byte query failed");
            } else {
                assert_eq!(b, Some(OL_ERRC_INVALID_SIZE.0), "{call}: size {size} but a 64-byte query did not fail");
            }
        }
        Some(c) => assert_eq!(b, Some(c), "{call}Size failed with {c} but {call} with {b:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------
// api_sequence

/// Reads the input as a stream of small numbers; yields zeros when exhausted.
struct Input<'a> {
    d: &'a [u8],
}

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.d.split_first() {
            Some((&b, rest)) => {
                self.d = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.u16() as usize % n }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Platform,
    Device,
    Queue,
    Event,
    Program,
    Symbol,
}

impl Kind {
    /// The code a destroyed, stale, garbage or wrong-kind handle gets where this kind is expected.
    fn code(self) -> ol_errc_t {
        match self {
            Kind::Platform => OL_ERRC_INVALID_PLATFORM,
            Kind::Device => OL_ERRC_INVALID_DEVICE,
            Kind::Queue => OL_ERRC_INVALID_QUEUE,
            Kind::Event => OL_ERRC_INVALID_EVENT,
            Kind::Program | Kind::Symbol => OL_ERRC_INVALID_ARGUMENT,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct H {
    raw: usize,
    kind: Kind,
    live: bool,
    /// Symbols: index of their program in the pool.
    parent: usize,
    /// Kernel symbols: the index of their name in [`KERNELS`].
    kernel: usize,
}

#[derive(Clone, Copy, Debug)]
struct Alloc {
    base: usize,
    size: usize,
    live: bool,
}

/// What a handle argument will be.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Null,
    Garbage(usize),
    Pool(usize),
}

struct State {
    inits: u32,
    pool: Vec<H>,
    allocs: Vec<Alloc>,
    /// Events recorded just before a queue was destroyed: synced before memory is freed, so that work
    /// still running on a destroyed queue never touches freed memory (that would be the caller's bug).
    drains: Vec<usize>,
    host_bufs: Vec<Vec<u64>>,
    registered: Vec<(usize, usize)>,
    counter: Box<AtomicU64>,
}

const GARBAGE: [usize; 4] = [0x1234, 0xdead_beef, usize::MAX, 0x10];

impl State {
    fn pick(&self, inp: &mut Input) -> Pick {
        let b = inp.u8();
        match b {
            0 => Pick::Null,
            1..=4 => Pick::Garbage(GARBAGE[b as usize - 1]),
            _ if self.pool.is_empty() => Pick::Null,
            _ => Pick::Pool(b as usize % self.pool.len()),
        }
    }

    /// A handle expected to be of `kind`: mostly a live one of that kind (when there is one).
    fn pick_kind(&self, inp: &mut Input, kind: Kind) -> Pick {
        let b = inp.u8();
        if b < 0xC0 {
            let live: Vec<usize> =
                (0..self.pool.len()).filter(|&i| self.pool[i].kind == kind && self.pool[i].live).collect();
            if !live.is_empty() {
                return Pick::Pool(live[b as usize % live.len()]);
            }
        }
        self.pick(inp)
    }

    fn raw(&self, p: Pick) -> usize {
        match p {
            Pick::Null => 0,
            Pick::Garbage(g) => g,
            Pick::Pool(i) => self.pool[i].raw,
        }
    }

    /// The code a call that only validates this one handle must return, or None for "success".
    fn expected(&self, p: Pick, kind: Kind) -> Option<ol_errc_t> {
        if self.inits == 0 {
            return Some(OL_ERRC_UNINITIALIZED);
        }
        match p {
            Pick::Null => Some(OL_ERRC_INVALID_NULL_HANDLE),
            Pick::Garbage(_) => Some(kind.code()),
            Pick::Pool(i) => {
                let h = self.pool[i];
                if h.kind == kind && h.live { None } else { Some(kind.code()) }
            }
        }
    }

    fn push(&mut self, raw: usize, kind: Kind, parent: usize) -> usize {
        self.pool.push(H { raw, kind, live: true, parent, kernel: 0 });
        self.pool.len() - 1
    }

    fn refresh_devices(&mut self) {
        let (cpu, host) = devices();
        for d in [cpu, host] {
            let Some(d) = d else { continue };
            let mut p: ol_platform_handle_t = std::ptr::null_mut();
            // SAFETY: `p` is ours and the property's size.
            let r = unsafe {
                ol_get_device_info(d, OL_DEVICE_INFO_PLATFORM, 8, (&mut p as *mut ol_platform_handle_t).cast())
            };
            expect(r, "olGetDeviceInfo(PLATFORM)", None);
            if !self.pool.iter().any(|h| h.live && h.raw == d as usize) {
                self.push(d as usize, Kind::Device, 0);
                self.push(p as usize, Kind::Platform, 0);
            }
        }
    }

    fn everything_dies(&mut self) {
        for h in &mut self.pool {
            h.live = false;
        }
        for a in &mut self.allocs {
            a.live = false;
        }
        self.drains.clear();
        self.registered.clear();
    }

    /// Wait for all queued work (live queues and destroyed ones) before memory is freed or reused.
    fn drain(&mut self) {
        if self.inits == 0 {
            return;
        }
        for i in 0..self.pool.len() {
            let h = self.pool[i];
            if h.live && h.kind == Kind::Queue {
                // SAFETY: a live queue handle.
                check(unsafe { ol_sync_queue(h.raw as ol_queue_handle_t) }, "olSyncQueue");
            }
        }
        for &e in &self.drains {
            // SAFETY: a live event handle owned by the harness.
            expect(unsafe { ol_sync_event(e as ol_event_handle_t) }, "olSyncEvent(drain)", None);
        }
    }

    /// A (pointer, length) range of memory the harness owns: an allocation or a host buffer.
    fn range(&mut self, inp: &mut Input) -> Option<(usize, usize)> {
        let live: Vec<Alloc> = self.allocs.iter().copied().filter(|a| a.live).collect();
        let b = inp.u8();
        if fuzzing_cuda() && live.is_empty() {
            return None;
        }
        if (b.is_multiple_of(3) && !fuzzing_cuda()) || live.is_empty() {
            let buf = &self.host_bufs[b as usize % self.host_bufs.len()];
            return Some((buf.as_ptr() as usize, buf.len() * 8));
        }
        let a = live[b as usize % live.len()];
        Some((a.base, a.size))
    }
}

/// Sub-range [off, off+len) of a buffer of `size` bytes.
fn sub(inp: &mut Input, size: usize) -> (usize, usize) {
    let off = inp.below(size);
    let len = inp.below(size - off + 1);
    (off, len)
}

extern "C" fn host_fn(user: *mut c_void) {
    // SAFETY: `user` is the harness's boxed counter, alive until every queue is drained.
    let c = unsafe { &*(user as *const AtomicU64) };
    c.fetch_add(1, Ordering::Relaxed);
}

/// Kernels of `kernels.nvptx64.bc` the sequence launches, with what they touch (so that every launch
/// stays inside memory the harness owns).
const KERNELS: [&CStr; 5] = [c"noargs", c"saxpy", c"foo", c"early_exit", c"spin"];

/// One input of the `api_sequence` target: up to 64 API calls over a pool of handles (live, destroyed,
/// stale from before a re-`olInit`, wrong-kind, garbage, NULL). Ends with every reference released.
pub fn api_sequence(data: &[u8]) {
    let mut inp = Input { d: data };
    let mut st = State {
        inits: 0,
        pool: Vec::new(),
        allocs: Vec::new(),
        drains: Vec::new(),
        host_bufs: vec![vec![0u64; 8], vec![0u64; 64], vec![0u64; 512]],
        registered: Vec::new(),
        counter: Box::new(AtomicU64::new(0)),
    };
    // SAFETY: olInit takes no arguments.
    expect(unsafe { ol_init() }, "olInit", None);
    st.inits = 1;
    st.refresh_devices();
    for _ in 0..64 {
        if inp.d.is_empty() {
            break;
        }
        step(&mut st, &mut inp);
    }
    while st.inits > 0 {
        st.drain();
        // SAFETY: olShutDown takes no arguments.
        expect(unsafe { ol_shut_down() }, "olShutDown", None);
        st.inits -= 1;
    }
    // SAFETY: as above.
    let r = unsafe { ol_shut_down() };
    expect(r, "olShutDown(uninitialised)", Some(OL_ERRC_UNINITIALIZED));
    // Host buffers and the counter drop only now: no queue can still use them.
}

fn step(st: &mut State, inp: &mut Input) {
    let op = inp.u8() % 24;
    match op {
        0 => {
            // olCreateQueue
            let d = st.pick_kind(inp, Kind::Device);
            let mut q: ol_queue_handle_t = std::ptr::null_mut();
            // SAFETY: the device handle is any value (never dereferenced); `q` is ours.
            let r = unsafe { ol_create_queue(st.raw(d) as ol_device_handle_t, &mut q) };
            let got = check(r, "olCreateQueue");
            let want = st.expected(d, Kind::Device);
            if want.is_some() {
                assert_eq!(got, want.map(|c| c.0), "olCreateQueue({d:?})");
            }
            if got.is_none() {
                st.push(q as usize, Kind::Queue, 0);
            }
        }
        1 => {
            // olDestroyQueue (records a drain event first, see State::drains)
            let q = st.pick_kind(inp, Kind::Queue);
            let want = st.expected(q, Kind::Queue);
            let raw = st.raw(q);
            if want.is_none() {
                let mut e: ol_event_handle_t = std::ptr::null_mut();
                // SAFETY: a live queue; `e` is ours.
                expect(unsafe { ol_create_event(raw as ol_queue_handle_t, &mut e) }, "olCreateEvent(drain)", None);
                st.drains.push(e as usize);
            }
            // SAFETY: any handle value is safe.
            let r = unsafe { ol_destroy_queue(raw as ol_queue_handle_t) };
            expect(r, "olDestroyQueue", want);
            if let (None, Pick::Pool(i)) = (want, q) {
                st.pool[i].live = false;
            }
        }
        2 => {
            // olCreateEvent
            let q = st.pick_kind(inp, Kind::Queue);
            let mut e: ol_event_handle_t = std::ptr::null_mut();
            // SAFETY: any handle value; `e` is ours.
            let r = unsafe { ol_create_event(st.raw(q) as ol_queue_handle_t, &mut e) };
            expect(r, "olCreateEvent", st.expected(q, Kind::Queue));
            if r.is_null() {
                st.push(e as usize, Kind::Event, 0);
            }
        }
        3 => {
            // olDestroyEvent
            let e = st.pick_kind(inp, Kind::Event);
            let want = st.expected(e, Kind::Event);
            // SAFETY: any handle value.
            let r = unsafe { ol_destroy_event(st.raw(e) as ol_event_handle_t) };
            expect(r, "olDestroyEvent", want);
            if let (None, Pick::Pool(i)) = (want, e) {
                st.pool[i].live = false;
            }
        }
        4 => {
            // olSyncQueue
            let q = st.pick_kind(inp, Kind::Queue);
            let want = st.expected(q, Kind::Queue);
            // SAFETY: any handle value.
            let r = unsafe { ol_sync_queue(st.raw(q) as ol_queue_handle_t) };
            let got = check(r, "olSyncQueue");
            if want.is_some() {
                assert_eq!(got, want.map(|c| c.0), "olSyncQueue({q:?})");
            }
        }
        5 => {
            // olSyncEvent
            let e = st.pick_kind(inp, Kind::Event);
            let want = st.expected(e, Kind::Event);
            // SAFETY: any handle value.
            let r = unsafe { ol_sync_event(st.raw(e) as ol_event_handle_t) };
            let got = check(r, "olSyncEvent");
            if want.is_some() {
                assert_eq!(got, want.map(|c| c.0), "olSyncEvent({e:?})");
            }
        }
        6 => {
            // olWaitEvents
            let q = st.pick_kind(inp, Kind::Queue);
            let n = inp.u8() as usize % 5;
            let mut evs: Vec<ol_event_handle_t> =
                (0..n).map(|_| st.raw(st.pick_kind(inp, Kind::Event)) as ol_event_handle_t).collect();
            let ptr = if n == 0 && inp.u8() & 1 == 0 { std::ptr::null_mut() } else { evs.as_mut_ptr() };
            // SAFETY: `evs` holds n entries (any values); the queue is any value.
            let r = unsafe { ol_wait_events(st.raw(q) as ol_queue_handle_t, ptr, n) };
            check(r, "olWaitEvents");
        }
        7 => {
            // olMemAlloc
            let d = st.pick_kind(inp, Kind::Device);
            let t = inp.u8();
            let ty = if t < 0xF0 { t as u32 % 4 } else { t as u32 };
            let size = match inp.u8() % 4 {
                0 => 0,
                1 => inp.u8() as usize,
                _ => inp.u16() as usize,
            };
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: any device value; `p` is ours.
            let r = unsafe { ol_mem_alloc(st.raw(d) as ol_device_handle_t, ol_alloc_type_t(ty), size, &mut p) };
            let got = check(r, "olMemAlloc");
            if got.is_none() {
                // Type is not validated (LLVM 22 allocates unknown types like MANAGED).
                assert!(!p.is_null() && size > 0, "olMemAlloc succeeded: {p:?} size {size} type {ty}");
                st.allocs.push(Alloc { base: p as usize, size, live: true });
            } else if size == 0 && st.inits > 0 {
                assert_eq!(got, Some(OL_ERRC_INVALID_SIZE.0), "olMemAlloc(Size 0)");
            }
        }
        8 => {
            // olMemFree: a live allocation (after draining), an interior pointer, garbage or NULL
            let b = inp.u8();
            let live: Vec<usize> = (0..st.allocs.len()).filter(|&i| st.allocs[i].live).collect();
            match b % 4 {
                0 | 1 if !live.is_empty() => {
                    let i = live[inp.below(live.len())];
                    st.drain();
                    // SAFETY: a live allocation of ours; every queue that might use it is drained.
                    let r = unsafe { ol_mem_free(st.allocs[i].base as *mut c_void) };
                    expect(r, "olMemFree", None);
                    st.allocs[i].live = false;
                }
                2 if !live.is_empty() => {
                    let a = st.allocs[live[inp.below(live.len())]];
                    if a.size > 1 {
                        // SAFETY: an interior pointer is rejected without being freed or dereferenced.
                        let r = unsafe { ol_mem_free((a.base + 1) as *mut c_void) };
                        expect(r, "olMemFree(interior)", Some(OL_ERRC_INVALID_ARGUMENT));
                    }
                }
                _ => {
                    let g = if b & 0x80 != 0 { 0 } else { GARBAGE[b as usize % GARBAGE.len()] };
                    // SAFETY: NULL or an address that is not an allocation: rejected.
                    let r = unsafe { ol_mem_free(g as *mut c_void) };
                    let want = if st.inits == 0 {
                        OL_ERRC_UNINITIALIZED
                    } else if g == 0 {
                        OL_ERRC_INVALID_NULL_POINTER
                    } else {
                        OL_ERRC_INVALID_ARGUMENT
                    };
                    expect(r, "olMemFree(bad)", Some(want));
                }
            }
        }
        9 => {
            // olMemcpy between non-overlapping ranges we own, possibly async
            let q = if inp.u8() & 1 == 0 { Pick::Null } else { st.pick_kind(inp, Kind::Queue) };
            let (Some((d, dn)), Some((s, sn))) = (st.range(inp), st.range(inp)) else { return };
            let (doff, dlen) = sub(inp, dn);
            let (soff, slen) = sub(inp, sn);
            let mut len = dlen.min(slen);
            let (dp, sp) = (d + doff, s + soff);
            if dp < sp + len && sp < dp + len {
                len = 0; // overlapping copies are the caller's bug (memcpy semantics)
            }
            let dd = st.pick_kind(inp, Kind::Device);
            let sd = st.pick_kind(inp, Kind::Device);
            let dst = if inp.u8() == 0xFF { 0 } else { dp };
            // SAFETY: dst/src are NULL or ranges of `len` bytes we own, alive until drained.
            let r = unsafe {
                ol_memcpy(
                    st.raw(q) as ol_queue_handle_t,
                    dst as *mut c_void,
                    st.raw(dd) as ol_device_handle_t,
                    sp as *const c_void,
                    st.raw(sd) as ol_device_handle_t,
                    len,
                )
            };
            check(r, "olMemcpy");
        }
        10 => {
            // olMemFill
            let q = if inp.u8() & 1 == 0 { Pick::Null } else { st.pick_kind(inp, Kind::Queue) };
            let Some((p, n)) = st.range(inp) else { return };
            let ps = [1usize, 2, 4, 8, 16, 0, 3, 32][inp.u8() as usize % 8];
            let pattern = [0xA5u8; 32];
            let (off, len) = sub(inp, n);
            let len = if inp.u8() & 3 == 0 || ps == 0 { len } else { len - len % ps };
            // SAFETY: the range is ours and `len` bytes long; the pattern is 32 bytes >= ps.
            let r = unsafe {
                ol_mem_fill(st.raw(q) as ol_queue_handle_t, (p + off) as *mut c_void, ps, pattern.as_ptr().cast(), len)
            };
            let got = check(r, "olMemFill");
            if st.inits > 0 && (ps == 0 || len % ps != 0) {
                assert_eq!(got, Some(OL_ERRC_INVALID_SIZE.0), "olMemFill(PatternSize {ps}, FillSize {len})");
            }
        }
        11..=13 => get_info(st, inp),
        14 => {
            // olCreateProgram from a real image (or a truncated one)
            let d = st.pick_kind(inp, Kind::Device);
            let img = SEEDS[[0, 0, 0, 4][inp.u8() as usize % 4]];
            let len = if inp.u8() == 0xFF { img.len() / 2 } else { img.len() };
            let mut p: ol_program_handle_t = std::ptr::null_mut();
            // SAFETY: `img` is valid for len bytes; any device value; `p` is ours.
            let r = unsafe { ol_create_program(st.raw(d) as ol_device_handle_t, img.as_ptr().cast(), len, &mut p) };
            let got = check(r, "olCreateProgram");
            if let Some(want) = st.expected(d, Kind::Device) {
                assert_eq!(got, Some(want.0), "olCreateProgram({d:?})");
            }
            if got.is_none() {
                st.push(p as usize, Kind::Program, 0);
            }
        }
        15 => {
            // olDestroyProgram: its symbols die with it
            let p = st.pick_kind(inp, Kind::Program);
            let want = st.expected(p, Kind::Program);
            // SAFETY: any handle value.
            let r = unsafe { ol_destroy_program(st.raw(p) as ol_program_handle_t) };
            expect(r, "olDestroyProgram", want);
            if let (None, Pick::Pool(i)) = (want, p) {
                st.pool[i].live = false;
                for h in &mut st.pool {
                    if h.kind == Kind::Symbol && h.parent == i {
                        h.live = false;
                    }
                }
            }
        }
        16 => {
            // olGetSymbol
            let p = st.pick_kind(inp, Kind::Program);
            let name = KERNELS[inp.u8() as usize % KERNELS.len()];
            let k = inp.u8();
            let kind = if k < 0xF0 { k as u32 % 2 } else { k as u32 };
            let mut s: ol_symbol_handle_t = std::ptr::null_mut();
            // SAFETY: any program value; NUL-terminated name; `s` is ours.
            let r = unsafe {
                ol_get_symbol(st.raw(p) as ol_program_handle_t, name.as_ptr(), ol_symbol_kind_t(kind), &mut s)
            };
            let got = check(r, "olGetSymbol");
            if let Some(want) = st.expected(p, Kind::Program) {
                assert_eq!(got, Some(want.0), "olGetSymbol({p:?})");
            }
            if got.is_none() {
                let parent = match p {
                    Pick::Pool(i) => i,
                    _ => unreachable!("olGetSymbol succeeded on a non-pool handle"),
                };
                let k = if kind == 0 { KERNELS.iter().position(|n| *n == name).unwrap_or(0) } else { 0 };
                st.pool.push(H { raw: s as usize, kind: Kind::Symbol, live: true, parent, kernel: k });
            }
        }
        17 => launch(st, inp),
        18 => {
            // olLaunchHostFunction
            let q = st.pick_kind(inp, Kind::Queue);
            let null_cb = inp.u8() == 0xFF;
            let cb: ol_host_function_cb_t = if null_cb { None } else { Some(host_fn) };
            let user = (&*st.counter as *const AtomicU64).cast_mut().cast::<c_void>();
            // SAFETY: the callback only touches the counter, which lives until every queue is drained.
            let r = unsafe { ol_launch_host_function(st.raw(q) as ol_queue_handle_t, cb, user) };
            let got = check(r, "olLaunchHostFunction");
            if !null_cb && let Some(want) = st.expected(q, Kind::Queue) {
                assert_eq!(got, Some(want.0), "olLaunchHostFunction({q:?})");
            }
        }
        19 => {
            // olInit (another reference, or a re-init after a full shutdown)
            // SAFETY: no arguments.
            expect(unsafe { ol_init() }, "olInit", None);
            st.inits += 1;
            st.refresh_devices();
        }
        20 => {
            // olShutDown: the last one invalidates every handle and frees every allocation
            if st.inits == 0 {
                // SAFETY: no arguments.
                expect(unsafe { ol_shut_down() }, "olShutDown", Some(OL_ERRC_UNINITIALIZED));
                return;
            }
            st.drain();
            // SAFETY: no arguments.
            expect(unsafe { ol_shut_down() }, "olShutDown", None);
            st.inits -= 1;
            if st.inits == 0 {
                st.everything_dies();
            }
        }
        21 => {
            // olMemRegister / olMemUnregister of a host buffer
            let d = st.pick_kind(inp, Kind::Device);
            let bi = inp.u8() as usize % st.host_bufs.len();
            let (base, n) = (st.host_bufs[bi].as_ptr() as usize, st.host_bufs[bi].len() * 8);
            let (off, len) = sub(inp, n);
            if inp.u8() & 1 == 0 {
                let mut pinned: *mut c_void = std::ptr::null_mut();
                // SAFETY: a range of a buffer we own (alive until the end); any device value.
                let r = unsafe {
                    ol_mem_register(st.raw(d) as ol_device_handle_t, (base + off) as *mut c_void, len, 0, &mut pinned)
                };
                if check(r, "olMemRegister").is_none() {
                    st.registered.push((base + off, len));
                }
            } else {
                let p = if st.registered.is_empty() || off & 1 == 0 {
                    base + off
                } else {
                    st.registered[off % st.registered.len()].0
                };
                // SAFETY: any device value; the pointer is only looked up.
                let r = unsafe { ol_mem_unregister(st.raw(d) as ol_device_handle_t, p as *mut c_void) };
                if check(r, "olMemUnregister").is_none() {
                    st.registered.retain(|&(b, _)| b != p);
                }
            }
        }
        22 => {
            // olCalculateOptimalOccupancy
            let d = st.pick_kind(inp, Kind::Device);
            let k = st.pick_kind(inp, Kind::Symbol);
            let shm = [0usize, 1024, 1 << 16, 1 << 20, usize::MAX][inp.u8() as usize % 5];
            let mut gs = 0usize;
            // SAFETY: any handle values; `gs` is ours.
            let r = unsafe {
                ol_calculate_optimal_occupancy(
                    st.raw(d) as ol_device_handle_t,
                    st.raw(k) as ol_symbol_handle_t,
                    shm,
                    &mut gs,
                )
            };
            if check(r, "olCalculateOptimalOccupancy").is_none() {
                assert!(gs > 0, "olCalculateOptimalOccupancy returned 0");
            }
        }
        _ => {
            if st.inits > 0 {
                st.refresh_devices();
            }
        }
    }
}

fn get_info(st: &mut State, inp: &mut Input) {
    let which = inp.u8() % 6;
    let kind = [Kind::Platform, Kind::Device, Kind::Queue, Kind::Event, Kind::Symbol, Kind::Device][which as usize];
    let last = [
        OL_PLATFORM_INFO_LAST.0,
        OL_DEVICE_INFO_LAST.0,
        OL_QUEUE_INFO_LAST.0,
        OL_EVENT_INFO_LAST.0,
        OL_SYMBOL_INFO_LAST.0,
        OL_MEM_INFO_LAST.0,
    ][which as usize];
    let pb = inp.u8();
    let prop = if pb < 0xF0 { pb as u32 % (last + 1) } else { inp.u32() };
    let psize = inp.u8() as usize % 72;
    let mut size = 0usize;
    let mut big = [0u64; 8];
    let mut small = [0u64; 9];
    let (r1, r2, r3);
    if which == 5 {
        // olGetMemInfo: a pointer into memory we own, or garbage
        let p = match st.range(inp) {
            Some((b, n)) if inp.u8() & 3 != 0 => b + inp.below(n),
            _ => GARBAGE[inp.u8() as usize % GARBAGE.len()],
        };
        let p = p as *const c_void;
        // SAFETY: pointers are only looked up; out-buffers are ours (64 and 72 bytes).
        unsafe {
            r1 = ol_get_mem_info_size(p, ol_mem_info_t(prop), &mut size);
            r2 = ol_get_mem_info(p, ol_mem_info_t(prop), 64, big.as_mut_ptr().cast());
            r3 = ol_get_mem_info(p, ol_mem_info_t(prop), psize, small.as_mut_ptr().cast());
        }
    } else {
        let h = st.pick_kind(inp, kind);
        let raw = st.raw(h);
        // SAFETY: handles are any values; out-buffers are ours (64 and 72 bytes, psize < 72).
        unsafe {
            match kind {
                Kind::Platform => {
                    let h = raw as ol_platform_handle_t;
                    let p = ol_platform_info_t(prop);
                    r1 = ol_get_platform_info_size(h, p, &mut size);
                    r2 = ol_get_platform_info(h, p, 64, big.as_mut_ptr().cast());
                    r3 = ol_get_platform_info(h, p, psize, small.as_mut_ptr().cast());
                }
                Kind::Device => {
                    let h = raw as ol_device_handle_t;
                    let p = ol_device_info_t(prop);
                    r1 = ol_get_device_info_size(h, p, &mut size);
                    r2 = ol_get_device_info(h, p, 64, big.as_mut_ptr().cast());
                    r3 = ol_get_device_info(h, p, psize, small.as_mut_ptr().cast());
                }
                Kind::Queue => {
                    let h = raw as ol_queue_handle_t;
                    let p = ol_queue_info_t(prop);
                    r1 = ol_get_queue_info_size(h, p, &mut size);
                    r2 = ol_get_queue_info(h, p, 64, big.as_mut_ptr().cast());
                    r3 = ol_get_queue_info(h, p, psize, small.as_mut_ptr().cast());
                }
                Kind::Event => {
                    let h = raw as ol_event_handle_t;
                    let p = ol_event_info_t(prop);
                    r1 = ol_get_event_info_size(h, p, &mut size);
                    r2 = ol_get_event_info(h, p, 64, big.as_mut_ptr().cast());
                    r3 = ol_get_event_info(h, p, psize, small.as_mut_ptr().cast());
                }
                _ => {
                    let h = raw as ol_symbol_handle_t;
                    let p = ol_symbol_info_t(prop);
                    r1 = ol_get_symbol_info_size(h, p, &mut size);
                    r2 = ol_get_symbol_info(h, p, 64, big.as_mut_ptr().cast());
                    r3 = ol_get_symbol_info(h, p, psize, small.as_mut_ptr().cast());
                }
            }
        }
        if let Some(want) = st.expected(h, kind)
            && prop < last
        {
            assert_eq!(check(r1, "get*InfoSize"), Some(want.0), "get{kind:?}InfoSize({h:?}, {prop})");
        }
    }
    sizes_agree("get*Info", r1, size, r2);
    let got = check(r3, "get*Info(fuzzed size)");
    if psize == 0 && st.inits > 0 {
        assert_eq!(got, Some(OL_ERRC_INVALID_SIZE.0), "get*Info(PropSize 0)");
    } else if check(r1, "").is_none() {
        // the value may legitimately change between calls (an event completing), its size may not
        let want = if psize >= size { None } else { Some(OL_ERRC_INVALID_SIZE.0) };
        assert_eq!(got, want, "get*Info(size {psize}) with the property's size {size}");
    }
}

fn launch(st: &mut State, inp: &mut Input) {
    let q = st.pick_kind(inp, Kind::Queue);
    let d = st.pick_kind(inp, Kind::Device);
    let k = st.pick_kind(inp, Kind::Symbol);
    // What the kernel touches decides the arguments; anything but a live kernel symbol gets none.
    let kidx = match k {
        Pick::Pool(i) if st.pool[i].live && st.pool[i].kind == Kind::Symbol => st.pool[i].kernel,
        _ => 0,
    };
    // Grid: at most 4096 work-items in all; group sizes sometimes invalid (rejected, never run).
    let mut gs = [1 + inp.u8() as u32 % 64, 1 + inp.u8() as u32 % 4, 1 + inp.u8() as u32 % 2];
    let bad = inp.u8();
    match bad {
        0xF0 => gs[0] = 0,
        0xF1 => gs[0] = 2048,
        0xF2 => gs[2] = 65,
        0xF3 => gs = [1024, 2, 1],
        _ => {}
    }
    let per = (gs[0].max(1) * gs[1].max(1) * gs[2].max(1)).min(4096);
    let max_groups = (4096 / per).max(1);
    let ng = [1 + inp.u8() as u32 % max_groups.min(64), 1, 1];
    let ng = if bad == 0xF4 { [0, 1, 1] } else { ng };
    let dyn_shm = [0usize, 256, 1 << 16, (1 << 16) + 1][inp.u8() as usize % 4];
    let dims = [1usize, 2, 3, 0][inp.u8() as usize % 4];
    let lsa = ol_kernel_launch_size_args_t {
        Dimensions: dims,
        NumGroups: ol_dimensions_t { x: ng[0], y: ng[1], z: ng[2] },
        GroupSize: ol_dimensions_t { x: gs[0], y: gs[1], z: gs[2] },
        DynSharedMemory: dyn_shm,
    };
    let items_x = (ng[0] as usize) * (gs[0] as usize);
    // Arguments in the natural C layout; pointers to memory big enough for what the kernel touches.
    let mut args = [0u64; 8];
    let natural = match kidx {
        1 => {
            // saxpy(float a, const float *x, float *y, uint32_t n): {f32 @0, ptr @8, ptr @16, u32 @24}
            let x = st.range(inp);
            let y = st.range(inp);
            let (x, y) = (x.unwrap_or((0, 0)), y.unwrap_or((0, 0)));
            args[0] = 2.0f32.to_bits() as u64;
            args[1] = x.0 as u64;
            args[2] = y.0 as u64;
            args[3] = (x.1.min(y.1) / 4).min(inp.u16() as usize) as u64;
            32
        }
        2 | 3 => {
            // foo(uint32_t *out): out[tid.x]; early_exit(uint32_t *out): out[gid.x]
            let need = if kidx == 2 { gs[0] as usize * 4 } else { items_x * 4 };
            match st.range(inp) {
                Some((p, n)) if n >= need => args[0] = p as u64,
                _ => return,
            }
            8
        }
        4 => {
            // spin(uint64_t iters, uint64_t *out): out[0] from work-item 0
            match st.range(inp) {
                Some((p, n)) if n >= 8 => {
                    args[0] = inp.u8() as u64 * 4;
                    args[1] = p as u64;
                }
                _ => return,
            }
            16
        }
        _ => 0,
    };
    // Argument size: the natural one, more, or less (but never the tightly packed size, which the
    // library would read as the packed layout).
    let packed = [0usize, 24, 8, 8, 16][kidx.min(4)];
    let asz = match inp.u8() % 4 {
        0 => natural + 8,
        1 => {
            let s = inp.u8() as usize % (natural + 1);
            if s == packed && s != natural { natural } else { s }
        }
        _ => natural,
    };
    let data = if asz == 0 && inp.u8() & 1 == 0 { std::ptr::null() } else { args.as_ptr().cast::<c_void>() };
    // SAFETY: the argument buffer is 64 bytes >= asz and its pointers cover what the kernel touches for
    // this grid; handles are any values; the launch-size struct is ours.
    let r = unsafe {
        ol_launch_kernel(
            st.raw(q) as ol_queue_handle_t,
            st.raw(d) as ol_device_handle_t,
            st.raw(k) as ol_symbol_handle_t,
            data,
            asz,
            &lsa,
        )
    };
    check(r, "olLaunchKernel");
}
