//! Stop points: how JIT'd code that runs too long, or whose launch already failed, is stopped without a
//! signal. With stop points on ([`set_stop_points`], the CPU device's `OFFLOAD_RS_KERNEL_TIMEOUT`), every
//! compile gets the `ol-stop-points` pass after optimisation (src/jit/stop_points.cpp): each cycle of
//! every function counts its trips and, every 4096, calls [`RT_POLL`]. The CPU device calls work-group
//! functions and constructors through [`run_work_group`] and [`run_void`] (src/jit/stop.c), and the poll
//! asks the runtime's [`super::RuntimeFunctions::stop_requested`]: when it says stop, the code is left
//! at once, back to where it was called, and the call returns `true`.
//!
//! The option is part of the cache key and of the compile helper's request, as the target is (an object
//! with stop points is another object). Code without stop points runs under the same calls and is never
//! stopped; code with them called directly (not through these calls) is never stopped either.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use inkwell::module::Module;
use inkwell::targets::TargetMachine;

use super::{WgCtx, WgFn};

/// `void __ol_rs_rt_poll(void)`: what a due stop point calls (src/jit/stop.c).
pub(crate) const RT_POLL: &str = "__ol_rs_rt_poll";

unsafe extern "C" {
    fn ol_rs_run_stoppable(f: unsafe extern "C" fn(*const c_void), arg: *const c_void) -> c_int;
    fn ol_rs_run_stoppable_void(f: unsafe extern "C" fn()) -> c_int;
    fn __ol_rs_rt_poll();
}

static ON: AtomicBool = AtomicBool::new(false);

