//! The `ol-stop-points` pass (stop_points.cpp), run after a compile's optimisation when the client asks
//! for stop points (see src/jit/stop.rs for what they are and how code is left at one).

use inkwell::module::Module;
use inkwell::targets::TargetMachine;

/// Inserts the stop points into every function of `m` (after its optimisation).
pub(crate) fn insert(m: &Module, tm: &TargetMachine) -> Result<(), String> {
    super::pipeline::run_passes(m, tm, "function(ol-stop-points)", super::pipeline::Hooks::NONE, &[])
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
                polls += usize::from(text.contains(&format!("call void @{}()", crate::jit::stop::RT_POLL)));
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
        let poll = m.get_function(crate::jit::stop::RT_POLL).expect("poll declared");
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
