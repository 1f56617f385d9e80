//! The compile helper: LLVM runs on image bytes in a separate process, never in the client's.
//!
//! LLVM's bitcode reader is not hardened against corrupt input (a bit-flipped image can crash it inside
//! `parseMetadata`, seen with LLVM 22.1.8), so every compile (CPU objects, NVPTX PTX) is sent to a helper
//! process, `offload-rs-jit`, over a socket; a crash of the helper is `JitError::Compile` for that image
//! only and the next compile starts a fresh helper.
//!
//! * **Shipping**: the helper is an executable of this crate (`src/bin/offload-rs-jit.rs`) that
//!   `make lib` / `make install` put in `offload-rs/` beside the library; the library finds it from its
//!   own location (`dladdr`, then `/proc/self/maps` when that path is relative).
//!   `OFFLOAD_RS_JIT_HELPER=<path>` names it explicitly (the Rust tests and the fuzz targets do).
//! * **Starting** (at the first compile): `posix_spawn` (no `fork` of the client: no atfork handlers, no
//!   page tables copied, cheap whatever the client's size), with every signal at its default disposition,
//!   an empty signal mask, its own process group (a Ctrl-C for the client's terminal does not reach it),
//!   `/dev/null` as stdin and no descriptor of the client but stdout and stderr. The spawned process spawns the
//!   real server and exits at once, so the server is not the client's child: a client's
//!   `wait()`/`waitpid(-1)` never reaps it and never waits for it. The server says hello with the build
//!   id; a helper from another build is not used.
//! * **Reuse**: a pool of at most one helper per core; each serves one request at a time, idle ones wait
//!   for the next compile, so 20 threads compiling different images share a few processes. A helper
//!   that died while idle is replaced. A helper exits when its socket closes (the client exited or
//!   dropped it). After a client's `fork()`, the child starts its own helpers.
//! * **Timeouts**: 600 s per compile (then the helper is killed and the compile fails), 60 s for a new
//!   helper to start: the spawned process to exit (it only forks the server) and the server's hello. A
//!   spawned process still running then is killed and reaped, and that compile runs here (fallback).
//! * **Fallback**: when no helper can be started (none installed, another build's, `RLIMIT_NPROC`, a
//!   pids cgroup), the compile runs in the calling process (one line under `OFFLOAD_RS_DEBUG`): the
//!   answer is the same, only a crash of LLVM is no longer contained. `OFFLOAD_RS_JIT_IN_PROCESS=1`
//!   chooses that explicitly.
//!
//! Protocol (both directions framed `len: u64 | id: u64 | body`): the request body is
//! [`Request::encode`]; the response body is an encoded `Result` ([`encode_result`]).

use std::ffi::{CStr, CString, OsStr};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::JitError;

/// How long one compile may take before its helper is killed.
pub(crate) const COMPILE_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a new helper may take to start: the spawned process to exit, then the server's hello.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest frame either side accepts (a response is an object file or PTX text).
const MAX_FRAME: u64 = 1 << 30;
const HELLO_MAGIC: &[u8; 8] = b"OLRSJIT1";
/// The descriptor the helper talks on.
const HELPER_FD: i32 = 3;

/// The JIT's build id (see build.rs).
pub(crate) const BUILD_ID: &str = env!("OFFLOAD_RS_BUILD_ID");

/// One job for the helper.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request<'a> {
    /// Bitcode -> x86-64 relocatable object and kernel metadata (`compile::compile_in_process`), with
    /// the memory checker's instrumentation when `memcheck`, specialised for one kernel and group size
    /// when `kernel` is not empty (`compile::Spec`); `replaced`: generic code that specialisations
    /// replace at launch (`compile::generic_is_replaced`); for the client's target `triple`, `cpu`,
    /// `features`, `vector_math` (target.rs: the helper compiles for exactly these, whatever CPU it sees
    /// itself).
    Cpu {
        bc: &'a [u8],
        opt: u32,
        memcheck: bool,
        replaced: bool,
        kernel: &'a str,
        group: [u32; 3],
        triple: &'a str,
        cpu: &'a str,
        features: &'a str,
        vector_math: bool,
    },
    /// NVPTX bitcode -> PTX text for `cpu` (`sm_90`) with `features` (`+ptx84`).
    Ptx { bc: &'a [u8], cpu: &'a str, features: &'a str, opt: u32 },
}

