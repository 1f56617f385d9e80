//! The CPU device's runtime for kernels' `printf`, `assert` and traps (the calls `src/jit/llvm/devicelib.rs`
//! rewrites; the loader resolves them to [`functions`]).
//!
//! # printf
//! A kernel's printf formats here, in Rust: the format is parsed conversion by conversion and each
//! conversion is formatted by the host's `snprintf` with a format of one conversion that this module
//! wrote (flags, width, precision, the length that fits the value) and one argument of the C type that
//! conversion takes, read from the argument buffer at CUDA's offsets (each argument at the next multiple of
//! its size: 4 for `int`-sized and narrower integers and `%c`, 8 for `l`/`ll`/`j`/`z`/`t` integers,
//! doubles and pointers). The format itself never reaches libc. An argument past the end of a buffer of
//! known size, `%n`, `L` (long double), `%lc`/`%ls` and an unknown conversion are printed as written
//! (CUDA prints nothing for them); a width or precision above [`MAX_WIDTH`] too.
//!
//! Output goes into the launch's buffer, one printf call's text at a time (a call's text is never split or
//! interleaved with another's; lines printed by one call each come out whole), and is written to the
//! process's stdout (C's `stdout`, flushed) when the launch's work-groups have all run, before the queue
//! reports the launch complete: no later than the sync that waits for it. The buffer holds at most
//! `OFFLOAD_RS_PRINTF_BUFFER` bytes per launch (read at `olInit`; default [`DEFAULT_BUFFER`], CUDA's
//! `cudaLimitPrintfFifoSize`); a call whose text does not fit is dropped whole and a note on stderr says
//! how many calls and bytes were. A printf outside a launch (a constructor) is written at once.
//!
//! # assert and traps
//! A failed assertion prints CUDA's message on stderr (`file:line: function: block: [x,y,z], thread:
//! [x,y,z] Assertion `cond` failed.`, the first [`MAX_ASSERT_LINES`] of a launch); a trap prints nothing
//! then. Either ends the work-item (the JIT made it exit) and stops the launch: work-groups not yet
//! started do not run; the launch's error (at the queue's next sync, `OL_ERRC_BACKEND_FAILURE`) names the
//! kernel, the first failure's file, line, function, block and thread. The process, other launches and
//! other queues go on. In a program's constructor the constructor returns at it and `olCreateProgram`
//! fails (`OL_ERRC_BACKEND_FAILURE`, [`take_outside_failure`]).
//!
//! # The time limit
//! `OFFLOAD_RS_KERNEL_TIMEOUT=<seconds>` (read at `olInit`; a decimal number from 0.001 to 604800; unset,
//! empty or 0: no limit) stops a launch that runs longer, as a GPU driver's watchdog does
//! (`CUDA_ERROR_LAUNCH_TIMEOUT`): the JIT then compiles kernels with stop points (src/jit/stop.rs), and
//! at each due one [`stop_requested`] checks the clock. A launch past the limit ends like a failed
//! assertion (the launch's error names the kernel and the limit; the process, other launches and queues
//! go on), and so does a program's constructor past it (`olCreateProgram` fails). With the limit on, a
//! launch whose work-item failed also stops its other work-items at their next stop point (a work-group
//! waiting for a work-item that trapped), and `olShutDown`, which waits for the work still queued, is
//! bounded by it. Code that runs no loop (there is no stop point in straight-line code) and native ELF
//! images have no stop points. Without the limit nothing is stopped: an endless kernel runs until the
//! process ends, and `olShutDown` waits for it, as CUDA's `cuCtxDestroy` waits on a GPU without a
//! watchdog.

use crate::sync::Mutex;
use crate::threads::ThreadSlot;
use std::cell::Cell;
use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The default per-launch printf buffer (bytes): CUDA's default `cudaLimitPrintfFifoSize`.
pub(crate) const DEFAULT_BUFFER: usize = 1 << 20;
/// Widths and precisions above this are printed as written.
pub(crate) const MAX_WIDTH: usize = 4096;
/// Assertion messages printed per launch; the rest are counted.
pub(crate) const MAX_ASSERT_LINES: u32 = 64;
/// Longest string a `%s` reads without a precision (bytes).
const MAX_STRING: usize = 1 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_BUFFER);

