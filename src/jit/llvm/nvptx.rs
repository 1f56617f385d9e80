//! NVPTX bitcode -> PTX text with LLVM's NVPTX backend (the CUDA plugin's JIT; its cache and loader are
//! in `plugin/cuda/ptx.rs`). Runs in the compile helper (see helper.rs) like the CPU path.
//!
//! The bitcode is parsed in a fresh LLVM context, the functions' `target-cpu`/`target-features`
//! attributes are dropped (the device decides: `sm_<major><minor>` and the PTX ISA the driver accepts),
//! the module is optimised with `default<O{LIBOMPTARGET_JIT_OPT_LEVEL}>` and code-generated to PTX, with
//! the steps the CPU path uses (pipeline.rs).

use std::sync::Once;

use inkwell::attributes::AttributeLoc;
use inkwell::context::Context;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple};

use super::pipeline;
use crate::jit::JitError;

fn init_nvptx() {
    static INIT: Once = Once::new();
    INIT.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
}

fn err(what: &str, msg: impl std::fmt::Display) -> JitError {
    JitError::Compile(format!("{what}: {msg}"))
}

/// PTX for `bc` on `cpu` (`sm_90`) with `features` (`+ptx84`) at optimisation level `opt`, in this
/// process.
pub(crate) fn ptx_in_process(bc: &[u8], cpu: &str, features: &str, opt: u32) -> Result<String, JitError> {
    init_nvptx();
    let ctx = Context::create();
    let module = pipeline::parse(&ctx, bc).map_err(|e| err("cannot parse bitcode", e))?;
    let triple = module.get_triple().as_str().to_string_lossy().into_owned();
    if !triple.starts_with("nvptx64") {
        return Err(err("unsupported target", format!("module triple is '{triple}', expected nvptx64-nvidia-cuda")));
    }
    for f in module.get_functions() {
        f.remove_string_attribute(AttributeLoc::Function, "target-cpu");
        f.remove_string_attribute(AttributeLoc::Function, "target-features");
    }
    const TRIPLE: &str = "nvptx64-nvidia-cuda";
    let tm = pipeline::target_machine(TRIPLE, cpu, features, opt, RelocMode::Default, CodeModel::Default)
        .map_err(|e| err("NVPTX target machine", e))?;
    module.set_triple(&TargetTriple::create(TRIPLE));
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    module.verify().map_err(|e| err("invalid module", e.to_string()))?;
    pipeline::optimise(&module, &tm, opt, pipeline::Hooks::NONE, &[]).map_err(|e| err("optimisation", e))?;
    let out = pipeline::emit(&module, &tm, FileType::Assembly).map_err(|e| err("NVPTX codegen", e))?;
    String::from_utf8(out).map_err(|e| err("NVPTX codegen", e))
}
