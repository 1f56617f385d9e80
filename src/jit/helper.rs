//! The compile helper: LLVM runs on image bytes in a separate process, never in the client's.
//!
//! LLVM's bitcode reader is not hardened against corrupt input (a bit-flipped image can crash it inside
//! `parseMetadata`, seen with LLVM 22.1.8), so every compile (CPU objects, NVPTX PTX) is sent to a helper
//! process, `offload-rs-jit`, over a socket; a crash of the helper is `JitError::Compile` for that image
//! only and the next compile starts a fresh helper.
//!
//! * **Shipping**: the helper is an executable of this crate (`src/bin/offload-rs-jit.rs`) that
//!   `make lib` / `make install` put in `offload-rs/` beside the library; the library finds it from its
//!   own location (`dladdr`, then `/proc/self/maps` when that path is relative), beside the real file
//!   first (the library reached through a symlink), then beside the name it was loaded by.
//!   `OFFLOAD_RS_JIT_HELPER=<path>` names it explicitly (the Rust tests and the fuzz targets do).
//! * **Starting** (at the first compile), never a `fork` of the client: a *reaper* is cloned
//!   (`CLONE_VM`, its own stacks and thread pointer area in one mapping; it never execs, so it keeps exit
//!   signal 0: the client's `wait()`/`waitpid(-1)` ignore it and no SIGCHLD is sent, even when the client
//!   is a subreaper or PID 1). It puts every signal at its default disposition, takes its own process
//!   group (a Ctrl-C for the client's terminal does not reach it), points stdin, stdout and (unless
//!   `OFFLOAD_RS_DEBUG`/`OFFLOAD_RS_JIT_TIME`/`OFFLOAD_RS_JIT_STATS`) stderr at /dev/null, keeps only the socket (3) and a pidfd
//!   of the client (4), starts the server as its child the way `posix_spawn` does (`CLONE_VM |
//!   CLONE_VFORK`, then exec, empty signal mask), closes everything it holds, reaps the server and exits;
//!   we reap the reaper (`__WALL`) and kill the server through a pidfd. The server says hello with the
//!   build id; a helper from another build is not used. Under valgrind (which aborts on such a clone) or
//!   without pidfds the server is started detached instead: `posix_spawn` of `detach-serve`, which forks
//!   the server and exits (re-parented to init, or to a subreaper client), ended by a socket hang-up.
//! * **Descriptors**: our socket ends and pidfds are kept descriptors (`fd.rs`: close-on-exec, at high
//!   numbers, checked by device and inode before each use), so a client's `closefrom(3)` or `dup2` over
//!   one of them costs a new helper, never a write to or a close of the client's file.
//! * **Reuse**: a pool of at most one helper per core; each serves one request at a time, idle ones wait
//!   for the next compile, so 20 threads compiling different images share a few processes. A helper
//!   that died while idle is replaced. A helper exits when the client has exited (its pidfd), also
//!   mid-compile and while a `fork()`ed child of the client still holds the socket, or when the socket
//!   hangs up. After a client's `fork()`, the child starts its own helpers and leaves its parent's alone.
//! * **Timeouts**: 600 s per compile (then the helper is killed and the compile fails), 60 s for a new
//!   helper to start: the server's exec and its hello. A server that has not said hello by then is
//!   killed and reaped, and that compile runs here (fallback).
//! * **Fallback**: when no helper can be started (none installed, another build's, `RLIMIT_NPROC`, a
//!   pids cgroup), the compile runs in the calling process (one line under `OFFLOAD_RS_DEBUG`): the
//!   answer is the same, only a crash of LLVM is no longer contained. `OFFLOAD_RS_JIT_IN_PROCESS=1`
//!   chooses that explicitly.
//!
//! Protocol (both directions framed `len: u64 | id: u64 | body`): the request body is
//! [`Request::encode`]; the response body is an encoded `Result` ([`encode_result`]).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sync::{Condvar, Mutex};

use super::JitError;
use super::fd::KeptFd;
#[cfg(feature = "llvm")]
use super::request::{Request, encode_result};

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