/// Reads `OFFLOAD_RS_PRINTF_BUFFER` (bytes per launch; 0 drops all output; unset or not a number: the
/// default), at `olInit`.
pub fn read_buffer_limit() {
    let v = std::env::var("OFFLOAD_RS_PRINTF_BUFFER").ok().and_then(|v| v.trim().parse().ok());
    LIMIT.store(v.unwrap_or(DEFAULT_BUFFER), Ordering::Relaxed);
}

/// The per-launch printf buffer's size.
pub fn buffer_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// The environment variable of the time limit.
pub(crate) const TIMEOUT_ENV: &str = "OFFLOAD_RS_KERNEL_TIMEOUT";
/// The longest time limit (a week), the shortest (a millisecond).
const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// The time limit in nanoseconds (0: none).
static TIMEOUT: AtomicU64 = AtomicU64::new(0);

/// The time limit `value` of [`TIMEOUT_ENV`] asks for (None: none), or the error's text.
pub(crate) fn parse_timeout(value: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else { return Ok(None) };
    let bad = || {
        format!(
            "{TIMEOUT_ENV}={v}: expected the seconds a launch may run, a decimal number from {} to {} (0: no \
             limit)",
            MIN_TIMEOUT.as_secs_f64(),
            MAX_TIMEOUT.as_secs()
        )
    };
    let secs: f64 = v.parse().map_err(|_| bad())?;
    if secs == 0.0 {
        return Ok(None);
    }
    if !secs.is_finite() || secs < MIN_TIMEOUT.as_secs_f64() || secs > MAX_TIMEOUT.as_secs_f64() {
        return Err(bad());
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

/// Reads [`TIMEOUT_ENV`] (at `olInit`): the limit later launches and loads run under, and whether the JIT
/// compiles with stop points. A bad value changes nothing and is the error.
pub fn read_timeout() -> Result<(), String> {
    let limit = parse_timeout(std::env::var(TIMEOUT_ENV).ok().as_deref())?;
    set_timeout(limit);
    Ok(())
}

/// Sets the time limit (and the JIT's stop points with it).
pub fn set_timeout(limit: Option<Duration>) {
    TIMEOUT.store(limit.map_or(0, |d| d.as_nanos().clamp(1, u64::MAX as u128) as u64), Ordering::Relaxed);
    crate::jit::set_stop_points(limit.is_some());
}

/// The time limit, if any.
pub fn timeout() -> Option<Duration> {
    match TIMEOUT.load(Ordering::Relaxed) {
        0 => None,
        n => Some(Duration::from_nanos(n)),
    }
}

/// The runtime functions for the loader.
pub fn functions() -> crate::jit::RuntimeFunctions {
    crate::jit::RuntimeFunctions { printf: rt_printf, trap: rt_trap, stop_requested }
}

/// The first failure of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// None: a trap
    pub assertion: Option<String>,
    pub file: String,
    pub line: u32,
    pub function: String,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    /// Some: the code ran past this time limit (then the rest is empty)
    pub timeout: Option<Duration>,
}

/// One launch's printf output and failure.
pub struct LaunchLog {
    out: Mutex<Vec<u8>>,
    limit: usize,
    dropped_calls: AtomicU64,
    dropped_bytes: AtomicU64,
    stopped: AtomicBool,
    failures: AtomicU32,
    failure: Mutex<Option<Failure>>,
    /// when the launch's first work-group started (the time limit counts from there)
    started: OnceLock<Instant>,
}

impl Default for LaunchLog {
    fn default() -> Self {
        LaunchLog::new(buffer_limit())
    }
}

impl LaunchLog {
    pub fn new(limit: usize) -> LaunchLog {
        LaunchLog {
            out: Mutex::new(Vec::new()),
            limit,
            dropped_calls: AtomicU64::new(0),
            dropped_bytes: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            failures: AtomicU32::new(0),
            failure: Mutex::new(None),
            started: OnceLock::new(),
        }
    }

    /// A work-item failed: no further work-group starts.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Whether the launch ran past the time limit (counted from the first call: its first work-group's
    /// start, or its first stop point), which then is its failure and stops it.
    pub fn past_time_limit(&self) -> bool {
        let Some(limit) = timeout() else { return false };
        if self.started.get_or_init(Instant::now).elapsed() < limit {
            return false;
        }
        record(Some(self), Failure::timed_out(limit));
        true
    }

    fn append(&self, text: &[u8]) {
        let mut out = self.out.lock();
        if out.len() + text.len() > self.limit {
            self.dropped_calls.fetch_add(1, Ordering::Relaxed);
            self.dropped_bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        } else {
            out.extend_from_slice(text);
        }
    }

    /// Writes the buffered output to stdout (and the note on dropped output to stderr); returns the
    /// first failure, if a work-item failed.
    pub fn finish(&self, kernel: &str) -> Option<Failure> {
        let out = std::mem::take(&mut *self.out.lock());
        if !out.is_empty() {
            write_stdout(&out);
        }
        let calls = self.dropped_calls.swap(0, Ordering::Relaxed);
        if calls > 0 {
            let bytes = self.dropped_bytes.swap(0, Ordering::Relaxed);
            write_stderr(
                format!(
                    "offload-rs: kernel '{kernel}': {calls} printf calls ({bytes} bytes) dropped: the launch's \
                     printf buffer of {} bytes (OFFLOAD_RS_PRINTF_BUFFER) was full\n",
                    self.limit
                )
                .as_bytes(),
            );
        }
        let n = self.failures.load(Ordering::Relaxed);
        if n > MAX_ASSERT_LINES {
            write_stderr(
                format!("offload-rs: kernel '{kernel}': {} more failed assertions not shown\n", n - MAX_ASSERT_LINES)
                    .as_bytes(),
            );
        }
        self.failure.lock().take()
    }
}

impl Failure {
    /// Code that ran past `limit`.
    fn timed_out(limit: Duration) -> Failure {
        Failure {
            assertion: None,
            file: String::new(),
            line: 0,
            function: String::new(),
            block: [0; 3],
            thread: [0; 3],
            timeout: Some(limit),
        }
    }

    /// The error text of `olCreateProgram` when a constructor failed.
    pub fn describe_constructor(&self) -> String {
        if let Some(limit) = self.timeout {
            return format!(
                "the program's constructors stopped at the time limit: they ran longer than {TIMEOUT_ENV} ({} s)",
                limit.as_secs_f64()
            );
        }
        match &self.assertion {
            Some(a) => format!(
                "the program's constructors stopped at a device-side assertion: `{a}` failed at {}:{} in \
                 function '{}'",
                self.file, self.line, self.function
            ),
            None => "the program's constructors stopped at a trap (__builtin_trap, llvm.trap)".to_string(),
        }
    }

    /// The launch's error text.
    pub fn describe(&self, kernel: &str) -> String {
        if let Some(limit) = self.timeout {
            return format!(
                "kernel '{kernel}' ran longer than {TIMEOUT_ENV} ({} s) and was stopped, as a GPU driver's \
                 watchdog stops a kernel (CUDA_ERROR_LAUNCH_TIMEOUT)",
                limit.as_secs_f64()
            );
        }
        let b = self.block;
        let t = self.thread;
        match &self.assertion {
            Some(a) => format!(
                "kernel '{kernel}' stopped by a device-side assertion: `{a}` failed at {}:{} in function '{}' \
                 (block [{},{},{}], thread [{},{},{}])",
                self.file, self.line, self.function, b[0], b[1], b[2], t[0], t[1], t[2]
            ),
            None => format!(
                "kernel '{kernel}' stopped by a trap (__builtin_trap, llvm.trap) in block [{},{},{}], thread \
                 [{},{},{}]",
                b[0], b[1], b[2], t[0], t[1], t[2]
            ),
        }
    }
}

thread_local! {
    static CURRENT: Cell<*const LaunchLog> = const { Cell::new(std::ptr::null()) };
}

/// The first failure outside a launch (a program's constructors) on each thread: a [`ThreadSlot`], not a
/// `thread_local!` (whose destructor registration glibc cannot fail without ending the process).
static OUTSIDE: ThreadSlot<Cell<Option<Failure>>> = ThreadSlot::new();

/// Takes the first assertion failure or trap of code run outside a launch on this thread (a program's
/// constructors, which return at it) since the last call.
pub fn take_outside_failure() -> Option<Failure> {
    OUTSIDE.with(|| Cell::new(None), |c| c.take()).flatten()
}

/// Makes `log` this thread's current launch until the guard is dropped.
pub fn enter(log: &LaunchLog) -> Entered<'_> {
    let prev = CURRENT.with(|c| c.replace(log));
    Entered { prev, _log: std::marker::PhantomData }
}

