//! `DeviceInfo` of the CPU device, read once from the machine (`/proc/cpuinfo`, `/proc/meminfo`,
//! `/sys`, CPUID).
//!
//! Values that have no CPU source are documented where they are chosen:
//! * `memory_clock_rate`: SMBIOS type-17 "configured memory speed" when `/sys/firmware/dmi/tables/DMI`
//!   is readable (MT/s / 2, the clock of a double-data-rate bus, like CUDA's attribute), else
//!   [`FALLBACK_MEMORY_CLOCK_MHZ`] (DDR4-3200's 1600 MHz clock). LLVM's tests require a value > 0.
//! * `work_group_local_mem_size`: [`LOCAL_MEM_PER_GROUP`]; local memory is an ordinary per-worker
//!   buffer, the limit only keeps kernels sized like GPU kernels and the buffers cache-resident.
//! * work-group limits: CUDA's (1024 per group, {1024, 1024, 64} per dimension), because the kernels'
//!   `range()` attributes assume them (see `launch.rs`).

use crate::plugin::DeviceInfo;

/// `OL_DEVICE_TYPE_CPU`
pub(crate) const DEVICE_TYPE_CPU: u32 = 3;
/// Local (`__shared__`) memory per work-group, static plus dynamic. 64 KiB: more than CUDA's default
/// 48 KiB so ported kernels fit, small enough to stay in L2.
pub(crate) const LOCAL_MEM_PER_GROUP: u64 = 64 * 1024;
/// Work-items per group (CUDA's limit).
pub(crate) const MAX_GROUP_SIZE: u32 = 1024;
/// Work-items per group per dimension (CUDA's limits).
pub(crate) const MAX_GROUP_SIZE_PER_DIM: [u32; 3] = [1024, 1024, 64];
/// Memory clock in MHz when SMBIOS cannot be read: DDR4-3200 (3200 MT/s, 1600 MHz clock).
pub(crate) const FALLBACK_MEMORY_CLOCK_MHZ: u32 = 1600;
/// Clock in MHz when neither cpufreq nor `/proc/cpuinfo` says (never seen on Linux x86).
const FALLBACK_CPU_CLOCK_MHZ: u32 = 1000;

/// `fp_config` bits (`ol_device_fp_capability_flags_t`): denorm, inf/nan, round-to-nearest, round-to-zero,
/// round-to-inf, fma, correctly-rounded divide/sqrt: all IEEE-754 on x86 (SSE2/AVX).
pub(crate) const FP_CONFIG_FULL: u32 = 0x7F;

/// Build the info from the running machine.
pub fn read_device_info() -> DeviceInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let model = cpuinfo_field(&cpuinfo, "model name")
        .or_else(|| cpuinfo_field(&cpuinfo, "Model"))
        .unwrap_or_else(|| format!("{} CPU", std::env::consts::ARCH));
    let vendor_raw = cpuinfo_field(&cpuinfo, "vendor_id").unwrap_or_default();
    let (vendor, vendor_id) = vendor_names(&vendor_raw);
    let mem_total = usable_memory_of(meminfo_total(&meminfo).unwrap_or(1 << 30));
    let cpu_mhz = read_max_clock_mhz(&cpuinfo);
    // what the JIT's code may use: the chosen target's features (OFFLOAD_RS_CPU_TARGET), else this CPU's
    let features = crate::jit::chosen_target_features().map_or_else(SimdFeatures::detect, SimdFeatures::of_llvm);

    DeviceInfo {
        name: model.clone(),
        product_name: model,
        uid: "CPU-0".to_string(),
        vendor,
        driver_version: env!("CARGO_PKG_VERSION").to_string(),
        device_type: DEVICE_TYPE_CPU,
        max_work_group_size: MAX_GROUP_SIZE,
        max_work_group_size_per_dim: MAX_GROUP_SIZE_PER_DIM,
        max_work_size: u32::MAX,
        max_work_size_per_dim: [u32::MAX; 3],
        vendor_id,
        num_compute_units: num_compute_units(),
        max_clock_frequency: cpu_mhz,
        memory_clock_rate: read_smbios_memory_clock_mhz().unwrap_or(FALLBACK_MEMORY_CLOCK_MHZ),
        address_bits: usize::BITS,
        max_mem_alloc_size: mem_total,
        global_mem_size: mem_total,
        work_group_local_mem_size: LOCAL_MEM_PER_GROUP,
        single_fp_config: FP_CONFIG_FULL,
        double_fp_config: FP_CONFIG_FULL,
        half_fp_config: if features.half { FP_CONFIG_FULL } else { 0 },
        native_vector_width: features.native_vector_width(),
    }
}

