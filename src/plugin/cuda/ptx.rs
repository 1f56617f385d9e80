//! NVPTX LLVM bitcode -> PTX (compiled by `jit::nvptx` in the JIT's compile helper), behind a
//! content-addressed cache.
//!
//! * Global constructors/destructors: LLVM 22's NVPTX codegen pipeline always runs the
//!   `nvptx-lower-ctor-dtor` pass (the old `-nvptx-lower-global-ctor-dtor` switch is gone), which
//!   turns `llvm.global_ctors`/`llvm.global_dtors` into `__init_array_object_<fn>_<hash>_<prio>`
//!   constants and the `nvptx$device$init`/`nvptx$device$fini` kernels that walk
//!   `[__init_array_start, __init_array_end)`. The loader fills those bounds (see `device.rs`).
//! * Cache: the JIT's [`ContentCache`] (single flight): key = blake3(image bytes, sm, PTX ISA, build id,
//!   opt level); value = `Arc<PtxImage>`, held as a `Weak`: an entry is evicted when the last program
//!   loaded from it is dropped. It is never keyed by address (LLVM's old JIT cache was, and returned
//!   stale code for reused addresses).

use std::sync::{Arc, LazyLock};

use crate::jit::ContentCache;
use crate::plugin::{PluginError, PluginResult};

use super::image;

/// Compiled PTX plus what the loader needs to know about it.
#[derive(Debug)]
pub struct PtxImage {
    key: [u8; 32],
    /// NUL-terminated PTX text, as `cuModuleLoadDataEx` wants it.
    pub ptx: Vec<u8>,
    pub ctors: Vec<String>,
    pub dtors: Vec<String>,
}

impl PtxImage {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.ptx[..self.ptx.len().saturating_sub(1)]).unwrap_or("")
    }
}

impl Drop for PtxImage {
    fn drop(&mut self) {
        CACHE.evict(&self.key);
    }
}

static CACHE: LazyLock<ContentCache<PtxImage, PluginError>> = LazyLock::new(ContentCache::default);

/// Number of live cache entries (for tests and diagnostics).
pub fn cache_len() -> usize {
    CACHE.live()
}

fn cache_key(image: &[u8], cpu: &str, ptx_isa: u32) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"offload-rs nvptx bitcode->ptx\0");
    h.update(crate::jit::BUILD_ID.as_bytes());
    h.update(&[crate::jit::opt_level() as u8]);
    h.update(b"\0");
    h.update(cpu.as_bytes());
    h.update(b"\0");
    h.update(&ptx_isa.to_le_bytes());
    h.update(&(image.len() as u64).to_le_bytes());
    h.update(image);
    *h.finalize().as_bytes()
}

/// PTX for `image` (NVPTX bitcode) on a device of compute capability `major.minor` whose driver
/// accepts PTX ISA `ptx_isa` (e.g. 84). Cached by content.
pub fn compile_cached(image: &[u8], major: u32, minor: u32, ptx_isa: u32) -> PluginResult<Arc<PtxImage>> {
    let cpu = image::llvm_cpu_for_sm(major, minor);
    let key = cache_key(image, &cpu, ptx_isa);
    // one compile per key, however many threads load the same image at once
    CACHE
        .get_or_produce(key, || {
            let sm = major * 10 + minor;
            let ptx = compile_to_ptx(image, &cpu, &image::ptx_feature(ptx_isa, sm))?;
            let (ctors, dtors) = image::ptx_ctor_dtor_names(&ptx)?;
            let mut bytes = ptx.into_bytes();
            bytes.push(0);
            Ok(Arc::new(PtxImage { key, ptx: bytes, ctors, dtors }))
        })
        .map(|(p, _)| p)
}

/// The triple of a bitcode module (read without LLVM, see `jit::bitcode_triple`), else None.
pub fn bitcode_triple(image: &[u8]) -> Option<String> {
    crate::jit::bitcode_triple(image).ok()
}