pub struct Entered<'a> {
    prev: *const LaunchLog,
    _log: std::marker::PhantomData<&'a LaunchLog>,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

fn with_current<R>(f: impl FnOnce(Option<&LaunchLog>) -> R) -> R {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: registered by `enter` for a scope that encloses every kernel call on this thread.
    f(unsafe { p.as_ref() })
}

unsafe extern "C" {
    static stdout: *mut libc::FILE;
}

fn write_stdout(b: &[u8]) {
    // SAFETY: C's `stdout` stream (glibc's global, always initialised); fwrite/fflush lock it.
    unsafe {
        let f = stdout;
        if f.is_null() {
            return;
        }
        libc::fwrite(b.as_ptr() as *const c_void, 1, b.len(), f);
        libc::fflush(f);
    }
}

fn write_stderr(b: &[u8]) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(b);
}

/// Whether `[addr, addr + len)` may be read by the running kernel (under the memory checker: a report
/// and the launch stopped otherwise).
fn readable(addr: usize, len: usize, wi: [u32; 3]) -> bool {
    if !crate::jit::memcheck() {
        return true;
    }
    // SAFETY: called on the thread running the work-group; the checker's frame (if any) is registered.
    unsafe { super::memcheck::check_access(addr, len as u64, 0, wi[0], wi[1], wi[2]) }
}