/// Sends encoded request `req` to an idle or new helper and waits for its answer: `Err(why)` when no
/// helper could be had (the caller may run the job itself), else the call's outcome (an `Err` is a
/// helper that failed mid-call: killed, timed out, or gone; it is not reused). `t0`: when the job began
/// (for `OFFLOAD_RS_JIT_TIME`).
pub(crate) fn call(req: &[u8], t0: Instant) -> Result<Result<Vec<u8>, JitError>, String> {
    let mut conn = pool().acquire()?;
    if super::compile::timing() {
        super::compile::time_line(&format!("helper acquired in {:.2} ms", t0.elapsed().as_secs_f64() * 1e3));
    }
    let r = conn.call(req);
    let reusable = r.is_ok();
    pool().release(conn, reusable);
    Ok(r)
}

/// A connection to one running helper. The socket and the server's pidfd are kept descriptors
/// (`fd.rs`): checked before each use, never touched once the client has closed or replaced them.
struct Conn {
    sock: KeptFd,
    /// `None` only while being dropped
    proc: Option<HelperProc>,
    /// The process that started the helper (a forked child must leave its parent's helpers alone).
    owner: u32,
}

impl Conn {
    /// Whether the idle helper is still there and our descriptors are still ours (an idle helper
    /// never writes: readable means end-of-file).
    fn alive(&self) -> bool {
        let Some(fd) = self.sock.get() else {
            return false;
        };
        if self.proc.as_ref().and_then(|p| p.server.as_ref()).is_some_and(|s| s.get().is_none()) {
            return false;
        }
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: polling one valid descriptor without waiting.
        let r = unsafe { libc::poll(&mut pfd, 1, 0) };
        r == 0
    }

    /// Sends one request and reads its response. `Err` says why there is none (the helper is gone).
    fn call(&mut self, body: &[u8]) -> Result<Vec<u8>, JitError> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + COMPILE_TIMEOUT;
        let died = || "the JIT helper process died while compiling this image (LLVM crashed on it?)".to_string();
        let Some(fd) = self.sock.get() else {
            return Err(JitError::Compile("the JIT helper's socket was closed or replaced by the application".into()));
        };
        if write_frame(fd, id, body, Some(deadline)).is_err() {
            return Err(JitError::Compile(died()));
        }
        match read_frame_by(fd, Some(deadline)) {
            Ok((rid, v)) if rid == id => Ok(v),
            Ok(_) => Err(JitError::Compile("internal: the JIT helper answered another request".into())),
            Err(FrameError::Timeout) => {
                Err(JitError::Compile(format!("LLVM did not finish within {} s", COMPILE_TIMEOUT.as_secs())))
            }
            Err(FrameError::NoMemory(n)) => {
                Err(JitError::OutOfResources(format!("no memory for the compile helper's {n}-byte answer")))
            }
            Err(_) => Err(JitError::Compile(died())),
        }
    }
}

impl Drop for Conn {
    /// A helper we no longer use is killed and reaped (its reaper too); in a forked child, whose copies
    /// these are, the parent's helper is left alone.
    fn drop(&mut self) {
        if let Some(p) = self.proc.take()
            && self.owner == std::process::id()
        {
            p.kill_and_reap(&self.sock);
        }
    }
}

#[derive(Debug)]
enum FrameError {
    Timeout,
    Closed,
    Malformed,
    /// No memory for a frame of this many bytes (the rest of it is left unread: the connection is done).
    NoMemory(u64),
}

/// Waits until `fd` is ready for `events`, or `deadline`.
fn wait_ready(fd: i32, events: libc::c_short, deadline: Option<Instant>) -> Result<(), FrameError> {
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(FrameError::Timeout);
                }
                left.as_millis().clamp(1, i32::MAX as u128) as i32
            }
        };
        let mut pfd = libc::pollfd { fd, events, revents: 0 };
        // SAFETY: polling one descriptor with a pollfd of ours.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r > 0 {
            return Ok(());
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(FrameError::Closed);
        }
    }
}

