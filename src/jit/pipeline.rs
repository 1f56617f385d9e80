//! The LLVM steps both JIT paths share (the CPU path in compile.rs, the NVPTX path in nvptx.rs): parse
//! bitcode in a fresh context, make a target machine, optimise with `default<O{LIBOMPTARGET_JIT_OPT_LEVEL}>`,
//! emit. Errors are LLVM's text; each path says which step failed in its own words.

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, RelocMode, Target, TargetMachine, TargetTriple};

/// Parses LLVM bitcode into `ctx`.
pub(crate) fn parse<'c>(ctx: &'c Context, bc: &[u8]) -> Result<Module<'c>, String> {
    let buf = MemoryBuffer::create_from_memory_range_copy(bc, "image");
    Module::parse_bitcode_from_buffer(&buf, ctx).map_err(|e| e.to_string())
}

/// A target machine for `triple` (its target initialised by the caller) at optimisation level `opt`.
pub(crate) fn target_machine(
    triple: &str,
    cpu: &str,
    features: &str,
    opt: u32,
    reloc: RelocMode,
    model: CodeModel,
) -> Result<TargetMachine, String> {
    let t = TargetTriple::create(triple);
    let target = Target::from_triple(&t).map_err(|e| format!("target {triple}: {e}"))?;
    let level = match opt {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    target
        .create_target_machine(&t, cpu, features, level, reloc, model)
        .ok_or_else(|| format!("cannot create a target machine for {triple} {cpu} {features}"))
}

/// Runs `default<O{opt}>` on `m`.
pub(crate) fn optimise(m: &Module, tm: &TargetMachine, opt: u32) -> Result<(), String> {
    m.run_passes(&format!("default<O{}>", opt.min(3)), tm, PassBuilderOptions::create()).map_err(|e| e.to_string())
}

/// Code for `m`: an object file or assembly text.
pub(crate) fn emit(m: &Module, tm: &TargetMachine, kind: FileType) -> Result<Vec<u8>, String> {
    tm.write_to_memory_buffer(m, kind).map(|b| b.as_slice().to_vec()).map_err(|e| e.to_string())
}