/// The NUL-terminated string at `p`, at most `max` bytes; None if the checker refused a byte of it.
///
/// # Safety
/// Without the memory checker: `p` is NULL or a readable NUL-terminated string (or `max` readable bytes).
unsafe fn read_str(p: *const c_char, max: usize, wi: [u32; 3]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let p = p as *const u8;
    while out.len() < max {
        // SAFETY: the caller's contract; under the checker each byte is checked before it is read.
        let a = unsafe { p.add(out.len()) };
        if !readable(a as usize, 1, wi) {
            return None;
        }
        // SAFETY: see above.
        let c = unsafe { a.read() };
        if c == 0 {
            break;
        }
        out.push(c);
    }
    Some(out)
}

/// The argument buffer.
struct Args {
    base: *const u8,
    len: u64,
    off: u64,
    wi: [u32; 3],
    taken: i32,
}

impl Args {
    /// The next argument of `size` (4 or 8) bytes, at CUDA's offset; None past the buffer's end.
    fn take(&mut self, size: u64) -> Option<u64> {
        let off = self.off.next_multiple_of(size);
        let end = off.checked_add(size)?;
        if end > self.len || self.base.is_null() {
            return None;
        }
        // SAFETY: inside the buffer the caller of `rt_printf` passed (its length known, or trusted as CUDA
        // does when unknown); under the checker the range is checked first.
        let a = unsafe { self.base.add(off as usize) };
        if !readable(a as usize, size as usize, self.wi) {
            return None;
        }
        self.off = end;
        self.taken += 1;
        // SAFETY: see above; unaligned reads.
        Some(unsafe {
            if size == 4 { (a as *const u32).read_unaligned() as u64 } else { (a as *const u64).read_unaligned() }
        })
    }
}

/// One value for `snprintf`.
enum Val {
    Int(i64),
    CInt(c_int),
    Dbl(f64),
    Ptr(*const c_void),
    Str(CString),
}

/// `snprintf(spec, v)`, appended to `out`.
fn c_format(out: &mut Vec<u8>, spec: &str, v: Val) {
    let Ok(spec) = CString::new(spec) else { return };
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: `spec` is a one-conversion format this module built for exactly the C type passed;
        // `buf` has `buf.len()` writable bytes.
        let n = unsafe {
            let (b, l, s) = (buf.as_mut_ptr() as *mut c_char, buf.len(), spec.as_ptr());
            match &v {
                Val::Int(i) => libc::snprintf(b, l, s, *i as libc::c_longlong),
                Val::CInt(i) => libc::snprintf(b, l, s, *i),
                Val::Dbl(d) => libc::snprintf(b, l, s, *d),
                Val::Ptr(p) => libc::snprintf(b, l, s, *p),
                Val::Str(c) => libc::snprintf(b, l, s, c.as_ptr()),
            }
        };
        if n < 0 {
            return;
        }
        let n = n as usize;
        if n < buf.len() {
            out.extend_from_slice(&buf[..n]);
            return;
        }
        buf = vec![0u8; n + 1];
    }
}