fn write_frame(fd: i32, id: u64, body: &[u8], deadline: Option<Instant>) -> Result<(), FrameError> {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&(body.len() as u64).to_le_bytes());
    head[8..].copy_from_slice(&id.to_le_bytes());
    for part in [&head[..], body] {
        let mut off = 0;
        while off < part.len() {
            wait_ready(fd, libc::POLLOUT, deadline)?;
            // SAFETY: sending from a live buffer; MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
            let n = unsafe {
                libc::send(
                    fd,
                    part[off..].as_ptr() as *const libc::c_void,
                    part.len() - off,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                match std::io::Error::last_os_error().kind() {
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => continue,
                    _ => return Err(FrameError::Closed),
                }
            }
            off += n as usize;
        }
    }
    Ok(())
}

fn read_exact_by(fd: i32, buf: &mut [u8], deadline: Option<Instant>) -> Result<(), FrameError> {
    let mut off = 0;
    while off < buf.len() {
        wait_ready(fd, libc::POLLIN, deadline)?;
        // SAFETY: receiving into the live buffer's remaining part.
        let n = unsafe {
            libc::recv(fd, buf[off..].as_mut_ptr() as *mut libc::c_void, buf.len() - off, libc::MSG_DONTWAIT)
        };
        match n {
            0 => return Err(FrameError::Closed),
            n if n > 0 => off += n as usize,
            _ => match std::io::Error::last_os_error().kind() {
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => {}
                _ => return Err(FrameError::Closed),
            },
        }
    }
    Ok(())
}

fn read_frame_by(fd: i32, deadline: Option<Instant>) -> Result<(u64, Vec<u8>), FrameError> {
    let mut head = [0u8; 16];
    read_exact_by(fd, &mut head, deadline)?;
    let (len, id) = head.split_at(8);
    let len = u64::from_le_bytes(len.try_into().map_err(|_| FrameError::Malformed)?);
    let id = u64::from_le_bytes(id.try_into().map_err(|_| FrameError::Malformed)?);
    if len > MAX_FRAME {
        return Err(FrameError::Malformed);
    }
    // (the length comes from the other side: no memory for it is an error, not Rust's allocation abort)
    let mut body = Vec::new();
    body.try_reserve_exact(len as usize).map_err(|_| FrameError::NoMemory(len))?;
    body.resize(len as usize, 0);
    read_exact_by(fd, &mut body, deadline)?;
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
        let p = super::beside::beside_library(
            "OFFLOAD_RS_JIT_HELPER",
            // cargo's layout too: target/<profile>/{<bin>, deps/<test>}
            &["offload-rs/offload-rs-jit", "offload-rs-jit", "../offload-rs-jit"],
            super::beside::is_executable,
        )?;
        CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("bad helper path {}", p.display()))
    })
    .as_ref()
    .map(|c| c.as_c_str())
    .map_err(Clone::clone)
}

/// Starts a helper: `path serve` (see [`spawn_process`]), then reads its hello, within `timeout`; a
/// helper that has not said hello by then is killed and reaped. (A helper of an older build does not
/// know the mode and exits at once: the compile then runs here.)
fn spawn(path: &CStr, timeout: Duration) -> Result<Conn, String> {
    let deadline = Instant::now() + timeout;
    let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    let sock = KeptFd::keep(ours).map_err(|e| format!("socket: {e}"))?;
    let theirs = KeptFd::keep(theirs).map_err(|e| format!("socket: {e}"))?;
    let proc = if reaper_usable() {
        spawn_process(path, &[path, c"serve"], theirs.raw(), deadline)?
    } else {
        spawn_detached(path, theirs.raw(), deadline)?
    };
    drop(theirs);
    let conn = Conn { sock, proc: Some(proc), owner: std::process::id() };
    let said = |why: &str| format!("the helper {} {why}", path.to_string_lossy());
    let hello = match read_frame_by(conn.sock.raw(), Some(deadline)) {
        Ok((_, h)) => h,
        Err(FrameError::Timeout) => return Err(said("did not say hello in time: killed")),
        Err(e) => return Err(said(&format!("did not start ({e:?})"))),
    };
    if hello.len() != 8 + 64 + 4 || &hello[..8] != HELLO_MAGIC {
        return Err(said("said something unexpected"));
    }
    if &hello[8..72] != BUILD_ID.as_bytes() {
        return Err(said(&format!(
            "is from another build ({}, we are {BUILD_ID})",
            String::from_utf8_lossy(&hello[8..72])
        )));
    }
    // (the pid in the hello is not used: the helper is known by its pidfd)
    Ok(conn)
}

