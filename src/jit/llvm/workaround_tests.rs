//! Tests of the workarounds for LLVM bugs (src/jit/llvm/workarounds/): each one's pass on IR (it fires where
//! it must and leaves alone what it must), and the miscompile it works around, run through the JIT's
//! own pipeline for the CPUs that show it, on any x86-64 machine.

use inkwell::attributes::AttributeLoc;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};

use super::pipeline::{self, Hooks};
use crate::jit::elf;

/// shared/evidence/lv-predicated-urem-gather: `for (i = 0; i < 96; i++) if ((j + i) % 3 == 0) out[i] =
/// tile[(j * 5) % n]; else out[i] = -1;` with `n` a run-time value, the urem loop-invariant but under a
/// condition. LLVM 22.1.8's loop vectoriser gives every lane lane 0's urem, poison when lane 0 is off.
const PREDICATED_UREM: &str = r#"
define void @f(ptr noalias %out, ptr noalias %tile, i32 %j, i32 %n) #0 {
entry:
  %j5 = mul i32 %j, 5
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %i32 = trunc nuw nsw i64 %i to i32
  %s = add i32 %j, %i32
  %r = urem i32 %s, 3
  %c = icmp eq i32 %r, 0
  br i1 %c, label %then, label %latch
then:
  %idx = urem i32 %j5, %n
  %idx64 = zext nneg i32 %idx to i64
  %p = getelementptr inbounds nuw i32, ptr %tile, i64 %idx64
  %v = load i32, ptr %p, align 4
  br label %latch
latch:
  %x = phi i32 [ %v, %then ], [ -1, %loop ]
  %po = getelementptr inbounds nuw i32, ptr %out, i64 %i
  store i32 %x, ptr %po, align 4
  %i.next = add nuw nsw i64 %i, 1
  %ec = icmp eq i64 %i.next, 96
  br i1 %ec, label %exit, label %loop
exit:
  ret void
}
attributes #0 = { "target-cpu"="CPU" }
"#;

/// The same with a signed remainder whose dividend is also invariant, in a loop that has no dedicated
/// preheader (the entry block branches to it or straight out), and a remainder by a loop-varying divisor
/// that must stay where it is.
const SIGNED_AND_VARYING: &str = r#"
define void @g(ptr noalias %out, i32 %a, i32 %n, i1 %skip) {
entry:
  br i1 %skip, label %exit, label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %latch ]
  %odd = and i32 %i, 1
  %c = icmp eq i32 %odd, 0
  br i1 %c, label %then, label %latch
then:
  %q = srem i32 %a, %n
  %w = urem i32 %a, %i
  %sum = add i32 %q, %w
  %po = getelementptr inbounds i32, ptr %out, i32 %i
  store i32 %sum, ptr %po, align 4
  br label %latch
latch:
  %i.next = add nuw nsw i32 %i, 1
  %ec = icmp eq i32 %i.next, 64
  br i1 %ec, label %exit, label %loop
exit:
  ret void
}
"#;

fn module<'c>(ctx: &'c Context, ir: &str) -> Module<'c> {
    let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test.ll");
    ctx.create_module_from_ir(buf).expect("test IR parses")
}

fn machine(cpu: &str) -> TargetMachine {
    Target::initialize_x86(&InitializationConfig::default());
    let triple = TargetMachine::get_default_triple();
    pipeline::target_machine(&triple.as_str().to_string_lossy(), cpu, "", 3, RelocMode::PIC, CodeModel::Small)
        .expect("target machine")
}