/// Threads the device runs work-groups on: `OFFLOAD_RS_CPU_THREADS` when set (and valid), else
/// `available_parallelism` (respects cgroup quotas and affinity masks), at least 1.
pub fn num_compute_units() -> u32 {
    threads_setting()
        .ok()
        .flatten()
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1))
}

/// The environment variable that sets the number of threads running work-groups (PoCL's
/// `POCL_CPU_MAX_CU_NUM`).
pub(crate) const THREADS_ENV: &str = "OFFLOAD_RS_CPU_THREADS";
/// The largest `OFFLOAD_RS_CPU_THREADS` accepted.
const MAX_THREADS: u32 = 4096;

/// `OFFLOAD_RS_CPU_THREADS`, read once: `None` when unset or empty, an error text when not a number of
/// threads from 1 to [`MAX_THREADS`].
pub(crate) fn threads_setting() -> Result<Option<u32>, &'static str> {
    static SETTING: std::sync::OnceLock<Result<Option<u32>, String>> = std::sync::OnceLock::new();
    SETTING
        .get_or_init(|| parse_threads(std::env::var_os(THREADS_ENV).as_deref()))
        .as_ref()
        .map(|v| *v)
        .map_err(String::as_str)
}

fn parse_threads(v: Option<&std::ffi::OsStr>) -> Result<Option<u32>, String> {
    let Some(v) = v.filter(|v| !v.is_empty()) else { return Ok(None) };
    let text = v.to_string_lossy();
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(Some(n)),
        _ => Err(format!("{THREADS_ENV}={text}: expected a number of threads from 1 to {MAX_THREADS}")),
    }
}

#[cfg(test)]
#[test]
fn thread_counts_parse_or_say_why() {
    use std::ffi::OsStr;
    assert_eq!(parse_threads(None), Ok(None));
    assert_eq!(parse_threads(Some(OsStr::new(""))), Ok(None));
    assert_eq!(parse_threads(Some(OsStr::new("1"))), Ok(Some(1)));
    assert_eq!(parse_threads(Some(OsStr::new(" 64 "))), Ok(Some(64)));
    for bad in ["0", "-2", "abc", "1.5", "4097", "99999999999"] {
        let e = parse_threads(Some(OsStr::new(bad))).unwrap_err();
        assert_eq!(e, format!("OFFLOAD_RS_CPU_THREADS={bad}: expected a number of threads from 1 to 4096"));
    }
}

/// First value of `key` in `/proc/cpuinfo` text.
fn cpuinfo_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// CPUID vendor string -> (vendor name, PCI vendor id).
fn vendor_names(cpuid_vendor: &str) -> (String, u32) {
    match cpuid_vendor {
        "GenuineIntel" => ("Intel".into(), 0x8086),
        "AuthenticAMD" | "AMDisbetter!" => ("AMD".into(), 0x1022),
        "HygonGenuine" => ("Hygon".into(), 0x1d94),
        "CentaurHauls" | "  Shanghai  " => ("Zhaoxin".into(), 0x1d17),
        "" => ("Unknown".into(), 0),
        other => (other.to_string(), 0),
    }
}

/// Bytes of RAM this process may use: `MemTotal`, or the limit of its memory cgroup (v1 or v2, the
/// lowest on the way up to the hierarchy's root) when that is lower, as Slurm and Kubernetes jobs
/// run. Read once; GLOBAL_MEM_SIZE, the reuse cache and the deferral bounds all derive from it.
pub fn usable_memory() -> u64 {
    static M: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *M.get_or_init(|| {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        usable_memory_of(meminfo_total(&meminfo).unwrap_or(1 << 30))
    })
}

fn usable_memory_of(mem_total: u64) -> u64 {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    match cgroup_memory_limit(&cgroup, &mountinfo, &read) {
        Some(l) if l > 0 => l.min(mem_total),
        _ => mem_total,
    }
}

/// Limits at or above this (v1 writes 2^63 rounded down to a page for "none") mean no limit.
const NO_LIMIT: u64 = 1 << 62;

/// (mount root, mount point, super options) of each mount of `fstype` in `/proc/self/mountinfo` text.
fn mounts<'a>(mountinfo: &'a str, fstype: &str) -> Vec<(&'a str, &'a str, &'a str)> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mut post = post.split_whitespace();
            (post.next()? == fstype).then_some(())?;
            let opts = post.nth(1).unwrap_or("");
            let mut pre = pre.split_whitespace();
            let root = pre.nth(3)?;
            let point = pre.next()?;
            Some((root, point, opts))
        })
        .collect()
}