/// Formats `fmt` with the arguments in `args` (rules in the module docs).
fn format(fmt: &[u8], args: &mut Args, out: &mut Vec<u8>) {
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            let next = fmt[i..].iter().position(|&b| b == b'%').map_or(fmt.len(), |p| i + p);
            out.extend_from_slice(&fmt[i..next]);
            i = next;
            continue;
        }
        let start = i;
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let verbatim = |out: &mut Vec<u8>, end: usize| out.extend_from_slice(&fmt[start..end.min(fmt.len())]);
        let mut flags = String::new();
        while let Some(&f) = fmt.get(i).filter(|f| b"-+ #0'".contains(f)) {
            if !flags.contains(f as char) {
                flags.push(f as char);
            }
            i += 1;
        }
        // width and precision: digits or `*` (an int argument)
        let number = |i: &mut usize, args: &mut Args| -> Result<Option<i64>, ()> {
            if fmt.get(*i) == Some(&b'*') {
                *i += 1;
                return args.take(4).map(|v| Some(v as u32 as i32 as i64)).ok_or(());
            }
            let s = *i;
            while fmt.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            if *i == s {
                return Ok(None);
            }
            std::str::from_utf8(&fmt[s..*i]).ok().and_then(|t| t.parse::<i64>().ok()).map(Some).ok_or(())
        };
        let Ok(mut width) = number(&mut i, args) else {
            verbatim(out, i);
            continue;
        };
        if let Some(w) = width
            && w < 0
        {
            // a negative `*` width: left-justified
            if !flags.contains('-') {
                flags.push('-');
            }
            width = Some(-w);
        }
        let mut precision = None;
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            match number(&mut i, args) {
                Ok(p) => precision = Some(p.unwrap_or(0)).filter(|&p| p >= 0),
                Err(()) => {
                    verbatim(out, i);
                    continue;
                }
            }
        }
        let mut len = String::new();
        while let Some(&l) = fmt.get(i).filter(|l| b"hljztL".contains(l)) {
            len.push(l as char);
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            verbatim(out, i);
            break;
        };
        i += 1;
        if width.is_some_and(|w| w as usize > MAX_WIDTH) || precision.is_some_and(|p| p as usize > MAX_WIDTH) {
            verbatim(out, i);
            continue;
        }
        let wp = format!(
            "%{flags}{}{}",
            width.map_or(String::new(), |w| w.to_string()),
            precision.map_or(String::new(), |p| format!(".{p}"))
        );
        let wide = matches!(len.as_str(), "l" | "ll" | "j" | "z" | "t");
        let ok_len = matches!(len.as_str(), "" | "h" | "hh" | "l" | "ll" | "j" | "z" | "t");
        match conv {
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' if ok_len => {
                let Some(raw) = args.take(if wide { 8 } else { 4 }) else {
                    verbatim(out, i);
                    continue;
                };
                // the value as the C conversion would see it, printed as a long long
                let signed = matches!(conv, b'd' | b'i');
                let v = match (wide, len.as_str(), signed) {
                    (true, _, _) => raw as i64,
                    (false, "h", true) => raw as i16 as i64,
                    (false, "h", false) => raw as u16 as i64,
                    (false, "hh", true) => raw as i8 as i64,
                    (false, "hh", false) => raw as u8 as i64,
                    (false, _, true) => raw as u32 as i32 as i64,
                    (false, _, false) => raw as u32 as i64,
                };
                c_format(out, &format!("{wp}ll{}", conv as char), Val::Int(v));
            }
            b'c' if len.is_empty() => {
                let Some(raw) = args.take(4) else {
                    verbatim(out, i);
                    continue;
                };
                c_format(out, &format!("{wp}c"), Val::CInt(raw as u32 as i32));
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' if len.is_empty() || len == "l" => {
                let Some(raw) = args.take(8) else {
                    verbatim(out, i);
                    continue;
                };
                c_format(out, &format!("{wp}{}", conv as char), Val::Dbl(f64::from_bits(raw)));
            }
            b'p' if len.is_empty() => {
                let Some(raw) = args.take(8) else {
                    verbatim(out, i);
                    continue;
                };
                c_format(out, &format!("{wp}p"), Val::Ptr(raw as usize as *const c_void));
            }
            b's' if len.is_empty() => {
                let Some(raw) = args.take(8) else {
                    verbatim(out, i);
                    continue;
                };
                let max = precision.map_or(MAX_STRING, |p| p as usize);
                let s = if raw == 0 {
                    Some(b"(null)".to_vec())
                } else {
                    // SAFETY: a kernel's %s argument: a string pointer (checked byte by byte under the
                    // memory checker; otherwise trusted as the kernel's own loads are)
                    unsafe { read_str(raw as usize as *const c_char, max, args.wi) }
                };
                let s = s.unwrap_or_else(|| b"(invalid string)".to_vec());
                let c = CString::new(s).unwrap_or_default();
                c_format(out, &format!("{wp}s"), Val::Str(c));
            }
            _ => verbatim(out, i),
        }
    }
}