/// A running helper: the server process (known by its pidfd) and the reaper process between it and
/// the client (see [`spawn_process`]), with the memory the reaper runs on.
struct HelperProc {
    /// the client's pidfd of the server: kills it (`None`: a detached helper, see [`spawn_detached`],
    /// ended by a hang-up of its socket)
    server: Option<KeptFd>,
    /// the reaper, our clone child without an exit signal: only a `__WALL` wait of ours sees it
    reaper: libc::pid_t,
    /// the mapping holding the reaper's stacks, thread pointer area and [`Shared`]
    region: usize,
}

impl HelperProc {
    /// Kills the server and reaps the reaper (which reaps the server first), then frees its memory.
    fn kill_and_reap(self, sock: &KeptFd) {
        if let Some(p) = self.server.as_ref().and_then(KeptFd::get) {
            // SAFETY: pidfd_send_signal on our pidfd of the server (a pidfd cannot name a reused pid).
            unsafe { libc::syscall(libc::SYS_pidfd_send_signal, p, libc::SIGKILL, std::ptr::null::<u8>(), 0) };
        } else if let Some(s) = sock.get() {
            // the client closed our pidfd: a hang-up ends the server (its watcher sees it)
            // SAFETY: shutdown of our own socket.
            unsafe { libc::shutdown(s, libc::SHUT_RDWR) };
        }
        // (with neither descriptor ours, the client closed our socket: the server has end-of-file and
        // exits, unless a forked child of the client holds a copy; then the reaper is left to exit with
        // the client, its memory with it)
        if self.server.is_some() && reap_child(self.reaper, Some(Instant::now() + Duration::from_secs(5))) {
            // SAFETY: the reaper, the only user of the region, has exited.
            unsafe { libc::munmap(self.region as *mut libc::c_void, REGION) };
        }
    }
}

/// Waits for our clone child `pid` (`__WALL`), until `deadline`; true once it has exited (or was
/// reaped by someone else: ECHILD).
fn reap_child(pid: libc::pid_t, deadline: Option<Instant>) -> bool {
    let mut pause = Duration::from_micros(50);
    loop {
        let flags = libc::WEXITED | libc::__WALL | if deadline.is_some() { libc::WNOHANG } else { 0 };
        // SAFETY: waitid on our own unreaped child (its pid cannot have been reused), out-param ours.
        let (r, info_pid) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags);
            (r, info.si_pid())
        };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return true; // ECHILD
        }
        if deadline.is_none() || info_pid == pid {
            return true;
        }
        let now = Instant::now();
        match deadline {
            Some(d) if now >= d => return false,
            _ => {}
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Shared between the client and the reaper (they share memory until the reaper exits). The reaper
/// touches only this, its stacks and its own thread pointer area.
#[repr(C)]
struct Shared {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// the helper's end of the socket and the client's own pidfd (the server's watcher polls it)
    sock: i32,
    client: i32,
    keep_stderr: bool,
    /// errno of a failed step (the reaper's, or the server's exec)
    error: AtomicI32,
    /// the server's pid once it has exec'd, -1 when it could not start
    server_pid: AtomicI32,
    /// set by the client once it holds its pidfd of the server: until then the reaper does not reap it
    go: AtomicI32,
}

/// One mapping per helper: [`Shared`] at its start, the reaper's stack up to 64 KiB, the server's
/// pre-exec stack up to 112 KiB, then the reaper's thread pointer area (its thread pointer at 152 KiB:
/// glibc's wrappers write errno below it, never into a client thread's).
const REGION: usize = 160 << 10;
const REAPER_STACK_TOP: usize = 64 << 10;
const SERVER_STACK_TOP: usize = 112 << 10;
const THREAD_POINTER: usize = 152 << 10;

fn futex_wait(word: &AtomicI32, value: i32, timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: FUTEX_WAIT on a live 4-byte word with a timeout of ours.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, value, &ts as *const libc::timespec) };
}