/// The directory of cgroup `path` in a hierarchy mounted at `point` with root `root`.
fn cgroup_dir(root: &str, point: &str, path: &str) -> std::path::PathBuf {
    let rel = if root == "/" { path } else { path.strip_prefix(root).unwrap_or(path) };
    std::path::Path::new(point).join(rel.trim_start_matches('/'))
}

/// The memory limit of this process's cgroup, from `/proc/self/cgroup` and `/proc/self/mountinfo`
/// text, reading the cgroup files with `read`: v2's `memory.max` and `memory.high` from the cgroup up
/// to the mount's root (the lowest), or v1's `hierarchical_memory_limit` (`memory.stat`, which includes
/// the ancestors), else `memory.limit_in_bytes`. None when there is no limit.
fn cgroup_memory_limit(
    proc_cgroup: &str,
    mountinfo: &str,
    read: &dyn Fn(&std::path::Path) -> Option<String>,
) -> Option<u64> {
    let num = |t: &str| t.trim().parse::<u64>().ok().filter(|&v| v < NO_LIMIT);
    let mut best: Option<u64> = None;
    let mut take = |v: Option<u64>| {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    for line in proc_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if ctrl.is_empty() {
            // v2: every level up to the mount's root
            for (root, point, _) in mounts(mountinfo, "cgroup2") {
                let top = std::path::PathBuf::from(point);
                let mut dir = cgroup_dir(root, point, path);
                loop {
                    for file in ["memory.max", "memory.high"] {
                        take(read(&dir.join(file)).as_deref().and_then(num));
                    }
                    if dir == top || !dir.pop() || !dir.starts_with(&top) {
                        break;
                    }
                }
            }
        } else if ctrl.split(',').any(|c| c == "memory") {
            for (root, point, opts) in mounts(mountinfo, "cgroup") {
                if !opts.split(',').any(|o| o == "memory") {
                    continue;
                }
                let dir = cgroup_dir(root, point, path);
                let hier = read(&dir.join("memory.stat"))
                    .and_then(|t| t.lines().find_map(|l| l.strip_prefix("hierarchical_memory_limit ").and_then(num)));
                take(hier.or_else(|| read(&dir.join("memory.limit_in_bytes")).as_deref().and_then(num)));
            }
        }
    }
    best
}

/// `MemTotal` in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Max clock: cpufreq's `cpuinfo_max_freq` (kHz), else the largest "cpu MHz" in `/proc/cpuinfo`.
fn read_max_clock_mhz(cpuinfo: &str) -> u32 {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        && let Ok(khz) = s.trim().parse::<u64>()
        && khz > 0
    {
        return (khz / 1000) as u32;
    }
    let mhz = cpuinfo
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "cpu MHz").then(|| v.trim().parse::<f64>().ok())?
        })
        .fold(0.0f64, f64::max);
    if mhz >= 1.0 { mhz.round() as u32 } else { FALLBACK_CPU_CLOCK_MHZ }
}

/// SMBIOS type 17 (memory device): the largest configured speed (MT/s) of any DIMM, halved to a
/// clock. `None` when the table is not readable (containers, non-root, no DMI) or says nothing.
fn read_smbios_memory_clock_mhz() -> Option<u32> {
    let table = std::fs::read("/sys/firmware/dmi/tables/DMI").ok()?;
    parse_smbios_memory_mts(&table).map(|mts| (mts / 2).max(1))
}

fn parse_smbios_memory_mts(table: &[u8]) -> Option<u32> {
    let mut best = 0u32;
    let mut pos = 0usize;
    while pos + 4 <= table.len() {
        let ty = table[pos];
        let len = table[pos + 1] as usize;
        if len < 4 || pos + len > table.len() {
            break;
        }
        let s = &table[pos..pos + len];
        if ty == 17 {
            let word = |off: usize| (off + 2 <= s.len()).then(|| u16::from_le_bytes([s[off], s[off + 1]]));
            // 0x20: configured memory speed (SMBIOS 2.7+), 0x15: max speed; 0 = unknown, 0xFFFF = see
            // the 32-bit extended fields (0x54 configured, 0x58 max; SMBIOS 3.3+).
            for (off, ext) in [(0x20usize, 0x58usize), (0x15, 0x54)] {
                let v = match word(off) {
                    Some(0xFFFF) if ext + 4 <= s.len() => {
                        u32::from_le_bytes([s[ext], s[ext + 1], s[ext + 2], s[ext + 3]])
                    }
                    Some(v) if v != 0xFFFF => v as u32,
                    _ => 0,
                };
                if v > 0 {
                    best = best.max(v);
                    break;
                }
            }
        }
        if ty == 127 {
            break;
        }
        // skip the string set: ends with a double NUL
        let mut p = pos + len;
        while p + 1 < table.len() && !(table[p] == 0 && table[p + 1] == 0) {
            p += 1;
        }
        pos = p + 2;
    }
    (best > 0).then_some(best)
}