/// The names of the blocks holding each instruction of `f` whose text contains `what`.
fn blocks_of(m: &Module, f: &str, what: &str) -> Vec<String> {
    let f = m.get_function(f).expect("function");
    let mut out = Vec::new();
    for bb in f.get_basic_block_iter() {
        for i in bb.get_instructions() {
            if format!("{i:?}").contains(what) || i.to_string().contains(what) {
                out.push(bb.get_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn hoist_invariant_divisions_fires_on_invariant_divisions_only() {
    let ctx = Context::create();
    let tm = machine("x86-64");
    let m = module(&ctx, &PREDICATED_UREM.replace("\"target-cpu\"=\"CPU\"", "\"target-cpu\"=\"x86-64\""));
    pipeline::run_passes(&m, &tm, "function(ol-hoist-invariant-divisions)", Hooks::NONE, &[]).expect("pass runs");
    assert_eq!(blocks_of(&m, "f", "%idx = urem i32 %j5, %ol.safe.divisor"), ["entry"], "{}", m.print_to_string());
    assert_eq!(blocks_of(&m, "f", "icmp eq i32 %n.fr, 0"), ["entry"], "the divisor made safe: {}", m.print_to_string());
    assert!(m.verify().is_ok());

    let m = module(&ctx, SIGNED_AND_VARYING);
    pipeline::run_passes(&m, &tm, "function(ol-hoist-invariant-divisions)", Hooks::NONE, &[]).expect("pass runs");
    let text = m.print_to_string().to_string();
    assert!(m.verify().is_ok(), "{text}");
    // the invariant srem left the loop for a preheader made for it, with the signed-overflow case safe
    let q = blocks_of(&m, "g", "%q = srem i32 %a.fr, %ol.safe.divisor");
    assert_eq!(q.len(), 1, "{text}");
    assert_ne!(q[0], "then", "{text}");
    assert_ne!(q[0], "entry", "the preheader is a block of its own: {text}");
    assert_eq!(blocks_of(&m, "g", "icmp eq i32 %a.fr, -2147483648").len(), 1, "{text}");
    // the remainder by the induction variable stays under its condition
    assert_eq!(blocks_of(&m, "g", "%w = urem i32 %a, %i"), ["then"], "{text}");
    // nothing to do: a module without loops, or with constant divisors, is unchanged
    let plain = "define i32 @h(i32 %a, i32 %b) {\n  %q = udiv i32 %a, %b\n  ret i32 %q\n}\n";
    let m = module(&ctx, plain);
    let before = m.print_to_string().to_string();
    pipeline::run_passes(&m, &tm, "function(ol-hoist-invariant-divisions)", Hooks::NONE, &[]).expect("pass runs");
    assert_eq!(m.print_to_string().to_string(), before);
}

/// Optimises the reproducer for `cpu` with the JIT's pipeline, then emits it for plain x86-64 (the wrong
/// value is already in the optimised IR, so the result runs on any machine) and runs it; the number of
/// wrong elements over j = 0..3.
fn wrong_elements(cpu: &str, workarounds: Hooks) -> usize {
    let ctx = Context::create();
    let m = module(&ctx, &PREDICATED_UREM.replace("\"target-cpu\"=\"CPU\"", &format!("\"target-cpu\"=\"{cpu}\"")));
    let tm = machine(cpu);
    m.set_triple(&tm.get_triple());
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    pipeline::optimise(&m, &tm, 3, workarounds, &[]).expect("optimise");
    let f = m.get_function("f").expect("f");
    f.remove_string_attribute(AttributeLoc::Function, "target-cpu");
    f.remove_string_attribute(AttributeLoc::Function, "target-features");
    let generic = machine("x86-64");
    let obj = pipeline::emit(&m, &generic, FileType::Object).expect("emit");
    let loaded = elf::LoadedObject::load(&obj).expect("load");
    let addr = loaded.code_symbol("f").expect("f in the object");
    // SAFETY: `f` was compiled from PREDICATED_UREM for this machine's triple with the C ABI:
    // void f(int32_t *out, const int32_t *tile, uint32_t j, uint32_t n), reading tile[0..n), writing
    // out[0..96).
    let f: unsafe extern "C" fn(*mut i32, *const i32, u32, u32) = unsafe { std::mem::transmute(addr) };
    let tile: Vec<i32> = (0..96).map(|i| 1000 + i).collect();
    let mut wrong = 0;
    for j in 0..3u32 {
        let mut out = [0i32; 96];
        // SAFETY: as above; both buffers hold 96 elements.
        unsafe { f(out.as_mut_ptr(), tile.as_ptr(), j, 96) };
        for (i, &o) in out.iter().enumerate() {
            let want = if (j as usize + i).is_multiple_of(3) { tile[(j as usize * 5) % 96] } else { -1 };
            wrong += usize::from(o != want);
        }
    }
    wrong
}

/// The reproducer's class of loops is right for every CPU, gather-capable ones included, on any
/// x86-64 machine.
#[test]
fn predicated_invariant_division_feeding_a_gather() {
    for cpu in ["skylake", "skylake-avx512", "znver4", "x86-64-v4", "x86-64-v3", "haswell"] {
        assert_eq!(wrong_elements(cpu, Hooks::CPU), 0, "{cpu}: wrong elements with the workaround");
    }
    // Without it, LLVM 22.1.8 gets it wrong: with `OFFLOAD_RS_TEST_LLVM_BUG=1` this test runs skylake's
    // code without the workaround too, which reads a wild gather address (SIGSEGV, seen on an AMD EPYC
    // with AVX-512) or gives wrong elements. Opt-in, as it takes the test process down; when LLVM is
    // fixed it prints 0 and the workaround can go.
    if std::env::var_os("OFFLOAD_RS_TEST_LLVM_BUG").is_some() {
        eprintln!("without the workaround, skylake: {} wrong elements", wrong_elements("skylake", Hooks::NONE));
    }
}

/// A ring buffer's index: `out[i] = in[((i + 63) & 63) | base]` for i < n, `base` a run-time multiple
/// of 64. LLVM 22.1.8's loop vectoriser treats the masked index as consecutive under a no-wrap check that
/// tests the wrong width: lanes 1..VF-1 of the first vector read past the wrap (3 of 64 elements wrong
/// for SSE, 15 for AVX2, whatever the trip count), as clang-22 -O2 does with the same C.
const WRAPPING_MASK: &str = r#"
define void @f(ptr noalias %out, ptr noalias %in, i32 %w, i64 %n) #0 {
entry:
  %base = shl i32 %w, 6
  %go = icmp ne i64 %n, 0
  br i1 %go, label %loop, label %exit
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %i32 = trunc i64 %i to i32
  %s = add i32 %i32, 63
  %m = and i32 %s, 63
  %idx = or disjoint i32 %m, %base
  %idx64 = zext i32 %idx to i64
  %p = getelementptr inbounds nuw i64, ptr %in, i64 %idx64
  %v = load i64, ptr %p, align 8
  %po = getelementptr inbounds nuw i64, ptr %out, i64 %i
  store i64 %v, ptr %po, align 8
  %i.next = add nuw nsw i64 %i, 1
  %ec = icmp eq i64 %i.next, %n
  br i1 %ec, label %exit, label %loop
exit:
  ret void
}
attributes #0 = { "target-cpu"="CPU" }
"#;

/// Masks the pass must leave alone: one ScalarEvolution folds (the index stays within the mask over the
/// 64 iterations), one of a loop-invariant value, one that is not a low-bits mask, one outside any loop.
const FOLDED_MASKS: &str = r#"
define i32 @g(ptr noalias %out, i32 %a) {
entry:
  %outside = and i32 %a, 15
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %lane = and i32 %i, 63
  %inv = and i32 %a, 7
  %bits = and i32 %i, 12
  %t = add i32 %lane, %inv
  %t2 = add i32 %t, %bits
  %po = getelementptr inbounds i32, ptr %out, i32 %i
  store i32 %t2, ptr %po, align 4
  %i.next = add nuw nsw i32 %i, 1
  %ec = icmp eq i32 %i.next, 64
  br i1 %ec, label %exit, label %loop
exit:
  ret i32 %outside
}
"#;

#[test]
fn opaque_wrapping_masks_fires_on_wrapping_masks_only() {
    let ctx = Context::create();
    let tm = machine("x86-64");
    let m = module(&ctx, &WRAPPING_MASK.replace("\"target-cpu\"=\"CPU\"", "\"target-cpu\"=\"x86-64\""));
    pipeline::run_passes(&m, &tm, "function(ol-opaque-wrapping-masks)", Hooks::NONE, &[]).expect("pass runs");
    let text = m.print_to_string().to_string();
    assert!(m.verify().is_ok(), "{text}");
    assert_eq!(blocks_of(&m, "f", "%m.ol.opaque = freeze i32 %m"), ["loop"], "{text}");
    assert_eq!(
        blocks_of(&m, "f", "%idx = or disjoint i32 %m.ol.opaque, %base"),
        ["loop"],
        "its user reads the freeze: {text}"
    );

    let m = module(&ctx, FOLDED_MASKS);
    let before = m.print_to_string().to_string();
    pipeline::run_passes(&m, &tm, "function(ol-opaque-wrapping-masks)", Hooks::NONE, &[]).expect("pass runs");
    assert_eq!(m.print_to_string().to_string(), before, "nothing to make opaque");
}

/// Optimises WRAPPING_MASK for `cpu` with the JIT's pipeline, emits it for plain x86-64 (the wrong index
/// is already in the optimised IR) and runs it for n = 64 and 29; the number of wrong elements.
fn wrong_ring_elements(cpu: &str, workarounds: Hooks) -> usize {
    let ctx = Context::create();
    let m = module(&ctx, &WRAPPING_MASK.replace("\"target-cpu\"=\"CPU\"", &format!("\"target-cpu\"=\"{cpu}\"")));
    let tm = machine(cpu);
    m.set_triple(&tm.get_triple());
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    pipeline::optimise(&m, &tm, 3, workarounds, &[]).expect("optimise");
    let f = m.get_function("f").expect("f");
    f.remove_string_attribute(AttributeLoc::Function, "target-cpu");
    f.remove_string_attribute(AttributeLoc::Function, "target-features");
    let generic = machine("x86-64");
    let obj = pipeline::emit(&m, &generic, FileType::Object).expect("emit");
    let loaded = elf::LoadedObject::load(&obj).expect("load");
    let addr = loaded.code_symbol("f").expect("f in the object");
    // SAFETY: `f` was compiled from WRAPPING_MASK for this machine's triple with the C ABI:
    // void f(int64_t *out, const int64_t *in, uint32_t w, uint64_t n), reading in[64 * w .. 64 * w + 64),
    // writing out[0..n).
    let f: unsafe extern "C" fn(*mut i64, *const i64, u32, u64) = unsafe { std::mem::transmute(addr) };
    let input: Vec<i64> = (0..256).collect();
    let mut wrong = 0;
    for n in [64usize, 29] {
        let mut out = [-1i64; 64];
        // SAFETY: as above; `in` holds 256 elements (w = 1 reads 64..128), `out` 64 >= n.
        unsafe { f(out.as_mut_ptr(), input.as_ptr(), 1, n as u64) };
        for (i, &o) in out[..n].iter().enumerate() {
            wrong += usize::from(o != 64 + ((i as i64 + 63) & 63));
        }
    }
    wrong
}

/// The ring-buffer class is right for every CPU with the workaround, on any x86-64 machine; without it
/// the test reports whether LLVM still gets it wrong (when it prints 0 everywhere, the workaround can go).
#[test]
fn wrapping_masked_index_is_not_consecutive() {
    let cpus = ["x86-64", "x86-64-v3", "haswell", "skylake-avx512", "znver3", "znver4", "x86-64-v4"];
    for cpu in cpus {
        assert_eq!(wrong_ring_elements(cpu, Hooks::CPU), 0, "{cpu}: wrong elements with the workaround");
    }
    let without: Vec<_> = cpus.iter().map(|&cpu| (cpu, wrong_ring_elements(cpu, Hooks::NONE))).collect();
    eprintln!("without the workaround, wrong elements per CPU: {without:?}");
}
