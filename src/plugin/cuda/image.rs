//! Pure helpers of the CUDA plugin, testable without a GPU: image classification, the CUBIN
//! compatibility rule, PTX ISA selection, ctor/dtor symbol discovery and kernel argument repacking.

use std::borrow::Cow;

use crate::plugin::{ArgSlots, LaunchArgs, PluginError};

/// `EM_CUDA`
pub(crate) const EM_CUDA: u16 = 190;

/// What `olCreateProgram` was handed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaImageKind {
    /// A CUBIN ELF (`e_machine == EM_CUDA`).
    Cubin,
    /// PTX assembly text.
    Ptx,
    /// LLVM bitcode (raw `BC C0 DE` or the `0x0B17C0DE` wrapper).
    Bitcode,
    /// An NVIDIA fatbinary (`0xBA55ED50`): not valid per `olIsValidBinary` (as in LLVM 22) but
    /// handed to the driver by `olCreateProgram`, which accepts it.
    Fatbin,
    /// Anything else; the string describes what was found.
    Unknown(String),
}

pub fn is_bitcode(image: &[u8]) -> bool {
    image.starts_with(&[0x42, 0x43, 0xC0, 0xDE]) || image.starts_with(&[0xDE, 0xC0, 0x17, 0x0B])
}

fn elf_machine(image: &[u8]) -> Option<u16> {
    if image.len() < 20 || !image.starts_with(b"\x7fELF") {
        return None;
    }
    let m = [image[18], image[19]];
    Some(if image[5] == 2 { u16::from_be_bytes(m) } else { u16::from_le_bytes(m) })
}

/// PTX text: optional whitespace and `//` or `/* */` comments, then a directive (`.version` is what
/// every PTX module starts with; we accept any `.` directive after comments and let the driver
/// judge). The text must be ASCII up to its NUL (if any).
pub fn is_ptx(image: &[u8]) -> bool {
    let text = match image.iter().position(|&b| b == 0) {
        Some(n) => &image[..n],
        None => image,
    };
    if text.is_empty() || !text.iter().all(|&b| b.is_ascii() && (b >= 0x20 || b"\t\r\n\x0c".contains(&b))) {
        return false;
    }
    let mut rest = text;
    loop {
        while let Some((&c, tail)) = rest.split_first() {
            if c.is_ascii_whitespace() {
                rest = tail;
            } else {
                break;
            }
        }
        if let Some(tail) = rest.strip_prefix(b"//") {
            rest = match tail.iter().position(|&b| b == b'\n') {
                Some(n) => &tail[n + 1..],
                None => &[],
            };
        } else if let Some(tail) = rest.strip_prefix(b"/*") {
            rest = match tail.windows(2).position(|w| w == b"*/") {
                Some(n) => &tail[n + 2..],
                None => return false,
            };
        } else {
            return rest.starts_with(b".version")
                || (rest.starts_with(b".") && text.windows(8).any(|w| w == b".version"));
        }
    }
}

/// The `.version` (as `10 * major + minor`) and `.target sm_XY` (as `XY`, suffixes like `a`/`f`
/// ignored) of PTX text, each None when absent or unreadable.
pub fn ptx_version_and_sm(image: &[u8]) -> (Option<u32>, Option<u32>) {
    let end = image.iter().position(|&b| b == 0).unwrap_or(image.len());
    let text = String::from_utf8_lossy(&image[..end]);
    let mut version = None;
    let mut sm = None;
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix(".version") {
            let mut parts = v.trim().split('.');
            if let (Some(Ok(ma)), Some(Ok(mi))) =
                (parts.next().map(str::parse::<u32>), parts.next().map(|p| p.trim().parse::<u32>()))
            {
                version = Some(ma * 10 + mi);
            }
        } else if let Some(t) = line.strip_prefix(".target") {
            sm = t.split([',', ' ', '\t']).filter_map(|w| w.trim().strip_prefix("sm_")).find_map(|w| {
                let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            });
        }
        if version.is_some() && sm.is_some() {
            break;
        }
    }
    (version, sm)
}

/// Whether the driver of a device of compute capability `major.minor` that accepts PTX ISA
/// `max_isa` can JIT-compile this PTX: its target no newer than the device and its ISA no newer than
/// the driver's. What cannot be read is left to the driver (true).
pub fn ptx_compatible(image: &[u8], major: u32, minor: u32, max_isa: u32) -> bool {
    let (version, sm) = ptx_version_and_sm(image);
    version.is_none_or(|v| v <= max_isa) && sm.is_none_or(|t| t <= major * 10 + minor)
}

