// Builds the JIT's C++ shims (src/jit/lower.cpp: IR lowering; src/jit/kernel_memory.cpp: stack sizes and
// the memcheck pass) against LLVM 22's C++ API.
// The shim is linked with libLLVM-22 (dynamic), which llvm-sys/inkwell already link.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/jit/lower.cpp");
    println!("cargo:rerun-if-changed=src/jit/kernel_memory.cpp");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    let prefix = std::env::var("LLVM_SYS_221_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let cfg = format!("{prefix}/bin/llvm-config");
    let cxxflags = Command::new(&cfg)
        .arg("--cxxflags")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|_| format!("-I{prefix}/include -std=c++17"));
    let mut b = cc::Build::new();
    // Our C++ with warnings on (-Wall -Wextra); LLVM's headers as system headers, whose warnings are not ours.
    b.cpp(true).file("src/jit/lower.cpp").file("src/jit/kernel_memory.cpp").warnings(true).extra_warnings(true);
    for f in cxxflags.split_whitespace() {
        if let Some(dir) = f.strip_prefix("-I") {
            b.flag("-isystem").flag(dir);
        } else if f.starts_with("-D") || f.starts_with("-std=") || f == "-fno-exceptions" {
            b.flag(f);
        }
    }
    b.flag("-fno-rtti").opt_level(2).debug(false);
    b.compile("ol_rs_jit_lower");
    println!("cargo:rustc-link-search=native={prefix}/lib");
    println!("cargo:rustc-link-lib=dylib=LLVM-22");
}