/// [`crate::jit::PrintfFn`].
///
/// # Safety
/// Called by JIT'd code only: `fmt` a string and `args` a buffer of `args_len` bytes (or of the layout
/// the format asks for when `args_len` is `u64::MAX`), as the kernel's printf passed them.
unsafe extern "C" fn rt_printf(
    fmt: *const c_char,
    args: *const u8,
    args_len: u64,
    cuda: i32,
    x: u32,
    y: u32,
    z: u32,
) -> i32 {
    let wi = [x, y, z];
    if fmt.is_null() {
        return -1;
    }
    // SAFETY: the caller's contract (a kernel's format string, checked under the memory checker).
    let Some(f) = (unsafe { read_str(fmt, MAX_STRING, wi) }) else { return -2 };
    let mut a = Args { base: args, len: args_len, off: 0, wi, taken: 0 };
    let mut out = Vec::new();
    format(&f, &mut a, &mut out);
    let n = if cuda != 0 { a.taken } else { out.len().min(i32::MAX as usize) as i32 };
    with_current(|log| match log {
        Some(l) => l.append(&out),
        None => write_stdout(&out),
    });
    n
}

/// [`crate::jit::TrapFn`].
///
/// # Safety
/// Called by JIT'd code only, with NULL or string pointers.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rt_trap(
    msg: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
    x: u32,
    y: u32,
    z: u32,
    gx: u32,
    gy: u32,
    gz: u32,
) {
    let wi = [x, y, z];
    let s = |p: *const c_char| -> Option<String> {
        if p.is_null() {
            return None;
        }
        // SAFETY: the caller's contract (assert's constant strings).
        unsafe { read_str(p, 4096, wi) }.map(|v| String::from_utf8_lossy(&v).into_owned())
    };
    let assertion = s(msg);
    let failure = Failure {
        assertion: assertion.clone().or_else(|| (!file.is_null()).then(String::new)),
        file: s(file).unwrap_or_default(),
        line,
        function: s(function).unwrap_or_default(),
        block: [gx, gy, gz],
        thread: wi,
        timeout: None,
    };
    with_current(|log| {
        let first = log.is_none_or(|l| l.failures.fetch_add(1, Ordering::Relaxed) < MAX_ASSERT_LINES);
        if let Some(a) = &failure.assertion
            && first
        {
            let (b, t) = (failure.block, failure.thread);
            write_stderr(
                format!(
                    "{}:{}: {}: block: [{},{},{}], thread: [{},{},{}] Assertion `{a}` failed.\n",
                    failure.file, failure.line, failure.function, b[0], b[1], b[2], t[0], t[1], t[2]
                )
                .as_bytes(),
            );
        }
        record(log, failure);
    });
}