impl<'a> Request<'a> {
    /// `kind: u8 | opt: u8 | flags: u8 (1 memcheck, 2 replaced, 4 no vector math) | group: 3 x u32 | (len: u32, bytes) for
    /// four strings (CPU: the specialised kernel, triple, cpu, features; PTX: cpu, features, "", "") |
    /// bitcode`.
    fn encode(&self) -> Vec<u8> {
        let (kind, opt, flags, group, strs, bc): (u8, u32, u8, [u32; 3], [&str; 4], &[u8]) = match *self {
            Request::Cpu { bc, opt, memcheck, replaced, kernel, group, triple, cpu, features, vector_math } => {
                let flags = u8::from(memcheck) | (u8::from(replaced) << 1) | (u8::from(!vector_math) << 2);
                (1, opt, flags, group, [kernel, triple, cpu, features], bc)
            }
            Request::Ptx { bc, cpu, features, opt } => (2, opt, 0, [0; 3], [cpu, features, "", ""], bc),
        };
        let mut v = Vec::with_capacity(bc.len() + 64);
        v.push(kind);
        v.push(opt.min(3) as u8);
        v.push(flags);
        for g in group {
            v.extend_from_slice(&g.to_le_bytes());
        }
        for s in strs {
            v.extend_from_slice(&(s.len() as u32).to_le_bytes());
            v.extend_from_slice(s.as_bytes());
        }
        v.extend_from_slice(bc);
        v
    }