pub fn classify(image: &[u8]) -> CudaImageKind {
    if is_bitcode(image) {
        return CudaImageKind::Bitcode;
    }
    if image.starts_with(&0xBA55_ED50u32.to_le_bytes()) {
        return CudaImageKind::Fatbin;
    }
    if let Some(m) = elf_machine(image) {
        return if m == EM_CUDA {
            CudaImageKind::Cubin
        } else {
            CudaImageKind::Unknown(format!("an ELF file for machine {m} (not EM_CUDA = 190)"))
        };
    }
    if image.starts_with(b"\x7fELF") {
        return CudaImageKind::Unknown("a truncated ELF file".into());
    }
    if is_ptx(image) {
        return CudaImageKind::Ptx;
    }
    if image.is_empty() {
        return CudaImageKind::Unknown("an empty image".into());
    }
    let head: Vec<String> = image.iter().take(8).map(|b| format!("{b:02x}")).collect();
    CudaImageKind::Unknown(format!("{} bytes starting with {}", image.len(), head.join(" ")))
}

pub fn invalid_binary(what: &str) -> PluginError {
    PluginError::InvalidBinary(format!("expected a CUBIN ELF, PTX text or NVPTX LLVM bitcode, found {what}"))
}

/// The SM (`major * 10 + minor`) of a CUBIN, applying LLVM 22's ELF header rules: 64-bit,
/// EXEC or DYN, EM_CUDA; ABI v1 (`EI_ABIVERSION` 7 or older) needs the 64-bit-address flag and SM >= 35;
/// ABI v2 (`EI_ABIVERSION` 8) keeps the SM in bits 8..16. LLVM 22 takes ABI v2 for Blackwell only
/// (SM >= 100), but CUDA 13's ptxas writes ABI v2 for every SM (an sm_90 cubin has flags 0x06005a04),
/// and the driver loads those: we accept any SM >= 35 there (checked with real cubins of ptxas 12.9
/// and 13.5 in `ptx::tests::generated_ptx_passes_nvidia_ptxas`).
pub fn cubin_sm(image: &[u8]) -> Option<u32> {
    if image.len() < 64 || !image.starts_with(b"\x7fELF") || image[4] != 2 || image[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([image[o], image[o + 1]]);
    let e_type = u16_at(16);
    if u16_at(18) != EM_CUDA || !(e_type == 2 || e_type == 3) {
        return None;
    }
    let flags = u32::from_le_bytes([image[48], image[49], image[50], image[51]]);
    match image[8] {
        8 => {
            let sm = (flags >> 8) & 0xff;
            (sm >= 35).then_some(sm)
        }
        0..=7 => {
            let sm = flags & 0xff;
            (flags & 0x400 != 0 && sm >= 35).then_some(sm)
        }
        _ => None,
    }
}

/// A CUBIN for `image_sm` runs on a device of compute capability `major.minor` when the majors are
/// equal and the image's minor is not above the device's.
pub fn sm_compatible(image_sm: u32, major: u32, minor: u32) -> bool {
    image_sm / 10 == major && image_sm % 10 <= minor
}

/// The highest PTX ISA (as `10 * major + minor`, e.g. 84 for 8.4) a driver of
/// `cuDriverGetVersion() == version` accepts, capped at what LLVM 22 emits (9.0).
pub fn ptx_isa_for_driver(version: i32) -> u32 {
    let major = version / 1000;
    let minor = (version % 1000) / 10;
    let isa = match (major, minor) {
        (..=10, _) => 63,
        (11, m) => 70 + m.clamp(0, 8) as u32,
        (12, m @ 0..=5) => 80 + m as u32,
        (12, 6) => 85,
        (12, 7) => 86,
        (12, 8) => 87,
        (12, _) => 88,
        (_, _) => 90,
    };
    isa.min(90)
}

/// The LLVM NVPTX CPU name for a compute capability; an SM unknown to LLVM 22 falls back to the
/// highest known SM of the same major that is not above it (or the highest known below it).
pub fn llvm_cpu_for_sm(major: u32, minor: u32) -> String {
    const KNOWN: &[u32] =
        &[35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121];
    let sm = major * 10 + minor;
    let pick =
        KNOWN.iter().rev().find(|&&k| k <= sm && k / 10 == major).or_else(|| KNOWN.iter().rev().find(|&&k| k <= sm));
    format!("sm_{}", pick.copied().unwrap_or(sm))
}

/// PTX features for the target machine: `+ptxNN`, raised to the minimum the SM needs.
pub fn ptx_feature(isa: u32, sm: u32) -> String {
    let min = match sm {
        120.. => 87,
        100.. => 86,
        90.. => 78,
        89 => 78,
        87 | 88 => 74,
        86 => 71,
        80.. => 70,
        75.. => 63,
        70.. => 60,
        _ => 50,
    };
    format!("+ptx{}", isa.max(min))
}

/// `cuDriverGetVersion` value as LLVM prints it: 12040 -> "12.4".
pub fn driver_version_string(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// `CUDA-` + 32 lowercase hex digits of the device UUID.
pub fn uid_string(uuid: &[u8; 16]) -> String {
    let mut s = String::from("CUDA-");
    for b in uuid {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Constructor (or destructor) table entries emitted by NVPTX's ctor/dtor lowering, sorted by
/// priority (stable: equal priorities keep their order). Names look like
/// `__init_array_object_<fn>_<hash>_<priority>`; the priority is the text after the last `_`.
pub fn sort_ctor_names(mut names: Vec<String>) -> Result<Vec<String>, PluginError> {
    let mut keyed = Vec::with_capacity(names.len());
    for n in names.drain(..) {
        let prio: u32 = n.rsplit('_').next().and_then(|p| p.parse().ok()).ok_or_else(|| {
            PluginError::InvalidBinary(format!("invalid priority for constructor or destructor '{n}'"))
        })?;
        keyed.push((prio, n));
    }
    keyed.sort_by_key(|(p, _)| *p);
    Ok(keyed.into_iter().map(|(_, n)| n).collect())
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// `(ctors, dtors)` table-entry symbols defined in PTX text (sorted by priority). Only
/// declarations count (`.const ... .u64 __init_array_object_x_h_1 = x;`).
pub fn ptx_ctor_dtor_names(ptx: &str) -> Result<(Vec<String>, Vec<String>), PluginError> {
    let mut ctors = Vec::new();
    let mut dtors = Vec::new();
    for line in ptx.lines() {
        let l = line.trim_start();
        if !(l.starts_with(".visible") || l.starts_with(".const") || l.starts_with(".global") || l.starts_with(".weak"))
        {
            continue;
        }
        for (prefix, out) in [("__init_array_object_", &mut ctors), ("__fini_array_object_", &mut dtors)] {
            if let Some(pos) = l.find(prefix) {
                let name: String = l[pos..].bytes().take_while(|&b| is_ident_byte(b)).map(char::from).collect();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
    Ok((sort_ctor_names(ctors)?, sort_ctor_names(dtors)?))
}

/// `(ctors, dtors)` table-entry symbols of a CUBIN's symbol table (sorted by priority).
pub fn cubin_ctor_dtor_names(image: &[u8]) -> Result<(Vec<String>, Vec<String>), PluginError> {
    use object::{Object, ObjectSymbol};
    let Ok(file) = object::File::parse(image) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut ctors = Vec::new();
    let mut dtors = Vec::new();
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        if name.starts_with("__init_array_object_") {
            ctors.push(name.to_string());
        } else if name.starts_with("__fini_array_object_") {
            dtors.push(name.to_string());
        }
    }
    Ok((sort_ctor_names(ctors)?, sort_ctor_names(dtors)?))
}

/// The argument bytes to hand to `cuLaunchKernel` for `args` (22.1's `ArgumentsData` or 23.1's values).
///
/// Rule (documented in the plugin docs):
/// * 23.1's values, one per parameter of the block with its size: each copied to its offset, padding
///   zeroed (one copy); other values are packed one after another and go by the rules of a buffer:
/// * no layout (driver < 12.4): the buffer is passed as given;
/// * `args.len() >= block size`: the first `block size` bytes are passed (LLVM 22: a naturally
///   aligned struct with tail padding is fine);
/// * `args.len() ==` the packed sum of the parameter sizes and smaller than the block: the
///   arguments were packed without alignment padding (Unified Runtime's offload adapter does this);
///   they are copied parameter by parameter to their real offsets, padding zeroed;
/// * otherwise: `INVALID_ARGUMENT "mismatch in kernel arguments"` (LLVM 22).
pub fn prepare_args<'a>(args: LaunchArgs<'a>, layout: Option<&ArgSlots>) -> Result<Cow<'a, [u8]>, PluginError> {
    let args = match args {
        LaunchArgs::Buffer(b) => b,
        LaunchArgs::Values(v) => {
            if let Some(l) = layout {
                let mut out = vec![0u8; l.end()];
                if v.write(l, &mut out) {
                    return Ok(Cow::Owned(out));
                }
            }
            let packed = LaunchArgs::Values(v).to_bytes().into_owned();
            return prepare_args(LaunchArgs::Buffer(&packed), layout).map(|c| Cow::Owned(c.into_owned()));
        }
    };
    let Some(layout) = layout else {
        return Ok(Cow::Borrowed(args));
    };
    let block = layout.end();
    if args.len() >= block {
        return Ok(Cow::Borrowed(&args[..block]));
    }
    if args.len() == layout.packed() {
        let mut out = vec![0u8; block];
        let mut at = 0;
        for &(off, size) in layout.slots() {
            out[off..off + size].copy_from_slice(&args[at..at + size]);
            at += size;
        }
        return Ok(Cow::Owned(out));
    }
    Err(PluginError::InvalidArgument("mismatch in kernel arguments".into()))
}

/// The element size (4, 2 or 1) used to fill a pattern of `pattern_len` bytes at `ptr` with strided
/// 2-D memsets: the largest that divides the pattern length and the address.
pub fn fill_element_size(pattern_len: usize, ptr: usize) -> usize {
    [4, 2, 1].into_iter().find(|&e| pattern_len.is_multiple_of(e) && ptr.is_multiple_of(e)).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cubin_header(abi: u8, flags: u32, e_type: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[6] = 1;
        h[7] = 51;
        h[8] = abi;
        h[16..18].copy_from_slice(&e_type.to_le_bytes());
        h[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        h[48..52].copy_from_slice(&flags.to_le_bytes());
        h
    }

    #[test]
    fn classification() {
        assert_eq!(classify(b"BC\xc0\xde\x35\x14"), CudaImageKind::Bitcode);
        assert_eq!(classify(&[0xDE, 0xC0, 0x17, 0x0B, 0, 0]), CudaImageKind::Bitcode);
        assert_eq!(classify(&[0x50, 0xED, 0x55, 0xBA, 1, 0, 0x10, 0]), CudaImageKind::Fatbin);
        assert_eq!(classify(&cubin_header(7, 0x45a, 2)), CudaImageKind::Cubin);
        assert_eq!(
            classify(b"//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.0\n.target sm_90\n"),
            CudaImageKind::Ptx
        );
        assert_eq!(classify(b"  /* c */ .version 7.8\n.target sm_80\n\0"), CudaImageKind::Ptx);
        // PTX compatibility: target SM and ISA version against the device and its driver
        let ptx = b"//\n// Generated\n.version 8.7\n.target sm_90a, texmode_independent\n.address_size 64\n\0";
        assert_eq!(ptx_version_and_sm(ptx), (Some(87), Some(90)));
        assert!(ptx_compatible(ptx, 9, 0, 87));
        assert!(!ptx_compatible(ptx, 9, 0, 86), "ISA newer than the driver's");
        assert!(!ptx_compatible(ptx, 8, 9, 88), "target newer than the device");
        assert!(ptx_compatible(b".version 9.0\n.target sm_100f\n", 12, 0, 90));
        assert!(ptx_compatible(b".target sm_80\n", 8, 0, 70), "no .version: the driver decides");
        assert_eq!(classify(b"\t.version 8.0\0garbage\xff"), CudaImageKind::Ptx);
        let mut x86 = cubin_header(0, 0, 3);
        x86[18..20].copy_from_slice(&62u16.to_le_bytes());
        assert!(matches!(classify(&x86), CudaImageKind::Unknown(s) if s.contains("machine 62")));
        assert!(matches!(classify(b""), CudaImageKind::Unknown(s) if s == "an empty image"));
        assert!(
            matches!(classify(b"hello world"), CudaImageKind::Unknown(s) if s.contains("11 bytes starting with 68 65"))
        );
        assert!(matches!(classify(b"// only a comment\n"), CudaImageKind::Unknown(_)));
        assert!(matches!(classify(b"/* unterminated .version"), CudaImageKind::Unknown(_)));
        assert!(matches!(classify(b"\x7fELF\x02"), CudaImageKind::Unknown(s) if s.contains("truncated")));
        assert!(matches!(classify(&[0xff; 100]), CudaImageKind::Unknown(_)));
        let msg = invalid_binary("x").to_string();
        assert_eq!(msg, "expected a CUBIN ELF, PTX text or NVPTX LLVM bitcode, found x");
    }

    #[test]
    fn cubin_rules() {
        assert_eq!(cubin_sm(&cubin_header(7, 0x400 | 90, 2)), Some(90));
        assert_eq!(cubin_sm(&cubin_header(7, 90, 2)), None, "v1 needs the 64-bit flag");
        assert_eq!(cubin_sm(&cubin_header(7, 0x400 | 30, 2)), None, "SM >= 35");
        assert_eq!(cubin_sm(&cubin_header(7, 0x400 | 90, 1)), None, "relocatable rejected");
        assert_eq!(cubin_sm(&cubin_header(8, 100 << 8, 3)), Some(100));
        // CUDA 13's ptxas: ABI v2 for Hopper too (flags of a real sm_90 cubin)
        assert_eq!(cubin_sm(&cubin_header(8, 0x0600_5a04, 2)), Some(90));
        assert_eq!(cubin_sm(&cubin_header(8, 20 << 8, 3)), None);
        assert_eq!(cubin_sm(&cubin_header(9, 0x400 | 90, 2)), None);
        assert_eq!(cubin_sm(&[0x7f, b'E', b'L', b'F']), None);
        assert!(sm_compatible(90, 9, 0));
        assert!(sm_compatible(80, 8, 6));
        assert!(!sm_compatible(86, 8, 0));
        assert!(!sm_compatible(80, 9, 0));
    }

    #[test]
    fn versions_and_names() {
        assert_eq!(ptx_isa_for_driver(12040), 84);
        assert_eq!(ptx_isa_for_driver(12020), 82);
        assert_eq!(ptx_isa_for_driver(12080), 87);
        assert_eq!(ptx_isa_for_driver(13000), 90);
        assert_eq!(ptx_isa_for_driver(11080), 78);
        assert_eq!(llvm_cpu_for_sm(9, 0), "sm_90");
        assert_eq!(llvm_cpu_for_sm(8, 9), "sm_89");
        assert_eq!(llvm_cpu_for_sm(8, 4), "sm_80");
        assert_eq!(ptx_feature(84, 90), "+ptx84");
        assert_eq!(ptx_feature(70, 90), "+ptx78");
        assert_eq!(driver_version_string(12040), "12.4");
        assert_eq!(driver_version_string(13010), "13.1");
        let mut u = [0u8; 16];
        u[0] = 0xAB;
        u[15] = 0x01;
        assert_eq!(uid_string(&u), "CUDA-ab000000000000000000000000000001");
        assert_eq!(uid_string(&u).len(), 5 + 32);
    }

    #[test]
    fn ctor_names_from_ptx() {
        let ptx = "\
.visible .const .align 8 .u64 __init_array_object_c3_a7e8cc63dff77471_202 = c3;
.visible .const .align 8 .u64 __init_array_object_c1_a7e8cc63dff77471_200 = c1;
.visible .const .align 8 .u64 __init_array_object_c2_a7e8cc63dff77471_201 = c2;
.weak .global .align 8 .u64 __init_array_start;
.visible .const .align 8 .u64 __fini_array_object_d1_a7e8cc63dff77471_65535 = d1;
	ld.const.u64 %rd1, [__init_array_object_c1_a7e8cc63dff77471_200];
";
        let (c, d) = ptx_ctor_dtor_names(ptx).unwrap();
        assert_eq!(
            c,
            [
                "__init_array_object_c1_a7e8cc63dff77471_200",
                "__init_array_object_c2_a7e8cc63dff77471_201",
                "__init_array_object_c3_a7e8cc63dff77471_202"
            ]
        );
        assert_eq!(d, ["__fini_array_object_d1_a7e8cc63dff77471_65535"]);
        assert!(sort_ctor_names(vec!["__init_array_object_x".into()]).is_err());
    }

    #[test]
    fn argument_repacking() {
        // multiargs(char, int *, short): offsets 0, 8, 16; sizes 1, 8, 2
        let l = ArgSlots::new(vec![(0, 1), (8, 8), (16, 2)]).unwrap();
        assert_eq!(l.end(), 18);
        assert_eq!(l.packed(), 11);
        // natural C struct (24 bytes with tail padding): first 18 bytes passed as-is
        let natural: Vec<u8> = (0..24).collect();
        assert_eq!(&*prepare_args(LaunchArgs::Buffer(&natural), Some(&l)).unwrap(), &natural[..18]);
        // packed (UR adapter): 'a', ptr 0x1122334455667788, short 0x0102
        let mut packed = vec![b'a'];
        packed.extend_from_slice(&0x1122334455667788u64.to_le_bytes());
        packed.extend_from_slice(&0x0102u16.to_le_bytes());
        let out = prepare_args(LaunchArgs::Buffer(&packed), Some(&l)).unwrap();
        assert_eq!(out.len(), 18);
        assert_eq!(out[0], b'a');
        assert_eq!(&out[1..8], &[0; 7]);
        assert_eq!(&out[8..16], &0x1122334455667788u64.to_le_bytes());
        assert_eq!(&out[16..18], &0x0102u16.to_le_bytes());
        // anything else smaller: LLVM's error
        match prepare_args(LaunchArgs::Buffer(&natural[..12]), Some(&l)) {
            Err(PluginError::InvalidArgument(m)) => assert_eq!(m, "mismatch in kernel arguments"),
            other => panic!("{other:?}"),
        }
        // no layout (old driver): untouched
        assert_eq!(&*prepare_args(LaunchArgs::Buffer(&packed), None).unwrap(), &packed[..]);
        // no parameters
        let empty = ArgSlots::default();
        assert_eq!(prepare_args(LaunchArgs::Buffer(&[]), Some(&empty)).unwrap().len(), 0);
        // already naturally laid out without padding: same bytes
        let l2 = ArgSlots::new(vec![(0, 8), (8, 4)]).unwrap();
        let a: Vec<u8> = (0..12).collect();
        assert_eq!(&*prepare_args(LaunchArgs::Buffer(&a), Some(&l2)).unwrap(), &a[..]);
    }

    #[test]
    fn argument_values() {
        use crate::plugin::TestValues;
        let l = ArgSlots::new(vec![(0, 1), (8, 8), (16, 2)]).unwrap();
        // a slot beyond the address space: no layout
        assert_eq!(ArgSlots::new(vec![(usize::MAX, 2)]), None);
        let ptr = 0x1122334455667788u64.to_le_bytes();
        let v = TestValues(vec![vec![b'a'], ptr.to_vec(), 0x0102u16.to_le_bytes().to_vec()]);
        // one per parameter with its size: straight to the offsets, padding zeroed
        let out = prepare_args(LaunchArgs::Values(&v), Some(&l)).unwrap();
        assert_eq!(out.len(), 18);
        assert_eq!(out[0], b'a');
        assert_eq!(&out[1..8], &[0; 7]);
        assert_eq!(&out[8..16], &ptr);
        assert_eq!(&out[16..18], &0x0102u16.to_le_bytes());
        // no layout: packed, as a buffer
        assert_eq!(&*prepare_args(LaunchArgs::Values(&v), None).unwrap(), &[&[b'a'][..], &ptr, &[2, 1]].concat()[..]);
        // sizes other than the parameters': packed, then a buffer's rules (11 bytes here, the packed size:
        // moved to the offsets as 22.1's packed form is; 10 would be a mismatch)
        let w = TestValues(vec![vec![b'a', 0], ptr.to_vec(), vec![2]]);
        assert_eq!(prepare_args(LaunchArgs::Values(&w), Some(&l)).unwrap().len(), 18);
        let short = TestValues(vec![vec![b'a'], ptr.to_vec()]);
        match prepare_args(LaunchArgs::Values(&short), Some(&l)) {
            Err(PluginError::InvalidArgument(m)) => assert_eq!(m, "mismatch in kernel arguments"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fill_elements() {
        assert_eq!(fill_element_size(16, 0x1000), 4);
        assert_eq!(fill_element_size(17, 0x1000), 1);
        assert_eq!(fill_element_size(6, 0x1000), 2);
        assert_eq!(fill_element_size(8, 0x1002), 2);
    }
}