fn futex_wake(word: &AtomicI32) {
    // SAFETY: FUTEX_WAKE on a live 4-byte word.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}

/// The server's pre-exec step, on its own stack in the reaper's memory (CLONE_VFORK: the reaper waits).
extern "C" fn server_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the live Shared; only system call wrappers below.
    unsafe {
        let s = &*(arg as *const Shared);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(s.path, s.argv, s.envp);
        s.error.store(*libc::__errno_location(), Ordering::SeqCst);
        libc::_exit(127)
    }
}

/// The reaper: a process sharing the client's memory (never `exec`s, so it keeps the clone's exit
/// signal 0: invisible to the client's waits, no SIGCHLD). It gives the server clean state, starts it
/// as its own child, holds none of the client's descriptors, reaps the server and exits.
extern "C" fn reaper_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Shared in our region, which the client unmaps only after reaping us. Only
    // raw system calls (no libc wrapper a sanitizer intercepts; errno goes to our own thread pointer
    // area) and glibc's `clone`, which posix_spawn itself uses the same way.
    unsafe {
        let s = &*(arg as *const Shared);
        let sys = |n: libc::c_long, a: libc::c_long, b: libc::c_long, c: libc::c_long| libc::syscall(n, a, b, c, 0, 0);
        let fail = |s: &Shared, what: libc::c_long| -> libc::c_int {
            s.error.store((-what).max(1) as i32, Ordering::SeqCst);
            s.server_pid.store(-1, Ordering::SeqCst);
            futex_wake(&s.server_pid);
            libc::syscall(libc::SYS_exit_group, 1);
            1
        };
        let errno = || -(*libc::__errno_location()) as libc::c_long;
        // every signal at its default disposition (the kernel's sigaction: handler, flags, restorer,
        // mask: all zero is SIG_DFL); the mask stays full (the client blocked every signal around the
        // clone); the server gets an empty one
        let dfl = [0u64; 4];
        for sig in 1..=64 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig as libc::c_long,
                    dfl.as_ptr(),
                    0 as libc::c_long,
                    8 as libc::c_long,
                );
            }
        }
        if sys(libc::SYS_setpgid, 0, 0, 0) != 0 {
            return fail(s, errno());
        }
        let sock = sys(libc::SYS_fcntl, s.sock as libc::c_long, libc::F_DUPFD as libc::c_long, 10);
        let client = sys(libc::SYS_fcntl, s.client as libc::c_long, libc::F_DUPFD as libc::c_long, 10);
        let null = sys(
            libc::SYS_openat,
            libc::AT_FDCWD as libc::c_long,
            c"/dev/null".as_ptr() as libc::c_long,
            libc::O_RDWR as libc::c_long,
        );
        if sock < 0 || client < 0 || null < 0 {
            return fail(s, errno());
        }
        for t in 0..if s.keep_stderr { 2 } else { 3 } {
            if sys(libc::SYS_dup2, null, t, 0) < 0 {
                return fail(s, errno());
            }
        }
        if sys(libc::SYS_dup2, sock, HELPER_FD as libc::c_long, 0) < 0
            || sys(libc::SYS_dup2, client, HELPER_FD as libc::c_long + 1, 0) < 0
        {
            return fail(s, errno());
        }
        sys(libc::SYS_close_range, HELPER_FD as libc::c_long + 2, libc::c_uint::MAX as libc::c_long, 0);
        let base = arg as usize;
        let pid = libc::clone(
            server_main,
            (base + SERVER_STACK_TOP) as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        );
        let clone_errno = errno();
        // nothing of the client's is held from here on
        sys(libc::SYS_close_range, 0, libc::c_uint::MAX as libc::c_long, 0);
        if pid < 0 {
            return fail(s, clone_errno);
        }
        let wait = || loop {
            let r = sys(libc::SYS_wait4, pid as libc::c_long, 0, libc::__WALL as libc::c_long);
            if r == pid as libc::c_long || errno() != -(libc::EINTR as libc::c_long) {
                break;
            }
        };
        if s.error.load(Ordering::SeqCst) != 0 {
            wait();
            s.server_pid.store(-1, Ordering::SeqCst);
            futex_wake(&s.server_pid);
            libc::syscall(libc::SYS_exit_group, 1);
        }
        s.server_pid.store(pid, Ordering::SeqCst);
        futex_wake(&s.server_pid);
        // the client opens its pidfd of the server now; the pid stays the server's until we reap it
        if s.go.load(Ordering::SeqCst) == 0 {
            futex_wait(&s.go, 0, START_TIMEOUT);
        }
        wait();
        libc::syscall(libc::SYS_exit_group, 0);
        0
    }
}