    fn decode(v: &'a [u8]) -> Option<Request<'a>> {
        let (&kind, rest) = v.split_first()?;
        let (&opt, rest) = rest.split_first()?;
        let (&flags, mut rest) = rest.split_first()?;
        let mut group = [0u32; 3];
        for g in &mut group {
            *g = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
            rest = &rest[4..];
        }
        let mut strs = ["", "", "", ""];
        for s in &mut strs {
            let n = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            *s = std::str::from_utf8(rest.get(4..4usize.checked_add(n)?)?).ok()?;
            rest = &rest[4 + n..];
        }
        let opt = u32::from(opt);
        match kind {
            1 => Some(Request::Cpu {
                bc: rest,
                opt,
                memcheck: flags & 1 != 0,
                replaced: flags & 2 != 0,
                kernel: strs[0],
                group,
                triple: strs[1],
                cpu: strs[2],
                features: strs[3],
                vector_math: flags & 4 == 0,
            }),
            2 => Some(Request::Ptx { bc: rest, cpu: strs[0], features: strs[1], opt }),
            _ => None,
        }
    }

    /// Runs the job here, in this process: the helper's side, and the fallback.
    fn execute(&self) -> Result<Vec<u8>, JitError> {
        match *self {
            Request::Cpu { bc, opt, memcheck, replaced, kernel, group, triple, cpu, features, vector_math } => {
                let spec = (!kernel.is_empty())
                    .then(|| super::compile::Spec { kernel: kernel.to_string(), group_size: group });
                let target = super::target::CpuTarget {
                    triple: triple.to_string(),
                    cpu: cpu.to_string(),
                    features: features.to_string(),
                    vector_math,
                };
                super::compile::compile_in_process(bc, &target, opt, memcheck, replaced, spec.as_ref())
                    .map(|(o, m)| super::compile::encode_object(&o, &m))
            }
            Request::Ptx { bc, cpu, features, opt } => {
                super::nvptx::ptx_in_process(bc, cpu, features, opt).map(String::into_bytes)
            }
        }
    }
}

/// Compiles bitcode to an x86-64 ELF relocatable object: (object, kernel metadata), in the compile
/// helper process, or here when there is none. `memcheck`: instrument every memory access of the
/// kernels (see `plugin::cpu::memcheck`); `spec`: a launch-time specialisation.
pub(crate) fn compile_cpu(
    bc: &[u8],
    target: &super::target::CpuTarget,
    opt: u32,
    memcheck: bool,
    spec: Option<&super::compile::Spec>,
) -> Result<(Vec<u8>, Vec<super::KernelMeta>), JitError> {
    let payload = run(Request::Cpu {
        bc,
        opt,
        memcheck,
        replaced: super::compile::generic_is_replaced(memcheck, spec),
        kernel: spec.map_or("", |s| s.kernel.as_str()),
        group: spec.map_or([0; 3], |s| s.group_size),
        triple: &target.triple,
        cpu: &target.cpu,
        features: &target.features,
        vector_math: target.vector_math,
    })?;
    super::compile::decode_object(&payload)
        .ok_or_else(|| JitError::Compile("internal: malformed result from the JIT helper".into()))
}

/// PTX for NVPTX bitcode, compiled in the helper process (or here when there is none).
pub fn compile_ptx(bc: &[u8], cpu: &str, features: &str) -> Result<String, JitError> {
    let opt = super::compile::opt_level();
    let v = run(Request::Ptx { bc, cpu, features, opt })?;
    String::from_utf8(v).map_err(|_| JitError::Compile("internal: PTX from the JIT helper is not text".into()))
}

/// `tag: u8 | payload`; tag 0 is success, the others name the `JitError` variant.
pub(crate) fn encode_result(r: Result<Vec<u8>, JitError>) -> Vec<u8> {
    let (tag, body) = match r {
        Ok(v) => (0u8, v),
        Err(JitError::InvalidBinary(m)) => (1, m.into_bytes()),
        Err(JitError::Compile(m)) => (2, m.into_bytes()),
        Err(JitError::Link(m)) => (3, m.into_bytes()),
        Err(JitError::Io(m)) => (4, m.into_bytes()),
        Err(JitError::NotFound(m)) => (5, m.into_bytes()),
        Err(JitError::Run(m)) => (6, m.into_bytes()),
        Err(JitError::InvalidTarget(m)) => (7, m.into_bytes()),
    };
    let mut v = Vec::with_capacity(body.len() + 1);
    v.push(tag);
    v.extend_from_slice(&body);
    v
}

pub(crate) fn decode_result(mut v: Vec<u8>) -> Result<Vec<u8>, JitError> {
    if v.is_empty() {
        return Err(JitError::Compile("internal: empty result from the JIT helper".into()));
    }
    let tag = v.remove(0);
    let msg = || String::from_utf8_lossy(&v).into_owned();
    match tag {
        0 => Ok(v),
        1 => Err(JitError::InvalidBinary(msg())),
        3 => Err(JitError::Link(msg())),
        4 => Err(JitError::Io(msg())),
        5 => Err(JitError::NotFound(msg())),
        6 => Err(JitError::Run(msg())),
        7 => Err(JitError::InvalidTarget(msg())),
        _ => Err(JitError::Compile(msg())),
    }
}

/// A one-line note on stderr when `OFFLOAD_RS_DEBUG` is set.
pub(crate) fn debug(msg: &str) {
    if std::env::var_os("OFFLOAD_RS_DEBUG").is_some() {
        eprintln!("offload-rs: {msg}");
    }
}

fn in_process_forced() -> bool {
    std::env::var_os("OFFLOAD_RS_JIT_IN_PROCESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `req` in a helper process, or here when no helper can be started. Returns the job's payload.
pub(crate) fn run(req: Request<'_>) -> Result<Vec<u8>, JitError> {
    if in_process_forced() {
        return req.execute();
    }
    let t0 = Instant::now();
    match pool().acquire() {
        Ok(mut conn) => {
            if super::compile::timing() {
                super::compile::time_line(&format!("helper acquired in {:.2} ms", t0.elapsed().as_secs_f64() * 1e3));
            }
            let r = conn.call(&req.encode());
            let reusable = r.is_ok();
            pool().release(conn, reusable);
            decode_result(r.map_err(JitError::Compile)?)
        }
        Err(why) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                debug(&format!("JIT helper unavailable ({why}); compiling in the calling process"));
            }
            req.execute()
        }
    }
}

/// A connection to one running helper.
struct Conn {
    sock: UnixStream,
    pid: libc::pid_t,
}

impl Conn {
    /// Whether the idle helper is still there (an idle helper never writes: readable means EOF).
    fn alive(&self) -> bool {
        let mut pfd = libc::pollfd { fd: self.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: polling one valid descriptor without waiting.
        let r = unsafe { libc::poll(&mut pfd, 1, 0) };
        r == 0
    }

    /// Sends one request and reads its response. `Err` says why there is none (the helper is gone).
    fn call(&mut self, body: &[u8]) -> Result<Vec<u8>, String> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + COMPILE_TIMEOUT;
        let died = || "the JIT helper process died while compiling this image (LLVM crashed on it?)".to_string();
        if write_frame(&self.sock, id, body, deadline).is_err() {
            self.kill();
            return Err(died());
        }
        match read_frame(&mut self.sock, deadline) {
            Ok((rid, v)) if rid == id => Ok(v),
            Ok(_) => {
                self.kill();
                Err("internal: the JIT helper answered another request".into())
            }
            Err(FrameError::Timeout) => {
                self.kill();
                Err(format!("LLVM did not finish within {} s", COMPILE_TIMEOUT.as_secs()))
            }
            Err(_) => {
                self.kill();
                Err(died())
            }
        }
    }