/// What the SIMD units can do, from CPUID.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimdFeatures {
    /// register width in bytes usable for the element types: 64 (AVX-512), 32 (AVX2/AVX), 16 (SSE2)
    pub int_bytes: u32,
    pub float_bytes: u32,
    /// half-precision arithmetic (AVX512-FP16); F16C is only conversion, so it does not count
    pub half: bool,
    pub half_bytes: u32,
}

impl SimdFeatures {
    /// This CPU's, as this process sees it.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            Self::with(|f| match f {
                "avx512f" => std::is_x86_feature_detected!("avx512f"),
                "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
                "avx2" => std::is_x86_feature_detected!("avx2"),
                "avx" => std::is_x86_feature_detected!("avx"),
                "avx512fp16" => std::is_x86_feature_detected!("avx512fp16"),
                _ => false,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            SimdFeatures { int_bytes: 16, float_bytes: 16, half: false, half_bytes: 0 }
        }
    }

    /// The widths code with LLVM's features `enabled` (plain names: `avx2`, `avx512f`, ...) may use.
    pub fn of_llvm(enabled: &[String]) -> Self {
        Self::with(|f| enabled.iter().any(|e| e == f))
    }

    /// The widths for an x86 CPU with the features `has` says it has (LLVM's names).
    fn with(has: impl Fn(&str) -> bool) -> Self {
        let (avx512, fp16) = (has("avx512f"), has("avx512fp16"));
        let float_bytes = if avx512 {
            64
        } else if has("avx") {
            32
        } else {
            16
        };
        // byte/short ops need AVX512BW for 512-bit and AVX2 for 256-bit registers
        let int_bytes = if avx512 && has("avx512bw") {
            64
        } else if has("avx2") {
            32
        } else {
            16
        };
        SimdFeatures { int_bytes, float_bytes, half: fp16, half_bytes: if fp16 { 64 } else { 0 } }
    }

    /// char, short, int, long, float, double, half: elements per native register.
    pub fn native_vector_width(&self) -> [u32; 7] {
        [
            self.int_bytes,
            self.int_bytes / 2,
            self.int_bytes / 4,
            self.int_bytes / 8,
            self.float_bytes / 4,
            self.float_bytes / 8,
            self.half_bytes / 2,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_of_a_chosen_target() {
        let f = |l: &[&str]| SimdFeatures::of_llvm(&l.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(f(&["sse4.2", "popcnt"]).native_vector_width(), [16, 8, 4, 2, 4, 2, 0]);
        assert_eq!(f(&["avx", "avx2", "fma"]).native_vector_width(), [32, 16, 8, 4, 8, 4, 0]);
        assert_eq!(f(&["avx", "avx512f"]).native_vector_width(), [16, 8, 4, 2, 16, 8, 0]);
        assert_eq!(f(&["avx2", "avx512f", "avx512bw", "avx512fp16"]).native_vector_width(), [64, 32, 16, 8, 16, 8, 32]);
    }

    #[test]
    fn info_is_plausible() {
        let i = read_device_info();
        assert!(!i.name.is_empty());
        assert_eq!(i.device_type, DEVICE_TYPE_CPU);
        assert!(i.num_compute_units >= 1);
        assert!(i.max_clock_frequency > 0);
        assert!(i.memory_clock_rate > 0);
        assert!(i.global_mem_size > 0);
        assert_eq!(i.max_mem_alloc_size, i.global_mem_size);
        assert_eq!(i.address_bits, 64);
        assert!(i.native_vector_width[2] >= 4, "at least SSE: 4 ints");
        assert!(i.native_vector_width[4] >= 4);
        eprintln!("{i:#?}");
    }

    /// A fake /proc and cgroup tree: v1 (Slurm's memory controller), v2 (Kubernetes, systemd), none.
    #[test]
    fn cgroup_limits_v1_and_v2() {
        use std::collections::HashMap;
        use std::path::{Path, PathBuf};
        let files = |m: &[(&str, &str)]| m.iter().map(|(k, v)| (PathBuf::from(k), v.to_string())).collect();
        let reader = |m: HashMap<PathBuf, String>| move |p: &Path| m.get(p).cloned();
        // v2, nested: the parent's memory.max is the lowest
        let cg = "0::/kubepods/pod1/ctr\n";
        let mi = "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n";
        let r = reader(files(&[
            ("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n"),
            ("/sys/fs/cgroup/kubepods/pod1/ctr/memory.high", "max\n"),
            ("/sys/fs/cgroup/kubepods/pod1/memory.max", "1610612736\n"),
            ("/sys/fs/cgroup/kubepods/memory.max", "8589934592\n"),
        ]));
        assert_eq!(cgroup_memory_limit(cg, mi, &r), Some(1610612736));
        // v2 with memory.high lower than memory.max
        let r = reader(files(&[
            ("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "2147483648\n"),
            ("/sys/fs/cgroup/kubepods/pod1/ctr/memory.high", "1073741824\n"),
        ]));
        assert_eq!(cgroup_memory_limit(cg, mi, &r), Some(1 << 30));
        // v2 in a cgroup namespace: the path is "/", the mount is the container's own cgroup
        let r = reader(files(&[("/sys/fs/cgroup/memory.max", "536870912\n")]));
        assert_eq!(cgroup_memory_limit("0::/\n", mi, &r), Some(512 << 20));
        // v1 (this machine's layout), hierarchical limit preferred
        let cg1 = "4:memory:/slurm/uid_1000/job_7\n3:cpuset:/\n0::/\n";
        let mi1 = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                   35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";
        let r = reader(files(&[
            ("/sys/fs/cgroup/memory/slurm/uid_1000/job_7/memory.limit_in_bytes", "9223372036854771712\n"),
            (
                "/sys/fs/cgroup/memory/slurm/uid_1000/job_7/memory.stat",
                "cache 0\nhierarchical_memory_limit 1610612736\nhierarchical_memsw_limit 9223372036854771712\n",
            ),
        ]));
        assert_eq!(cgroup_memory_limit(cg1, mi1, &r), Some(1610612736));
        // v1 without memory.stat: memory.limit_in_bytes; "unlimited" is no limit
        let r = reader(files(&[("/sys/fs/cgroup/memory/slurm/uid_1000/job_7/memory.limit_in_bytes", "734003200\n")]));
        assert_eq!(cgroup_memory_limit(cg1, mi1, &r), Some(700 << 20));
        let r = reader(files(&[(
            "/sys/fs/cgroup/memory/slurm/uid_1000/job_7/memory.limit_in_bytes",
            "9223372036854771712\n",
        )]));
        assert_eq!(cgroup_memory_limit(cg1, mi1, &r), None);
        // v1 mounted with a root (a container's bind mount of its own cgroup)
        let mi2 = "35 31 0:32 /slurm/uid_1000 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let r = reader(files(&[("/sys/fs/cgroup/memory/job_7/memory.limit_in_bytes", "1073741824\n")]));
        assert_eq!(cgroup_memory_limit(cg1, mi2, &r), Some(1 << 30));
        // no cgroup files, garbage
        let r = reader(files(&[]));
        assert_eq!(cgroup_memory_limit(cg, mi, &r), None);
        assert_eq!(cgroup_memory_limit("garbage", "garbage", &r), None);
        let r = reader(files(&[("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "lots\n")]));
        assert_eq!(cgroup_memory_limit(cg, mi, &r), None);
        // the device never reports more than MemTotal
        assert!(usable_memory() <= meminfo_total(&std::fs::read_to_string("/proc/meminfo").unwrap()).unwrap());
    }

    #[test]
    fn vendors() {
        assert_eq!(vendor_names("GenuineIntel"), ("Intel".to_string(), 0x8086));
        assert_eq!(vendor_names("AuthenticAMD"), ("AMD".to_string(), 0x1022));
    }

    #[test]
    fn smbios_type17() {
        // one type-17 record of length 0x22 with configured speed 3200 at 0x20, empty string set,
        // then an end-of-table record
        let mut rec = vec![0u8; 0x22];
        rec[0] = 17;
        rec[1] = 0x22;
        rec[0x15..0x17].copy_from_slice(&4800u16.to_le_bytes());
        rec[0x20..0x22].copy_from_slice(&3200u16.to_le_bytes());
        rec.extend_from_slice(&[0, 0]);
        rec.extend_from_slice(&[127, 4, 0, 0, 0, 0]);
        assert_eq!(parse_smbios_memory_mts(&rec), Some(3200));
        assert_eq!(parse_smbios_memory_mts(&[]), None);
    }
}