/// Starts `path argv` with clean state: every signal at its default disposition, an empty mask, its own
/// process group, stdin and stdout on /dev/null, stderr the client's only under `OFFLOAD_RS_DEBUG`,
/// `OFFLOAD_RS_JIT_TIME` or `OFFLOAD_RS_JIT_STATS` (else /dev/null: a reader of the client's output sees
/// end-of-file when the client exits), `fd` as descriptor 3, a pidfd of the client as 4, nothing else.
///
/// Never a child of the client that its waits can see, even when the client is a subreaper or PID 1
/// (where any orphan lands): the server is the child of a *reaper*, a clone child of the client that
/// shares its memory, never execs and so keeps exit signal 0 (`wait()`/`waitpid(-1)` without `__WALL`
/// ignore such children and no SIGCHLD is sent), holds none of the client's descriptors, reaps the
/// server and exits; we reap the reaper. No `fork` of the client (no atfork handlers, no page tables
/// copied): the reaper starts the server as `posix_spawn` does (`CLONE_VM | CLONE_VFORK`).
fn spawn_process(path: &CStr, argv: &[&CStr], fd: i32, deadline: Instant) -> Result<HelperProc, String> {
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    let keep_stderr = keep_stderr();
    // SAFETY: reading the process's environment pointer (only passed on to execve).
    let envp = unsafe { environ };
    // SAFETY: pidfd_open of ourselves (the server exits when it becomes readable: we exited).
    let me = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as i32;
    if me < 0 {
        return Err(format!("pidfd_open: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor of ours (pidfds are close-on-exec).
    let me = unsafe { std::os::fd::OwnedFd::from_raw_fd(me) };
    // SAFETY: a fresh private mapping; unmapped only once the reaper has exited.
    let region = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            REGION,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if region == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    let base = region as usize;
    let shared = base as *mut Shared;
    // SAFETY: the mapping is fresh, zeroed and large enough; Shared is written before the clone.
    unsafe {
        shared.write(Shared {
            path: path.as_ptr(),
            argv: argv_p.as_ptr(),
            envp,
            sock: fd,
            client: me.as_raw_fd(),
            keep_stderr,
            error: AtomicI32::new(0),
            server_pid: AtomicI32::new(0),
            go: AtomicI32::new(0),
        });
        // the reaper's thread pointer: a self-pointing header in a zeroed area of its own
        let tp = (base + THREAD_POINTER) as *mut usize;
        tp.write(tp as usize);
        tp.add(2).write(tp as usize);
    }
    // SAFETY: every signal is blocked on this thread around the clone (restored right after), so no
    // handler of the client runs in the reaper, which starts with that mask; it runs `reaper_main` on
    // its own stack and thread pointer with `shared`, which outlives it.
    let (reaper, errno) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            reaper_main,
            (base + REAPER_STACK_TOP) as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_SETTLS, // exit signal 0: none
            shared as *mut libc::c_void,
            std::ptr::null_mut::<libc::pid_t>(),
            base + THREAD_POINTER,
            std::ptr::null_mut::<libc::pid_t>(),
        );
        let errno = std::io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        (pid, errno)
    };
    if reaper < 0 {
        // SAFETY: no process uses the region.
        unsafe { libc::munmap(region, REGION) };
        return Err(format!("clone: {errno}"));
    }
    // SAFETY: `shared` lives until the reaper has exited (we unmap only after reaping it).
    let s = unsafe { &*shared };
    let forget = |why: String| {
        if reap_child(reaper, Some(deadline)) {
            // SAFETY: the reaper has exited.
            unsafe { libc::munmap(region, REGION) };
        }
        Err(why)
    };
    // wait for the server's exec (or the reason it failed)
    let server = loop {
        let v = s.server_pid.load(Ordering::SeqCst);
        if v != 0 {
            break v;
        }
        if Instant::now() >= deadline {
            // the reaper may still be on its way to exec with these arguments: they stay
            std::mem::forget(argv_p);
            return forget(format!("the helper {} did not start in time", path.to_string_lossy()));
        }
        futex_wait(&s.server_pid, 0, Duration::from_millis(50));
    };
    if server < 0 {
        let e = std::io::Error::from_raw_os_error(s.error.load(Ordering::SeqCst));
        return forget(format!("starting {}: {e}", path.to_string_lossy()));
    }
    // SAFETY: pidfd_open of the server, which the reaper does not reap before `go`: the pid is its.
    let pfd = unsafe { libc::syscall(libc::SYS_pidfd_open, server, 0) } as i32;
    let pidfd_err = std::io::Error::last_os_error();
    s.go.store(1, Ordering::SeqCst);
    futex_wake(&s.go);
    if pfd < 0 {
        // (the server exits when our socket end closes; the reaper and its memory go with it)
        return Err(format!("pidfd_open of the helper: {pidfd_err}"));
    }
    // SAFETY: a fresh pidfd of ours.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(pfd) };
    let server = KeptFd::keep(owned).map_err(|e| format!("pidfd: {e}"))?;
    drop(me);
    Ok(HelperProc { server: Some(server), reaper, region: base })
}

/// Whether helpers can be started with a reaper ([`spawn_process`]): pidfds (Linux 5.3) are needed, and
/// valgrind, which cannot run a `clone` that shares memory without being a thread (it would abort the
/// client), is avoided (it then gets detached helpers).
fn reaper_usable() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        // (valgrind's client request; its preload library as well, should the request be unavailable)
        if super::target::running_on_valgrind() || std::env::var("LD_PRELOAD").is_ok_and(|v| v.contains("vgpreload")) {
            return false;
        }
        // A reaper runs this library's code until it exits, after the client may have dlclose'd us:
        // the library is pinned (RTLD_NODELETE) first. (NULL: our code is in the executable itself.)
        if let Some(c) = super::beside::own_file().and_then(|p| CString::new(p.as_os_str().as_bytes()).ok()) {
            // SAFETY: RTLD_NOLOAD loads and runs nothing; it marks the already-loaded object
            // never-unloadable, and the extra reference is kept for the process's life.
            unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE) };
        }
        // SAFETY: pidfd_open of ourselves; the descriptor is closed at once.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as i32;
        if fd >= 0 {
            // SAFETY: the descriptor just opened.
            unsafe { libc::close(fd) };
        }
        fd >= 0
    })
}