    fn kill(&self) {
        if self.pid > 0 {
            // SAFETY: signalling the helper we started (it is alive or a zombie of init's until our
            // socket end, which it holds, reports end-of-file).
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

#[derive(Debug)]
enum FrameError {
    Timeout,
    Closed,
    Malformed,
}

fn write_frame(sock: &UnixStream, id: u64, body: &[u8], deadline: Instant) -> Result<(), FrameError> {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&(body.len() as u64).to_le_bytes());
    head[8..].copy_from_slice(&id.to_le_bytes());
    for part in [&head[..], body] {
        let mut off = 0;
        while off < part.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(FrameError::Timeout);
            }
            let _ = sock.set_write_timeout(Some(left));
            // SAFETY: sending from a live buffer; MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
            let n = unsafe {
                libc::send(
                    sock.as_raw_fd(),
                    part[off..].as_ptr() as *const libc::c_void,
                    part.len() - off,
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::Interrupted => continue,
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => return Err(FrameError::Timeout),
                    _ => return Err(FrameError::Closed),
                }
            }
            off += n as usize;
        }
    }
    Ok(())
}

fn read_exact_by(sock: &mut UnixStream, buf: &mut [u8], deadline: Option<Instant>) -> Result<(), FrameError> {
    let mut off = 0;
    while off < buf.len() {
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(FrameError::Timeout);
            }
            let _ = sock.set_read_timeout(Some(left));
        }
        match sock.read(&mut buf[off..]) {
            Ok(0) => return Err(FrameError::Closed),
            Ok(n) => off += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(FrameError::Timeout);
            }
            Err(_) => return Err(FrameError::Closed),
        }
    }
    Ok(())
}

fn read_frame(sock: &mut UnixStream, deadline: Instant) -> Result<(u64, Vec<u8>), FrameError> {
    read_frame_by(sock, Some(deadline))
}

fn read_frame_by(sock: &mut UnixStream, deadline: Option<Instant>) -> Result<(u64, Vec<u8>), FrameError> {
    let mut head = [0u8; 16];
    read_exact_by(sock, &mut head, deadline)?;
    let (len, id) = head.split_at(8);
    let len = u64::from_le_bytes(len.try_into().map_err(|_| FrameError::Malformed)?);
    let id = u64::from_le_bytes(id.try_into().map_err(|_| FrameError::Malformed)?);
    if len > MAX_FRAME {
        return Err(FrameError::Malformed);
    }
    let mut body = vec![0u8; len as usize];
    read_exact_by(sock, &mut body, deadline)?;
    Ok((id, body))
}

struct PoolState {
    /// The process the helpers belong to (a forked child must not share its parent's sockets).
    owner: u32,
    idle: Vec<Conn>,
    busy: usize,
}

struct Pool {
    state: Mutex<PoolState>,
    cv: Condvar,
    max: usize,
}

fn pool() -> &'static Pool {
    static P: OnceLock<Pool> = OnceLock::new();
    P.get_or_init(|| Pool {
        state: Mutex::new(PoolState { owner: std::process::id(), idle: Vec::new(), busy: 0 }),
        cv: Condvar::new(),
        max: std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 16),
    })
}