/// Keeps `failure` as the launch's (`log`) or, outside a launch, this thread's, unless one is kept
/// already, and stops the launch.
fn record(log: Option<&LaunchLog>, failure: Failure) {
    match log {
        Some(l) => {
            let mut f = l.failure.lock();
            if f.is_none() {
                *f = Some(failure);
            }
            l.stopped.store(true, Ordering::Relaxed);
        }
        None => {
            // (without memory for this thread's slot the failure is lost: the constructor still returned)
            OUTSIDE.with(
                || Cell::new(None),
                |c| {
                    let prev = c.take();
                    c.set(Some(prev.unwrap_or(failure)));
                },
            );
        }
    }
}

/// [`crate::jit::RuntimeFunctions::stop_requested`]: at a due stop point, whether the code must stop: its
/// launch was stopped (a work-item failed), or it ran past the time limit (which is then its failure).
fn stop_requested() -> bool {
    with_current(|log| match log {
        Some(l) => l.stopped() || l.past_time_limit(),
        // a constructor or destructor
        None => {
            let (Some(limit), Some(started)) = (timeout(), crate::jit::void_call_started()) else { return false };
            if started.elapsed() < limit {
                return false;
            }
            record(None, Failure::timed_out(limit));
            true
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CUDA-layout buffer.
    #[derive(Default)]
    struct Buf(Vec<u8>);
    impl Buf {
        fn put(&mut self, b: &[u8]) -> &mut Self {
            let at = self.0.len().next_multiple_of(b.len());
            self.0.resize(at, 0);
            self.0.extend_from_slice(b);
            self
        }
        fn i(&mut self, v: i32) -> &mut Self {
            self.put(&v.to_ne_bytes())
        }
        fn l(&mut self, v: i64) -> &mut Self {
            self.put(&v.to_ne_bytes())
        }
        fn d(&mut self, v: f64) -> &mut Self {
            self.put(&v.to_ne_bytes())
        }
    }

    fn fmt(f: &str, b: &Buf) -> String {
        let mut a = Args { base: b.0.as_ptr(), len: b.0.len() as u64, off: 0, wi: [0; 3], taken: 0 };
        let mut out = Vec::new();
        format(f.as_bytes(), &mut a, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn host_i(f: &str, v: i64) -> String {
        let mut out = Vec::new();
        c_format(&mut out, f, Val::Int(v));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn conversions_match_the_hosts() {
        let mut b = Buf::default();
        b.i(-42).i(42).i(255).i(8).l(-1234567890123).l(1 << 40).i(b'z' as i32).d(3.25).d(-1.5e-7).d(1234.5678);
        let s = "a str\0";
        b.l(s.as_ptr() as i64).l(0x1234);
        let got = fmt("%d %i %x %o %lld %lx %c %f %e %g %s %p|%%", &b);
        let want = format!(
            "-42 42 ff 10 -1234567890123 10000000000 z 3.250000 -1.500000e-07 1234.57 a str {}|%",
            host_i("%p", 0x1234)
        );
        assert_eq!(got, want);
        let mut b = Buf::default();
        b.i(7).i(-3).i(5).d(2.0).i(300).i(70000).d(0.1);
        assert_eq!(
            fmt("[%5d][%-5d][%05d][%+.3a][%hhd][%hu][%10.4f]", &b),
            "[    7][-3   ][00005][+0x1.000p+1][44][4464][    0.1000]"
        );
        let mut b = Buf::default();
        b.i(6).i(2).d(2.5151);
        assert_eq!(fmt("[%*.*f]", &b), "[  2.52]");
    }

    #[test]
    fn what_cannot_be_carried_is_printed_as_written() {
        let b = Buf::default();
        assert_eq!(fmt("x=%d y=%Lf %n %q", &b), "x=%d y=%Lf %n %q");
        let mut b = Buf::default();
        b.i(1);
        assert_eq!(fmt("%d %d", &b), "1 %d");
        assert_eq!(fmt("%99999d", &b), "%99999d");
        assert_eq!(fmt("trailing %", &b), "trailing %");
    }

    #[test]
    fn the_buffer_is_bounded_and_drops_whole_calls() {
        let log = LaunchLog::new(10);
        log.append(b"12345\n");
        log.append(b"678901\n");
        log.append(b"abc\n");
        assert_eq!(&*log.out.lock(), b"12345\nabc\n");
        assert_eq!(log.dropped_calls.load(Ordering::Relaxed), 1);
    }
}
