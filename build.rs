// Builds the JIT's C++ shims against LLVM 22's C++ API (src/jit/llvm/lower/: IR lowering;
// src/jit/llvm/kernel_memory.cpp: stack sizes and the memcheck pass) and the API's pinning thread-local
// (src/runtime/pin_tls.c, C), the stoppable calls of JIT'd code (src/jit/stop.c, C), and computes the JIT's build id. The shims are linked with libLLVM-22
// (dynamic), which llvm-sys/inkwell already link.
//
// OFFLOAD_RS_BUILD_ID (a rustc env var): blake3 of every source that decides what the JIT produces
// (src/jit/*, the NVPTX path, the helper's main, Cargo.lock for the LLVM bindings) and of
// `llvm-config --version`. It is part of every JIT cache key (memory and disk) and of the compile
// helper's handshake, so an object compiled by an older build is never served.
use std::path::Path;
use std::process::Command;

/// The C++ of the shim library: every `.cpp` (compiled) and `.h` under src/jit/llvm (the lowering's
/// files in src/jit/llvm/lower/, the pass driver, the workarounds, ...), in a stable order.
fn cxx_files(ext: &str) -> Vec<std::path::PathBuf> {
    fn walk(p: &Path, ext: &str, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(p) else { return };
        for e in rd.filter_map(Result::ok).map(|e| e.path()) {
            if e.is_dir() {
                walk(&e, ext, out);
            } else if e.extension().is_some_and(|x| x == ext) {
                out.push(e);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("src/jit/llvm"), ext, &mut out);
    out.sort();
    out
}
/// The C sources (no LLVM): the API's pinning thread-local, and how JIT'd code is left at a stop point.
const C_SOURCES: [&str; 2] = ["src/runtime/pin_tls.c", "src/jit/stop.c"];

fn hash_tree(h: &mut blake3::Hasher, p: &Path) {
    let mut entries: Vec<_> = match std::fs::read_dir(p) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(_) => {
            if let Ok(b) = std::fs::read(p) {
                h.update(p.to_string_lossy().as_bytes());
                h.update(&(b.len() as u64).to_le_bytes());
                h.update(&b);
            }
            return;
        }
    };
    entries.sort();
    for e in entries {
        hash_tree(h, &e);
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    let prefix = std::env::var("LLVM_SYS_221_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let cfg = format!("{prefix}/bin/llvm-config");
    let llvm_version = Command::new(&cfg)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();

    let sources = ["src/jit", "src/plugin/cuda/ptx.rs", "src/bin/offload-rs-jit.rs", "Cargo.lock", "build.rs"];
    let mut h = blake3::Hasher::new();
    h.update(b"offload-rs build id\0");
    h.update(llvm_version.as_bytes());
    for s in sources {
        println!("cargo:rerun-if-changed={s}");
        hash_tree(&mut h, Path::new(s));
    }
    println!("cargo:rustc-env=OFFLOAD_RS_BUILD_ID={}", h.finalize().to_hex());
    println!("cargo:rustc-env=OFFLOAD_RS_LLVM_BUILD_VERSION={llvm_version}");

    // The libLLVM the JIT's LLVM side runs, by path: the client (built without the `llvm` feature) keys its
    // caches with this file's identity (src/jit/disk.rs) without loading it.
    let libllvm = std::fs::canonicalize(format!(
        "{prefix}/lib/libLLVM.so.{}",
        llvm_version.split('.').take(2).collect::<Vec<_>>().join(".")
    ))
    .map(|p| p.display().to_string())
    .unwrap_or_default();
    println!("cargo:rustc-env=OFFLOAD_RS_LIBLLVM={libllvm}");
    // Only the `llvm` feature (the compile helper, the in-process LLVM module, the Rust tests) compiles
    // and links the C++ against LLVM; the client library has no LLVM in it.
    if std::env::var_os("CARGO_FEATURE_LLVM").is_some() {
        // The C++ takes a while to compile against LLVM's headers: rebuild it only when it changed (the
        // build script reruns for any change under src/jit).
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
        let mut sh = blake3::Hasher::new();
        let sources = cxx_files("cpp");
        for f in sources.iter().chain(&cxx_files("h")) {
            sh.update(f.to_string_lossy().as_bytes());
            sh.update(&std::fs::read(f).unwrap_or_default());
        }
        let stamp_val = format!("{}\n{prefix}\n", sh.finalize().to_hex());
        let stamp = out.join("lower.stamp");
        let lib = out.join("libol_rs_jit_lower.a");
        if lib.exists() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_val) {
            println!("cargo:rustc-link-search=native={}", out.display());
            println!("cargo:rustc-link-lib=static=ol_rs_jit_lower");
            println!("cargo:rustc-link-lib=stdc++");
        } else {
            let cxxflags = Command::new(&cfg)
                .arg("--cxxflags")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_else(|_| format!("-I{prefix}/include -std=c++17"));
            let mut b = cc::Build::new();
            // Our C++ with warnings on (-Wall -Wextra); LLVM's headers as system headers, whose warnings are
            // not ours.
            b.cpp(true).files(&sources).warnings(true).extra_warnings(true);
            for f in cxxflags.split_whitespace() {
                if let Some(dir) = f.strip_prefix("-I") {
                    b.flag("-isystem").flag(dir);
                } else if f.starts_with("-D") || f.starts_with("-std=") || f == "-fno-exceptions" {
                    b.flag(f);
                }
            }
            b.flag("-fno-rtti").opt_level(2).debug(false);
            b.compile("ol_rs_jit_lower");
            let _ = std::fs::write(&stamp, stamp_val);
        }
        println!("cargo:rustc-link-search=native={prefix}/lib");
        println!("cargo:rustc-link-lib=dylib=LLVM-22");
    }

    // The pinning thread-local in the initial-exec TLS model (src/runtime/pin_tls.c says why); the
    // stoppable calls of JIT'd code (src/jit/stop.c).
    for f in C_SOURCES {
        println!("cargo:rerun-if-changed={f}");
    }
    cc::Build::new().files(C_SOURCES).warnings(true).extra_warnings(true).opt_level(2).compile("ol_rs_c");
}