/// NVPTX bitcode -> PTX text for `cpu` (`sm_90`) with `features` (`+ptx84`), optimised at
/// `LIBOMPTARGET_JIT_OPT_LEVEL` (default 3) by the JIT's compile helper.
pub fn compile_to_ptx(image: &[u8], cpu: &str, features: &str) -> PluginResult<String> {
    crate::jit::compile_ptx(image, cpu, features)
        .map_err(|e| PluginError::Compile(format!("failure to jit IR image: {e}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Kernel sources of the CUDA tests (also used by the GPU tests in `device.rs`).
    pub fn kernel_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ffi-tests/kernels/cuda")
    }

    /// NVPTX bitcode of `ffi-tests/kernels/cuda/<name>.c` (or `ffi-tests/device/<x>.c` for
    /// `name = "device/<x>"`, the project's shared device code): prebuilt in
    /// `$OFFLOAD_RS_KERNELS_DIR` (the GPU kit, as `<name with / -> _>.bc`), else compiled with
    /// `clang-22` into a temp dir. None when neither is possible.
    pub fn kernel_bitcode(name: &str) -> Option<Vec<u8>> {
        let flat = name.replace('/', "_");
        if let Ok(dir) = std::env::var("OFFLOAD_RS_KERNELS_DIR")
            && let Ok(b) = std::fs::read(PathBuf::from(dir).join(format!("{flat}.bc")))
        {
            return Some(b);
        }
        let src = match name.strip_prefix("device/") {
            Some(x) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("ffi-tests/device/{x}.c")),
            None => kernel_dir().join(format!("{name}.c")),
        };
        let out = std::env::temp_dir().join(format!("offload-rs-cuda-{}-{flat}.bc", std::process::id()));
        let st = std::process::Command::new("clang-22")
            .args(["--target=nvptx64-nvidia-cuda", "-march=sm_90", "--cuda-feature=+ptx80", "-nogpulib"])
            .args(["-ffreestanding", "-flto", "-O2", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .ok()?;
        if !st.success() {
            return None;
        }
        let b = std::fs::read(&out).ok();
        let _ = std::fs::remove_file(&out);
        b
    }

    #[test]
    fn bitcode_to_ptx_has_entries_and_ctors() {
        let Some(bc) = kernel_bitcode("kernels") else {
            eprintln!("SKIP: clang-22 not available to build test kernels");
            return;
        };
        assert_eq!(image::classify(&bc), image::CudaImageKind::Bitcode);
        assert!(bitcode_triple(&bc).unwrap().starts_with("nvptx64"));
        let ptx = compile_to_ptx(&bc, "sm_90", "+ptx80").unwrap();
        for k in ["saxpy", "reduce_sum", "grid2d", "read_global", "write_global", "empty", "multiargs"] {
            assert!(ptx.contains(&format!(".entry {k}(")), "no .entry {k} in\n{ptx}");
        }
        assert!(ptx.contains(".target sm_90"), "{ptx}");
        assert!(ptx.contains(".version 8.0"), "{ptx}");
        assert!(image::is_ptx(ptx.as_bytes()));

        let Some(ctor) = kernel_bitcode("ctor") else {
            return;
        };
        let img = compile_cached(&ctor, 9, 0, 84).unwrap();
        assert!(img.text().contains(".entry nvptx$device$init"), "{}", img.text());
        assert!(img.text().contains(".entry nvptx$device$fini"));
        assert_eq!(img.ctors.len(), 3, "{:?}", img.ctors);
        assert!(img.ctors[0].ends_with("_200") && img.ctors[2].ends_with("_202"), "{:?}", img.ctors);
        assert_eq!(img.dtors.len(), 1);
        assert_eq!(*img.ptx.last().unwrap(), 0);
    }

    #[test]
    fn project_device_code_compiles_to_ptx() {
        for (name, entries) in [
            ("device/kernels", &["saxpy", "reduce", "coords3d", "structarg", "read_ctor", "sequence", "spin"][..]),
            ("device/lanes", &["lanes"][..]),
            ("device/seed_a", &["get"][..]),
            ("device/seed_b", &["get"][..]),
        ] {
            let Some(bc) = kernel_bitcode(name) else {
                eprintln!("SKIP: {name}: clang-22 not available");
                continue;
            };
            let ptx = compile_to_ptx(&bc, "sm_90", "+ptx84").unwrap_or_else(|e| panic!("{name}: {e}"));
            for e in entries {
                assert!(ptx.contains(&format!(".entry {e}(")), "{name}: no .entry {e}");
            }
        }
    }

    /// NVIDIA's PTX assembler of CUDA 12.9 (`ptxas`) or 13.5 (`ptxas13`) in `$OFFLOAD_RS_CUDA_TOOLS`,
    /// else in `build/cuda-tools/bin` (both fetched from PyPI by scripts/cuda-tools.sh); None if absent.
    pub fn ptxas(which: &str) -> Option<PathBuf> {
        let dir = std::env::var_os("OFFLOAD_RS_CUDA_TOOLS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("build/cuda-tools"));
        let p = dir.join("bin").join(which);
        p.is_file().then_some(p)
    }

    /// Assemble `ptx` for `sm_<sm>` with ptxas into a cubin; Err carries ptxas's messages.
    pub fn assemble(ptxas: &std::path::Path, ptx: &str, sm: u32, tag: &str) -> Result<Vec<u8>, String> {
        let dir = std::env::temp_dir();
        let base = format!("offload-rs-ptxas-{}-{tag}-sm{sm}", std::process::id());
        let (src, out) = (dir.join(format!("{base}.ptx")), dir.join(format!("{base}.cubin")));
        std::fs::write(&src, ptx).map_err(|e| e.to_string())?;
        let r = std::process::Command::new(ptxas)
            .arg(format!("-arch=sm_{sm}"))
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .output()
            .map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&src);
        let r = r?;
        let cubin = std::fs::read(&out);
        let _ = std::fs::remove_file(&out);
        if !r.status.success() {
            return Err(format!("{}{}", String::from_utf8_lossy(&r.stdout), String::from_utf8_lossy(&r.stderr)));
        }
        cubin.map_err(|e| e.to_string())
    }

    /// Everything our NVPTX path produces must pass NVIDIA's own assembler (what the driver runs on
    /// PTX at cuModuleLoadDataEx), for the H200 (sm_90) with the PTX ISA of several driver versions,
    /// and for older and newer GPUs. The cubins it makes are recognised as such.
    #[test]
    fn generated_ptx_passes_nvidia_ptxas() {
        let (Some(ptxas12), Some(ptxas13)) = (ptxas("ptxas"), ptxas("ptxas13")) else {
            eprintln!("SKIP: no ptxas (bash scripts/cuda-tools.sh fetches it)");
            return;
        };
        // (major, minor, driver version) -> sm and the PTX ISA we target for that driver; PTX 9.x (13.x
        // drivers) goes through CUDA 13's assembler.
        let targets = [
            (9, 0, 12080),
            (9, 0, 13000),
            (9, 0, 12040),
            (8, 0, 11080),
            (7, 0, 11040),
            (8, 9, 12020),
            (10, 0, 12080),
            (12, 0, 13000),
        ];
        // the project's device code, the CUDA tests' kernels and the CPU kernel tests' sources
        let mut sources: Vec<String> =
            ["device/kernels", "device/lanes", "device/seed_a", "kernels", "ctor"].map(String::from).to_vec();
        let cpu_tests = kernel_dir().join("..");
        let mut more: Vec<String> = std::fs::read_dir(&cpu_tests)
            .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".c").map(|n| format!("../{n}"))))
            .into_iter()
            .flatten()
            .collect();
        more.sort();
        // vmath.c calls libm by name (the CPU device's vector math): on a GPU that needs libdevice, which
        // the PTX path does not link
        more.retain(|n| n != "../vmath");
        sources.extend(more);
        let mut checked = 0;
        for name in sources.iter().map(String::as_str) {
            let Some(bc) = kernel_bitcode(name) else {
                eprintln!("SKIP: {name}: clang-22 not available");
                continue;
            };
            // every source for the H200; the main kernels for every target
            let these = if name == "device/kernels" { &targets[..] } else { &targets[..2] };
            for &(major, minor, driver) in these {
                let isa = image::ptx_isa_for_driver(driver);
                let img = compile_cached(&bc, major, minor, isa).unwrap_or_else(|e| panic!("{name}: {e}"));
                let sm = major * 10 + minor;
                let ptxas = if driver >= 13000 { &ptxas13 } else { &ptxas12 };
                let cubin = assemble(ptxas, img.text(), sm, &name.replace(['/', '.'], "_"))
                    .unwrap_or_else(|e| panic!("ptxas rejects our PTX of {name} for sm_{sm} (ISA {isa}):\n{e}"));
                assert_eq!(image::classify(&cubin), image::CudaImageKind::Cubin, "{name} sm_{sm}");
                // the real cubin's ELF header: our SM reading (is_valid_binary) and ctor discovery
                assert_eq!(
                    image::cubin_sm(&cubin),
                    Some(sm),
                    "{name}: SM of ptxas's cubin for sm_{sm}: header {:02x?}",
                    &cubin[..64]
                );
                assert!(image::sm_compatible(sm, major, minor));
                let (ctors, dtors) = image::cubin_ctor_dtor_names(&cubin).unwrap();
                assert_eq!((&ctors, &dtors), (&img.ctors, &img.dtors), "{name}: ctors/dtors of the cubin");
                checked += 1;
            }
        }
        eprintln!("ptxas accepted {checked} PTX modules");
    }

    #[test]
    fn cache_is_content_keyed_and_evicted_on_drop() {
        let Some(bc) = kernel_bitcode("kernels") else {
            eprintln!("SKIP: clang-22 not available to build test kernels");
            return;
        };
        // a distinct ISA so other tests running in parallel don't share our entries
        let a = compile_cached(&bc, 8, 0, 77).unwrap();
        let b = compile_cached(&bc, 8, 0, 77).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "same content -> same entry");
        let key = a.key;
        let c = compile_cached(&bc, 8, 6, 77).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "different arch -> different entry");
        assert!(c.text().contains(".target sm_86"));
        drop(a);
        assert!(CACHE.contains(&key), "still referenced by b");
        drop(b);
        assert!(!CACHE.contains(&key), "evicted with the last program");
        // recompiling gives a fresh, equal entry
        let d = compile_cached(&bc, 8, 0, 77).unwrap();
        assert_eq!(d.key, key);
        drop(c);
        drop(d);
    }

    #[test]
    fn garbage_bitcode_is_a_compile_error_not_a_panic() {
        let mut bad = vec![0x42, 0x43, 0xC0, 0xDE];
        bad.extend_from_slice(&[0x12; 64]);
        match compile_to_ptx(&bad, "sm_90", "+ptx80") {
            Err(PluginError::Compile(m)) => {
                assert!(m.starts_with("failure to jit IR image: "), "{m}")
            }
            other => panic!("{other:?}"),
        }
        assert!(bitcode_triple(&bad).is_none());
    }

    #[test]
    fn x86_bitcode_is_rejected() {
        let dir = std::env::temp_dir();
        let src = dir.join(format!("offload-rs-cuda-x86-{}.c", std::process::id()));
        let out = src.with_extension("bc");
        std::fs::write(&src, "int f(int x) { return x + 1; }\n").unwrap();
        let ok = std::process::Command::new("clang-22")
            .args(["--target=x86_64-unknown-linux-gnu", "-O1", "-c", "-emit-llvm"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        let _ = std::fs::remove_file(&src);
        if !ok {
            eprintln!("SKIP: clang-22 not available");
            return;
        }
        let bc = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        match compile_to_ptx(&bc, "sm_90", "+ptx80") {
            Err(PluginError::Compile(m)) => assert!(m.contains("x86_64"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
