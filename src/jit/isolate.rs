//! Runs LLVM on untrusted input in a forked child process.
//!
//! LLVM's bitcode reader is not hardened against corrupt input: a bit-flipped image can crash it inside
//! `parseMetadata` (seen with LLVM 22.1.8). So parsing, lowering, optimisation and code generation of
//! an image run in a `fork()`ed child that sends its result back through a pipe; a crash or abort of the
//! child becomes a `JitError::Compile` instead of taking the process down. The parent never runs LLVM
//! on image bytes itself, so no LLVM lock can be held by another parent thread at fork time; glibc makes
//! `malloc` safe in the child. The child leaves with `_exit` (no atexit handlers, no stdio flush) and
//! runs with the default dispositions of the crash signals, so the application's crash handlers (a crash
//! reporter, a sanitizer, a fuzzer) never see a crash that was contained.
//! `OFFLOAD_RS_JIT_IN_PROCESS=1` skips the fork (debugging; loses the crash protection).

use std::time::{Duration, Instant};

/// Result of running `f` in a child: its bytes, or why there are none.
pub(crate) fn run_isolated(f: impl FnOnce() -> Vec<u8>, timeout: Duration) -> Result<Vec<u8>, String> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 with a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe failed: {}", std::io::Error::last_os_error()));
    }
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: fork; the child only runs `f` (LLVM + Rust allocation), writes to the pipe and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // SAFETY: closing our own descriptors.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
        return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // child
        // SAFETY: closing the read end in the child.
        unsafe { libc::close(rd) };
        // A crash here must end the child with its signal, which the parent reports as a compile
        // failure; the application's own crash handlers (a crash reporter, a sanitizer's or a fuzzer's)
        // must not run on this disposable copy of the process and report a crash that was contained.
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT, libc::SIGTRAP] {
            // SAFETY: resetting a signal disposition to the default in the single-threaded child.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
        let body = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_default();
        // framing: length, payload, end marker — so a truncated result is never mistaken for a whole one
        let mut out = Vec::with_capacity(body.len() + 16);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&END_MARK.to_le_bytes());
        let mut off = 0usize;
        while off < out.len() {
            // SAFETY: writing from a live buffer to our pipe.
            let n = unsafe { libc::write(wr, out[off..].as_ptr() as *const libc::c_void, out.len() - off) };
            if n <= 0 {
                break;
            }
            off += n as usize;
        }
        // SAFETY: terminate the child immediately, without running the parent's exit handlers.
        unsafe { libc::_exit(0) };
    }
    // parent
    // SAFETY: closing the write end in the parent.
    unsafe { libc::close(wr) };
    let deadline = Instant::now() + timeout;
    let mut data = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut timed_out = false;
    // Set when the child is found dead before its pipe reaches end-of-file (see below).
    let mut early_status: Option<i32> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            timed_out = true;
            break;
        }
        let mut pfd = libc::pollfd { fd: rd, events: libc::POLLIN, revents: 0 };
        // Poll in short slices: a sibling child forked by another thread may hold our pipe's write end, so
        // a crashed child is noticed by waitpid, not by end-of-file.
        // SAFETY: polling one valid descriptor.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(50) as i32) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if r == 0 {
            let mut st = 0i32;
            // SAFETY: non-blocking reap of our own child.
            if unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) } == pid {
                early_status = Some(st);
                break;
            }
            continue;
        }
        // SAFETY: reading into a live buffer.
        let n = unsafe { libc::read(rd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        data.extend_from_slice(&buf[..n as usize]);
        // Stop at a complete result instead of waiting for end-of-file: a child that another thread forked
        // meanwhile inherits our write end (O_CLOEXEC does not apply to fork) and keeps it open as long as
        // it runs, which may be a long compile.
        if frame_complete(&data) {
            break;
        }
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(rd) };
    if timed_out {
        // SAFETY: killing our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut status = early_status.unwrap_or(0);
    let mut reaped = true;
    while early_status.is_none() {
        // SAFETY: reaping our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if r < 0 && e.kind() != std::io::ErrorKind::Interrupted {
            // ECHILD: the application ignores SIGCHLD, the child was reaped for us; rely on the framing.
            reaped = false;
            break;
        }
    }
    if timed_out {
        return Err(format!("LLVM did not finish within {} s", timeout.as_secs()));
    }
    if reaped && libc::WIFSIGNALED(status) {
        return Err(format!("LLVM crashed on this image (signal {})", libc::WTERMSIG(status)));
    }
    if reaped && (!libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0) {
        return Err(format!("LLVM aborted on this image (exit status {})", libc::WEXITSTATUS(status)));
    }
    let n = data.len();
    if n < 16 || data[n - 8..] != END_MARK.to_le_bytes() {
        return Err("the JIT child process died without a complete result (LLVM crashed?)".into());
    }
    let len = u64::from_le_bytes(data[..8].try_into().unwrap_or([0; 8]));
    if len != (n - 16) as u64 {
        return Err("the JIT child process returned a malformed result".into());
    }
    data.truncate(n - 8);
    data.drain(..8);
    Ok(data)
}

const END_MARK: u64 = 0x4f4c_5253_4a49_5445; // "OLRSJITE"

/// Whether `data` is a whole framed result: length, that many bytes, the end marker.
fn frame_complete(data: &[u8]) -> bool {
    let n = data.len();
    n >= 16
        && data[n - 8..] == END_MARK.to_le_bytes()
        && data[..8].try_into().map(u64::from_le_bytes).is_ok_and(|len| len == (n - 16) as u64)
}

pub(crate) fn enabled() -> bool {
    std::env::var_os("OFFLOAD_RS_JIT_IN_PROCESS").is_none_or(|v| v.is_empty() || v == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child runs with default crash-signal dispositions even when the process has a SIGSEGV handler
    /// (the Rust runtime installs one for stack-overflow detection).
    #[test]
    fn child_has_default_crash_signal_handlers() {
        let disposition = |sig: i32| {
            // SAFETY: querying (not changing) a disposition into a zeroed sigaction.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old);
                old.sa_sigaction
            }
        };
        let out = run_isolated(
            || {
                [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT, libc::SIGTRAP]
                    .iter()
                    .map(|&s| u8::from(disposition(s) == libc::SIG_DFL))
                    .collect()
            },
            Duration::from_secs(60),
        );
        assert_eq!(out, Ok(vec![1; 6]));
    }

    /// A grandchild that inherited the pipe (as a child forked by another thread does) does not delay
    /// the result.
    #[test]
    fn a_complete_result_does_not_wait_for_other_holders_of_the_pipe() {
        let t0 = Instant::now();
        let out = run_isolated(
            || {
                // SAFETY: fork in the single-threaded child; the grandchild only sleeps and _exits.
                if unsafe { libc::fork() } == 0 {
                    // SAFETY: as above.
                    unsafe {
                        libc::sleep(5);
                        libc::_exit(0);
                    }
                }
                vec![7]
            },
            Duration::from_secs(60),
        );
        assert_eq!(out, Ok(vec![7]));
        assert!(t0.elapsed() < Duration::from_secs(4), "waited {:?} for the grandchild", t0.elapsed());
    }

    #[test]
    fn a_crashing_child_is_an_error() {
        let r = run_isolated(
            || {
                // SAFETY: deliberately crashing the disposable child.
                unsafe { libc::raise(libc::SIGSEGV) };
                Vec::new()
            },
            Duration::from_secs(60),
        );
        assert_eq!(r, Err("LLVM crashed on this image (signal 11)".to_string()));
    }
}