/// Compile later loads with stop points (set at `olInit`).
pub fn set_stop_points(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether new compiles get stop points ([`set_stop_points`]).
pub fn stop_points() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The poll's address, for the loader.
pub(crate) fn poll_address() -> usize {
    __ol_rs_rt_poll as *const () as usize
}

/// Asked by [`RT_POLL`] (C) at a due stop point of a stoppable call: whether the code must stop now.
#[unsafe(no_mangle)]
extern "C" fn ol_rs_jit_stop_requested() -> bool {
    // no panic crosses into C: a runtime that cannot answer stops the code
    std::panic::catch_unwind(|| super::runtime_functions().is_some_and(|r| (r.stop_requested)())).unwrap_or(true)
}

/// Runs work-group function `f` on `ctx`; `true` when it was stopped at a stop point.
///
/// # Safety
/// As calling `f(ctx)` directly.
pub unsafe fn run_work_group(f: WgFn, ctx: *const WgCtx) -> bool {
    // SAFETY: the same C ABI (one pointer argument, no result); the caller's contract for the call.
    unsafe {
        let f = std::mem::transmute::<WgFn, unsafe extern "C" fn(*const c_void)>(f);
        ol_rs_run_stoppable(f, ctx.cast()) != 0
    }
}

thread_local! {
    /// when the innermost [`run_void`] call on this thread started
    static VOID_STARTED: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Runs `f()` (a program's constructors or destructors); `true` when it was stopped at a stop point.
///
/// # Safety
/// As calling `f()` directly.
pub unsafe fn run_void(f: unsafe extern "C" fn()) -> bool {
    let prev = VOID_STARTED.with(|c| c.replace(Some(std::time::Instant::now())));
    // SAFETY: the caller's contract.
    let stopped = unsafe { ol_rs_run_stoppable_void(f) != 0 };
    VOID_STARTED.with(|c| c.set(prev));
    stopped
}

/// When the [`run_void`] call running on this thread started (None: none runs).
pub fn void_call_started() -> Option<std::time::Instant> {
    VOID_STARTED.with(|c| c.get())
}

/// Inserts the stop points into every function of `m` (after its optimisation).
pub(crate) fn insert(m: &Module, tm: &TargetMachine) -> Result<(), String> {
    super::pipeline::run_passes(m, tm, "function(ol-stop-points)", super::pipeline::Workarounds::NONE, &[])
}

#[cfg(test)]
mod tests {
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::module::Module;
    use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine};

    use super::super::pipeline;

    /// A counted loop; straight-line code; an irreducible cycle (two entries); a `switch` with two edges
    /// back to its own block and a phi with an entry per edge; an endless self-loop.
    const CYCLES: &str = r#"
define void @counted(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds i32, ptr %p, i32 %i
  store i32 %i, ptr %q, align 4
  %i.next = add nuw i32 %i, 1
  %c = icmp ult i32 %i.next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

define void @straight(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}

define void @irreducible(i1 %a, ptr %p) {
entry:
  br i1 %a, label %x, label %y
x:
  %v = load volatile i32, ptr %p, align 4
  %b = icmp eq i32 %v, 0
  br i1 %b, label %y, label %out
y:
  store volatile i32 1, ptr %p, align 4
  br label %x
out:
  ret void
}

define i32 @switch_back(ptr %p) {
entry:
  br label %h
h:
  %k = phi i32 [ 0, %entry ], [ %k1, %h ], [ %k1, %h ]
  %k1 = add i32 %k, 1
  %v = load volatile i32, ptr %p, align 4
  switch i32 %v, label %out [
    i32 0, label %h
    i32 1, label %h
  ]
out:
  ret i32 %k1
}

define void @endless() {
entry:
  br label %spin
spin:
  br label %spin
}
"#;

    fn machine() -> TargetMachine {
        Target::initialize_x86(&InitializationConfig::default());
        let triple = TargetMachine::get_default_triple();
        pipeline::target_machine(&triple.as_str().to_string_lossy(), "x86-64", "", 3, RelocMode::PIC, CodeModel::Small)
            .expect("target machine")
    }

    fn run(ctx: &Context) -> Module<'_> {
        let buf = MemoryBuffer::create_from_memory_range_copy(CYCLES.as_bytes(), "cycles.ll");
        let m = ctx.create_module_from_ir(buf).expect("test IR parses");
        let tm = machine();
        super::insert(&m, &tm).expect("pass runs");
        m.verify().unwrap_or_else(|e| panic!("{e}\n{}", m.print_to_string()));
        m
    }

    /// (calls of the poll, allocas) in `f`.
    fn count(m: &Module, f: &str) -> (usize, usize) {
        let f = m.get_function(f).expect("function");
        let (mut polls, mut allocas) = (0, 0);
        for bb in f.get_basic_block_iter() {
            for i in bb.get_instructions() {
                let text = i.to_string();
                polls += usize::from(text.contains(&format!("call void @{}()", super::RT_POLL)));
                allocas += usize::from(text.contains(" = alloca "));
            }
        }
        (polls, allocas)
    }

    #[test]
    fn every_cycle_gets_a_stop_point_and_nothing_else_does() {
        let ctx = Context::create();
        let m = run(&ctx);
        let text = m.print_to_string().to_string();
        // one per cycle; the counter in registers (no alloca left)
        for f in ["counted", "irreducible", "switch_back", "endless"] {
            assert_eq!(count(&m, f), (1, 0), "{f}: {text}");
        }
        assert_eq!(count(&m, "straight"), (0, 0), "{text}");
        assert!(!m.get_function("straight").unwrap().to_string().contains("ol.stop"), "{text}");
        // polled every 4096 trips, rarely taken
        assert!(text.contains("and i32 ") && text.contains(", 4095"), "{text}");
        // the switch's two edges share one stop block; the phi has one entry from it and one from the poll
        let sw = m.get_function("switch_back").unwrap().to_string();
        assert!(sw.contains("i32 0, label %ol.stop") && sw.contains("i32 1, label %ol.stop"), "{sw}");
        // the poll is a declaration the loader resolves, and does not unwind
        let poll = m.get_function(super::RT_POLL).expect("poll declared");
        assert_eq!(poll.count_basic_blocks(), 0);
        assert!(m.print_to_string().to_string().contains("nounwind"), "{text}");
    }

    #[test]
    fn a_module_without_cycles_is_unchanged() {
        let ctx = Context::create();
        let ir = "define i32 @f(i32 %a, i1 %c) {\nentry:\n  br i1 %c, label %t, label %e\nt:\n  br label %e\ne:\n  %r = phi i32 [ 1, %t ], [ %a, %entry ]\n  ret i32 %r\n}\n";
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "plain.ll");
        let m = ctx.create_module_from_ir(buf).expect("parses");
        let before = m.print_to_string().to_string();
        let tm = machine();
        super::insert(&m, &tm).expect("pass runs");
        assert_eq!(m.print_to_string().to_string(), before);
    }
}