impl Pool {
    fn acquire(&self) -> Result<Conn, String> {
        let path = helper_path()?;
        let mut st = self.state.lock();
        let me = std::process::id();
        if st.owner != me {
            // A forked copy of the pool: the sockets are shared with the parent's helpers; closing our
            // copies leaves the parent's untouched.
            st.idle.clear();
            st.busy = 0;
            st.owner = me;
        }
        loop {
            while let Some(c) = st.idle.pop() {
                if c.alive() {
                    st.busy += 1;
                    return Ok(c);
                }
            }
            if st.busy < self.max {
                st.busy += 1;
                drop(st);
                let r = spawn(path, START_TIMEOUT);
                if r.is_err() {
                    self.state.lock().busy -= 1;
                    self.cv.notify_one();
                }
                return r;
            }
            self.cv.wait(&mut st);
        }
    }

    fn release(&self, conn: Conn, reusable: bool) {
        let mut st = self.state.lock();
        if st.owner == std::process::id() {
            st.busy = st.busy.saturating_sub(1);
            if reusable {
                st.idle.push(conn);
            }
        }
        drop(st);
        self.cv.notify_one();
    }
}

/// The helper executable, found once: `OFFLOAD_RS_JIT_HELPER`, else beside our own code.
fn helper_path() -> Result<&'static CStr, String> {
    static PATH: OnceLock<Result<CString, String>> = OnceLock::new();
    PATH.get_or_init(|| {
        let p = match std::env::var_os("OFFLOAD_RS_JIT_HELPER").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => {
                let me = own_file().ok_or("cannot tell where the library was loaded from")?;
                let dir = me.parent().unwrap_or(Path::new("/"));
                let candidates = [
                    dir.join("offload-rs/offload-rs-jit"),
                    // cargo's layout: target/<profile>/{<bin>, deps/<test>}
                    dir.join("offload-rs-jit"),
                    dir.join("../offload-rs-jit"),
                ];
                candidates.into_iter().find(|c| is_executable(c)).ok_or_else(|| {
                    format!("no offload-rs/offload-rs-jit beside {} (installed by `make install`)", me.display())
                })?
            }
        };
        CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("bad helper path {}", p.display()))
    })
    .as_ref()
    .map(|c| c.as_c_str())
    .map_err(Clone::clone)
}

fn is_executable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() on a NUL-terminated path.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// The file our code was loaded from: the library (or the executable it is linked into).
fn own_file() -> Option<PathBuf> {
    let addr = own_file as *const () as usize;
    // SAFETY: dladdr fills `info` for an address inside a loaded object; the strings it points to live
    // as long as the object stays loaded (we are inside it).
    let from_dladdr = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            Some(PathBuf::from(OsStr::from_bytes(CStr::from_ptr(info.dli_fname).to_bytes())))
        } else {
            None
        }
    };
    if let Some(p) = &from_dladdr
        && p.is_absolute()
    {
        return from_dladdr;
    }
    // A relative name (LD_LIBRARY_PATH=build/lib) is relative to the directory at load time: ask the
    // kernel which file maps our code.
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let range = f.next()?;
        let (lo, hi) = range.split_once('-')?;
        let (lo, hi) = (usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?);
        if (lo..hi).contains(&addr) {
            let path = f.nth(4)?;
            return Some(PathBuf::from(path));
        }
    }
    from_dladdr
}

/// Starts a helper: posix_spawn `path detach-serve`, which forks the server and exits; reads its hello.
/// (A helper of an older build does not know the mode and exits at once: the compile then runs here.)
/// Both within `timeout`: a spawned process still running then is killed and reaped.
fn spawn(path: &CStr, timeout: Duration) -> Result<Conn, String> {
    let deadline = Instant::now() + timeout;
    let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    let pid = spawn_process(path, &[path, c"detach-serve"], theirs.as_raw_fd())?;
    drop(theirs);
    reap_by(pid, deadline).map_err(|e| format!("the helper {}: {e}", path.to_string_lossy()))?;
    let mut ours = ours;
    let (_, hello) = read_frame_by(&mut ours, Some(deadline))
        .map_err(|e| format!("the helper {} did not start ({e:?})", path.to_string_lossy()))?;
    let ok = hello.len() == 8 + 64 + 4 && &hello[..8] == HELLO_MAGIC;
    if !ok {
        return Err(format!("the helper {} said something unexpected", path.to_string_lossy()));
    }
    if &hello[8..72] != BUILD_ID.as_bytes() {
        return Err(format!(
            "the helper {} is from another build ({}, we are {BUILD_ID})",
            path.to_string_lossy(),
            String::from_utf8_lossy(&hello[8..72])
        ));
    }
    let pid = i32::from_le_bytes(hello[72..76].try_into().unwrap_or([0; 4]));
    Ok(Conn { sock: ours, pid })
}