/// Starts a detached helper where a reaper cannot be used: posix_spawn `path detach-serve`, which
/// forks the server and exits at once (reaped here), so the server is re-parented to init (to the
/// client only when the client is a subreaper). It is ended by a hang-up of its socket, never by a pid.
fn spawn_detached(path: &CStr, fd: i32, deadline: Instant) -> Result<HelperProc, String> {
    let pid = posix_spawn_clean(path, &[path, c"detach-serve"], fd)?;
    reap_by(pid, deadline).map_err(|e| format!("the helper {}: {e}", path.to_string_lossy()))?;
    Ok(HelperProc { server: None, reaper: 0, region: 0 })
}

fn posix_spawn_clean(path: &CStr, argv: &[&CStr], fd: i32) -> Result<libc::pid_t, String> {
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
        libc::posix_spawn_file_actions_addopen(&mut fa, 1, devnull.as_ptr(), libc::O_WRONLY, 0);
        if !keep_stderr() {
            libc::posix_spawn_file_actions_addopen(&mut fa, 2, devnull.as_ptr(), libc::O_WRONLY, 0);
        }
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

/// The helper keeps the client's stderr only when it has something to say there.
fn keep_stderr() -> bool {
    ["OFFLOAD_RS_DEBUG", "OFFLOAD_RS_JIT_TIME", "OFFLOAD_RS_JIT_STATS"].iter().any(|v| std::env::var_os(v).is_some())
}

#[cfg(feature = "llvm")]
/// The helper executable's `main` (`src/bin/offload-rs-jit.rs`).
#[doc(hidden)]
pub fn helper_main() -> ! {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mode = args.get(1).map(|a| a.as_bytes().to_vec()).unwrap_or_default();
    match mode.as_slice() {
        b"serve" => serve(true),
        b"detach-serve" => {
            // Detached (no reaper possible): the server is a child of this process, which leaves at
            // once, so the server is not the client's child. A fork rather than a second exec.
            // SAFETY: fork() in a process that has started no thread (main has just begun); the child
            // goes on with `serve` alone, the parent leaves at once without running anything else.
            match unsafe { libc::fork() } {
                0 => serve(false),
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

#[cfg(feature = "llvm")]
/// Exits when the client is gone: its process has exited (its pidfd, descriptor 4, is readable; a
/// forked child of the client that still holds our socket does not keep us alive) or it hung up the
/// socket, also while a compile runs.
fn watch_client(client_pidfd: bool) {
    let spawned = std::thread::Builder::new().name("client-watch".into()).stack_size(64 << 10).spawn(move || {
        let mut pfd = [
            libc::pollfd { fd: HELPER_FD, events: libc::POLLRDHUP, revents: 0 },
            libc::pollfd { fd: HELPER_FD + 1, events: libc::POLLIN, revents: 0 },
        ];
        let n = if client_pidfd { 2 } else { 1 };
        loop {
            // SAFETY: polling descriptors of ours with pollfds of ours.
            let r = unsafe { libc::poll(pfd.as_mut_ptr(), n, -1) };
            if r > 0 && pfd.iter().any(|p| p.revents != 0) {
                // SAFETY: ending the helper at once (mid-compile: nothing to clean up).
                unsafe { libc::_exit(0) };
            }
        }
    });
    if spawned.is_err() {
        std::process::exit(1);
    }
}

#[cfg(feature = "llvm")]
/// `client_pidfd`: descriptor 4 is a pidfd of the client (started by a reaper).
fn serve(client_pidfd: bool) -> ! {
    watch_client(client_pidfd);
    let sock = HELPER_FD;
    let mut hello = Vec::with_capacity(76);
    hello.extend_from_slice(HELLO_MAGIC);
    hello.extend_from_slice(BUILD_ID.as_bytes());
    hello.extend_from_slice(&(std::process::id() as i32).to_le_bytes());
    if write_frame(sock, 0, &hello, None).is_err() {
        std::process::exit(1);
    }
    loop {
        let Ok((id, body)) = read_frame_by(sock, None) else {
            std::process::exit(0);
        };
        let out = match Request::decode(&body) {
            Some(req) => {
                let r = std::panic::catch_unwind(|| super::llvm::execute(&req));
                encode_result(r.unwrap_or_else(|_| Err(JitError::Compile("internal: the JIT panicked".into()))))
            }
            None => encode_result(Err(JitError::Compile("internal: malformed request to the JIT helper".into()))),
        };
        if write_frame(sock, id, &out, None).is_err() {
            std::process::exit(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(e.contains("did not say hello in time: killed"), "{e}");
        let pid: libc::pid_t = std::fs::read_to_string(&pidfile).expect("pid file").trim().parse().expect("pid");
        // SAFETY: signal 0 only checks whether the process exists (a zombie would still exist).
        let r = unsafe { libc::kill(pid, 0) };
        assert!(
            r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH),
            "pid {pid} is still there"
        );
    }
}
