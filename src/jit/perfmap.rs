//! `OFFLOAD_RS_PERF_MAP=1` (read at the first program load): every JIT'd object the loader maps is
//! described in perf's JIT map, `/tmp/perf-<pid>.map` (the path perf reads; one `START SIZE name` line per
//! function, hex without `0x`), appended per load, so `perf top`/`perf report` name the kernels: a
//! work-group function as `<kernel> [offload-rs]` (`[offload-rs WxHxD]` for a version specialised for
//! one group size, `[offload-rs WxHxD quick]` for the quick version a first launch runs), any other
//! function by its symbol. The file is opened with `O_NOFOLLOW|O_APPEND`,
//! created `0644`, and written only if it is a regular file owned by this user. perf has no way to remove
//! an entry: a destroyed program's lines stay, and its addresses may be reused by a later load.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::OnceLock;

use super::elf::LoadedObject;

/// The work-group functions' symbol prefix (lower/kernel_body.cpp's `wgName`).
const WG_PREFIX: &str = "__ol_wg.";

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OFFLOAD_RS_PERF_MAP").is_some_and(|v| v == "1"))
}

/// The map's lines for `obj`; `spec` what it was specialised for.
pub(crate) fn lines(obj: &LoadedObject, spec: Option<&super::compile::Spec>) -> String {
    let mut out = String::new();
    let tag = spec.map_or("[offload-rs]".to_string(), |s| {
        format!("[offload-rs {}{}]", s.shape(), if s.quick { " quick" } else { "" })
    });
    for (a, s, name) in obj.functions() {
        let name: String = name.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
        match name.strip_prefix(WG_PREFIX) {
            Some(k) => out.push_str(&format!("{a:x} {s:x} {k} {tag}\n")),
            None => out.push_str(&format!("{a:x} {s:x} {name}\n")),
        }
    }
    out
}

/// Appends `obj`'s functions to the map, if `OFFLOAD_RS_PERF_MAP=1` (errors are ignored: the map is a
/// debugging aid and a program loads without it).
pub(crate) fn record(obj: &LoadedObject, spec: Option<&super::compile::Spec>) {
    if !enabled() {
        return;
    }
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if f.metadata().is_ok_and(|m| m.is_file() && m.uid() == me) {
        let _ = f.write_all(lines(obj, spec).as_bytes());
    }
}