/// `posix_spawn(path, argv)` with clean state: default signal dispositions, empty mask, own process
/// group, stdin from /dev/null, `fd` as descriptor 3, nothing else but stdout/stderr. Returns its pid
/// (the caller reaps it: [`reap_by`]).
fn spawn_process(path: &CStr, argv: &[&CStr], fd: i32) -> Result<libc::pid_t, String> {
    let mut argv_p: Vec<*mut libc::c_char> = argv.iter().map(|a| a.as_ptr() as *mut libc::c_char).collect();
    argv_p.push(std::ptr::null_mut());
    let devnull = c"/dev/null";
    // SAFETY: the attribute and file-action objects are initialised before use and destroyed after;
    // every pointer handed to posix_spawn (path, argv, environ) is NUL-terminated and outlives the
    // call.
    unsafe {
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut fa);
        libc::posix_spawnattr_init(&mut attr);
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigemptyset(&mut none);
        libc::posix_spawnattr_setsigdefault(&mut attr, &all);
        libc::posix_spawnattr_setsigmask(&mut attr, &none);
        libc::posix_spawnattr_setpgroup(&mut attr, 0);
        libc::posix_spawnattr_setflags(
            &mut attr,
            (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETPGROUP) as _,
        );
        libc::posix_spawn_file_actions_addopen(&mut fa, 0, devnull.as_ptr(), libc::O_RDONLY, 0);
        // (dup2 onto itself clears close-on-exec, glibc >= 2.29)
        libc::posix_spawn_file_actions_adddup2(&mut fa, fd, HELPER_FD);
        libc::posix_spawn_file_actions_addclosefrom_np(&mut fa, HELPER_FD + 1);
        let mut pid: libc::pid_t = 0;
        unsafe extern "C" {
            static environ: *const *mut libc::c_char;
        }
        let rc = libc::posix_spawn(&mut pid, path.as_ptr(), &fa, &attr, argv_p.as_ptr(), environ);
        libc::posix_spawn_file_actions_destroy(&mut fa);
        libc::posix_spawnattr_destroy(&mut attr);
        if rc != 0 {
            return Err(format!("posix_spawn {}: {}", path.to_string_lossy(), std::io::Error::from_raw_os_error(rc)));
        }
        Ok(pid)
    }
}

