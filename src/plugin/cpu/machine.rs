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
    let mem_total = meminfo_total(&meminfo).unwrap_or(1 << 30);
    let cpu_mhz = read_max_clock_mhz(&cpuinfo);
    let features = SimdFeatures::detect();

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
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let avx512 = std::is_x86_feature_detected!("avx512f");
            let avx512bw = std::is_x86_feature_detected!("avx512bw");
            let avx2 = std::is_x86_feature_detected!("avx2");
            let avx = std::is_x86_feature_detected!("avx");
            let fp16 = std::is_x86_feature_detected!("avx512fp16");
            let float_bytes = if avx512 {
                64
            } else if avx {
                32
            } else {
                16
            };
            // byte/short ops need AVX512BW for 512-bit and AVX2 for 256-bit registers
            let int_bytes = if avx512 && avx512bw {
                64
            } else if avx2 {
                32
            } else {
                16
            };
            SimdFeatures { int_bytes, float_bytes, half: fp16, half_bytes: if fp16 { 64 } else { 0 } }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            SimdFeatures { int_bytes: 16, float_bytes: 16, half: false, half_bytes: 0 }
        }
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