/// Waits for our child `pid` to exit, until `deadline`; then kills (SIGKILL) and reaps it and says so.
/// Already reaped by the application (`waitpid(-1)`: ECHILD) counts as exited.
fn reap_by(pid: libc::pid_t, deadline: Instant) -> Result<(), String> {
    let mut pause = Duration::from_micros(100);
    loop {
        let mut status = 0;
        // SAFETY: waitpid on a pid we spawned, with a status out-parameter of ours.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid || (r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted) {
            return Ok(());
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child, not yet reaped (so the pid cannot have been reused).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: as above; a killed process exits, so this wait ends.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    Err("it did not exit in time: killed".to_string())
}

/// The helper executable's `main` (`src/bin/offload-rs-jit.rs`).
#[doc(hidden)]
pub fn helper_main() -> ! {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mode = args.get(1).map(|a| a.as_bytes().to_vec()).unwrap_or_default();
    match mode.as_slice() {
        b"detach-serve" => {
            // Detach: the server is a child of this process (with descriptor 3 and the clean state
            // the client gave it), which leaves at once, so the server is not the client's child. A
            // fork rather than a second exec: libLLVM is loaded and initialised once per helper.
            // SAFETY: fork() in a process that has started no thread (main has just begun); the child
            // goes on with `serve` alone, the parent leaves at once without running anything else.
            match unsafe { libc::fork() } {
                0 => serve(),
                -1 => std::process::exit(1),
                // SAFETY: ending this process; it holds nothing that needs cleaning up.
                _ => unsafe { libc::_exit(0) },
            }
        }
        _ => {
            eprintln!(
                "offload-rs-jit: the JIT compile helper of offload-rs (libLLVMOffload.so.22.1); the library starts it"
            );
            std::process::exit(2)
        }
    }
}

fn serve() -> ! {
    // SAFETY: descriptor 3 is our socket (set up by spawn_process); we own it from here.
    let mut sock = unsafe { <UnixStream as std::os::fd::FromRawFd>::from_raw_fd(HELPER_FD) };
    let mut hello = Vec::with_capacity(76);
    hello.extend_from_slice(HELLO_MAGIC);
    hello.extend_from_slice(BUILD_ID.as_bytes());
    hello.extend_from_slice(&(std::process::id() as i32).to_le_bytes());
    let forever = Instant::now() + Duration::from_secs(1 << 30);
    if write_frame(&sock, 0, &hello, forever).is_err() {
        std::process::exit(1);
    }
    loop {
        let Ok((id, body)) = read_frame_by(&mut sock, None) else {
            std::process::exit(0);
        };
        let out = match Request::decode(&body) {
            Some(req) => {
                let r = std::panic::catch_unwind(|| req.execute());
                encode_result(r.unwrap_or_else(|_| Err(JitError::Compile("internal: the JIT panicked".into()))))
            }
            None => encode_result(Err(JitError::Compile("internal: malformed request to the JIT helper".into()))),
        };
        if write_frame(&sock, id, &out, forever).is_err() {
            std::process::exit(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let bc = [1u8, 2, 3];
        let r = Request::Ptx { bc: &bc, cpu: "sm_90", features: "+ptx84", opt: 2 };
        match Request::decode(&r.encode()) {
            Some(Request::Ptx { bc: b, cpu, features, opt }) => {
                assert_eq!((b, cpu, features, opt), (&bc[..], "sm_90", "+ptx84", 2));
            }
            other => panic!("{other:?}"),
        }
        let r = Request::Cpu {
            bc: &bc,
            opt: 3,
            memcheck: false,
            replaced: true,
            kernel: "k",
            group: [64, 2, 1],
            triple: "x86_64-pc-linux-gnu",
            cpu: "x86-64-v3",
            features: "-avx2",
            vector_math: false,
        };
        match Request::decode(&r.encode()) {
            Some(Request::Cpu {
                bc: b,
                opt,
                memcheck,
                replaced,
                kernel,
                group,
                triple,
                cpu,
                features,
                vector_math,
            }) => {
                assert_eq!((b, opt, memcheck, replaced, kernel, group), (&bc[..], 3, false, true, "k", [64, 2, 1]));
                assert_eq!((triple, cpu, features, vector_math), ("x86_64-pc-linux-gnu", "x86-64-v3", "-avx2", false));
            }
            other => panic!("{other:?}"),
        }
        assert!(Request::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert!(Request::decode(&[2, 0, 255, 255, 255, 255]).is_none());
        let e = decode_result(encode_result(Err(JitError::InvalidBinary("x".into()))));
        assert!(matches!(e, Err(JitError::InvalidBinary(m)) if m == "x"));
    }

    /// A helper executable that never exits (here a script that writes its pid and sleeps) costs at most
    /// the start timeout: it is then killed and reaped, and the start is an error (the compile then runs
    /// in the calling process).
    #[test]
    fn a_helper_that_never_exits_is_killed_and_reaped() {
        let dir = std::env::temp_dir().join(format!("offload-rs-helper-sleeper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let script = dir.join("sleeper");
        let pidfile = dir.join("pid");
        std::fs::write(&script, format!("#!/bin/sh\necho $$ > '{}'\nexec sleep 1000\n", pidfile.display()))
            .expect("write script");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod");
        let path = CString::new(script.as_os_str().as_bytes()).expect("path");
        let e = spawn(&path, Duration::from_secs(2)).err().expect("a start that never ends is an error");
        assert!(e.contains("did not exit in time: killed"), "{e}");
        let pid: libc::pid_t = std::fs::read_to_string(&pidfile).expect("pid file").trim().parse().expect("pid");
        // SAFETY: signal 0 only checks whether the process exists (a zombie would still exist).
        let r = unsafe { libc::kill(pid, 0) };
        assert!(
            r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH),
            "pid {pid} is still there"
        );
    }
}
