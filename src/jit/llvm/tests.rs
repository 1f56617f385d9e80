//! JIT tests: device kernels in ffi-tests/kernels/*.c compiled with clang-22 for nvptx64 and amdgcn at
//! test time (skipped with a message when clang-22 is missing), loaded and run through their WG functions
//! with hand-made `WgCtx`s over all groups.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::jit::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Tgt {
    Nv,
    Amd,
    Spv,
}
const TARGETS: [Tgt; 3] = [Tgt::Nv, Tgt::Amd, Tgt::Spv];
/// spirv64's `__gpu_exit` is `__builtin_trap()` in clang 22's spirvintrin.h: not a work-item exit.
const EXIT_TARGETS: [Tgt; 2] = [Tgt::Nv, Tgt::Amd];

fn clang() -> Option<&'static str> {
    static HAVE: OnceLock<bool> = OnceLock::new();
    let ok = *HAVE.get_or_init(|| {
        Command::new("clang-22").arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
    });
    if ok {
        Some("clang-22")
    } else {
        eprintln!("SKIPPED: clang-22 not found; JIT kernel tests need it to build device bitcode");
        None
    }
}

/// Compiles ffi-tests/kernels/<name>.c for `t`, memoised per process.
fn bitcode(name: &str, t: Tgt) -> Option<Vec<u8>> {
    bitcode_of(&format!("ffi-tests/kernels/{name}.c"), t)
}

/// Compiles the C file at `path` (relative to the crate) for `t`, memoised per process.
fn bitcode_of(path: &str, t: Tgt) -> Option<Vec<u8>> {
    type Memo = Mutex<HashMap<(String, Tgt), Vec<u8>>>;
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let cl = clang()?;
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = memo.lock().unwrap().get(&(path.to_string(), t)) {
        return Some(v.clone());
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let name = src.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // unique per call: tests asking for the same bitcode at once must not share the output file
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = dir.join(format!("{name}.{t:?}.{seq}.bc"));
    let mut cmd = Command::new(cl);
    match t {
        Tgt::Nv => cmd.args(["--target=nvptx64-nvidia-cuda", "-march=sm_90", "--cuda-feature=+ptx80"]),
        Tgt::Amd => cmd.args(["--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a"]),
        Tgt::Spv => cmd.args(["--target=spirv64"]),
    };
    let st =
        cmd.args(["-nogpulib", "-ffreestanding", "-flto", "-O2", "-c"]).arg(&src).arg("-o").arg(&out).status().unwrap();
    assert!(st.success(), "clang-22 failed on {name}.c for {t:?}");
    let v = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    memo.lock().unwrap().insert((path.to_string(), t), v.clone());
    Some(v)
}

/// Packs argument values (raw bytes, one slice per parameter) into a naturally aligned C struct.
fn pack(params: &[ParamLayout], vals: &[&[u8]]) -> Vec<u64> {
    assert_eq!(params.len(), vals.len(), "argument count");
    let mut buf = vec![0u8; 0];
    for (p, v) in params.iter().zip(vals) {
        assert_eq!(p.size, v.len(), "argument size");
        let off = buf.len().div_ceil(p.align) * p.align;
        buf.resize(off, 0);
        buf.extend_from_slice(v);
    }
    let mut words = vec![0u64; buf.len().div_ceil(8).max(1)];
    // SAFETY: words has at least buf.len() bytes.
    unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), words.as_mut_ptr() as *mut u8, buf.len()) };
    words
}

fn b<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: reading the bytes of a plain Copy value.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()).to_vec() }
}

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

fn buf64(bytes: usize) -> Vec<Line> {
    vec![Line([0; 64]); bytes.div_ceil(64).max(1)]
}

/// Runs every group of a launch sequentially on this thread.
fn launch(k: &KernelEntry, grid: [u32; 3], block: [u32; 3], args: &[u64], dyn_bytes: usize) {
    let nwi = (block[0] * block[1] * block[2]) as usize;
    let mut local = buf64(k.static_local_bytes);
    let mut dynm = buf64(dyn_bytes);
    let mut scratch = buf64(k.scratch_bytes_per_wi * nwi);
    for gz in 0..grid[2] {
        for gy in 0..grid[1] {
            for gx in 0..grid[0] {
                let ctx = WgCtx {
                    args: args.as_ptr() as *const u8,
                    local_mem: local.as_mut_ptr() as *mut u8,
                    dyn_local_mem: dynm.as_mut_ptr() as *mut u8,
                    scratch: scratch.as_mut_ptr() as *mut u8,
                    group_id: [gx, gy, gz],
                    num_groups: grid,
                    group_size: block,
                    _pad: 0,
                };
                // SAFETY: the WgFn ABI (`void(const WgCtx*)`, C) with buffers sized from the entry's metadata.
                unsafe { (k.code().expect("the kernel's code").wg_fn)(&ctx) };
            }
        }
    }
}

fn load_ok(name: &str, t: Tgt) -> Option<LoadedImage> {
    let bc = bitcode(name, t)?;
    Some(load(&bc).unwrap_or_else(|e| panic!("load {name} for {t:?}: {e}")))
}

fn ptr<T>(v: &mut [T]) -> Vec<u8> {
    b(&(v.as_mut_ptr() as usize))
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<LoadedImage>();
    check::<KernelEntry>();
}

#[test]
fn saxpy_exact() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("saxpy", t) else {
            return;
        };
        let k = img.kernel("saxpy").expect("saxpy kernel");
        assert!(!k.has_barriers);
        let n = 1000u32;
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let mut y: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
        let expect: Vec<f32> = (0..n as usize).map(|i| 3.0f32 * x[i] + y[i]).collect();
        let args = pack(&k.params, &[&b(&3.0f32), &b(&(x.as_ptr() as usize)), &ptr(&mut y), &b(&n)]);
        launch(&k, [n.div_ceil(128), 1, 1], [128, 1, 1], &args, 0);
        assert_eq!(y, expect, "{t:?}");
    }
}

/// A private array indexed at run time (amdgcn: an addrspace(5) alloca with lifetime markers, which the
/// retargeting must move to the host alloca).
#[test]
fn private_array_indexed_at_run_time() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("private", t) else {
            return;
        };
        let k = img.kernel("private_array").expect("private_array kernel");
        let (n, m) = (1000u32, 48u32);
        let idx: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761) >> 7).collect();
        let mut out = vec![0f32; n as usize];
        let expect: Vec<f32> = (0..n)
            .map(|i| (0..m).map(|k| (i + idx[((i + k) % n) as usize] % m) as f32 * (k + 1) as f32).sum())
            .collect();
        let args = pack(&k.params, &[&b(&(idx.as_ptr() as usize)), &ptr(&mut out), &b(&n), &b(&m)]);
        launch(&k, [n.div_ceil(128), 1, 1], [128, 1, 1], &args, 0);
        assert_eq!(out, expect, "{t:?}");
    }
}

#[test]
fn reduction_with_barriers() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("reduce", t) else {
            return;
        };
        let k = img.kernel("reduce_sum").expect("kernel");
        assert!(k.has_barriers);
        assert!(k.static_local_bytes >= 1024);
        let n = 256 * 37 + 5;
        let input: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
        let groups = (n as u32).div_ceil(256);
        let mut out = vec![0f32; groups as usize];
        let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&(n as u32))]);
        launch(&k, [groups, 1, 1], [256, 1, 1], &args, 0);
        for g in 0..groups as usize {
            let s: f32 = input[g * 256..((g + 1) * 256).min(n)].iter().sum();
            assert_eq!(out[g], s, "{t:?} group {g}");
        }
    }
}

#[test]
fn dynamic_shared_memory() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("dynshared", t) else {
            return;
        };
        let k = img.kernel("reverse_block").expect("kernel");
        let input: Vec<u32> = (0..512).collect();
        let mut out = vec![0u32; 512];
        let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
        launch(&k, [4, 1, 1], [128, 1, 1], &args, 128 * 4);
        for (i, o) in out.iter().enumerate() {
            let (g, tt) = (i / 128, i % 128);
            assert_eq!(*o, input[g * 128 + 127 - tt] * 2, "{t:?} {i}");
        }
    }
}

#[test]
fn grids_2d_3d() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("grid", t) else {
            return;
        };
        let k = img.kernel("coords2d").expect("kernel");
        let (gw, gh, bw, bh) = (3u32, 2u32, 8u32, 4u32);
        let width = gw * bw;
        let mut out = vec![0u32; (width * gh * bh * 2) as usize];
        let args = pack(&k.params, &[&ptr(&mut out), &b(&width)]);
        launch(&k, [gw, gh, 1], [bw, bh, 1], &args, 0);
        for y in 0..gh * bh {
            for x in 0..width {
                let i = (2 * (y * width + x)) as usize;
                assert_eq!((out[i], out[i + 1]), (x, y), "{t:?}");
            }
        }
        let k = img.kernel("coords3d").expect("kernel");
        let (g, bl) = ([2u32, 3, 2], [4u32, 2, 3]);
        let (w, h, d) = (g[0] * bl[0], g[1] * bl[1], g[2] * bl[2]);
        let mut out = vec![0u32; (w * h * d * 4) as usize];
        let args = pack(&k.params, &[&ptr(&mut out)]);
        launch(&k, g, bl, &args, 0);
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let i = (4 * ((z * h + y) * w + x)) as usize;
                    assert_eq!(&out[i..i + 4], &[x, y, z, g[2] * 1000 + bl[2]], "{t:?}");
                }
            }
        }
    }
}

#[test]
fn atomics_across_groups() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("atomics", t) else {
            return;
        };
        let k = img.kernel("atomics").expect("kernel");
        let mut c = [0u32; 3];
        let p = c.as_mut_ptr() as usize;
        let args = pack(&k.params, &[&b(&p), &b(&(p + 4)), &b(&(p + 8))]);
        // run groups from several threads at once
        std::thread::scope(|s| {
            for part in 0..4u32 {
                let k = k.clone();
                let args = &args;
                s.spawn(move || {
                    let mut scratch = buf64(k.scratch_bytes_per_wi * 64);
                    for g in (part * 8)..(part * 8 + 8) {
                        let ctx = WgCtx {
                            args: args.as_ptr() as *const u8,
                            local_mem: std::ptr::null_mut(),
                            dyn_local_mem: std::ptr::null_mut(),
                            scratch: scratch.as_mut_ptr() as *mut u8,
                            group_id: [g, 0, 0],
                            num_groups: [32, 1, 1],
                            group_size: [64, 1, 1],
                            _pad: 0,
                        };
                        // SAFETY: WgFn ABI; the kernel uses only atomics on `c`.
                        unsafe { (k.code().expect("the kernel's code").wg_fn)(&ctx) };
                    }
                });
            }
        });
        assert_eq!(c[0], 32 * 64, "{t:?}");
        assert_eq!(c[1], 32 * 64 - 1, "{t:?}");
        assert!(c[2] >= 1 && c[2] <= 32 * 64, "{t:?}");
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Mixed {
    c: i8,
    p: *mut i32,
    s: i16,
    d: f64,
    c2: i8,
}

#[test]
fn struct_argument() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("structarg", t) else {
            return;
        };
        let k = img.kernel("structarg").expect("kernel");
        assert_eq!(k.params.len(), 4, "{t:?}");
        assert_eq!(k.params[1], ParamLayout { size: std::mem::size_of::<Mixed>(), align: 8 }, "{t:?}");
        let mut target = 12i32;
        let m = Mixed { c: 3, p: &mut target, s: -7, d: 2.5, c2: 9 };
        let mut out = [0f64; 7];
        let args = pack(&k.params, &[&b(&5i8), &b(&m), &b(&-300i16), &ptr(&mut out)]);
        launch(&k, [2, 1, 1], [4, 1, 1], &args, 0);
        assert_eq!(out, [3.0, 12.0, -7.0, 2.5, 9.0, 5.0, -300.0], "{t:?}");
        assert_eq!(target, 77, "{t:?}");
    }
}

#[test]
fn divergent_and_exit() {
    let _g = shared();
    for t in EXIT_TARGETS {
        let Some(img) = load_ok("divergent", t) else {
            return;
        };
        let k = img.kernel("divergent").expect("kernel");
        let n = 300u32;
        let mut out = vec![0u32; n as usize];
        let args = pack(&k.params, &[&ptr(&mut out), &b(&n)]);
        launch(&k, [5, 1, 1], [64, 1, 1], &args, 0);
        for i in 0..n {
            let e = if i % 7 == 6 {
                0xdead
            } else if i % 3 == 0 {
                (0..i % 11).map(|k| k * k).sum()
            } else {
                i * 5
            };
            assert_eq!(out[i as usize], e, "{t:?} {i}");
        }
    }
}

#[test]
fn global_variables() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("globals", t) else {
            return;
        };
        let (addr, size) = img.global("dev_counter").unwrap().expect("dev_counter");
        assert_eq!(size, 4);
        // SAFETY: address of a 4-byte device global in this instance.
        assert_eq!(unsafe { *(addr as *const u32) }, 5);
        let (taddr, tsize) = img.global("dev_table").unwrap().expect("dev_table");
        assert_eq!(tsize, 64);
        assert!(img.global("bump").unwrap().is_none(), "a kernel is not a global");
        assert!(img.global("nope").unwrap().is_none());
        let (paddr, psize) = img.global("plain_global").unwrap().expect("plain_global");
        assert_eq!(psize, 4);
        // SAFETY: 4-byte global of this instance.
        assert_eq!(unsafe { *(paddr as *const u32) }, 9, "{t:?}");
        let k = img.kernel("bump").expect("kernel");
        let mut out = [0u32; 1];
        let args = pack(&k.params, &[&ptr(&mut out)]);
        launch(&k, [1, 1, 1], [16, 1, 1], &args, 0);
        assert_eq!(out[0], 5);
        // SAFETY: as above.
        assert_eq!(unsafe { *(addr as *const u32) }, 15, "{t:?}");
        // SAFETY: 16 u32 in this instance.
        let table = unsafe { std::slice::from_raw_parts(taddr as *const u32, 16) };
        assert_eq!(table, (0..16).collect::<Vec<u32>>().as_slice());
        // a second instance has its own copy of the globals
        let img2 = load_ok("globals", t).unwrap();
        let (addr2, _) = img2.global("dev_counter").unwrap().unwrap();
        assert_ne!(addr, addr2);
        // SAFETY: as above.
        assert_eq!(unsafe { *(addr2 as *const u32) }, 5);
    }
}

#[test]
fn global_constructors_in_priority_order() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("ctors", t) else {
            return;
        };
        let (addr, _) = img.global("ctor_value").unwrap().expect("ctor_value");
        // SAFETY: 4-byte global in this instance.
        let v = unsafe { std::ptr::read_volatile(addr as *const i32) };
        assert_eq!(v, 100, "{t:?}");
        // destructors run when the program (and every kernel handle) is gone
        let mut flag = 0i32;
        let (fa, fs) = img.global("dtor_flag").unwrap().expect("dtor_flag");
        assert_eq!(fs, 8);
        // SAFETY: an 8-byte pointer global of this instance.
        unsafe { *(fa as *mut usize) = &mut flag as *mut i32 as usize };
        let k = img.kernel("read_ctor").expect("kernel");
        let mut out = [0i32; 1];
        let args = pack(&k.params, &[&ptr(&mut out)]);
        launch(&k, [1, 1, 1], [1, 1, 1], &args, 0);
        assert_eq!(out[0], 100, "{t:?}");
        drop(img);
        assert_eq!(flag, 0, "a live KernelEntry keeps the image loaded");
        drop(k);
        // SAFETY: plain read of a live local that the destructor wrote through a pointer.
        let seen = unsafe { std::ptr::read_volatile(&flag) };
        assert_eq!(seen, 1234, "{t:?}: destructor did not run");
    }
}

#[test]
fn lane_operations() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("lanes", t) else {
            return;
        };
        let k = img.kernel("lanes").expect("kernel");
        let w = k.warp_size as usize;
        assert_eq!(w, if t == Tgt::Amd { 64 } else { 32 });
        let block = 128usize;
        let n = block * 2;
        let mut out = vec![0u32; 4 * n];
        let mut ballots = vec![0u64; n];
        let mut wide = vec![0u64; 2 * n];
        let args = pack(&k.params, &[&ptr(&mut out), &ptr(&mut ballots), &ptr(&mut wide)]);
        launch(&k, [2, 1, 1], [block as u32, 1, 1], &args, 0);
        for i in 0..n {
            let lane = (i % block) % w;
            let warp_first = i - lane;
            assert_eq!(out[4 * i], lane as u32, "{t:?} lane {i}");
            assert_eq!(out[4 * i + 1], (warp_first * 3) as u32, "{t:?} first {i}");
            assert_eq!(out[4 * i + 2], ((warp_first + (lane + 1) % w) * 10) as u32, "{t:?} shuffle {i}");
            assert_eq!(out[4 * i + 3], w as u32, "{t:?}");
            let mut e = 0u64;
            for l in 0..w {
                if (warp_first + l) & 1 == 1 {
                    e |= 1 << l;
                }
            }
            assert_eq!(ballots[i], e, "{t:?} ballot {i}");
            let wv = |j: usize| ((j as u64) << 33) | j as u64;
            assert_eq!(wide[2 * i], wv(warp_first), "{t:?} first u64 {i}");
            assert_eq!(wide[2 * i + 1], wv(warp_first + (lane + 3) % w), "{t:?} shuffle u64 {i}");
        }
    }
}

/// Wraps bitcode in the 0x0B17C0DE wrapper, padded to `len` bytes.
fn wrap(bc: &[u8], len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    for w in [0x0B17C0DEu32, 0, 20, bc.len() as u32, 0] {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v.extend_from_slice(bc);
    v.resize(len, 0);
    v
}

#[test]
fn seed_scenario_same_address_new_content() {
    let _g = shared();
    for t in TARGETS {
        let (Some(a), Some(bb)) = (bitcode("seed_a", t), bitcode("seed_b", t)) else {
            return;
        };
        let len = a.len().max(bb.len()) + 64;
        let mut buf = wrap(&a, len);
        let addr = buf.as_ptr();
        let run = |img: &LoadedImage| {
            let k = img.kernel("seed").expect("kernel");
            let mut out = [0u32; 4];
            let args = pack(&k.params, &[&ptr(&mut out)]);
            launch(&k, [1, 1, 1], [4, 1, 1], &args, 0);
            out[0]
        };
        let img = load(&buf).expect("load A");
        assert_eq!(run(&img), 111, "{t:?}");
        drop(img);
        buf.copy_from_slice(&wrap(&bb, len));
        assert_eq!(buf.as_ptr(), addr);
        let img = load(&buf).expect("load B");
        assert_eq!(run(&img), 222, "{t:?}: stale code from image A");
    }
}

/// Tests that count compiles take this exclusively; every other test that loads takes it shared, so
/// the global compile counter only moves for the exclusive test.
static CACHE_TESTS: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    CACHE_TESTS.read().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn cache_hit_and_eviction() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    let Some(bc) = bitcode("saxpy", Tgt::Nv) else {
        return;
    };
    // unique content so that other tests do not share the entry
    let bc = wrap(&bc, bc.len() + 20 + 8);
    let (_, c0, h0) = cache_stats();
    let a = load(&bc).unwrap();
    let (_, c1, _) = cache_stats();
    assert_eq!(c1, c0 + 1, "first load compiles");
    let b2 = load(&bc).unwrap();
    let (_, c2, h2) = cache_stats();
    assert_eq!(c2, c1, "second load of the same bytes must not compile");
    assert!(h2 > h0);
    drop(a);
    drop(b2);
    let c3 = load(&bc).unwrap();
    let (_, c4, _) = cache_stats();
    assert_eq!(c4, c2 + 1, "entry was evicted after the last program was dropped");
    drop(c3);
}

#[test]
fn concurrent_loads_compile_once() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    let Some(bc) = bitcode("divergent", Tgt::Amd) else {
        return;
    };
    let bc = wrap(&bc, bc.len() + 20 + 16);
    let (_, c0, _) = cache_stats();
    let imgs: Vec<LoadedImage> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..20).map(|_| s.spawn(|| load(&bc).unwrap())).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (_, c1, _) = cache_stats();
    assert_eq!(c1, c0 + 1);
    assert_eq!(imgs.len(), 20);
}

#[test]
fn garbage_is_rejected() {
    let _g = shared();
    let cases: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x12, 0x34, 0x56, 0x78],
        b"BC\xC0\xDE".to_vec(),
        b"BC\xC0\xDE\x35\x14\x00\x00\x05\x00\x00\x00".to_vec(),
        b"\x7fELF".to_vec(),
        vec![0xDE, 0xC0, 0x17, 0x0B, 0, 0, 0, 0],
        vec![0xAB; 1000],
    ];
    for c in &cases {
        assert!(!is_valid_for_cpu(c));
        match load(c) {
            Err(JitError::InvalidBinary(m)) => assert!(m.contains("expected"), "{m}"),
            Err(e) => panic!("wrong error kind: {e:?}"),
            Ok(_) => panic!("garbage loaded"),
        }
    }
    let e = load(&[0x12, 0x34, 0x56, 0x78, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]).unwrap_err();
    assert!(e.to_string().contains("16 bytes starting 0x12345678"), "{e}");
    let Some(bc) = bitcode("saxpy", Tgt::Nv) else {
        return;
    };
    assert!(is_valid_for_cpu(&bc));
    assert!(matches!(classify(&bc), ImageKind::Bitcode { ref triple } if triple.starts_with("nvptx64")));
    // truncations
    for cut in [5, 40, bc.len() / 3, bc.len() / 2, bc.len() - 8, bc.len() - 1] {
        let r = load(&bc[..cut]);
        assert!(r.is_err(), "truncated at {cut} loaded");
    }
    // bit flips: must not crash; either an error or (rarely) a harmless load
    let mut seed = 0x9e3779b97f4a7c15u64;
    let flips: usize = std::env::var("OFFLOAD_RS_JIT_FLIPS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    for _ in 0..flips {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut v = bc.clone();
        let pos = 4 + (seed as usize) % (v.len() - 4);
        v[pos] ^= 1 << (seed >> 61);
        let _ = is_valid_for_cpu(&v);
        let _ = load(&v);
    }
}

#[test]
fn native_elf_shared_object() {
    let _g = shared();
    let Some(cl) = clang() else { return };
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("k.c");
    std::fs::write(
        &src,
        r#"
        struct WgCtx { const void *args; void *l, *d, *s; unsigned gid[3], ng[3], gs[3], pad; };
        int native_global = 42;
        void fill(const struct WgCtx *c) {
            unsigned *out = *(unsigned *const *)c->args;
            for (unsigned i = 0; i < c->gs[0]; ++i) out[c->gid[0] * c->gs[0] + i] = c->gid[0] * 100 + i;
        }
        "#,
    )
    .unwrap();
    let so = dir.join("k.so");
    let st = Command::new(cl).args(["-shared", "-fPIC", "-O2", "-o"]).arg(&so).arg(&src).status().unwrap();
    assert!(st.success());
    let image = std::fs::read(&so).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(classify(&image), ImageKind::NativeElf);
    assert!(is_valid_for_cpu(&image));
    let img = load(&image).unwrap();
    let (ga, gs) = img.global("native_global").unwrap().unwrap();
    assert_eq!(gs, 4);
    // SAFETY: a 4-byte global of the loaded library.
    assert_eq!(unsafe { *(ga as *const i32) }, 42);
    let k = img.kernel("fill").unwrap();
    assert!(k.params.is_empty());
    let mut out = vec![0u32; 8];
    let args = [out.as_mut_ptr() as u64];
    launch(&k, [2, 1, 1], [4, 1, 1], &args, 0);
    assert_eq!(out, vec![0, 1, 2, 3, 100, 101, 102, 103]);
    assert!(img.kernel("missing").is_none());
    // relocatable objects and other machines are rejected
    let mut rel = image.clone();
    rel[16] = 1;
    assert!(!is_valid_for_cpu(&rel));
    assert!(matches!(load(&rel), Err(JitError::InvalidBinary(_))));
}

/// A native shared object built from `src` with clang, or None without clang.
fn native_so(name: &str, src: &str) -> Option<Vec<u8>> {
    let cl = clang()?;
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-native-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("k.c");
    std::fs::write(&c, src).unwrap();
    let so = dir.join("k.so");
    let st = Command::new(cl).args(["-shared", "-fPIC", "-O2", "-o"]).arg(&so).arg(&c).status().unwrap();
    assert!(st.success());
    let image = std::fs::read(&so).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(image)
}

/// Each load of a native image is its own object: two different images alive at once run their own
/// kernels (glibc's dlopen finds a loaded object by name, and a reused `/proc/self/fd/N` gave the
/// second image the first one's code), and one image loaded twice has two sets of globals.
#[test]
fn native_images_never_share_code_or_globals() {
    let _g = shared();
    let kernel = |v: u32| {
        format!(
            r#"
            struct WgCtx {{ const void *args; void *l, *d, *s; unsigned gid[3], ng[3], gs[3], pad; }};
            int counter = 0;
            void which(const struct WgCtx *c) {{ unsigned *out = *(unsigned *const *)c->args; out[0] = {v} + counter++; }}
            "#
        )
    };
    let (Some(a), Some(b)) = (native_so("a", &kernel(100)), native_so("b", &kernel(200))) else { return };
    assert_ne!(a, b);
    let run = |img: &LoadedImage| {
        let k = img.kernel("which").unwrap();
        let mut out = [0u32; 1];
        launch(&k, [1, 1, 1], [1, 1, 1], &[out.as_mut_ptr() as u64], 0);
        out[0]
    };
    let ia = load(&a).unwrap();
    let ib = load(&b).unwrap();
    assert_eq!(run(&ia), 100);
    assert_eq!(run(&ib), 200, "the second image ran the first one's kernel");
    // one image loaded twice: its own counter each
    let ia2 = load(&a).unwrap();
    assert_eq!(run(&ia2), 100, "a second load of one image shares the first one's globals");
    assert_eq!(run(&ia), 101);
    // a load after another image was destroyed (its number free again) is still its own
    drop(ib);
    let ib2 = load(&b).unwrap();
    assert_eq!(run(&ib2), 200);
    drop(ia);
    let ic = load(&b).unwrap();
    assert_eq!(run(&ic), 200);
    assert_eq!(run(&ia2), 101);
    // the client closes the memfd of a loaded image (closefrom): its number is free again, but the name
    // /proc/self/fd/N still names that loaded object, so the next load takes another number
    let loaded = ia2.generic.if_loaded().unwrap();
    let Instance::Native(lib) = &*loaded.inst else { panic!("not native") };
    let n = lib.memfd_number().unwrap();
    // SAFETY: closing the test's image's memfd behind the library's back, as a client might.
    unsafe { libc::close(n) };
    let id = load(&b).unwrap();
    assert_eq!(run(&id), 200, "a load under a reused descriptor number ran another image's kernel");
    assert_eq!(run(&ia2), 102);
    drop(ia2); // never closes number n again (it is not the memfd any more)
}

#[test]
fn unsupported_intrinsic_is_a_compile_error() {
    let _g = shared();
    let Some(cl) = clang() else { return };
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-unsup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("u.c");
    std::fs::write(
        &src,
        "#include <gpuintrin.h>\n#include <stdint.h>\n__gpu_kernel void clk(uint64_t *o) { o[0] = __builtin_readcyclecounter(); o[1] = __nvvm_read_ptx_sreg_clock64(); }\n",
    )
    .unwrap();
    let out = dir.join("u.bc");
    let st = Command::new(cl)
        .args([
            "--target=nvptx64-nvidia-cuda",
            "-march=sm_90",
            "--cuda-feature=+ptx80",
            "-nogpulib",
            "-ffreestanding",
            "-flto",
            "-O2",
            "-c",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    let bc = std::fs::read(&out);
    let _ = std::fs::remove_dir_all(&dir);
    if !st.success() {
        return;
    }
    match load(&bc.unwrap()) {
        Err(JitError::Compile(m)) => assert!(m.contains("llvm.nvvm") || m.contains("readcyclecounter"), "{m}"),
        Err(e) => panic!("unexpected error kind {e:?}"),
        Ok(_) => panic!("unsupported intrinsic compiled"),
    }
}

#[test]
fn recursion_is_rejected() {
    let _g = shared();
    let Some(cl) = clang() else { return };
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("r.c");
    std::fs::write(
        &src,
        "#include <gpuintrin.h>\n#include <stdint.h>\n__attribute__((noinline)) uint32_t fib(uint32_t n) { return n < 2 ? n : fib(n-1) + fib(n-2); }\n__gpu_kernel void rec(uint32_t *o) { o[0] = fib(o[1]); }\n",
    )
    .unwrap();
    let out = dir.join("r.bc");
    let st = Command::new(cl)
        .args(["--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-nogpulib", "-ffreestanding", "-flto", "-O2", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let bc = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    match load(&bc) {
        Err(JitError::Compile(m)) => assert!(m.contains("recurs"), "{m}"),
        Err(e) => panic!("unexpected error kind {e:?}"),
        Ok(_) => panic!("recursive kernel compiled"),
    }
}

/// Compiles C source `src` for nvptx64 (as `bitcode` does for the files of ffi-tests/kernels).
fn nvptx_bitcode_of(src: &str) -> Option<Vec<u8>> {
    bitcode_of_source(src, Tgt::Nv)
}

/// Compiles C source `src` for `t` (as `bitcode` does for the files of ffi-tests/kernels).
fn bitcode_of_source(src: &str, t: Tgt) -> Option<Vec<u8>> {
    let cl = clang()?;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-src-{}-{seq}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, out) = (dir.join("k.c"), dir.join("k.bc"));
    std::fs::write(&c, src).unwrap();
    let st = Command::new(cl)
        .args(match t {
            Tgt::Amd => &["--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a"][..],
            Tgt::Spv => &["--target=spirv64"][..],
            Tgt::Nv => &["--target=nvptx64-nvidia-cuda", "-march=sm_90", "--cuda-feature=+ptx80"][..],
        })
        .args(["-nogpulib", "-ffreestanding", "-flto", "-O2", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "clang-22 failed on {src}");
    let bc = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(bc)
}

/// The lowering refuses what cannot run on the CPU (HIP's printf: devicelib.rs; the rest: cleanup.rs), with
/// its texts.
#[test]
fn cleanup_refuses_hip_printf_and_shared_memory_in_initialisers() {
    let _g = shared();
    let cases = [
        (
            "#include <gpuintrin.h>\nint __printf_alloc(unsigned);\n\
             __gpu_kernel void k(int *o) { o[0] = __printf_alloc(4); }\n",
            "unsupported device library call '__printf_alloc' (HIP's printf; the CPU device runs printf as C \
             and CUDA compile it: plain printf or vprintf)",
        ),
        (
            "#include <gpuintrin.h>\n__gpu_local int s[4];\n__gpu_local int *p = s;\n\
             __gpu_kernel void k(int *o) { o[0] = 1; }\n",
            "__gpu_local variable 's' is referenced by a constant initializer",
        ),
    ];
    for (src, want) in cases {
        let Some(bc) = nvptx_bitcode_of(src) else { return };
        match load(&bc) {
            Err(JitError::Compile(m)) => assert_eq!(m, want),
            Err(e) => panic!("unexpected error kind {e:?}"),
            Ok(_) => panic!("compiled: {src}"),
        }
    }
}

/// Numbers for the report (not a test of behaviour): cold compile, warm load, vectorisation.
/// `cargo test --release --lib jit::tests::measure -- --ignored --nocapture`
#[test]
#[ignore]
fn measure() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    for (file, kname) in [("saxpy", "saxpy"), ("reduce", "reduce_sum")] {
        for t in TARGETS {
            let Some(bc) = bitcode(file, t) else { return };
            let mut cold = f64::MAX;
            for salt in 0..3 {
                let v = wrap(&bc, bc.len() + 20 + 8 * (salt + 1)); // fresh content: always a miss
                let t0 = std::time::Instant::now();
                let img = load(&v).unwrap();
                cold = cold.min(t0.elapsed().as_secs_f64());
                drop(img);
            }
            let keep = load(&bc).unwrap();
            let mut warm = f64::MAX;
            for _ in 0..50 {
                let t0 = std::time::Instant::now();
                let img = load(&bc).unwrap();
                warm = warm.min(t0.elapsed().as_secs_f64());
                drop(img);
            }
            let k = keep.kernel(kname).unwrap();
            // throughput: 16M elements, block 256, one thread
            let n = 1usize << 24;
            let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
            let mut y: Vec<f32> = vec![1.0; n];
            let groups = (n / 256) as u32;
            let mut partial = vec![0f32; groups as usize];
            let args = if file == "saxpy" {
                pack(&k.params, &[&b(&2.0f32), &b(&(x.as_ptr() as usize)), &ptr(&mut y), &b(&(n as u32))])
            } else {
                pack(&k.params, &[&b(&(x.as_ptr() as usize)), &ptr(&mut partial), &b(&(n as u32))])
            };
            let mut run_t = f64::MAX;
            for _ in 0..3 {
                let t0 = std::time::Instant::now();
                launch(&k, [groups, 1, 1], [256, 1, 1], &args, 0);
                run_t = run_t.min(t0.elapsed().as_secs_f64());
            }
            if file == "reduce" {
                let total: f64 = partial.iter().map(|&v| v as f64).sum();
                let expect: f64 = x.iter().map(|&v| v as f64).sum();
                assert_eq!(total, expect);
            }
            println!("{file:>7} {t:?}: 16M elements, block 256, 1 thread: {:.1} ms", run_t * 1e3);
            println!(
                "{file:>7} {t:?}: cold {:.2} ms, warm {:.1} us ({:.0}x), barriers {}, scratch/wi {}",
                cold * 1e3,
                warm * 1e6,
                cold / warm,
                k.has_barriers,
                k.scratch_bytes_per_wi
            );
        }
    }
}

#[test]
fn disk_cache_roundtrip_and_corruption() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    let Some(bc) = bitcode("saxpy", Tgt::Amd) else {
        return;
    };
    let bc = wrap(&bc, bc.len() + 20 + 24);
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-disk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    *disk::DIR_OVERRIDE.lock() = Some(dir.clone());
    let run = || {
        let img = load(&bc).unwrap();
        let k = img.kernel("saxpy").unwrap();
        let x = [1.0f32; 4];
        let mut y = [2.0f32; 4];
        let args = pack(&k.params, &[&b(&2.0f32), &b(&(x.as_ptr() as usize)), &ptr(&mut y), &b(&4u32)]);
        launch(&k, [1, 1, 1], [4, 1, 1], &args, 0);
        assert_eq!(y, [4.0; 4]);
    };
    let (_, c0, _) = cache_stats();
    // compiles and writes the files: the program's declarations at the load, its deferred generic code at
    // the launch (`launch` runs the generic code)
    run();
    let (_, c1, _) = cache_stats();
    assert_eq!(c1, c0 + 2);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 2, "two cache files, no temporaries: {files:?}");
    run(); // evicted from memory after the previous drop: must come from disk
    let (_, c2, _) = cache_stats();
    assert_eq!(c2, c1, "disk hit must not compile");
    // corrupt the payload: ignored, recompiled, rewritten
    let mut data = std::fs::read(&files[0]).unwrap();
    let n = data.len();
    data[n - 10] ^= 0xff;
    std::fs::write(&files[0], &data).unwrap();
    run();
    let (_, c3, _) = cache_stats();
    assert_eq!(c3, c2 + 1, "corrupt file must be ignored");
    assert_ne!(std::fs::read(&files[0]).unwrap(), data, "corrupt file rewritten");
    run();
    let (_, c4, _) = cache_stats();
    assert_eq!(c4, c3);
    *disk::DIR_OVERRIDE.lock() = None;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_bitcode_wg_functions() {
    let _g = shared();
    let Some(cl) = clang() else { return };
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-hostbc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("h.c");
    std::fs::write(
        &src,
        r#"
        #include <math.h>
        struct WgCtx { const void *args; void *l, *d, *s; unsigned gid[3], ng[3], gs[3], pad; };
        int host_global = 7;
        __attribute__((constructor(200))) static void init(void) { host_global *= 3; }
        void roots(const struct WgCtx *c) {
            float *out = *(float *const *)c->args;
            for (unsigned i = 0; i < c->gs[0]; ++i) {
                unsigned g = c->gid[0] * c->gs[0] + i;
                out[g] = sqrtf((float)g) + (float)host_global;
            }
        }
        "#,
    )
    .unwrap();
    let out = dir.join("h.bc");
    let st = Command::new(cl).args(["-O2", "-flto", "-c", "-fPIC"]).arg(&src).arg("-o").arg(&out).status().unwrap();
    assert!(st.success());
    let bc = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(is_valid_for_cpu(&bc));
    let img = load(&bc).unwrap();
    let (ga, _) = img.global("host_global").unwrap().unwrap();
    // SAFETY: 4-byte global of this instance.
    assert_eq!(unsafe { *(ga as *const i32) }, 21);
    let k = img.kernel("roots").unwrap();
    let mut o = vec![0f32; 8];
    let args = [o.as_mut_ptr() as u64];
    launch(&k, [2, 1, 1], [4, 1, 1], &args, 0);
    for (i, v) in o.iter().enumerate() {
        assert_eq!(*v, (i as f32).sqrt() + 21.0);
    }
}

#[test]
fn exit_before_barrier() {
    let _g = shared();
    for t in EXIT_TARGETS {
        let Some(img) = load_ok("exitbar", t) else {
            return;
        };
        let k = img.kernel("exitbar").expect("kernel");
        assert!(k.has_barriers);
        let mut out = vec![0u32; 3 * 64];
        let args = pack(&k.params, &[&ptr(&mut out)]);
        launch(&k, [3, 1, 1], [64, 1, 1], &args, 0);
        for (i, v) in out.iter().enumerate() {
            let (base, tt) = ((i / 64 * 64) as u32, (i % 64) as u32);
            let e = if tt % 4 == 3 { 7 } else { (tt - tt % 4) * 3 + base + 1 };
            assert_eq!(*v, e, "{t:?} {i}");
        }
    }
}

#[test]
fn scan_and_transpose_with_barriers() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("barriers2", t) else {
            return;
        };
        let k = img.kernel("scan").expect("scan");
        assert!(k.has_barriers);
        let (groups, block) = (3usize, 128usize);
        let input: Vec<u32> = (0..groups * block).map(|i| (i * 7 % 13) as u32).collect();
        let mut out = vec![0u32; groups * block];
        let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
        launch(&k, [groups as u32, 1, 1], [block as u32, 1, 1], &args, 0);
        for g in 0..groups {
            let mut acc = 0u32;
            for i in 0..block {
                acc += input[g * block + i];
                assert_eq!(out[g * block + i], acc, "{t:?} scan {g}/{i}");
            }
        }
        let k = img.kernel("transpose").expect("transpose");
        let (w, h) = (40u32, 23u32);
        let input: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
        let mut out = vec![-1f32; (w * h) as usize];
        let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&w), &b(&h)]);
        launch(&k, [w.div_ceil(16), h.div_ceil(16), 1], [16, 16, 1], &args, 0);
        for y in 0..h {
            for x in 0..w {
                assert_eq!(out[(x * h + y) as usize], input[(y * w + x) as usize], "{t:?} transpose");
            }
        }
    }
}

#[test]
fn parameterless_kernel_and_constant_global() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("nokernel", t) else {
            return;
        };
        assert_eq!(img.kernel_names(), vec!["noargs".to_string()]);
        let k = img.kernel("noargs").expect("kernel");
        assert!(k.params.is_empty());
        launch(&k, [2, 1, 1], [3, 1, 1], &[0u64], 0);
        let (a, s) = img.global("slot").unwrap().expect("slot");
        assert_eq!(s, 4);
        // SAFETY: 4-byte global of this instance.
        assert_eq!(unsafe { *(a as *const u32) }, 45, "{t:?}");
        assert!(img.kernel("answer").is_none());
    }
}

/// Every target compiles with and without the memory checker; the checker's hook is there only with it,
/// and the code generator gave a frame size for every work-group function.
#[test]
fn memcheck_compiles_every_target_and_frames_are_known() {
    for t in TARGETS {
        for name in ["saxpy", "reduce", "dynshared"] {
            let Some(bc) = bitcode(name, t) else { return };
            for memcheck in [false, true] {
                let (obj, kernels) =
                    service::compile_cpu(&bc, service::cpu_target().unwrap(), 3, memcheck, false, None)
                        .unwrap_or_else(|e| panic!("{name} for {t:?}, memcheck {memcheck}: {e}"));
                let frames = stack::frame_sizes(&obj);
                for k in &kernels {
                    assert!(
                        frames.contains_key(&k.symbol),
                        "{name} {t:?}: no frame size for {} in {frames:?}",
                        k.symbol
                    );
                }
                let loaded = elf::LoadedObject::load(&obj).unwrap();
                assert_eq!(loaded.data_symbol("__ol_rs_memcheck_hook").is_some(), memcheck, "{name} {t:?}");
            }
        }
    }
}

/// The lowering shapes of ffi-tests/kernels/shapes.c against results computed here.
#[test]
fn guarded_regions_and_uniform_barriers() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("shapes", t) else {
            return;
        };
        let k = img.kernel("guards").expect("guards");
        assert!(k.has_barriers);
        for (n, kk) in [(128u32, 50u32), (128, 0), (128, 200), (100, 37), (256, 255)] {
            let groups = 2u32;
            let input: Vec<i32> = (0..groups * n).map(|i| (i * 7 % 23) as i32 - 5).collect();
            let mut out = vec![0i32; (groups * n) as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&kk)]);
            launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
            for g in 0..groups as usize {
                let nn = n as usize;
                let a = &input[g * nn..(g + 1) * nn];
                let mut r = vec![vec![0i32; nn]; 5];
                for tt in 0..nn {
                    let tu = tt as u32;
                    if tu >= kk {
                        r[0][tt] = a[(tt + 1) % nn] * 2;
                    }
                    if tu + 5 < kk {
                        r[1][tt] = a[(tt + 2) % nn] + 1;
                    }
                    if tu == kk / 2 {
                        r[2][tt] = -a[(tt + 3) % nn];
                    }
                    if tu <= 3 && tu > 0 {
                        r[3][tt] = a[(tt + 4) % nn] + 1000;
                    }
                    if tt as i32 - 10 > kk as i32 - 20 {
                        r[4][tt] = a[(tt + 5) % nn] + 7;
                    }
                }
                for tt in 0..nn {
                    let e = (0..5).fold(0i32, |acc, j| acc.wrapping_mul(31).wrapping_add(r[j][(tt + j + 1) % nn]));
                    assert_eq!(out[g * nn + tt], e, "{t:?} guards n={n} k={kk} group {g} item {tt}");
                }
            }
        }

        let k = img.kernel("uniform_loop").expect("uniform_loop");
        for (n, reps) in [(64u32, 3u32), (64, 0), (96, 5)] {
            let groups = 3u32;
            let input: Vec<u32> = (0..groups * n).map(|i| i % 5).collect();
            let mut out = vec![0u32; (groups * n) as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&reps)]);
            launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
            for g in 0..groups as usize {
                let mut s: Vec<u32> = input[g * n as usize..(g + 1) * n as usize].to_vec();
                for r in 0..reps {
                    s = (0..n as usize).map(|i| s[i].wrapping_add(s[(i + 1) % n as usize]).wrapping_add(r)).collect();
                }
                assert_eq!(&out[g * n as usize..(g + 1) * n as usize], &s[..], "{t:?} uniform_loop n={n} reps={reps}");
            }
        }

        let k = img.kernel("uniform_paths").expect("uniform_paths");
        for mode in [0u32, 1] {
            let (groups, n) = (2u32, 64u32);
            let input: Vec<u32> = (0..groups * n).map(|i| i * 3 + 1).collect();
            let mut out = vec![0u32; (groups * n) as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&mode)]);
            launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
            for g in 0..groups as usize {
                let s = &input[g * n as usize..(g + 1) * n as usize];
                for tt in 0..n as usize {
                    let v = if mode == 0 { s[n as usize - 1 - tt] * 3 } else { s[(tt + 4) % n as usize] + 11 };
                    let e = v + u32::from((tt as u32) < mode);
                    assert_eq!(out[g * n as usize + tt], e, "{t:?} uniform_paths mode {mode} item {tt}");
                }
            }
        }

        let k = img.kernel("inner_uniform_loop").expect("inner_uniform_loop");
        for (n, reps) in [(64u32, 5u32), (48, 0), (128, 9)] {
            let groups = 2u32;
            let input: Vec<u32> = (0..groups * n).map(|i| i % 11).collect();
            let mut out = vec![0u32; (groups * n) as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&reps)]);
            launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
            for g in 0..groups as usize {
                let s = &input[g * n as usize..(g + 1) * n as usize];
                for tt in 0..n as usize {
                    let e: u32 = (0..reps as usize).map(|kk| s[(tt + kk) % n as usize] * (kk as u32 + 1)).sum::<u32>()
                        + (0..100usize).map(|kk| s[(tt * 7 + kk) % n as usize] ^ kk as u32).sum::<u32>();
                    assert_eq!(out[g * n as usize + tt], e, "{t:?} inner_uniform_loop n={n} reps={reps} item {tt}");
                }
            }
        }

        let k = img.kernel("divergent_count").expect("divergent_count");
        let (groups, n) = (3u32, 40u32);
        let mut out = vec![0u32; (groups * n) as usize];
        let args = pack(&k.params, &[&ptr(&mut out)]);
        launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
        for (i, v) in out.iter().enumerate() {
            let mut acc = i as u32;
            for r in 0..(i as u32 % n) & 3 {
                acc = acc * 3 + r;
            }
            assert_eq!(*v, acc, "{t:?} divergent_count {i}");
        }

        for name in ["wrap_guard", "wrap_guard_bar"] {
            let k = img.kernel(name).expect(name);
            let (groups, n, stride, len) = (4u32, 32u32, 0xFFFF_FFF0u32, 100u32);
            let mut hit = vec![0u32; (groups * n) as usize];
            let args = pack(&k.params, &[&ptr(&mut hit), &b(&stride), &b(&len)]);
            launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
            let f = |g: u32, tt: u32| {
                let i = g.wrapping_mul(stride).wrapping_add(tt);
                if i < len { i + 1 } else { 0 }
            };
            for g in 0..groups {
                for tt in 0..n {
                    let e = if name == "wrap_guard" { f(g, tt) } else { f(g, (tt + 1) % n) };
                    assert_eq!(hit[(g * n + tt) as usize], e, "{t:?} {name} group {g} item {tt}");
                }
            }
        }
    }
}

/// Launch-time specialisation: the version for one group size computes what the generic one does, for
/// 1-D and 2-D groups, with and without barriers; the same bitcode, kernel and shape compile once
/// (whichever program asks); kernels with mutable globals are not specialisable.
#[test]
fn specialised_matches_generic() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    for t in TARGETS {
        let Some(img) = load_ok("reduce", t) else {
            return;
        };
        let k = img.kernel("reduce_sum").expect("kernel");
        assert!(k.specialisable(), "{t:?}");
        let n = 128 * 9 + 3;
        let input: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
        let groups = (n as u32).div_ceil(128);
        let run = |k: &KernelEntry| {
            let mut out = vec![0f32; groups as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&(n as u32))]);
            launch(k, [groups, 1, 1], [128, 1, 1], &args, 0);
            out
        };
        let before = cache_stats().1;
        let s = k.specialise([128, 1, 1], false).expect("specialise");
        assert_eq!(cache_stats().1, before + 1, "{t:?}: one compile");
        assert_eq!(run(&s), run(&k), "{t:?} reduce"); // (`run(&k)` may compile deferred generic code)
        // another program from the same bytes: its declarations and the specialised code come from the cache
        let before = cache_stats().1;
        let img2 = load_ok("reduce", t).unwrap();
        let s2 = img2.kernel("reduce_sum").unwrap().specialise([128, 1, 1], false).expect("specialise");
        assert_eq!(cache_stats().1, before, "{t:?}: cache hits");
        assert_eq!(run(&s2), run(&k), "{t:?} reduce, second program");

        let img = load_ok("shapes", t).unwrap();
        let k = img.kernel("guards").unwrap();
        let (groups, n, kk) = (2u32, 96u32, 41u32);
        let input: Vec<i32> = (0..groups * n).map(|i| (i * 5 % 17) as i32).collect();
        let run = |k: &KernelEntry| {
            let mut out = vec![0i32; (groups * n) as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&kk)]);
            launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
            out
        };
        assert_eq!(run(&k.specialise([n, 1, 1], false).unwrap()), run(&k), "{t:?} guards");

        let img = load_ok("barriers2", t).unwrap();
        let k = img.kernel("transpose").unwrap();
        let (w, h) = (40u32, 23u32);
        let input: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
        let run = |k: &KernelEntry| {
            let mut out = vec![-1f32; (w * h) as usize];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&w), &b(&h)]);
            launch(k, [w.div_ceil(16), h.div_ceil(16), 1], [16, 16, 1], &args, 0);
            out
        };
        assert_eq!(run(&k.specialise([16, 16, 1], false).unwrap()), run(&k), "{t:?} transpose");

        let img = load_ok("saxpy", t).unwrap();
        let k = img.kernel("saxpy").unwrap();
        let n = 1000u32;
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let run = |k: &KernelEntry| {
            let mut y: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
            let args = pack(&k.params, &[&b(&3.0f32), &b(&(x.as_ptr() as usize)), &ptr(&mut y), &b(&n)]);
            launch(k, [n.div_ceil(64), 1, 1], [64, 1, 1], &args, 0);
            y
        };
        assert_eq!(run(&k.specialise([64, 1, 1], false).unwrap()), run(&k), "{t:?} saxpy");

        let img = load_ok("globals", t).unwrap();
        assert!(!img.kernel("bump").unwrap().specialisable(), "{t:?}: bump writes device globals");
    }
}

/// A program whose kernels can all be specialised and that has no constructors loads without its generic
/// code (the load runs the lowering only, for the kernels' metadata and errors); launches at specialised
/// shapes never compile it; the first launch that needs it (a fifth shape, a failed specialisation) and
/// a global's address compile and load it then, once, and it computes what the specialisation does.
/// A kernel with mutable globals, constructors, or specialisation turned off load it with the program.
#[test]
fn generic_code_deferred_to_first_use() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    if !specialisation_enabled() {
        return;
    }
    for t in TARGETS {
        let Some(img) = load_ok("deferred", t) else {
            return;
        };
        assert!(img.generic_deferred(), "{t:?}");
        assert_eq!(img.kernel_names(), ["scale", "rotate"], "{t:?}");
        let n = 1000u32;
        let run_scale = |k: &KernelEntry| {
            let mut v: Vec<u32> = (0..n).map(|i| i * 3).collect();
            let args = pack(&k.params, &[&ptr(&mut v), &b(&5u32), &b(&n)]);
            launch(k, [n.div_ceil(64), 1, 1], [64, 1, 1], &args, 0);
            v
        };
        let want: Vec<u32> = (0..n).map(|i| i * 15 + i).collect();
        let k = img.kernel("scale").unwrap();
        assert_eq!(run_scale(&k.specialise([64, 1, 1], false).unwrap()), want, "{t:?} specialised");
        let input: Vec<u32> = (0..256).map(|i| i * 7 + 1).collect();
        let run_rotate = |k: &KernelEntry| {
            let mut out = vec![0u32; 256];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
            launch(k, [2, 1, 1], [128, 1, 1], &args, 0);
            out
        };
        let rot: Vec<u32> = (0..256).map(|i| input[(i / 128) * 128 + (i % 128 + 1) % 128]).collect();
        let r = img.kernel("rotate").unwrap();
        assert_eq!(run_rotate(&r.specialise([128, 1, 1], false).unwrap()), rot, "{t:?} specialised rotate");
        assert!(img.generic_deferred(), "{t:?}: specialisations need no generic code");
        // the generic code, compiled at its first use (one compile however many kernels use it)
        let before = cache_stats().1;
        assert_eq!(run_scale(&k), want, "{t:?} generic");
        assert!(!img.generic_deferred(), "{t:?}");
        assert_eq!(run_rotate(&r), rot, "{t:?} generic rotate");
        assert!(cache_stats().1 <= before + 1, "{t:?}: the generic code compiles once");
        // threads that need a deferred program's code at once load it once: all get the same code
        let img3 = load_ok("deferred", t).unwrap();
        let k3 = img3.kernel("scale").unwrap();
        let fns: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| k3.code().expect("code").wg_fn as usize)).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(fns.windows(2).all(|w| w[0] == w[1]), "{t:?}: {fns:x?}");
        assert_ne!(fns[0], k.code().unwrap().wg_fn as usize, "{t:?}: each program its own instance");
        // a global's address loads it too; the program's global is where the generic code is
        let img2 = load_ok("deferred", t).unwrap();
        assert!(img2.generic_deferred(), "{t:?}");
        let (a, size) = img2.global("host_visible").unwrap().expect("host_visible");
        assert_eq!(size, 4);
        // SAFETY: a 4-byte global of this instance.
        assert_eq!(unsafe { std::ptr::read_volatile(a as *const u32) }, 7, "{t:?}");
        assert!(!img2.generic_deferred(), "{t:?}");
        assert!(img2.global("nope").unwrap().is_none());
        // loaded with the program: a kernel with mutable globals, constructors
        assert!(!load_ok("globals", t).unwrap().generic_deferred(), "{t:?} globals");
        assert!(!load_ok("ctors", t).unwrap().generic_deferred(), "{t:?} ctors");
    }
}

/// A compiled object and its metadata, straight from the compiler (no cache, no helper), through the
/// full pipeline (the quick one for replaced generic code may leave saxpy's .text without relocations).
fn compiled(name: &str) -> Option<(Vec<u8>, Vec<KernelMeta>)> {
    let bc = bitcode(name, Tgt::Nv)?;
    Some(super::compile::compile_in_process(&bc, service::cpu_target().unwrap(), 2, false, false, false, None).unwrap())
}

/// A tiny deterministic generator for the mutation corpora below.
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Disk cache entries corrupted every way a file can be (every truncation of the header, every byte
/// flipped in the header, sampled flips and truncations of the payload, another key's entry) are refused
/// by `decode_entry`; a whole one is accepted.
#[test]
fn corrupted_disk_entries_are_refused() {
    let Some((obj, meta)) = compiled("saxpy") else {
        return;
    };
    let payload = compile::encode_object(&obj, &meta);
    let key = [7u8; 32];
    let entry = disk::encode_entry(&key, &payload);
    assert_eq!(disk::decode_entry(&entry, &key), Ok(&payload[..]));
    assert_eq!(disk::decode_entry(&entry, &[8u8; 32]), Err("stored for another key"));
    let header = entry.len() - payload.len();
    let mut cases = 0;
    for n in (0..entry.len()).filter(|&n| n <= header + 8 || n % 97 == 0) {
        assert!(disk::decode_entry(&entry[..n], &key).is_err(), "truncated to {n}");
        cases += 1;
    }
    let mut longer = entry.clone();
    longer.push(0);
    assert!(disk::decode_entry(&longer, &key).is_err());
    for i in (0..entry.len()).filter(|&i| i < header || i % 13 == 0) {
        let mut e = entry.clone();
        e[i] ^= 1 << (i % 8);
        assert!(disk::decode_entry(&e, &key).is_err(), "byte {i} flipped");
        cases += 1;
    }
    assert!(cases > 400);
}

/// The ELF loader treats its input as untrusted: a relocation past its section, an unknown relocation
/// type and a symbol outside its section are errors that say so; thousands of random byte mutations of
/// a real object load or fail, never crash (nothing is run). The object is globals.c's kernel, which
/// reads and writes global variables: its code refers to its data through relocations at every
/// optimisation level (saxpy's may have none).
#[test]
fn elf_loader_checks_untrusted_objects() {
    use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
    let Some((obj, _)) = compiled("globals") else {
        return;
    };
    assert!(elf::LoadedObject::load(&obj).is_ok());
    let file = ElfFile64::<object::Endianness>::parse(&obj[..]).unwrap();
    let e = file.endian();
    let sections = file.elf_header().sections(e, &obj[..]).unwrap();
    let rela = sections
        .iter()
        .find(|s| s.sh_type(e) == object::elf::SHT_RELA && s.sh_size(e) >= 24)
        .map(|s| s.sh_offset(e) as usize)
        .expect("a relocation section");
    let symtab = sections.iter().find(|s| s.sh_type(e) == object::elf::SHT_SYMTAB).unwrap();
    let load_err = |o: &[u8]| match elf::LoadedObject::load(o) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    let mut bad = obj.clone();
    bad[rela..rela + 8].copy_from_slice(&0x7fff_fff0u64.to_le_bytes());
    assert!(load_err(&bad).contains("lies outside section"), "{}", load_err(&bad));
    let mut bad = obj.clone();
    bad[rela + 8..rela + 12].copy_from_slice(&99u32.to_le_bytes());
    assert!(load_err(&bad).contains("unsupported x86-64 relocation type 99"), "{}", load_err(&bad));
    // the first defined symbol with a section index: its value far past the section
    let (off, n) = (symtab.sh_offset(e) as usize, (symtab.sh_size(e) / 24) as usize);
    let sym = (1..n)
        .map(|i| off + i * 24)
        .find(|&s| {
            let shndx = u16::from_le_bytes([obj[s + 6], obj[s + 7]]);
            (1..0xff00).contains(&shndx) && obj[s + 4] & 0xf == object::elf::STT_FUNC
        })
        .expect("a defined function");
    let mut bad = obj.clone();
    bad[sym + 8..sym + 16].copy_from_slice(&0x10_0000u64.to_le_bytes());
    assert!(load_err(&bad).contains("outside its section"), "{}", load_err(&bad));
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut refused = 0;
    for _ in 0..3000 {
        let mut m = obj.clone();
        for _ in 0..1 + rng.next() % 4 {
            let i = (rng.next() % m.len() as u64) as usize;
            m[i] ^= 1 << (rng.next() % 8);
        }
        if elf::LoadedObject::load(&m).is_err() {
            refused += 1;
        }
    }
    assert!(refused > 0);
}

/// Through the whole path: a disk entry whose payload was corrupted (checksum recomputed, as bit rot
/// cannot do but a bug could) or that belongs to another key is ignored and the right program runs.
#[test]
fn disk_cache_ignores_forged_entries() {
    let _g = CACHE_TESTS.write().unwrap_or_else(|e| e.into_inner());
    let (Some(bc), Some(other)) = (bitcode("saxpy", Tgt::Nv), bitcode("saxpy", Tgt::Amd)) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("offload-rs-jit-forged-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    *disk::DIR_OVERRIDE.lock() = Some(dir.clone());
    let check = || {
        let img = load(&bc).unwrap();
        let k = img.kernel("saxpy").unwrap();
        let x = [1.0f32; 4];
        let mut y = [2.0f32; 4];
        let args = pack(&k.params, &[&b(&3.0f32), &b(&(x.as_ptr() as usize)), &ptr(&mut y), &b(&4u32)]);
        launch(&k, [1, 1, 1], [4, 1, 1], &args, 0);
        assert_eq!(y, [5.0; 4]);
    };
    check();
    drop(load(&other).unwrap());
    let key = cache::key_of(&bc, compile::opt_level(), false, false, specialisation_enabled(), None);
    let name: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let okey = cache::key_of(&other, compile::opt_level(), false, false, specialisation_enabled(), None);
    let oname: String = okey.iter().map(|b| format!("{b:02x}")).collect();
    // another key's entry under our name
    std::fs::copy(dir.join(&oname), dir.join(&name)).unwrap();
    let (_, c0, _) = cache_stats();
    check();
    let (_, c1, _) = cache_stats();
    assert_eq!(c1, c0 + 1, "the other key's entry must not be used");
    // our entry with a payload that is not an object, checksum recomputed
    std::fs::write(dir.join(&name), disk::encode_entry(&key, b"\x10\0\0\0\0\0\0\0not an object at all")).unwrap();
    check();
    let (_, c2, _) = cache_stats();
    assert_eq!(c2, c1 + 1, "a payload the loader refuses must be recompiled");
    *disk::DIR_OVERRIDE.lock() = None;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `olIsValidBinary`'s triple reader (no LLVM) agrees with LLVM's own parse on every target clang makes,
/// raw and wrapped, and truncations of a real image are refused.
#[test]
fn bitcode_triple_without_llvm_matches_llvm() {
    for t in TARGETS {
        let Some(bc) = bitcode("saxpy", t) else {
            return;
        };
        let ctx = inkwell::context::Context::create();
        let llvm = super::pipeline::parse(&ctx, &bc).unwrap().get_triple().as_str().to_string_lossy().into_owned();
        assert_eq!(bitcode_triple(&bc).as_deref(), Ok(llvm.as_str()), "{t:?}");
        assert_eq!(bitcode_triple(&wrap(&bc, bc.len() + 20 + 24)).as_deref(), Ok(llvm.as_str()), "{t:?} wrapped");
        assert!(is_valid_for_cpu(&bc));
        // (cut inside the module block; a cut that leaves only a partial symbol table is, as for LLVM, fine)
        for n in (0..bc.len() / 2).step_by(61).chain([bc.len() - 1]) {
            assert!(!is_valid_for_cpu(&bc[..n]), "{t:?} truncated to {n}");
        }
    }
}

/// Loops inside barrier regions (interchangeLoops): a uniform trip count known only at run time (the
/// loop runs outside the work-item loop), a trip count that differs per work-item, a uniform loop
/// reached only by some work-items, a divergent branch inside a uniform loop, values leaving the loop
/// (an accumulator read by another work-item after it, the PHI's last value, swapped PHIs), the group
/// size as the trip count (n-body); generic and specialised.
#[test]
fn loops_in_barrier_regions() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("interchange", t) else {
            return;
        };
        let (groups, n) = (3u32, 96u32);
        let input: Vec<i32> = (0..groups * n).map(|i| (i * 13 % 29) as i32 - 10).collect();
        let run = |k: &KernelEntry, extra: &[&[u8]]| {
            let mut out = vec![0i32; (groups * n) as usize];
            let (inp, outp) = (b(&(input.as_ptr() as usize)), ptr(&mut out));
            let mut vals: Vec<&[u8]> = vec![&inp, &outp];
            vals.extend_from_slice(extra);
            let args = pack(&k.params, &vals);
            launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
            out
        };
        let group = |g: usize| &input[g * n as usize..(g + 1) * n as usize];
        let nn = n as usize;

        let k = img.kernel("runtime_trips").expect("runtime_trips");
        let s = k.specialise([n, 1, 1], false).expect("specialise");
        for m in [0u32, 1, 5, 96, 200] {
            let mut want = Vec::new();
            for g in 0..groups as usize {
                let tile: Vec<i32> = group(g).iter().map(|a| a % 7 - 3).collect();
                for tt in 0..nn {
                    let a = group(g)[tt];
                    let (mut acc, mut alt) = (0i32, 1u32);
                    for j in 0..m {
                        acc += tile[j as usize % nn] * (a + j as i32);
                        alt = alt.wrapping_mul(3).wrapping_add(j & 5);
                    }
                    want.push(acc.wrapping_add(alt as i32).wrapping_add(tile[(tt + 1) % nn]));
                }
            }
            assert_eq!(run(&k, &[&b(&m)]), want, "{t:?} runtime_trips m={m}");
            assert_eq!(run(&s, &[&b(&m)]), want, "{t:?} runtime_trips m={m}, specialised");
        }

        let k = img.kernel("divergent_trips").expect("divergent_trips");
        for m in [0u32, 3, 20] {
            let mut want = Vec::new();
            for g in 0..groups as usize {
                for tt in 0..nn {
                    let mut acc = 0u32;
                    for j in 0..tt as u32 % 5 + m {
                        acc = acc.wrapping_mul(2).wrapping_add(group(g)[(tt + j as usize) % nn] as u32).wrapping_sub(j);
                    }
                    want.push(acc as i32);
                }
            }
            assert_eq!(run(&k, &[&b(&m)]), want, "{t:?} divergent_trips m={m}");
        }

        let k = img.kernel("loop_under_branch").expect("loop_under_branch");
        let s = k.specialise([n, 1, 1], false).expect("specialise");
        for (kk, m) in [(0u32, 7u32), (40, 7), (96, 30), (50, 0)] {
            let mut want = Vec::new();
            for g in 0..groups as usize {
                let tile = group(g);
                for tt in 0..nn {
                    let mut acc = 0i32;
                    if (tt as u32) < kk {
                        for j in 0..m {
                            acc += tile[j as usize % nn] * (j + tt as u32) as i32;
                        }
                    }
                    for j in 0..m {
                        if (tt as u32 + j).is_multiple_of(3) {
                            acc -= tile[(j as usize * 5) % nn] + j as i32;
                        }
                    }
                    want.push(acc);
                }
            }
            assert_eq!(run(&k, &[&b(&kk), &b(&m)]), want, "{t:?} loop_under_branch k={kk} m={m}");
            assert_eq!(run(&s, &[&b(&kk), &b(&m)]), want, "{t:?} loop_under_branch k={kk} m={m}, specialised");
        }

        let k = img.kernel("exit_values").expect("exit_values");
        let s = k.specialise([n, 1, 1], false).expect("specialise");
        for m in [0u32, 1, 2, 9, 100] {
            let mut want = Vec::new();
            for g in 0..groups as usize {
                let tile: Vec<u32> = group(g).iter().map(|&a| a as u32).collect();
                let mut accs = vec![0u32; nn];
                let mut rest = vec![0u32; nn];
                for tt in 0..nn {
                    let a = tile[tt];
                    let (mut acc, mut prev, mut f0, mut f1) = (0u32, 7u32, 1u32, 1u32);
                    for j in 0..m {
                        prev = acc;
                        acc = acc.wrapping_mul(3).wrapping_add(tile[(tt + j as usize) % nn]).wrapping_sub(j);
                        (f0, f1) = (f1, f0.wrapping_add(f1.wrapping_mul(a)));
                    }
                    accs[tt] = acc;
                    rest[tt] = prev.wrapping_mul(5).wrapping_add(f0 ^ f1);
                }
                want.extend((0..nn).map(|tt| accs[(tt + 1) % nn].wrapping_add(rest[tt]) as i32));
            }
            assert_eq!(run(&k, &[&b(&m)]), want, "{t:?} exit_values m={m}");
            assert_eq!(run(&s, &[&b(&m)]), want, "{t:?} exit_values m={m}, specialised");
        }

        // the group size as the trip count: clang's unrolled loop and its remainder (n % 8 != 0, n < 8)
        let k = img.kernel("group_trips").expect("group_trips");
        for (groups, n) in [(3u32, 96u32), (2, 37), (2, 5), (1, 1)] {
            let s = k.specialise([n, 1, 1], false).expect("specialise");
            let input: Vec<f32> = (0..groups * n * 2).map(|i| (i * 13 % 29) as f32 - 10.0).collect();
            for rounds in [0u32, 1, 3] {
                let mut want = Vec::new();
                for g in 0..groups as usize {
                    let grp = &input[g * 2 * n as usize..(g + 1) * 2 * n as usize];
                    for tt in 0..n as usize {
                        let (px, py) = (grp[2 * tt], grp[2 * tt + 1]);
                        let (mut ax, mut ay) = (0f32, 0f32);
                        for r in 0..rounds {
                            for j in 0..n as usize {
                                ax += (grp[2 * j] + r as f32 - px) * (j & 3) as f32;
                                ay += grp[2 * j + 1] - r as f32 - py;
                            }
                        }
                        want.extend([ax, ay]);
                    }
                }
                for (kk, what) in [(&k, ""), (&s, ", specialised")] {
                    let mut out = vec![0f32; (groups * n * 2) as usize];
                    let (inp, outp) = (b(&(input.as_ptr() as usize)), ptr(&mut out));
                    let args = pack(&kk.params, &[&inp, &outp, &b(&rounds)]);
                    launch(kk, [groups, 1, 1], [n, 1, 1], &args, 0);
                    assert_eq!(out, want, "{t:?} group_trips n={n} rounds={rounds}{what}");
                }
            }
        }
    }
}

/// Shared-memory atomics of every kind (add, sub, signed and unsigned min/max, and, or, xor, exchange,
/// compare-and-swap loops and winners, float add) made plain on the group's own memory, mixed with
/// atomics on global memory and on a pointer that is shared for some work-items and global for others.
#[test]
fn shared_memory_atomics() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("interchange", t) else {
            return;
        };
        let k = img.kernel("shared_atomics").expect("shared_atomics");
        for (groups, n, rounds) in [(3u32, 64u32, 4u32), (2, 33, 1), (1, 200, 0), (2, 256, 9)] {
            let input: Vec<i32> = (0..groups * n).map(|i| (i * 13 % 29) as i32 - 10).collect();
            let mut want = [0i32; 13];
            let mut want_glob = [0i32; 3];
            for g in 0..groups as usize {
                let v = &input[g * n as usize..(g + 1) * n as usize];
                let mut s = [0i32, 0, i32::MAX, 0, i32::MAX, 0, -1, 0, 0, 0, 0, 0];
                let mut fs = 0f32;
                for r in 0..rounds as i32 {
                    for (tt, &x) in v.iter().enumerate() {
                        s[0] = s[0].wrapping_add(x + if tt % 2 == 0 { 1 } else { 0 });
                        s[1] = s[1].wrapping_sub(x + r);
                        s[2] = s[2].min(x - r);
                        s[3] = s[3].max(x + r);
                        s[4] = (s[4] as u32).min((x + 100) as u32 + r as u32) as i32;
                        s[5] = (s[5] as u32).max((x + 100) as u32 + r as u32) as i32;
                        s[6] &= !(1 << ((tt as i32 + r) % 31));
                        s[7] |= 1 << ((x + r) & 15);
                        s[8] ^= x * (r + 1);
                        s[9] = 77;
                        s[10] += 1;
                        fs += (x % 4) as f32;
                        want_glob[0] += 1;
                        want_glob[2] += (tt % 2) as i32;
                    }
                    s[11] = r + 1;
                    want_glob[1] += 1;
                }
                for j in 0..12 {
                    want[j] = want[j].wrapping_add(s[j]);
                }
                want[12] += fs as i32;
            }
            let mut out = vec![0i32; 13];
            let mut glob = vec![0i32; 3];
            let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &ptr(&mut glob), &b(&rounds)]);
            launch(&k, [groups, 1, 1], [n, 1, 1], &args, 0);
            assert_eq!(out, want, "{t:?} shared atomics, {groups} groups of {n}, {rounds} rounds");
            assert_eq!(glob, want_glob, "{t:?} global atomics, {groups} groups of {n}, {rounds} rounds");
        }
    }
}

/// Guards on bit patterns of the work-item id (ffi-tests/kernels/run_guards.c) against results computed
/// here, generic and specialised to the group shape: forms that narrow ((t ^ j) > t, (t & m) ==/!= 0 with m
/// a power of two or 2^k - 1, t % q == 0) and the fallbacks (m neither, j = 0, divergent masks, group sizes
/// that are not powers of two, a flat-id guard on 2-D groups).
#[test]
fn run_guards_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("run_guards", t) else {
            return;
        };
        let both = |name: &str, shape: [u32; 3]| {
            let k = img.kernel(name).unwrap_or_else(|| panic!("{name}"));
            let s = k.specialise(shape, false).unwrap_or_else(|e| panic!("{name} {shape:?}: {e}"));
            [k, s]
        };
        const LEN: usize = 1024; // RG_LEN of run_guards.c
        for n in [256u32, 96, 1, 7] {
            let ks = both("run_guards", [n, 1, 1]);
            for (j, m, q, mask) in
                [(8u32, 4u32, 3u32, 3u32), (12, 5, 1, 0), (0, 0, 4, 7), (5, 16, 96, 6), (64, 64, 2, u32::MAX)]
            {
                let groups = 2u32;
                let input: Vec<u32> = (0..groups * n).map(|i| i * 13 % 37).collect();
                for k in &ks {
                    let mut out = vec![0u32; (groups * n) as usize];
                    let args = pack(
                        &k.params,
                        &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&j), &b(&m), &b(&q), &b(&mask)],
                    );
                    launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
                    for g in 0..groups as usize {
                        let nn = n as usize;
                        let s: Vec<u32> =
                            (0..LEN).map(|i| if i < nn { input[g * nn + i] } else { (i * 7 % 13) as u32 }).collect();
                        let mut r = vec![vec![0u32; LEN]; 6];
                        for tt in 0..nn {
                            let tu = tt as u32;
                            let p = (tu ^ j) as usize;
                            if p > tt {
                                r[0][tt] = s[tt].wrapping_add(2 * s[p]);
                                r[0][p] = s[tt].wrapping_sub(s[p]);
                            }
                        }
                        for tt in 0..nn {
                            let tu = tt as u32;
                            if tu & m == 0 {
                                r[1][tt] = s[(tu | m) as usize] * 3 + 1;
                            } else {
                                r[2][tt] = s[(tu ^ m) as usize].wrapping_sub(5);
                            }
                            if tu.is_multiple_of(q) {
                                r[3][tt] = s[tt] + 100;
                            }
                            if tu & mask == 0 && tu + 2 < n {
                                r[4][tt] = s[(tt + 1) % nn] * 2;
                            }
                            if tu & s[tt] == 0 {
                                r[5][tt] = s[tt] + 9;
                            }
                        }
                        for tt in 0..nn {
                            let e = (0..6).fold(0u32, |acc, x| acc.wrapping_mul(31).wrapping_add(r[x][tt]));
                            assert_eq!(
                                out[g * nn + tt],
                                e,
                                "{t:?} run_guards n={n} j={j} m={m} q={q} mask={mask} item {tt}"
                            );
                        }
                    }
                }
            }

            let groups = 3u32;
            let input: Vec<u32> = (0..groups * n).map(|i| i * 29 % 101).collect();
            for k in &both("xor_network", [n, 1, 1]) {
                let mut out = vec![0u32; (groups * n) as usize];
                let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
                launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
                for g in 0..groups as usize {
                    let nn = n as usize;
                    let mut s = input[g * nn..(g + 1) * nn].to_vec();
                    let mut kk = 2usize;
                    while kk <= 2 * nn {
                        let mut j = kk >> 1;
                        while j > 0 {
                            for tt in 0..nn {
                                let p = tt ^ j;
                                if p > tt && p < nn && (if tt & kk == 0 { s[tt] > s[p] } else { s[tt] < s[p] }) {
                                    s.swap(tt, p);
                                }
                            }
                            j >>= 1;
                        }
                        kk <<= 1;
                    }
                    assert_eq!(&out[g * nn..(g + 1) * nn], &s[..], "{t:?} xor_network n={n}");
                }
            }

            for k in &both("cond_stores", [n, 1, 1]) {
                let mut out = vec![0u32; (groups * n) as usize];
                let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
                launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
                for g in 0..groups as usize {
                    let nn = n as usize;
                    let s: Vec<u32> = (0..nn)
                        .map(|tt| {
                            let a = input[g * nn + tt];
                            let bb = input[g * nn + nn - 1 - tt];
                            if bb > a {
                                bb
                            } else if a & 1 != 0 {
                                a * 3
                            } else {
                                a
                            }
                        })
                        .collect();
                    let e: Vec<u32> = (0..nn).map(|tt| s[(tt + 1) % nn]).collect();
                    assert_eq!(&out[g * nn..(g + 1) * nn], &e[..], "{t:?} cond_stores n={n}");
                }
            }

            for j in [0u32, 1, 6, 32] {
                for k in &both("xor_guard_nobar", [n, 1, 1]) {
                    let mut out = vec![7u32; (groups * n) as usize];
                    let args = pack(&k.params, &[&ptr(&mut out), &b(&j)]);
                    launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
                    for (i, v) in out.iter().enumerate() {
                        let tu = i as u32 % n;
                        let e = if tu ^ j > tu { (tu ^ j) * 2 + 1 } else { 7 };
                        assert_eq!(*v, e, "{t:?} xor_guard_nobar n={n} j={j} item {i}");
                    }
                }
            }
            for m in [0u32, 2, 3, 5] {
                for k in &both("mask_guard_nobar", [n, 1, 1]) {
                    let mut out = vec![7u32; (groups * n) as usize];
                    let args = pack(&k.params, &[&ptr(&mut out), &b(&m)]);
                    launch(k, [groups, 1, 1], [n, 1, 1], &args, 0);
                    for (i, v) in out.iter().enumerate() {
                        let tu = i as u32 % n;
                        let e = if tu & m == 0 { tu + 5 } else { 7 };
                        assert_eq!(*v, e, "{t:?} mask_guard_nobar n={n} m={m} item {i}");
                    }
                }
            }
        }

        for (nx, ny) in [(7u32, 3u32), (16, 4), (1, 1), (32, 8)] {
            let ks = both("run_guards_2d", [nx, ny, 1]);
            for m in [0u32, 2, 3, 4] {
                let grid = [2u32, 2, 1];
                let nf = (nx * ny) as usize;
                for k in &ks {
                    let mut out = vec![0u32; 4 * nf];
                    let args = pack(&k.params, &[&ptr(&mut out), &b(&m)]);
                    launch(k, grid, [nx, ny, 1], &args, 0);
                    for g in 0..4usize {
                        for f in 0..nf {
                            let (tx, ty) = ((f % nx as usize) as u32, (f / nx as usize) as u32);
                            let a = if tx & m == 0 { tx * 100 + ty + 1 } else { 0 };
                            let f1 = ((f + 1) % nf) as u32;
                            let bb = if f1 & m != 0 { f1 + 7 } else { 0 };
                            assert_eq!(
                                out[g * nf + f],
                                a * 3 + bb,
                                "{t:?} run_guards_2d {nx}x{ny} m={m} group {g} item {f}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// ffi-tests/kernels/neighbours.c: each kernel against results computed here, generic and specialised,
/// for group sizes `sizes` (3 groups each). Returns the (kernel, target, instance, size) cases that differ.
fn neighbour_mismatches(sizes: &[u32]) -> Vec<String> {
    let mut bad = Vec::new();
    let groups = 3u32;
    for t in EXIT_TARGETS {
        let Some(img) = load_ok("neighbours", t) else {
            return bad;
        };
        for &n in sizes {
            let (nu, total) = (n as usize, (groups * n) as usize);
            let input: Vec<u32> = (0..total).map(|i| (i * 29 % 101) as u32).collect();
            let wrap = move |i: usize, d: usize| (i + d) % nu;
            // (kernel, k argument, expected output of one group from its input slice)
            type Model = Box<dyn Fn(&[u32]) -> Vec<u32>>;
            let cases: Vec<(&str, Option<u32>, Model)> = vec![
                (
                    "cond_stores",
                    None,
                    Box::new(move |g: &[u32]| {
                        let s: Vec<u32> = (0..nu)
                            .map(|i| {
                                let (a, b) = (g[i], g[wrap(i, 1)]);
                                if b > a {
                                    b
                                } else if a & 1 == 1 {
                                    a * 3
                                } else {
                                    a
                                }
                            })
                            .collect();
                        (0..nu).map(|i| s[wrap(i, 1)]).collect()
                    }),
                ),
                (
                    "ring",
                    None,
                    Box::new(move |g: &[u32]| {
                        let s: Vec<u32> = (0..nu).map(|i| g[wrap(i, nu - 1)] + 2 * g[wrap(i, 1)]).collect();
                        (0..nu).map(|i| s[wrap(i, 1)] * 5 + s[wrap(i, nu - 1)]).collect()
                    }),
                ),
                ("shift", Some(1), Box::new(move |g: &[u32]| (0..nu).map(|i| g[wrap(i, 2)]).collect())),
                ("shift", Some(n - 1), Box::new(move |g: &[u32]| (0..nu).map(|i| g[wrap(i, 2 * (nu - 1))]).collect())),
            ];
            for (name, k, model) in &cases {
                let expected: Vec<u32> = input.chunks(nu).flat_map(model).collect();
                let generic = img.kernel(name).expect("kernel");
                let special = generic.specialise([n, 1, 1], false).expect("specialise");
                for (inst, kern) in [("generic", &generic), ("specialised", &special)] {
                    let mut out = vec![0u32; total];
                    let (pin, pout) = (b(&(input.as_ptr() as usize)), ptr(&mut out));
                    let args = match k {
                        Some(k) => pack(&kern.params, &[&pin, &pout, &b(k)]),
                        None => pack(&kern.params, &[&pin, &pout]),
                    };
                    launch(kern, [groups, 1, 1], [n, 1, 1], &args, 0);
                    let wrong: Vec<usize> = (0..total).filter(|&i| out[i] != expected[i]).collect();
                    if !wrong.is_empty() {
                        bad.push(format!("{name}(k={k:?}) {t:?} {inst} {n}x1x1: wrong at {wrong:?}"));
                    }
                }
            }
        }
    }
    bad
}

#[test]
fn neighbour_indices_wrap_around() {
    let _g = shared();
    let bad = neighbour_mismatches(&[100, 192]);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Power-of-two groups, specialised: LLVM 22.1's loop vectoriser takes `base + (t + 1) % n` (a mask once n
/// is a constant) as consecutive in t and loads one vector past the group for the last work-items; plain
/// host C at clang-22 -O2 is miscompiled the same way (`out[i] = in[(g << 8) + ((i + 1) & 255)]` for
/// i < 256 reads in[(g << 8) + 256] at i = 255). A specialisation therefore divides by the group size as
/// loaded at run time (workarounds/runtime_divisors.cpp, `ol-runtime-divisors`); this test fails without that.
#[test]
fn neighbour_indices_wrap_around_power_of_two_groups() {
    let _g = shared();
    let bad = neighbour_mismatches(&[64, 256]);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// ffi-tests/kernels/eq_guards.c: equality guards on the x index (first, last, a middle x, the group's
/// ends, outside the range; `!=`, the local id, id + 2) and the y index split the x and y loops, generic
/// and specialised, on 1-D and 2-D groups, with and without a bounds check that cuts the range; with
/// 64-bit (size_t) indices, and in a region loop after a barrier.
#[test]
fn equality_guards_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("eq_guards", t) else {
            return;
        };
        for (nx, ny) in [(16u32, 16u32), (7, 3), (1, 1), (256, 1), (7, 1)] {
            let k = img.kernel("eq_guards").expect("eq_guards");
            let s = k.specialise([nx, ny, 1], false).unwrap_or_else(|e| panic!("eq_guards {nx}x{ny}: {e}"));
            let grid = [3u32, 2, 1];
            let row = grid[0] * nx;
            let rows = grid[1] * ny;
            for w in [row, row - 1, 1, 0, nx + 2] {
                for c in [0u32, nx / 2, nx - 1, nx, row / 2 + 1, w.wrapping_sub(1), row + 10, u32::MAX, 2] {
                    for kk in [&k, &s] {
                        let mut out = vec![9u32; (row * rows) as usize];
                        let args = pack(&kk.params, &[&ptr(&mut out), &b(&w), &b(&c)]);
                        launch(kk, grid, [nx, ny, 1], &args, 0);
                        for y in 0..rows {
                            for x in 0..row {
                                let mut e = 9u32;
                                if x < w {
                                    e = x * 3 + 1;
                                    if x == 0 || x == w.wrapping_sub(1) {
                                        e += 1000 + 9;
                                    }
                                    if x != c {
                                        e += 20000;
                                    }
                                    if y == c {
                                        e += 300000;
                                    }
                                    if x % nx == c {
                                        e += 4000000;
                                    }
                                    if x + 2 == c {
                                        e += 50000000;
                                    }
                                }
                                assert_eq!(
                                    out[(y * row + x) as usize],
                                    e,
                                    "{t:?} eq_guards {nx}x{ny} w={w} c={c} x={x} y={y}"
                                );
                            }
                        }
                    }
                }
            }
            let k64 = img.kernel("eq_guards64").expect("eq_guards64");
            let s64 = k64.specialise([nx, ny, 1], false).unwrap_or_else(|e| panic!("eq_guards64 {nx}x{ny}: {e}"));
            let (row64, wide) = (u64::from(row), 1u64 << 33);
            for w in [row64, row64 - 1, 1, 0, wide] {
                for c in [0u64, u64::from(nx / 2), row64 - 1, row64, wide + 1, w.wrapping_sub(1), u64::MAX, 2, 1] {
                    for kk in [&k64, &s64] {
                        let mut out = vec![9u32; (row * rows) as usize];
                        let args = pack(&kk.params, &[&ptr(&mut out), &b(&w), &b(&c)]);
                        launch(kk, grid, [nx, ny, 1], &args, 0);
                        for y in 0..u64::from(rows) {
                            for x in 0..row64 {
                                let mut e = 9u32;
                                if x < w {
                                    e = x as u32 * 3 + 1;
                                    e += if x == 0 || x == w.wrapping_sub(1) { 1000 + 9 } else { 0 };
                                    e += if x != c { 20000 } else { 0 };
                                    e += if y == c { 300000 } else { 0 };
                                    e += if x.wrapping_add(2) == c { 50000000 + 9 } else { 0 };
                                }
                                assert_eq!(
                                    out[(y * row64 + x) as usize],
                                    e,
                                    "{t:?} eq_guards64 {nx}x{ny} w={w} c={c} x={x} y={y}"
                                );
                            }
                        }
                    }
                }
            }
            let kb = img.kernel("eq_guards_bar").expect("eq_guards_bar");
            let sb = kb.specialise([nx, ny, 1], false).unwrap_or_else(|e| panic!("eq_guards_bar {nx}x{ny}: {e}"));
            let input: Vec<u32> = (0..row * rows).map(|i| i * 7 % 23).collect();
            for w in [row, row - 1, 1, 0, nx + 2] {
                for c in [0u32, nx / 2, nx - 1, nx, row / 2 + 1, w.wrapping_sub(1), row + 10, u32::MAX, 1] {
                    for kk in [&kb, &sb] {
                        let mut out = vec![9u32; (row * rows) as usize];
                        let args = pack(&kk.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&w), &b(&c)]);
                        launch(kk, grid, [nx, ny, 1], &args, 0);
                        for y in 0..rows {
                            for x in 0..row {
                                let tx = x % nx;
                                let mut e = input[(y * row + x) as usize];
                                let own = input[(y * row + x) as usize];
                                e += if tx == 0 || tx == nx - 1 { 1000 + own } else { 0 };
                                e += if x == c { 20000 } else { 0 };
                                e += if x.wrapping_add(2) == c { 300000 } else { 0 };
                                e += if x == w.wrapping_sub(1) { 4000000 + own } else { 0 };
                                assert_eq!(
                                    out[(y * row + x) as usize],
                                    e,
                                    "{t:?} eq_guards_bar {nx}x{ny} w={w} c={c} x={x} y={y}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// ffi-tests/kernels/flat_guards.c: guards on the flat id f = tx + ty * nx + tz * nx * ny of 2-D and 3-D
/// groups (f < k, f >= k, (f ^ j) > f, (f & m) == 0, f % q == 0, two tree reductions, guarded pieces one
/// after another, and a kernel without barriers) narrow each row's x loop; against results computed here, generic and specialised, with
/// bounds outside the range, zero and the whole range, and 1-D groups.
#[test]
fn flat_id_guards_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("flat_guards", t) else {
            return;
        };
        for shape in [[16u32, 16, 1], [7, 3, 1], [3, 5, 2], [1, 1, 1], [256, 1, 1]] {
            let n = shape.iter().product::<u32>();
            let nu = n as usize;
            let grid = [2u32, 2, 1];
            let groups = 4usize;
            let both = |name: &str| {
                let k = img.kernel(name).unwrap_or_else(|| panic!("{name}"));
                let s = k.specialise(shape, false).unwrap_or_else(|e| panic!("{name} {shape:?}: {e}"));
                [k, s]
            };
            let input: Vec<u32> = (0..groups * nu).map(|i| (i * 13 % 37) as u32).collect();
            for k in &both("flat_reduce") {
                let mut out = vec![0u32; 2 * groups];
                let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
                launch(k, grid, shape, &args, 0);
                for g in 0..groups {
                    let v = &input[g * nu..(g + 1) * nu];
                    let e0 = v.iter().fold(0u32, |a, &x| a.wrapping_add(x));
                    let e1 = v.iter().fold(0u32, |a, &x| a.wrapping_add(x * 3 + 1));
                    assert_eq!((out[2 * g], out[2 * g + 1]), (e0, e1), "{t:?} flat_reduce {shape:?} group {g}");
                }
            }
            for k in &both("flat_tree_sum") {
                let mut out = vec![0u32; groups];
                let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out)]);
                launch(k, grid, shape, &args, 0);
                for g in 0..groups {
                    let mut s = input[g * nu..(g + 1) * nu].to_vec();
                    let mut kk = nu / 2;
                    while kk > 0 {
                        for f in 0..kk {
                            s[f] = s[f].wrapping_add(s[f + kk]);
                        }
                        kk /= 2;
                    }
                    assert_eq!(out[g], s[0], "{t:?} flat_tree_sum {shape:?} group {g}");
                }
            }
            let ks = both("flat_guards");
            for (kk, j, m, q) in [
                (n / 2, 4u32, 2u32, 3u32),
                (0, 0, 0, 1),
                (n, 1, 1, 2),
                (n + 5, 5, 3, 5),
                (u32::MAX, 16, 6, 7),
                (1, 64, 4, n.max(1)),
                (n.saturating_sub(1), 8, 7, 4),
            ] {
                for k in &ks {
                    let mut out = vec![0u32; groups * nu];
                    let args = pack(&k.params, &[&ptr(&mut out), &b(&kk), &b(&j), &b(&m), &b(&q)]);
                    launch(k, grid, shape, &args, 0);
                    for f in 0..n {
                        let mut r = [0u32; 5];
                        if f < kk {
                            r[0] = f + 1;
                        } else {
                            r[1] = f * 2 + 3;
                        }
                        if f ^ j > f {
                            r[2] += f + 5;
                        }
                        if f ^ j < f {
                            r[2] += 7;
                        }
                        if f & m == 0 {
                            r[3] = f * 5 + 1;
                        }
                        if f % q == 0 {
                            r[4] = f + 9;
                        }
                        let e = r.iter().fold(0u32, |acc, &x| acc.wrapping_mul(31).wrapping_add(x));
                        for g in 0..groups {
                            assert_eq!(
                                out[g * nu + f as usize],
                                e,
                                "{t:?} flat_guards {shape:?} k={kk} j={j} m={m} q={q} group {g} item {f}"
                            );
                        }
                    }
                }
            }
            for k in &both("flat_pieces") {
                for (kk, j) in
                    [(0u32, 0u32), (1, 1), (n / 2, 3), (n, n), (n + 5, 2), (3, n.saturating_sub(1)), (n - 1, 0)]
                {
                    let mut out = vec![0u32; groups * nu];
                    let args = pack(&k.params, &[&ptr(&mut out), &b(&kk), &b(&j)]);
                    launch(k, grid, shape, &args, 0);
                    for (i, v) in out.iter().enumerate() {
                        let f = (i % nu) as u32;
                        let w = if f < kk { f * 2 + 1 } else { 5 };
                        let r = [
                            if f < kk { f * 7 + 1 } else { 0 },
                            if f < j { f + 3 } else { 0 },
                            if f >= kk && f < kk + 3 { w + f } else { 0 },
                            if f > j + 2 { w } else { 0 },
                        ];
                        let e = r.iter().fold(0u32, |acc, &x| acc.wrapping_mul(31).wrapping_add(x));
                        assert_eq!(*v, e, "{t:?} flat_pieces {shape:?} k={kk} j={j} item {i}");
                    }
                }
            }
            for k in &both("flat_guards_nobar") {
                for (kk, m) in [(n / 2, 0u32), (0, 0), (n, 2), (n + 3, 3), (u32::MAX, 1), (5, 4)] {
                    let mut out = vec![7u32; groups * nu];
                    let args = pack(&k.params, &[&ptr(&mut out), &b(&kk), &b(&m)]);
                    launch(k, grid, shape, &args, 0);
                    for (i, v) in out.iter().enumerate() {
                        let f = (i % nu) as u32;
                        let e = if f < kk && f & m == 0 { f * 3 + 1 } else { 7 };
                        assert_eq!(*v, e, "{t:?} flat_guards_nobar {shape:?} k={kk} m={m} item {i}");
                    }
                }
            }
        }
    }
}

/// ffi-tests/kernels/swaps.c: conditional swaps of two shared elements (the stores made selects, the
/// decision flattened, runs of 1, 2 or 4 ids in constant copies) against a sequential model, generic and
/// specialised: conditions false everywhere (sorted input, k = 0), true everywhere (reversed), mixed;
/// partners that are the work-item itself (j = 0 in swap_self); partners out of the power-of-two run
/// pattern (j = 3, 5, 6: runs kept with t ^ j); group sizes 256, 64, 8, 2, 1 and 12 (whole runs for
/// some j only, so both the copies and the original run loop are taken).
#[test]
fn conditional_swaps_match_the_host() {
    let _g = shared();
    const LEN: usize = 1024; // SW_LEN of swaps.c
    let groups = 2usize;
    let inputs: [Vec<f32>; 3] = [
        (0..groups * LEN).map(|i| (i % LEN) as f32).collect(),
        (0..groups * LEN).map(|i| (LEN - i % LEN) as f32).collect(),
        (0..groups * LEN).map(|i| (i * 37 % 101) as f32).collect(),
    ];
    // one phase on one group's elements, the work-items in order (their pairs are disjoint)
    let phase = |s: &mut [f32], n: usize, j: usize, k: usize, self_ok: bool| {
        for t in 0..n {
            let p = t ^ j;
            if p > t || (self_ok && p == t) {
                let (a, b) = (s[t], s[p]);
                let up = t & k == 0;
                let c = if self_ok {
                    if up { a >= b } else { a < b }
                } else if up {
                    a > b
                } else {
                    a < b
                };
                if c {
                    s[t] = if self_ok { b + 1.0 } else { b };
                    s[p] = if self_ok { a + 2.0 } else { a };
                }
            }
        }
    };
    let same = |got: &[f32], want: &[f32], what: &str| {
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            panic!("{what}: element {i} is {}, expected {}", got[i], want[i]);
        }
    };
    for t in TARGETS {
        let Some(img) = load_ok("swaps", t) else {
            return;
        };
        for n in [256u32, 64, 8, 2, 1, 12] {
            let nn = n as usize;
            let both = |name: &str| {
                let k = img.kernel(name).unwrap_or_else(|| panic!("{name}"));
                let s = k.specialise([n, 1, 1], false).unwrap_or_else(|e| panic!("{name} {n}: {e}"));
                [k, s]
            };
            let run = |k: &KernelEntry, input: &[f32], x: u32, kk: u32| {
                let mut out = vec![-1f32; groups * LEN];
                let args = pack(&k.params, &[&b(&(input.as_ptr() as usize)), &ptr(&mut out), &b(&x), &b(&kk)]);
                launch(k, [groups as u32, 1, 1], [n, 1, 1], &args, 0);
                out
            };
            let (phases, merges, selfs) = (both("swap_phase"), both("swap_merge"), both("swap_self"));
            for (which, input) in inputs.iter().enumerate() {
                for kk in [0u32, 2, 8] {
                    for j in [0u32, 1, 2, 3, 4, 5, 6, 8, 32] {
                        let mut e = input.clone();
                        let mut es = input.clone();
                        for g in 0..groups {
                            phase(&mut e[g * LEN..(g + 1) * LEN], nn, j as usize, kk as usize, false);
                            phase(&mut es[g * LEN..(g + 1) * LEN], nn, j as usize, kk as usize, true);
                        }
                        for (spec, k) in phases.iter().enumerate() {
                            same(
                                &run(k, input, j, kk),
                                &e,
                                &format!("{t:?} swap_phase n={n} j={j} k={kk} input {which} spec {spec}"),
                            );
                        }
                        for (spec, k) in selfs.iter().enumerate() {
                            same(
                                &run(k, input, j, kk),
                                &es,
                                &format!("{t:?} swap_self n={n} j={j} k={kk} input {which} spec {spec}"),
                            );
                        }
                    }
                    for sh in [0u32, 1, 2, 3, 5, 8] {
                        let mut e = input.clone();
                        for g in 0..groups {
                            let mut j = 1usize << sh;
                            while j > 0 {
                                phase(&mut e[g * LEN..(g + 1) * LEN], nn, j, kk as usize, false);
                                j >>= 1;
                            }
                        }
                        for (spec, k) in merges.iter().enumerate() {
                            same(
                                &run(k, input, sh, kk),
                                &e,
                                &format!("{t:?} swap_merge n={n} sh={sh} k={kk} input {which} spec {spec}"),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The host's scalar libm, the reference for the vectorised math (the names of ffi-tests/kernels/vmath.c).
mod libm {
    unsafe extern "C" {
        pub fn expf(x: f32) -> f32;
        pub fn exp2f(x: f32) -> f32;
        pub fn exp10f(x: f32) -> f32;
        pub fn expm1f(x: f32) -> f32;
        pub fn logf(x: f32) -> f32;
        pub fn log2f(x: f32) -> f32;
        pub fn log10f(x: f32) -> f32;
        pub fn log1pf(x: f32) -> f32;
        pub fn sinf(x: f32) -> f32;
        pub fn cosf(x: f32) -> f32;
        pub fn tanf(x: f32) -> f32;
        pub fn asinf(x: f32) -> f32;
        pub fn acosf(x: f32) -> f32;
        pub fn atanf(x: f32) -> f32;
        pub fn sinhf(x: f32) -> f32;
        pub fn coshf(x: f32) -> f32;
        pub fn tanhf(x: f32) -> f32;
        pub fn asinhf(x: f32) -> f32;
        pub fn acoshf(x: f32) -> f32;
        pub fn atanhf(x: f32) -> f32;
        pub fn cbrtf(x: f32) -> f32;
        pub fn erff(x: f32) -> f32;
        pub fn erfcf(x: f32) -> f32;
        pub fn sqrtf(x: f32) -> f32;
        pub fn powf(x: f32, y: f32) -> f32;
        pub fn atan2f(x: f32, y: f32) -> f32;
        pub fn hypotf(x: f32, y: f32) -> f32;
        pub fn exp(x: f64) -> f64;
        pub fn exp2(x: f64) -> f64;
        pub fn exp10(x: f64) -> f64;
        pub fn expm1(x: f64) -> f64;
        pub fn log(x: f64) -> f64;
        pub fn log2(x: f64) -> f64;
        pub fn log10(x: f64) -> f64;
        pub fn log1p(x: f64) -> f64;
        pub fn sin(x: f64) -> f64;
        pub fn cos(x: f64) -> f64;
        pub fn tan(x: f64) -> f64;
        pub fn asin(x: f64) -> f64;
        pub fn acos(x: f64) -> f64;
        pub fn atan(x: f64) -> f64;
        pub fn sinh(x: f64) -> f64;
        pub fn cosh(x: f64) -> f64;
        pub fn tanh(x: f64) -> f64;
        pub fn asinh(x: f64) -> f64;
        pub fn acosh(x: f64) -> f64;
        pub fn atanh(x: f64) -> f64;
        pub fn cbrt(x: f64) -> f64;
        pub fn erf(x: f64) -> f64;
        pub fn erfc(x: f64) -> f64;
        pub fn sqrt(x: f64) -> f64;
        pub fn pow(x: f64, y: f64) -> f64;
        pub fn atan2(x: f64, y: f64) -> f64;
        pub fn hypot(x: f64, y: f64) -> f64;
    }
}

/// Distance in units in the last place (0 for equal values, both NaN or the same infinity).
fn ulps(a: f64, b: f64, float: bool) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let ord = |x: f64| -> i128 {
        if float {
            let v = (x as f32).to_bits() as i32;
            i128::from(if v < 0 { i32::MIN - v } else { v })
        } else {
            let v = x.to_bits() as i64;
            i128::from(if v < 0 { i64::MIN - v } else { v })
        }
    };
    (ord(a) - ord(b)).unsigned_abs().min(u128::from(u64::MAX)) as u64
}

/// Math calls in kernels are vectorised through glibc's libmvec (src/jit/llvm/math.rs): every function's
/// results over many inputs of its domain are within glibc's documented bound for its vector functions
/// (4 ulp) of the host's scalar libm, on nvptx64 and amdgcn bitcode, and the compiled code does call
/// the vector variants (unless OFFLOAD_RS_JIT_VECTOR_MATH=0). Prints the largest error per function.
#[test]
fn vector_math_stays_within_glibc_bounds() {
    let _g = shared();
    type F1 = unsafe extern "C" fn(f32) -> f32;
    type F2 = unsafe extern "C" fn(f32, f32) -> f32;
    type D1 = unsafe extern "C" fn(f64) -> f64;
    type D2 = unsafe extern "C" fn(f64, f64) -> f64;
    enum Ref {
        Unary(F1, D1),
        Binary(F2, D2),
    }
    use libm::*;
    /// name, reference, domain of a, domain of b (binary), log-spaced a
    type Case = (&'static str, Ref, (f64, f64), (f64, f64), bool);
    #[rustfmt::skip]
    let fns: Vec<Case> = vec![
        ("exp", Ref::Unary(expf, exp), (-80.0, 80.0), (0.0, 0.0), false),
        ("exp2", Ref::Unary(exp2f, exp2), (-120.0, 120.0), (0.0, 0.0), false),
        ("exp10", Ref::Unary(exp10f, exp10), (-35.0, 35.0), (0.0, 0.0), false),
        ("expm1", Ref::Unary(expm1f, expm1), (-80.0, 80.0), (0.0, 0.0), false),
        ("log", Ref::Unary(logf, log), (1e-30, 1e30), (0.0, 0.0), true),
        ("log2", Ref::Unary(log2f, log2), (1e-30, 1e30), (0.0, 0.0), true),
        ("log10", Ref::Unary(log10f, log10), (1e-30, 1e30), (0.0, 0.0), true),
        ("log1p", Ref::Unary(log1pf, log1p), (-0.999, 1e6), (0.0, 0.0), false),
        ("sin", Ref::Unary(sinf, sin), (-1000.0, 1000.0), (0.0, 0.0), false),
        ("cos", Ref::Unary(cosf, cos), (-1000.0, 1000.0), (0.0, 0.0), false),
        ("tan", Ref::Unary(tanf, tan), (-100.0, 100.0), (0.0, 0.0), false),
        ("asin", Ref::Unary(asinf, asin), (-1.0, 1.0), (0.0, 0.0), false),
        ("acos", Ref::Unary(acosf, acos), (-1.0, 1.0), (0.0, 0.0), false),
        ("atan", Ref::Unary(atanf, atan), (-1e6, 1e6), (0.0, 0.0), false),
        ("sinh", Ref::Unary(sinhf, sinh), (-80.0, 80.0), (0.0, 0.0), false),
        ("cosh", Ref::Unary(coshf, cosh), (-80.0, 80.0), (0.0, 0.0), false),
        ("tanh", Ref::Unary(tanhf, tanh), (-20.0, 20.0), (0.0, 0.0), false),
        ("asinh", Ref::Unary(asinhf, asinh), (-1e6, 1e6), (0.0, 0.0), false),
        ("acosh", Ref::Unary(acoshf, acosh), (1.0, 1e6), (0.0, 0.0), false),
        ("atanh", Ref::Unary(atanhf, atanh), (-0.999, 0.999), (0.0, 0.0), false),
        ("cbrt", Ref::Unary(cbrtf, cbrt), (-1e6, 1e6), (0.0, 0.0), false),
        ("erf", Ref::Unary(erff, erf), (-5.0, 5.0), (0.0, 0.0), false),
        ("erfc", Ref::Unary(erfcf, erfc), (-5.0, 9.0), (0.0, 0.0), false),
        ("sqrt", Ref::Unary(sqrtf, sqrt), (0.0, 1e30), (0.0, 0.0), false),
        ("pow", Ref::Binary(powf, pow), (1e-3, 100.0), (-10.0, 10.0), false),
        ("atan2", Ref::Binary(atan2f, atan2), (-100.0, 100.0), (-100.0, 100.0), false),
        ("hypot", Ref::Binary(hypotf, hypot), (-1e6, 1e6), (-1e6, 1e6), false),
    ];
    // 8190 inputs: 31 full groups of 256 and a partial one
    let n = 8190usize;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut inputs = |(lo, hi): (f64, f64), log_spaced: bool| -> Vec<f64> {
        (0..n)
            .map(|_| if log_spaced { (lo.ln() + next() * (hi.ln() - lo.ln())).exp() } else { lo + next() * (hi - lo) })
            .collect()
    };
    let mut report = Vec::new();
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(bc) = bitcode("vmath", t) else {
            return;
        };
        let target = service::cpu_target().unwrap();
        if target.vector_math {
            // (the launch-time specialisation: the generic build of a specialisable kernel is the quick one)
            let spec = compile::Spec { kernel: "vm_expf".into(), group_size: [256, 1, 1], quick: false };
            let (obj, _) = service::compile_cpu(&bc, target, 3, false, false, Some(&spec)).expect("compile vmath");
            assert!(obj.windows(4).any(|w| w == b"_ZGV"), "{t:?}: no call to a libmvec function in the compiled code");
        }
        let img = load(&bc).expect("load vmath");
        for (name, r, da, db, log_spaced) in &fns {
            let (a, bb) = (inputs(*da, *log_spaced), inputs(*db, false));
            for float in [true, false] {
                let kname = if float { format!("vm_{name}f") } else { format!("vm_{name}") };
                let k = img.kernel(&kname).unwrap_or_else(|| panic!("{kname}"));
                // the code a launch with 256-wide groups runs: the O3 specialisation, vectorised
                let k = k.specialise([256, 1, 1], false).expect("specialise");
                let got: Vec<f64>;
                if float {
                    let (a32, b32): (Vec<f32>, Vec<f32>) =
                        (a.iter().map(|&x| x as f32).collect(), bb.iter().map(|&x| x as f32).collect());
                    let mut o = vec![0f32; n];
                    let args = pack(
                        &k.params,
                        &[&b(&(a32.as_ptr() as usize)), &b(&(b32.as_ptr() as usize)), &ptr(&mut o), &b(&(n as u32))],
                    );
                    launch(&k, [n.div_ceil(256) as u32, 1, 1], [256, 1, 1], &args, 0);
                    got = o.iter().map(|&x| f64::from(x)).collect();
                    let mut worst = 0u64;
                    for i in 0..n {
                        // SAFETY: libm functions of one or two floats.
                        let want = unsafe {
                            match r {
                                Ref::Unary(f, _) => f(a32[i]),
                                Ref::Binary(f, _) => f(a32[i], b32[i]),
                            }
                        };
                        let u = ulps(got[i], f64::from(want), true);
                        assert!(
                            u <= 4,
                            "{t:?} {kname}({}, {}) = {} but libm gives {want}: {u} ulp",
                            a32[i],
                            b32[i],
                            got[i]
                        );
                        worst = worst.max(u);
                    }
                    report.push(format!("{kname} {worst}"));
                } else {
                    let mut o = vec![0f64; n];
                    let args = pack(
                        &k.params,
                        &[&b(&(a.as_ptr() as usize)), &b(&(bb.as_ptr() as usize)), &ptr(&mut o), &b(&(n as u32))],
                    );
                    launch(&k, [n.div_ceil(256) as u32, 1, 1], [256, 1, 1], &args, 0);
                    got = o;
                    let mut worst = 0u64;
                    for i in 0..n {
                        // SAFETY: libm functions of one or two doubles.
                        let want = unsafe {
                            match r {
                                Ref::Unary(_, f) => f(a[i]),
                                Ref::Binary(_, f) => f(a[i], bb[i]),
                            }
                        };
                        let u = ulps(got[i], want, false);
                        assert!(
                            u <= 4,
                            "{t:?} {kname}({}, {}) = {} but libm gives {want}: {u} ulp",
                            a[i],
                            bb[i],
                            got[i]
                        );
                        worst = worst.max(u);
                    }
                    report.push(format!("{kname} {worst}"));
                }
            }
        }
    }
    eprintln!("largest error in ulp (nvptx64, then amdgcn): {}", report.join(", "));
}

/// What the lowering's transforms did to each kernel of `bc` (src/jit/llvm/lowering.rs), compiled with
/// `lowering` (`OFFLOAD_RS_JIT_LOWERING`'s syntax), generic or specialised for `spec`.
fn transform_stats(bc: &[u8], lowering: &str, spec: Option<(&str, [u32; 3])>) -> Vec<(String, super::lowering::Stats)> {
    let mut target = service::cpu_target().unwrap().clone();
    target.lowering = lowering.to_string();
    let spec = spec.map(|(k, g)| crate::jit::compile::Spec { kernel: k.to_string(), group_size: g, quick: false });
    let (r, stats) = super::lowering::recorded(|| {
        super::compile::compile_in_process(bc, &target, 3, false, false, false, spec.as_ref())
    });
    r.unwrap_or_else(|e| panic!("compile with OFFLOAD_RS_JIT_LOWERING={lowering:?}: {e}"));
    stats
}

/// How many times `transform` fired on kernel `k` of `bc`, generic or specialised for `spec`.
fn times_fired(bc: &[u8], k: &str, spec: Option<[u32; 3]>, transform: &str) -> u32 {
    transform_stats(bc, "", spec.map(|g| (k, g))).iter().filter(|(n, _)| n == k).map(|(_, s)| s.of(transform)).sum()
}

/// The header of [`TRANSFORM_CASES`]' sources.
const H: &str = "#include <gpuintrin.h>\n#include <stdint.h>\n#define T __gpu_thread_id_x()\n#define N __gpu_num_threads_x()\n#define G (__gpu_block_id_x() * N + T)\n";
// a uniform barrier and nothing else; a tree reduction (`t % 2d == 0`), one by halves (`t < d`); a
// bitonic stage's compare-and-swap; a loop over tiles of shared memory
const UNIFORM: &str = "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); o[G] = s[N - 1 - T]; }";
const TREE: &str = "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t d = 1; d < N; d *= 2) { if (T % (2 * d) == 0) s[T] += s[T + d]; __gpu_sync_threads(); } if (T == 0) o[__gpu_block_id_x()] = s[0]; }";
const HALVES: &str = "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t d = N / 2; d > 0; d >>= 1) { if (T < d) s[T] += s[T + d]; __gpu_sync_threads(); } if (T == 0) o[__gpu_block_id_x()] = s[0]; }";
const SWAPS: &str = "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t j = N / 2; j > 0; j >>= 1) { uint32_t p = T ^ j; if (p > T) { float a = s[T], b = s[p]; if (a > b) { s[T] = b; s[p] = a; } } __gpu_sync_threads(); } o[G] = s[T]; }";
const TILES: &str = "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; float acc = 0.0f; for (uint32_t b = 0; b < n; b += 256) { s[T] = in[b + T]; __gpu_sync_threads(); for (uint32_t j = 0; j < 256; ++j) acc += s[j] * (float)(j + T); __gpu_sync_threads(); } o[G] = acc; }";
// a block-stride loop (every work-item from its id, by the group size) between barriers
const STRIDED: &str = "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; float m = 0.0f; for (uint32_t j = T; j < n; j += N) m += in[__gpu_block_id_x() * n + j]; s[T] = m; __gpu_sync_threads(); o[G] = s[N - 1 - T]; }";
// a group filling a 2-D tile (12 columns) of shared memory from a flat index, then a barrier
const COOP: &str = "__gpu_kernel void k(float *o, const float *in, uint32_t w) { static __gpu_local float s[10][12]; for (uint32_t i = T; i < 120; i += N) s[i / 12][i % 12] = i % 12 < w ? in[(i / 12) * w + i % 12] : 0.0f; __gpu_sync_threads(); o[G] = s[T % 10][T % 12]; }";
// xor-butterfly shuffles in each warp, then in the first warp only (`T < w`: a branch that differs
// between warps, not between a warp's lanes)
const WSHFL: &str = "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float p[64]; uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(); float v = in[G]; for (uint32_t d = w / 2; d > 0; d >>= 1) v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ d, v, w); if (l == 0) p[T / w] = v; __gpu_sync_threads(); if (T < w) { float s = T < N / w ? p[T] : 0.0f; for (uint32_t d = w / 2; d > 0; d >>= 1) s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ d, s, w); if (T == 0) o[__gpu_block_id_x()] = s; } }";
// a warp's inclusive scan by shuffles from `d` lanes below
const WSCAN: &str = "__gpu_kernel void k(float *o, const float *in) { uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(); float v = in[G]; for (uint32_t d = 1; d < w; d <<= 1) { float u = __gpu_shuffle_idx_f32(__gpu_lane_mask(), l - d, v, w); if (l >= d) v += u; } o[G] = v; }";
// an escape-time loop: a different number of iterations per work-item, no memory access in it
// a row per warp, its lanes striding over it, then a butterfly
const WROW: &str = "__gpu_kernel void k(float *o, const float *in, uint32_t n) { uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(), row = G / w; float s = 0.0f; for (uint32_t j = l; j < n; j += w) s += in[row * n + j]; for (uint32_t d = w / 2; d > 0; d >>= 1) s += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ d, s, w); o[G] = s; }";
const ESCAPE: &str = "__gpu_kernel void k(uint32_t *o, const float *c) { float x = c[G], z = 0.0f; uint32_t i = 0; while (i < 100 && z < 4.0f) { z = z * z + x; i++; } o[G] = i; }";
/// A case of [`TRANSFORM_CASES`]: (transform, fires, kernel source, specialised at this group size).
type Case = (&'static str, bool, &'static str, Option<[u32; 3]>);
/// The fire/no-fire cases of the lowering's transforms: (transform, fires, kernel source (kernel `k`, after
/// [`H`]), specialised at this group size). `each_transform_fires_where_it_is_meant_to_and_not_elsewhere`
/// runs them all; `write_lowering_ir_tests` makes the IR tests of tests/ir/lowering/ from each transform's
/// first of each kind.
const TRANSFORM_CASES: &[Case] = &[
    (
        "ol-narrow-guards",
        true,
        "__gpu_kernel void k(float *y, const float *x, uint32_t n) { if (G < n) y[G] += 2.0f * x[G]; }",
        None,
    ),
    (
        "ol-narrow-guards",
        false,
        "__gpu_kernel void k(float *y, const uint32_t *x) { if (G < x[G]) y[G] = 1.0f; }",
        None,
    ),
    (
        // guarded pieces one after another: the first work-item's store, then `t < 8`
        "ol-narrow-guards",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[16]; if (T == 0) s[0] = in[0]; if (T < 8) s[T + 1] = in[G] * 2.0f; __gpu_sync_threads(); o[G] = s[T % 9]; }",
        None,
    ),
    (
        "ol-equality-split",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t w) { uint32_t x = G; if (x >= w) return; o[x] = (x == 0 || x == w - 1) ? 0.0f : in[x - 1] + in[x + 1]; }",
        None,
    ),
    (
        "ol-equality-split",
        false,
        "__gpu_kernel void k(float *o, const uint32_t *in) { uint32_t x = G; o[x] = x == in[x] ? 1.0f : 2.0f; }",
        None,
    ),
    (
        "ol-uniform-barriers",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); o[G] = s[N - 1 - T]; }",
        None,
    ),
    (
        "ol-uniform-barriers",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; if (in[G] > 0.0f) __gpu_sync_threads(); o[G] = s[N - 1 - T]; }",
        None,
    ),
    (
        "ol-once-regions",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t off = 1; off < N; off <<= 1) { float v = T >= off ? s[T - off] : 0.0f; __gpu_sync_threads(); s[T] += v; __gpu_sync_threads(); } o[G] = s[T]; }",
        None,
    ),
    (
        "ol-once-regions",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); o[G] = s[N - 1 - T]; }",
        None,
    ),
    (
        "ol-run-guards",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t d = 1; d < N; d *= 2) { if (T % (2 * d) == 0) s[T] += s[T + d]; __gpu_sync_threads(); } if (T == 0) o[__gpu_block_id_x()] = s[0]; }",
        None,
    ),
    (
        "ol-run-guards",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t d = N / 2; d > 0; d >>= 1) { if (T < d) s[T] += s[T + d]; __gpu_sync_threads(); } if (T == 0) o[__gpu_block_id_x()] = s[0]; }",
        None,
    ),
    (
        "ol-speculate-shared-stores",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); for (uint32_t j = N / 2; j > 0; j >>= 1) { uint32_t p = T ^ j; if (p > T) { float a = s[T], b = s[p]; if (a > b) { s[T] = b; s[p] = a; } } __gpu_sync_threads(); } o[G] = s[T]; }",
        None,
    ),
    (
        "ol-speculate-shared-stores",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; s[T] = 0.0f; __gpu_sync_threads(); if (in[G] > 0.0f) s[N - 1 - T] = 1.0f; __gpu_sync_threads(); o[G] = s[T]; }",
        None,
    ),
    (
        "ol-plain-shared-atomics",
        true,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *in) { static __gpu_local uint32_t b[256]; b[T] = 0; __gpu_sync_threads(); __atomic_fetch_add(&b[in[G] & 255], 1, __ATOMIC_RELAXED); __gpu_sync_threads(); o[G] = b[T]; }",
        None,
    ),
    (
        "ol-plain-shared-atomics",
        false,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *in) { __atomic_fetch_add(&o[in[G] & 255], 1, __ATOMIC_RELAXED); }",
        None,
    ),
    (
        "ol-rematerialise",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; float *p = &s[T]; *p = in[G]; __gpu_sync_threads(); o[G] = *p + s[(T + 1) % N]; }",
        None,
    ),
    (
        "ol-rematerialise",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; float v = in[G] * 2.0f; s[T] = 1.0f; __gpu_sync_threads(); if (v > s[0]) o[__gpu_block_id_x()] = v; }",
        None,
    ),
    (
        "ol-implicit-loop-barriers",
        true,
        "__gpu_kernel void k(float *o, const float *in, const float *w, uint32_t n) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); float acc = 0.0f; for (uint32_t j = 0; j < n; ++j) acc += s[j & 255] * w[j * 256 + T] + (float)j; o[G] = acc; }",
        None,
    ),
    (
        "ol-implicit-loop-barriers",
        false,
        "__gpu_kernel void k(float *o, const float *in, const float *w) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); float acc = 0.0f; for (uint32_t j = 0; j < T; ++j) acc += s[j & 255] * w[j * 256 + T] + (float)j; o[G] = acc; }",
        None,
    ),
    // (under ol-warp-lanes: warp barriers around a warp's strided loop)
    ("ol-implicit-loop-barriers", true, WROW, Some([64, 1, 1])),
    ("ol-scope-slots", true, SWAPS, None),
    ("ol-scope-slots", false, "__gpu_kernel void k(float *y, const float *x) { y[G] = x[G]; }", None),
    ("ol-hoist-slot-stores", true, TREE, None),
    ("ol-hoist-slot-stores", false, UNIFORM, None),
    ("ol-short-runs", true, SWAPS, None),
    ("ol-short-runs", false, HALVES, None),
    ("ol-flatten-decision", true, SWAPS, None),
    ("ol-flatten-decision", false, UNIFORM, None),
    ("ol-unswitch-region-exit", true, TILES, None),
    ("ol-unswitch-region-exit", false, UNIFORM, None),
    ("ol-share-header-slot", true, TILES, None),
    ("ol-share-header-slot", false, UNIFORM, None),
    ("ol-block-stride-loops", true, STRIDED, None),
    ("ol-block-stride-loops", true, STRIDED, Some([64, 1, 1])),
    // (a warp's lanes striding over its row in a specialisation of whole warps, under ol-warp-lanes)
    ("ol-block-stride-loops", true, WROW, Some([64, 1, 1])),
    // (a stride that is not the group size; no barrier, so no work-item loop to put inside)
    (
        "ol-block-stride-loops",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; float m = 0.0f; for (uint32_t j = T; j < n; j += 7) m += in[j]; s[T] = m; __gpu_sync_threads(); o[G] = s[N - 1 - T]; }",
        None,
    ),
    // (barrier-free: a grid-stride loop whose stride is not a multiple of the group size)
    (
        "ol-block-stride-loops",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { float m = 0.0f; for (uint32_t j = G; j < n; j += 7) m += in[j]; o[G] = m; }",
        None,
    ),
    // (barrier-free: grid-stride loops, `int` and 64-bit, their stride computed after the guard; made
    // uniform, they take the barrier path with implicit barriers around them)
    (
        "ol-block-stride-loops",
        true,
        "__gpu_kernel void k(float *o, const float *in, int n) { for (int i = G; i < n; i += N * __gpu_num_blocks_x()) o[i] = in[i] * 2.0f; }",
        None,
    ),
    (
        "ol-block-stride-loops",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint64_t n) { for (uint64_t i = G; i < n; i += (uint64_t)N * __gpu_num_blocks_x()) o[i] = in[i] * 2.0f; }",
        Some([128, 1, 1]),
    ),
    // (a specialisation: the group's size is the stride; no value carried between iterations)
    ("ol-group-loops", true, COOP, Some([256, 1, 1])),
    // (clang's form of a constant bound: the guard, then a preheader with the 64-bit bound, then the loop)
    (
        "ol-group-loops",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[72]; int64_t b0 = (int64_t)__gpu_block_id_x() * 64 - 4; for (uint32_t i = T; i < 72; i += 64) { int64_t x = b0 + i; s[i] = x >= 0 && x < n ? in[x] : 0.0f; } __gpu_sync_threads(); o[G] = s[T] + s[T + 8]; }",
        Some([64, 1, 1]),
    ),
    ("ol-group-loops", false, STRIDED, Some([64, 1, 1])),
    // (a loop whose header has no PHI: one work-item spinning at a grid barrier; this crashed the lowering)
    (
        "ol-group-loops",
        false,
        "__gpu_kernel void k(uint32_t *c, uint32_t *o, uint32_t n) { if (T == 0) { __atomic_fetch_add(c, 1, __ATOMIC_ACQ_REL); while (__atomic_load_n(c, __ATOMIC_ACQUIRE) < n) { } o[__gpu_block_id_x()] = n; } __gpu_sync_threads(); }",
        Some([32, 1, 1]),
    ),
    (
        "ol-runtime-divisors",
        true,
        "__gpu_kernel void k(float *o, const float *in) { o[G] = in[__gpu_block_id_x() * N + (T + 1) % N]; }",
        Some([64, 1, 1]),
    ),
    (
        "ol-runtime-divisors",
        false,
        "__gpu_kernel void k(float *o, const float *in) { o[G] = in[__gpu_block_id_x() * N + (T + 1) % 7]; }",
        Some([64, 1, 1]),
    ),
    // an escape-time loop (no memory access in it), generic and specialised; not: a loop reading
    // memory (a CSR row), a loop every work-item runs as often, a kernel with barriers
    ("ol-lockstep-loops", true, ESCAPE, None),
    ("ol-lockstep-loops", true, ESCAPE, Some([32, 2, 1])),
    // (two in a row: the first one's exit block may be the second one's header)
    (
        "ol-lockstep-loops",
        true,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *c) { uint32_t v = c[G], s = 0; while (v > 1 && s < 99) { v = v & 1 ? 3 * v + 1 : v / 2; s++; } while (v < 1000 && s < 200) { v = v * 3 + s; s++; } o[G] = v + s; }",
        Some([64, 1, 1]),
    ),
    (
        "ol-lockstep-loops",
        false,
        "__gpu_kernel void k(float *o, const uint32_t *r, const float *v) { float s = 0.0f; for (uint32_t j = r[G]; j < r[G + 1]; j++) s += v[j]; o[G] = s; }",
        None,
    ),
    (
        "ol-lockstep-loops",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { float s = in[G]; for (uint32_t j = 0; j < n; j++) s = s * 0.5f + 1.0f; o[G] = s; }",
        None,
    ),
    ("ol-lockstep-loops", false, UNIFORM, None),
    // the general scheduler's regions: lockstep loops', a divergent barrier's; not under uniform barriers
    ("ol-promote-slots", true, ESCAPE, None),
    (
        "ol-promote-slots",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; float v = in[G]; s[T] = v; if (v > 0.0f) { __gpu_sync_threads(); s[T] = 2.0f * v; } __gpu_sync_threads(); o[G] = s[N - 1 - T] + v; }",
        None,
    ),
    ("ol-promote-slots", false, UNIFORM, None),
    // a bounds guard around a group barrier; a return before a warp's shuffles and a group barrier, warp by
    // warp; not: no work-item leaves before a barrier, or those that skip a barrier reach another one
    (
        "ol-early-exits",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; if (G < n) { s[T] = in[G]; __gpu_sync_threads(); o[G] = s[(T + 1) % 64]; } }",
        None,
    ),
    (
        "ol-early-exits",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float p[64]; if (G >= n) return; uint32_t l = __gpu_lane_id(); float v = in[G]; v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ 1, v, __gpu_num_lanes()); p[T / 32] = v; __gpu_sync_threads(); o[G] = p[0]; }",
        Some([64, 1, 1]),
    ),
    ("ol-early-exits", false, UNIFORM, None),
    (
        "ol-early-exits",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; float v = in[G]; s[T] = v; if (v > 0.0f) { __gpu_sync_threads(); s[T] = 2.0f * v; } __gpu_sync_threads(); o[G] = s[N - 1 - T] + v; }",
        None,
    ),
    // a PHI's value read before a barrier and used after it: the lockstep loop's state; a per-item
    // accumulator of a loop with barriers, read by the next trip; not: group-invariant PHIs only (a
    // tree's `d`), no PHI across a barrier
    ("ol-reload-slots", true, ESCAPE, None),
    (
        "ol-reload-slots",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; float a = in[G]; for (uint32_t j = 0; j < n; j++) { s[T] = a; __gpu_sync_threads(); a = a * 0.5f + s[(T + 1) % N]; __gpu_sync_threads(); } o[G] = a; }",
        None,
    ),
    ("ol-reload-slots", false, TREE, None),
    ("ol-reload-slots", false, UNIFORM, None),
    ("ol-lane-offset-reads", true, WSHFL, Some([64, 1, 1])),
    (
        "ol-lane-offset-reads",
        true,
        "__gpu_kernel void k(float *o, const float *in) { uint32_t l = __gpu_lane_id(); float v = in[G], u = __gpu_shuffle_idx_f32(__gpu_lane_mask(), l - 1, v, __gpu_num_lanes()); o[G] = l ? u : v; }",
        Some([64, 2, 1]),
    ),
    // (a source lane from memory; the generic kernel, whose warps may be partial)
    (
        "ol-lane-offset-reads",
        false,
        "__gpu_kernel void k(float *o, const float *in, const uint32_t *src) { o[G] = __gpu_shuffle_idx_f32(__gpu_lane_mask(), src[G], in[G], __gpu_num_lanes()); }",
        Some([64, 1, 1]),
    ),
    ("ol-lane-offset-reads", false, WSHFL, None),
    ("ol-warp-lanes", true, WSHFL, Some([64, 1, 1])),
    ("ol-warp-lanes", true, WSHFL, Some([128, 1, 1])),
    // (not whole warps in a row; the generic kernel; a shuffle under a branch that differs between a
    // warp's lanes and reaches a group barrier too)
    ("ol-warp-lanes", false, WSHFL, Some([48, 1, 1])),
    ("ol-warp-lanes", false, WSHFL, None),
    (
        "ol-warp-lanes",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float p[256]; float v = in[G]; if (in[G] > 0.0f) v = __gpu_shuffle_idx_f32(__gpu_lane_mask(), 0, v, 32); p[T] = v; __gpu_sync_threads(); o[G] = p[N - 1 - T]; }",
        Some([64, 1, 1]),
    ),
    // the first warp's `T < w` around the warps' sums; a read of the warp before's total that every
    // warp but the first makes (`T / w`, `T >= w`)
    ("ol-unswitch-warp-branches", true, WSHFL, Some([64, 1, 1])),
    (
        "ol-unswitch-warp-branches",
        true,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float p[64]; uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(); float v = in[G]; v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ 1, v, w); p[T / w] = v; __gpu_sync_threads(); if (T >= w) v += p[T / w - 1]; o[G] = v; }",
        Some([128, 1, 1]),
    ),
    // (a branch that differs between a warp's lanes; the generic kernel)
    (
        "ol-unswitch-warp-branches",
        false,
        "__gpu_kernel void k(float *o, const float *in) { uint32_t l = __gpu_lane_id(); float v = in[G]; v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ 1, v, __gpu_num_lanes()); if (l & 1) o[G] = v; }",
        Some([64, 1, 1]),
    ),
    ("ol-unswitch-warp-branches", false, WSHFL, None),
    // consecutive shuffles (the butterflies clang unrolled); a ballot, then a shuffle
    ("ol-alternate-exchanges", true, WSHFL, Some([64, 1, 1])),
    (
        "ol-alternate-exchanges",
        true,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *in) { uint32_t l = __gpu_lane_id(); uint64_t b = __gpu_ballot(__gpu_lane_mask(), in[G] & 1); o[G] = __gpu_shuffle_idx_u32(__gpu_lane_mask(), l ^ 1, (uint32_t)__builtin_popcountll(b), __gpu_num_lanes()); }",
        Some([128, 1, 1]),
    ),
    // (one shuffle in a loop: its next store writes the area it reads; the generic kernel)
    (
        "ol-alternate-exchanges",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { uint32_t l = __gpu_lane_id(); float v = in[G]; for (uint32_t j = 0; j < n; ++j) v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), l ^ 1, v, __gpu_num_lanes()); o[G] = v; }",
        Some([64, 1, 1]),
    ),
    ("ol-alternate-exchanges", false, WSHFL, None),
    // a count over the group's earlier items (a trip count that differs between work-items, with
    // barriers); a row's float sum (without barriers)
    (
        "ol-reroll-loops",
        true,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *in) { static __gpu_local uint32_t s[256]; s[T] = in[G] & 15; __gpu_sync_threads(); uint32_t r = 0; for (uint32_t j = 0; j < T; j++) r += s[j] == s[T]; o[G] = r; }",
        None,
    ),
    (
        "ol-reroll-loops",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { float s = 0.0f; for (uint32_t i = 0; i < n; i++) s += in[G * n + i]; o[G] = s; }",
        None,
    ),
    // (a loop that writes memory; the same loop over a tile for every work-item, with barriers: the
    // work-item loop goes inside it)
    (
        "ol-reroll-loops",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { float s = 0.0f; for (uint32_t i = 0; i < n; i++) { s += in[G * n + i]; o[G * n + i] = s; } }",
        None,
    ),
    ("ol-reroll-loops", false, TILES, None),
    // a tree by halves and one by doubling from the group size, in a specialisation (trip counts 8); the
    // tree in the generic kernel (the group size unknown), a loop over tiles up to an argument
    ("ol-unroll-barrier-loops", true, HALVES, Some([256, 1, 1])),
    ("ol-unroll-barrier-loops", true, TREE, Some([64, 1, 1])),
    ("ol-unroll-barrier-loops", false, HALVES, None),
    ("ol-unroll-barrier-loops", false, TILES, Some([256, 1, 1])),
    // a read from the work-item `d` before (the load may not run for t < d); the same with a bound per
    // work-item
    (
        "ol-range-split",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t d) { float v = 0.0f; if (T >= d) v = in[G - d]; o[G] = v; }",
        None,
    ),
    (
        "ol-range-split",
        false,
        "__gpu_kernel void k(float *o, const float *in, const uint32_t *d) { float v = 0.0f; if (T >= d[G]) v = in[G - d[G]]; o[G] = v; }",
        None,
    ),
    // a warp's scan by shuffles (`lane >= d`: the lanes compared), in a specialisation; a warp's broadcast
    // (a lane loop without compares), and the scan in the generic kernel (no lane loops of whole warps)
    ("ol-unroll-lane-vectors", true, WSCAN, Some([64, 1, 1])),
    (
        "ol-unroll-lane-vectors",
        false,
        "__gpu_kernel void k(float *o, const float *in) { float v = in[G]; o[G] = v + __gpu_shuffle_idx_f32(__gpu_lane_mask(), 0, v, __gpu_num_lanes()); }",
        Some([64, 1, 1]),
    ),
    ("ol-unroll-lane-vectors", false, WSCAN, None),
    // a warp's exchanges one after another (each region leaves through one warp barrier), with and without
    // group barriers; not: the generic kernel (no warp lanes), and a shuffle only the first warp runs (the
    // region before it leaves through its barrier or the exit)
    ("ol-chain-warp-regions", true, WSCAN, Some([64, 1, 1])),
    ("ol-chain-warp-regions", true, WSHFL, Some([256, 1, 1])),
    ("ol-chain-warp-regions", false, WSCAN, None),
    (
        "ol-chain-warp-regions",
        false,
        "__gpu_kernel void k(float *o, const float *in) { float v = in[G]; if (T < 32) v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), __gpu_lane_id() ^ 1, v, __gpu_num_lanes()); o[G] = v; }",
        Some([64, 1, 1]),
    ),
    // a bounds guard before a group barrier, and before a warp's shuffles; not: the generic kernel, a guard
    // after every barrier (no early exit), one on a value read from memory, one the same in every group
    // (the first warp's `T < w`)
    (
        "ol-full-groups",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; if (G < n) { s[T] = in[G]; __gpu_sync_threads(); o[G] = s[T] * 2.0f; } }",
        Some([256, 1, 1]),
    ),
    (
        "ol-full-groups",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { if (G >= n) return; float v = in[G]; v += __gpu_shuffle_idx_f32(__gpu_lane_mask(), __gpu_lane_id() ^ 1, v, __gpu_num_lanes()); o[G] = v; }",
        Some([64, 1, 1]),
    ),
    (
        "ol-full-groups",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; if (G < n) { s[T] = in[G]; __gpu_sync_threads(); o[G] = s[T] * 2.0f; } }",
        None,
    ),
    (
        "ol-full-groups",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t n) { static __gpu_local float s[256]; s[T] = in[G]; __gpu_sync_threads(); if (G < n) o[G] = s[N - 1 - T]; }",
        Some([256, 1, 1]),
    ),
    (
        "ol-full-groups",
        false,
        "__gpu_kernel void k(float *o, const float *in, const uint32_t *n) { static __gpu_local float s[256]; if (G < n[0]) { s[T] = in[G]; __gpu_sync_threads(); o[G] = s[T] * 2.0f; } }",
        Some([256, 1, 1]),
    ),
    ("ol-full-groups", false, WSHFL, Some([256, 1, 1])),
    // a warp's slots on the stack: warp collectives and no group barrier, or values that no group barrier
    // separates from their uses (the warps' butterflies before the group barrier); not: values all used
    // after a group barrier (and the generic kernel: no warp lanes)
    ("ol-warp-local-slots", true, WSCAN, Some([64, 1, 1])),
    ("ol-warp-local-slots", true, WROW, Some([128, 1, 1])),
    ("ol-warp-local-slots", true, WSHFL, Some([256, 1, 1])),
    (
        "ol-warp-local-slots",
        false,
        "__gpu_kernel void k(float *o, const float *in) { static __gpu_local float s[256]; float v = in[G]; float u = __gpu_shuffle_idx_f32(__gpu_lane_mask(), __gpu_lane_id() ^ 1, v, __gpu_num_lanes()); s[T] = u; __gpu_sync_threads(); o[G] = v * u + s[N - 1 - T]; }",
        Some([64, 1, 1]),
    ),
    ("ol-warp-local-slots", false, WSCAN, None),
    // a warp's exchange areas on the stack: every exchange address tagged and used only by loads and stores
    // (warp lanes); not: the generic kernel (no warp lanes)
    ("ol-warp-local-exchanges", true, WSCAN, Some([64, 1, 1])),
    ("ol-warp-local-exchanges", true, WSHFL, Some([256, 1, 1])),
    ("ol-warp-local-exchanges", false, WSCAN, None),
    // (a bubble sort of a private array: a triangular nest that nvptx64's clang leaves in place)
    (
        "ol-unroll-private-loops",
        true,
        "__gpu_kernel void k(float *o, const float *in) { float v[9]; for (int j = 0; j < 9; j++) v[j] = in[G * 9 + j]; for (int a = 0; a < 9; a++) for (int b = 0; b < 8 - a; b++) { float lo = __builtin_fminf(v[b], v[b + 1]), hi = __builtin_fmaxf(v[b], v[b + 1]); v[b] = lo; v[b + 1] = hi; } o[G] = v[4]; }",
        None,
    ),
    // (a trip count the kernel's argument decides)
    (
        "ol-unroll-private-loops",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t m) { float v[64]; for (uint32_t j = 0; j < m; j++) v[j & 63] = in[G + j]; o[G] = v[(uint32_t)in[G] & 63]; }",
        None,
    ),
    // (a 2-D grid-stride loop: the y loop, then the x loop in the copy for rounds where every row is in range)
    (
        "ol-block-stride-loops",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t w, uint32_t h) { for (uint32_t r = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); r < h; r += __gpu_num_blocks_y() * __gpu_num_threads_y()) for (uint32_t c = G; c < w; c += __gpu_num_blocks_x() * N) o[r * w + c] = 2.0f * in[r * w + c]; }",
        Some([32, 4, 1]),
    ),
    // a 2-D group's rows of 16 work-items without a branch, in a specialisation; not: 1-D groups of 256 (LLVM
    // does not unroll their loop early), a row with a branch (a store where the value read is above 1), the generic
    // kernel (no constant row length)
    (
        "ol-keep-short-rows",
        true,
        "__gpu_kernel void k(float *o, const float *in, uint32_t w) { uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); o[y * w + G] = in[y * w + G] * 0.5f + 1.0f; }",
        Some([16, 16, 1]),
    ),
    (
        "ol-keep-short-rows",
        false,
        "__gpu_kernel void k(float *o, const float *in) { o[G] = in[G] * 0.5f + 1.0f; }",
        Some([256, 1, 1]),
    ),
    (
        "ol-keep-short-rows",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t w) { uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); float v = in[y * w + G]; if (v > 1.0f) o[y * w + G] = v; }",
        Some([16, 16, 1]),
    ),
    (
        "ol-keep-short-rows",
        false,
        "__gpu_kernel void k(float *o, const float *in, uint32_t w) { uint32_t y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); o[y * w + G] = in[y * w + G] * 0.5f + 1.0f; }",
        None,
    ),
    // after a ballot and a barrier, a sum over shared memory up to the warp's index (the same for its
    // lanes); up to the lane's (not)
    (
        "ol-warp-uniform-loops",
        true,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *in) { static __gpu_local uint32_t c[64]; uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(); uint64_t m = __gpu_ballot(__gpu_lane_mask(), in[G] & 1); if (l == 0) c[T / w] = (uint32_t)__builtin_popcountll(m); __gpu_sync_threads(); uint32_t b = 0; for (uint32_t k = 0; k < T / w; k++) b += c[k]; o[G] = b; }",
        Some([256, 1, 1]),
    ),
    (
        "ol-warp-uniform-loops",
        false,
        "__gpu_kernel void k(uint32_t *o, const uint32_t *in) { static __gpu_local uint32_t c[256]; uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(); uint64_t m = __gpu_ballot(__gpu_lane_mask(), in[G] & 1); c[T] = (uint32_t)__builtin_popcountll(m >> l); __gpu_sync_threads(); uint32_t b = 0; for (uint32_t k = 0; k < l; k++) b += c[T / w * w + k]; o[G] = b; }",
        Some([256, 1, 1]),
    ),
];

/// [`TRANSFORM_CASES`] of transforms that only amdgcn's bitcode gives a reason to fire (compiled for amdgcn,
/// 64 lanes).
const AMDGCN_TRANSFORM_CASES: &[Case] = &[
    // (gpuintrin's match_any: a loop on amdgcn; over a mask other than every lane's it is not the same)
    (
        "ol-match-loops",
        true,
        "__gpu_kernel void k(uint64_t *o, const uint32_t *in) { o[G] = __gpu_match_any_u32(__gpu_lane_mask(), in[G] % 5); }",
        None,
    ),
    (
        "ol-match-loops",
        true,
        "__gpu_kernel void k(uint64_t *o, const uint64_t *in) { if (in[G] != 3) o[G] = __gpu_match_any_u64(__gpu_lane_mask(), in[G] >> 40); }",
        Some([96, 1, 1]),
    ),
    (
        "ol-match-loops",
        false,
        "__gpu_kernel void k(uint64_t *o, const uint32_t *in) { o[G] = __gpu_match_any_u32(__gpu_lane_mask() & 0xffff, in[G] % 5); }",
        None,
    ),
];

/// Every case of [`TRANSFORM_CASES`] and [`AMDGCN_TRANSFORM_CASES`] with the target to compile it for.
fn transform_cases() -> impl Iterator<Item = (Tgt, &'static Case)> {
    TRANSFORM_CASES.iter().map(|c| (Tgt::Nv, c)).chain(AMDGCN_TRANSFORM_CASES.iter().map(|c| (Tgt::Amd, c)))
}

/// Each transform of the lowering fires on a kernel it is meant for and not on one it must leave alone
/// (a guard it cannot prove, a divergent barrier, memory that is not the group's own, ...), as its counts
/// (`OFFLOAD_RS_JIT_STATS`) show; switched off (`-name`), it does nothing and the kernel still compiles.
#[test]
fn each_transform_fires_where_it_is_meant_to_and_not_elsewhere() {
    let _g = shared();
    let mut bad = Vec::new();
    for (t, (name, fires, src, spec)) in transform_cases() {
        let Some(bc) = bitcode_of_source(&format!("{H}{src}\n"), t) else {
            return;
        };
        let spec = spec.map(|g| ("k", g));
        let on = transform_stats(&bc, "", spec);
        let count = on.iter().map(|(_, s)| s.of(name)).sum::<u32>();
        if (count > 0) != *fires {
            bad.push(format!(
                "{name} {} on `{src}`: {:?}",
                if *fires { "did not fire" } else { "fired" },
                on.iter().map(|(k, s)| format!("{k}: {s}")).collect::<Vec<_>>()
            ));
        }
        let off = transform_stats(&bc, &format!("-{name}"), spec);
        if off.iter().any(|(_, s)| s.of(name) > 0) {
            bad.push(format!("{name} fired while switched off"));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// ol-unroll-lane-vectors: a warp scan's lane loops that compare lanes (`lane >= d` on 32 lanes) are vector
/// loops without it and straight code with it (LLVM's unroller after the vectoriser took them: each copy's lane compares
/// constants); for this machine's vectors and AVX2's (x86-64-v3).
#[test]
fn lane_vector_loops_are_unrolled_where_lanes_are_compared() {
    let _g = shared();
    let Some(bc) = nvptx_bitcode_of(&format!("{H}{WSCAN}\n")) else {
        return;
    };
    for cpu in ["", "x86-64-v3"] {
        let ir = |lowering: &str| {
            let mut target = service::cpu_target().unwrap().clone();
            if !cpu.is_empty() {
                target.cpu = cpu.into();
                target.features = String::new();
            }
            target.lowering = lowering.to_string();
            let spec = crate::jit::compile::Spec { kernel: "k".into(), group_size: [64, 1, 1], quick: false };
            super::compile::CAPTURE.with(|c| *c.borrow_mut() = Some(("opt", String::new())));
            let r = super::compile::compile_in_process(&bc, &target, 3, false, false, false, Some(&spec));
            r.unwrap_or_else(|e| panic!("{cpu}: {e}"));
            super::compile::CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default().1
        };
        // (the loops' latches; the first region's lane loop, which compares no lanes, stays a loop)
        let loops =
            |ir: &str| ir.lines().filter(|l| l.trim_start().starts_with("br ") && l.contains("!llvm.loop")).count();
        // (without ol-warp-local-slots and ol-warp-local-exchanges, which unroll every branch-free lane loop)
        let off = "-ol-warp-local-slots,-ol-warp-local-exchanges";
        let (with, without) = (loops(&ir(off)), loops(&ir(&format!("{off},-ol-unroll-lane-vectors"))));
        assert!(with < without, "{cpu}: {with} loops with the transform, {without} without");
    }
}

/// Writes the IR tests of the lowering's transforms, tests/ir/lowering/<transform>.<fires|not>.ll: for each
/// transform its first case of each kind in [`TRANSFORM_CASES`], as the IR the JIT hands the C++ lowering
/// (nvptx64 bitcode from clang, the Rust side's module-wide steps done for x86-64-v3), with RUN lines that
/// lower it with `ol-lower` (src/jit/llvm/lower/pass.cpp) with every transform and without this one and
/// check this transform's count (scripts/ir-tests.sh runs them in CI; the lowered module must verify).
/// Regenerate after changing the cases or the steps before the lowering:
/// `cargo test --lib write_lowering_ir_tests -- --ignored`.
#[test]
#[ignore]
fn write_lowering_ir_tests() {
    use std::fmt::Write;
    let _g = shared();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ir/lowering");
    std::fs::create_dir_all(&dir).unwrap();
    let mut target = service::cpu_target().unwrap().clone();
    target.cpu = "x86-64-v3".into();
    target.features = String::new();
    target.lowering = String::new();
    for name in super::lowering::NAMES {
        for fires in [true, false] {
            let (t, (_, _, src, spec)) = transform_cases()
                .find(|(_, c)| c.0 == name && c.1 == fires)
                .unwrap_or_else(|| panic!("{name}: no case where it must{} fire", if fires { "" } else { " not" }));
            let bc = bitcode_of_source(&format!("{H}{src}\n"), t).expect("clang-22 for the cases");
            let (arch, w) = if t == Tgt::Amd { ("amdgcn", 64) } else { ("nvptx64", 32) };
            let spec_arg = spec.map(|g| crate::jit::compile::Spec { kernel: "k".into(), group_size: g, quick: false });
            super::compile::CAPTURE.with(|p| *p.borrow_mut() = Some(("prelower", String::new())));
            super::compile::compile_in_process(&bc, &target, 3, false, false, false, spec_arg.as_ref())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let ir = super::compile::CAPTURE.with(|p| p.borrow_mut().take()).unwrap_or_default().1;
            assert!(ir.contains("define"), "{name}: no IR captured");
            let opts = match spec {
                Some(g) => format!("kernel=k;group={}x{}x{};warp={w}", g[0], g[1], g[2]),
                None => format!("warp={w}"),
            };
            let mut t = String::new();
            let what = if fires { "fires on" } else { "must leave alone" };
            let shape = spec.map_or("generic".to_string(), |g| format!("specialised for {}x{}x{}", g[0], g[1], g[2]));
            writeln!(t, "; {name} {what} this kernel ({arch}, {shape}; `#define T __gpu_thread_id_x()`,").unwrap();
            writeln!(t, "; N the group size, G the global id):").unwrap();
            let mut line = String::from(";");
            for word in src.split(' ') {
                if line.len() + word.len() > 110 {
                    writeln!(t, "{line}").unwrap();
                    line = String::from(";  ");
                }
                line.push(' ');
                line.push_str(word);
            }
            writeln!(t, "{line}").unwrap();
            writeln!(t, "; The IR is what the JIT hands its C++ lowering; generated by src/jit/llvm/tests.rs's")
                .unwrap();
            let table = if arch == "amdgcn" { "AMDGCN_TRANSFORM_CASES" } else { "TRANSFORM_CASES" };
            writeln!(t, "; write_lowering_ir_tests from its {table} (do not edit: regenerate).").unwrap();
            let run = |extra: &str, prefix: &str| {
                format!(
                    "; RUN: opt -load-pass-plugin=%plugin -passes='ol-lower<{opts}{extra};stats>' -disable-output %s 2>&1 | FileCheck %s --check-prefix={prefix}\n"
                )
            };
            t += &run("", "ON");
            t += &run(&format!(";transforms=-{name}"), "OFF");
            if fires {
                writeln!(t, "; ON: ol-lower: k: {{{{(.*, )?}}}}{name} {{{{[1-9][0-9]*}}}}").unwrap();
            } else {
                writeln!(t, "; ON: ol-lower: k:\n; ON-NOT: {name}").unwrap();
            }
            writeln!(t, "; OFF: ol-lower: k:\n; OFF-NOT: {name}\n").unwrap();
            for l in ir.lines() {
                if l.starts_with("; ModuleID") {
                    continue;
                }
                if l.starts_with("source_filename") {
                    t += "source_filename = \"k.c\"\n";
                    continue;
                }
                t += l;
                t.push('\n');
            }
            let file = dir.join(format!("{name}.{}.ll", if fires { "fires" } else { "not" }));
            std::fs::write(&file, t).unwrap();
        }
    }
}

/// The suite's kernels (bench/kernels/suite.c), as they run (specialised for their group shape), get the
/// transforms meant for them, on nvptx64 and amdgcn: a transform that decays is a test failure here
/// before it is a slowdown in BENCHMARKS.md. Prints every kernel's counts.
#[test]
fn the_suite_kernels_get_their_transforms() {
    let _g = shared();
    // (kernel, group shape, transforms that must fire on both targets)
    let expect: &[(&str, [u32; 3], &[&str])] = &[
        ("saxpy", [256, 1, 1], &["ol-narrow-guards"]),
        (
            "reduce",
            [256, 1, 1],
            &["ol-uniform-barriers", "ol-once-regions", "ol-narrow-guards", "ol-unroll-barrier-loops"],
        ),
        (
            "scan",
            [256, 1, 1],
            &[
                "ol-uniform-barriers",
                "ol-once-regions",
                "ol-rematerialise",
                "ol-range-split",
                "ol-unroll-barrier-loops",
            ],
        ),
        (
            "bitonic",
            [256, 1, 1],
            &["ol-run-guards", "ol-short-runs", "ol-speculate-shared-stores", "ol-flatten-decision"],
        ),
        ("histogram", [256, 1, 1], &["ol-uniform-barriers", "ol-narrow-guards", "ol-plain-shared-atomics"]),
        ("matmul", [16, 16, 1], &["ol-rematerialise", "ol-share-header-slot", "ol-unswitch-region-exit"]),
        ("stencil", [16, 16, 1], &["ol-narrow-guards", "ol-equality-split"]),
        ("transpose", [16, 16, 1], &["ol-uniform-barriers", "ol-narrow-guards"]),
        ("nbody", [256, 1, 1], &["ol-uniform-barriers", "ol-implicit-loop-barriers", "ol-unswitch-region-exit"]),
        // (their warp exchanges sit under branches that differ between warps, not between a warp's lanes)
        // (wreduce: the first warp's `t < lanes`; wscan: that and the warp before's total, `w ? totals[w - 1]`)
        (
            "wreduce",
            [256, 1, 1],
            &[
                "ol-warp-lanes",
                "ol-lane-offset-reads",
                "ol-unswitch-warp-branches",
                "ol-alternate-exchanges",
                "ol-unroll-lane-vectors",
                "ol-chain-warp-regions",
                "ol-warp-local-slots",
                "ol-warp-local-exchanges",
            ],
        ),
        (
            "wscan",
            [256, 1, 1],
            &[
                "ol-warp-lanes",
                "ol-lane-offset-reads",
                "ol-unswitch-warp-branches",
                "ol-alternate-exchanges",
                "ol-unroll-lane-vectors",
                "ol-chain-warp-regions",
                "ol-warp-local-slots",
                "ol-warp-local-exchanges",
            ],
        ),
        // (compact: its loop over the warps before a work-item's, `k < t / W`, rolled and run once per warp)
        (
            "compact",
            [256, 1, 1],
            &[
                "ol-warp-lanes",
                "ol-reroll-loops",
                "ol-unswitch-warp-branches",
                "ol-alternate-exchanges",
                "ol-warp-uniform-loops",
                "ol-chain-warp-regions",
                "ol-warp-local-exchanges",
            ],
        ),
        (
            "softmax",
            [256, 1, 1],
            &[
                "ol-uniform-barriers",
                "ol-block-stride-loops",
                "ol-implicit-loop-barriers",
                "ol-narrow-guards",
                "ol-group-loops",
                "ol-unroll-barrier-loops",
            ],
        ),
        ("conv2d", [16, 16, 1], &["ol-uniform-barriers", "ol-narrow-guards", "ol-group-loops"]),
        ("mandel", [16, 16, 1], &["ol-lockstep-loops", "ol-promote-slots", "ol-reload-slots"]),
        ("spmv", [256, 1, 1], &["ol-narrow-guards"]),
        // (radix's rank loop `j < t`: clang unrolls it for nvptx64, vectorises it for amdgcn)
        ("radix", [256, 1, 1], &["ol-uniform-barriers", "ol-plain-shared-atomics", "ol-reroll-loops"]),
        ("blackscholes", [256, 1, 1], &["ol-narrow-guards"]),
    ];
    let mut bad = Vec::new();
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(bc) = bitcode_of("bench/kernels/suite.c", t) else {
            return;
        };
        for (k, g, want) in expect {
            let stats = transform_stats(&bc, "", Some((k, *g)));
            let s = stats.iter().find(|(n, _)| n == k).map(|(_, s)| *s).unwrap_or_default();
            eprintln!("{t:?} {k} {g:?}: {s}");
            for w in *want {
                if s.of(w) == 0 {
                    bad.push(format!("{t:?} {k}: {w} did not fire ({s})"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Barrier-free kernels with a loop whose trip count is the same for every work-item but not a constant,
/// behind a bounds guard (ffi-tests/kernels/uniform_loops.c: column sums, a transposed matrix times a
/// vector, two loops inside `if (c < cols)`): specialised, ol-full-groups' copy takes the loop with
/// implicit barriers (ol-implicit-loop-barriers) for full groups, the last group the plain body (nvptx64,
/// amdgcn and SPIR-V); generic and specialised give the host's results on every target, with columns not a
/// multiple of the group.
#[test]
fn uniform_loops_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("uniform_loops", t) else {
            return;
        };
        let bc = bitcode("uniform_loops", t).unwrap();
        // (SPIR-V's too: its 64-bit ids' `and 0xffffffff` is a consecutive index to the check)
        for k in ["colsum", "gemv_t", "guarded"] {
            let on = transform_stats(&bc, "", Some((k, [64, 1, 1])));
            let of = |n: &str| on.iter().filter(|(kn, _)| kn == k).map(|(_, s)| s.of(n)).sum::<u32>();
            assert!(of("ol-full-groups") > 0 && of("ol-implicit-loop-barriers") > 0, "{t:?} {k}: {on:?}");
        }
        let (rows, cols) = (37u32, 203u32);
        let mf: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 1009) as f32 / 8.0).collect();
        let mu: Vec<u32> = (0..rows * cols).map(|i| i.wrapping_mul(2654435761) >> 5).collect();
        let x: Vec<u32> = (0..rows).map(|r| r * 3 + 1).collect();
        for block in [[64u32, 1, 1], [256, 1, 1], [20, 1, 1]] {
            let grid = [cols.div_ceil(block[0]), 1, 1];
            for name in ["colsum", "gemv_t", "guarded"] {
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let ctx = format!("{t:?} {name} {block:?} {form}");
                    let at = |r: u32, c: u32| (r * cols + c) as usize;
                    if name == "colsum" {
                        let want: Vec<f32> = (0..cols).map(|c| (0..rows).fold(0f32, |s, r| s + mf[at(r, c)])).collect();
                        let mut o = vec![-1f32; cols as usize];
                        let mut m = mf.clone();
                        launch(
                            kk,
                            grid,
                            block,
                            &pack(&kk.params, &[&ptr(&mut m), &ptr(&mut o), &b(&rows), &b(&cols)]),
                            0,
                        );
                        assert_eq!(o, want, "{ctx}");
                        continue;
                    }
                    let want: Vec<u32> = (0..cols)
                        .map(|c| {
                            if name == "gemv_t" {
                                return (0..rows)
                                    .fold(0u32, |s, r| s.wrapping_add(mu[at(r, c)].wrapping_mul(x[r as usize])));
                            }
                            let (mut mx, mut k) = (0u32, 0u32);
                            for r in 0..rows {
                                if mu[at(r, c)] > mx {
                                    (mx, k) = (mu[at(r, c)], r);
                                }
                            }
                            for r in 0..rows / 2 {
                                mx ^= mu[at(rows - 1 - r, c)] >> 3;
                            }
                            mx.wrapping_add(k)
                        })
                        .collect();
                    let mut o = vec![7u32; cols as usize];
                    let (mut m, mut xx) = (mu.clone(), x.clone());
                    let args = if name == "gemv_t" {
                        pack(&kk.params, &[&ptr(&mut m), &ptr(&mut xx), &ptr(&mut o), &b(&rows), &b(&cols)])
                    } else {
                        pack(&kk.params, &[&ptr(&mut m), &ptr(&mut o), &b(&rows), &b(&cols)])
                    };
                    launch(kk, grid, block, &args, 0);
                    assert_eq!(o, want, "{ctx}");
                }
            }
        }
    }
}

/// Loops over a work-item's private array (ffi-tests/kernels/private_loops.c: a 3x3 median by a bubble
/// sort, a 16 x 16 matrix times a work-item's vector, an insertion sort whose inner loop stops on the data,
/// and an array read at an index the data chooses in a body with no loop) give the host's results, generic
/// and specialised, on every target and ISA; on nvptx64, whose clang leaves those loops in place,
/// ol-unroll-private-loops unrolls the median's and the product's. (An array that stays in memory is one
/// copy for a vectorised work-item loop: pick16 and the product's `r[in[i] & 15]` read the last lane's
/// values with AVX2 code until its accesses left the loop's parallel access group.)
#[test]
fn private_loops_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("private_loops", t) else {
            return;
        };
        if t == Tgt::Nv {
            let bc = bitcode("private_loops", t).unwrap();
            for k in ["median9", "matvec16"] {
                let fired = times_fired(&bc, k, None, "ol-unroll-private-loops");
                assert!(fired > 0, "{k}: ol-unroll-private-loops did not fire");
            }
        }
        let (w, h) = (37u32, 11u32);
        let px: Vec<f32> = (0..w * h).map(|i| ((i * 7919) % 101) as f32 / 7.0).collect();
        let n = 300u32;
        let words: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761) >> 7).collect();
        let median = |i: usize| {
            let (x, y) = (i as u32 % w, i as u32 / w);
            if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                return px[i];
            }
            let mut v: Vec<f32> = Vec::new();
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    v.push(px[(i as i32 + dy * w as i32 + dx) as usize]);
                }
            }
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[4]
        };
        let table: Vec<u32> = (0..256u32).map(|k| k.wrapping_mul(40503) ^ 0x5bd1e995).collect();
        let matvec = |i: u32| {
            let v: Vec<u32> = (0..16).map(|k| words[((i + k) % n) as usize]).collect();
            let r: Vec<u32> = (0..16)
                .map(|k| (0..16).fold(0u32, |s, j| s.wrapping_add(table[k * 16 + j].wrapping_mul(v[j]))))
                .collect();
            r.iter().copied().max().unwrap() ^ r[(words[i as usize] & 15) as usize]
        };
        let insertion = |i: u32| {
            let mut v: Vec<u32> =
                (0..8u32).map(|k| words[((i * 8 + k) % n) as usize] ^ k.wrapping_mul(2654435761u32)).collect();
            v.sort();
            v
        };
        for block in [[64u32, 1, 1], [256, 1, 1], [20, 1, 1]] {
            for name in ["median9", "matvec16", "insertion8", "pick16"] {
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let ctx = format!("{t:?} {name} {block:?} {form}");
                    match name {
                        "median9" => {
                            let grid = [(w * h).div_ceil(block[0]), 1, 1];
                            let mut o = vec![-1f32; (w * h) as usize];
                            let mut inp = px.clone();
                            launch(
                                kk,
                                grid,
                                block,
                                &pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&w), &b(&h)]),
                                0,
                            );
                            let want: Vec<f32> = (0..(w * h) as usize).map(median).collect();
                            assert_eq!(o, want, "{ctx}");
                        }
                        "matvec16" => {
                            let grid = [n.div_ceil(block[0]), 1, 1];
                            let mut o = vec![0u32; n as usize];
                            let (mut a, mut inp) = (table.clone(), words.clone());
                            launch(
                                kk,
                                grid,
                                block,
                                &pack(&kk.params, &[&ptr(&mut a), &ptr(&mut inp), &ptr(&mut o), &b(&n)]),
                                0,
                            );
                            let want: Vec<u32> = (0..n).map(matvec).collect();
                            assert_eq!(o, want, "{ctx}");
                        }
                        "pick16" => {
                            let grid = [n.div_ceil(block[0]), 1, 1];
                            let mut o = vec![0u32; n as usize];
                            let mut inp = words.clone();
                            launch(kk, grid, block, &pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&n)]), 0);
                            let want: Vec<u32> = (0..n)
                                .map(|i| {
                                    let r = |k: u32| words[((i + k) % n) as usize].wrapping_mul(k + 1);
                                    let v = words[i as usize];
                                    r(v & 15).wrapping_add(r((v >> 4) & 15))
                                })
                                .collect();
                            assert_eq!(o, want, "{ctx}");
                        }
                        _ => {
                            let grid = [n.div_ceil(block[0]), 1, 1];
                            let mut o = vec![0u32; (n * 8) as usize];
                            let mut inp = words.clone();
                            launch(kk, grid, block, &pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&n)]), 0);
                            let want: Vec<u32> = (0..n).flat_map(insertion).collect();
                            assert_eq!(o, want, "{ctx}");
                        }
                    }
                }
            }
        }
    }
}

/// Grid-stride loops (ffi-tests/kernels/grid_stride.c: `for (i = gid; i < n; i += grid size)`, in u32,
/// int, u64 and int64 forms, a sum carried out with a stride of k group sizes, one followed by a barrier)
/// take ol-block-stride-loops, generic and specialised, on every target, and give the host's results:
/// n from 0 past several rounds of the grid, a negative int n, partial last rounds, a stride of 2^30 up
/// to n = 3 * 2^30 (its last index below 2^32), 1-D groups of 20 to 256 work-items.
#[test]
fn grid_stride_loops_match_the_host() {
    let _g = shared();
    let names = ["gs_u32", "gs_i32", "gs_u64", "gs_i64", "gs_sum", "gs_bar"];
    for t in TARGETS {
        let Some(img) = load_ok("grid_stride", t) else {
            return;
        };
        let bc = bitcode("grid_stride", t).unwrap();
        for k in names {
            for spec in [None, Some([64u32, 1, 1])] {
                let on = transform_stats(&bc, "", spec.map(|g| (k, g)));
                let of = on.iter().filter(|(kn, _)| kn == k).map(|(_, s)| s.of("ol-block-stride-loops")).sum::<u32>();
                assert!(of > 0, "{t:?} {k} {spec:?}: {on:?}");
            }
        }
        for (block, grid) in
            [([64u32, 1, 1], [3u32, 1, 1]), ([256, 1, 1], [2, 1, 1]), ([32, 1, 1], [1, 1, 1]), ([20, 1, 1], [5, 1, 1])]
        {
            let (nt, ng) = (block[0], grid[0]);
            let total = nt * ng;
            let x: Vec<f32> = (0..8192u32).map(|i| (i % 13) as f32).collect();
            for name in names {
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let ctx = format!("{t:?} {name} {block:?}x{grid:?} {form}");
                    match name {
                        "gs_sum" => {
                            let big = (1u32 << 30) / nt; // (a stride of about 2^30)
                            for (n, k) in [(0u32, 1u32), (1, 1), (total + 3, 1), (5000, 1), (5000, 3), (3 << 30, big)] {
                                let stride = k.wrapping_mul(nt) as u64;
                                let want: Vec<f32> = (0..total as u64)
                                    .map(|gi| {
                                        let (mut sum, mut c, mut i) = (0f32, 0u32, gi);
                                        while i < n as u64 {
                                            sum += x[(i % 4096) as usize];
                                            c ^= i as u32;
                                            i += stride;
                                        }
                                        sum + (c & 0xffff) as f32
                                    })
                                    .collect();
                                let mut o = vec![7f32; total as usize];
                                let mut inp = x.clone();
                                launch(
                                    kk,
                                    grid,
                                    block,
                                    &pack(&kk.params, &[&ptr(&mut o), &ptr(&mut inp), &b(&n), &b(&k)]),
                                    0,
                                );
                                assert_eq!(o, want, "{ctx} n {n} k {k}");
                            }
                        }
                        "gs_bar" => {
                            for n in [0u32, 1, total - 1, total + 1, 5000] {
                                let want: Vec<f32> = (0..ng)
                                    .map(|gx| {
                                        (0..nt).fold(0f32, |r, t| {
                                            let (mut a, mut i) = (0f32, gx * nt + t);
                                            while i < n {
                                                a += x[i as usize];
                                                i += total;
                                            }
                                            r + a
                                        })
                                    })
                                    .collect();
                                let mut o = vec![7f32; ng as usize];
                                let mut inp = x.clone();
                                launch(kk, grid, block, &pack(&kk.params, &[&ptr(&mut o), &ptr(&mut inp), &b(&n)]), 0);
                                assert_eq!(o, want, "{ctx} n {n}");
                            }
                        }
                        _ => {
                            for n in [
                                0i64,
                                1,
                                total as i64 - 1,
                                total as i64,
                                total as i64 + 1,
                                3 * total as i64 + 5,
                                1000,
                                -5,
                            ] {
                                if n < 0 && (name == "gs_u32" || name == "gs_u64") {
                                    continue;
                                }
                                let want: Vec<f32> = (0..8192usize)
                                    .map(|i| if (i as i64) < n { 2.0 * x[i] + (i & 7) as f32 } else { 7.0 })
                                    .collect();
                                let mut o = vec![7f32; 8192];
                                let mut inp = x.clone();
                                let a = 2.0f32;
                                let (n32, n64) = (n as u32, n as u64);
                                let nb: &[u8] = if name.ends_with("64") { &b(&n64) } else { &b(&n32) };
                                launch(
                                    kk,
                                    grid,
                                    block,
                                    &pack(&kk.params, &[&ptr(&mut o), &ptr(&mut inp), &b(&a), nb]),
                                    0,
                                );
                                let bad = o.iter().zip(&want).position(|(p, q)| p != q);
                                assert!(
                                    bad.is_none(),
                                    "{ctx} n {n}: first difference at {bad:?}: {:?}",
                                    bad.map(|i| (o[i], want[i]))
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// 2-D grid-stride loops (rows by y, columns by x inside) give the host's results, generic and specialised,
/// with 2-D groups and grids and sizes that are not multiples of either (so that the last round of each
/// loop is partial: the guarded copy), empty and one-row images, unsigned and int indices (a sum carried
/// out of both loops); ol-block-stride-loops takes both loops (the x loop in the round after the y loop,
/// in the copy for rounds where every row is in range) and ol-keep-short-rows keeps the 32-wide rows for
/// the loop vectoriser. A grid-stride loop with a `break` (a second way out) is left as it is, and exact.
#[test]
fn grid_stride_2d_loops_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("grid_stride", t) else {
            return;
        };
        let bc = bitcode("grid_stride", t).unwrap();
        for k in ["gs_2d", "gs_2d_sum"] {
            let on = transform_stats(&bc, "", Some((k, [32, 4, 1])));
            let s = on.iter().find(|(kn, _)| kn == k).map(|(_, s)| *s).unwrap();
            assert!(s.of("ol-block-stride-loops") >= 2, "{t:?} {k}: {on:?}");
        }
        let on = transform_stats(&bc, "", Some(("gs_2d", [32, 4, 1])));
        let s = on.iter().find(|(kn, _)| kn == "gs_2d").map(|(_, s)| *s).unwrap();
        assert!(s.of("ol-keep-short-rows") > 0, "{t:?}: {on:?}");
        let x: Vec<f32> = (0..4096u32).map(|i| (i % 13) as f32).collect();
        for (block, grid) in [([32u32, 4, 1], [2u32, 3, 1]), ([16, 2, 1], [3, 2, 1]), ([8, 8, 1], [1, 1, 1])] {
            let (gx, gy) = (block[0] * grid[0], block[1] * grid[1]);
            let g = img.kernel("gs_2d").unwrap();
            let s = g.specialise(block, false).unwrap();
            for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                for (w, h) in
                    [(0u32, 5u32), (5, 0), (1, 1), (gx, gy), (gx + 1, gy - 1), (3 * gx + 5, 2 * gy + 3), (37, 1)]
                {
                    let want: Vec<f32> = (0..(w * h) as usize)
                        .map(|i| {
                            let (r, c) = (i as u32 / w, i as u32 % w);
                            2.0 * x[i % 4096] + ((r ^ c) & 7) as f32
                        })
                        .collect();
                    let mut o = vec![7f32; (w * h) as usize + 1];
                    let mut inp = x.clone();
                    let a = 2.0f32;
                    launch(
                        kk,
                        grid,
                        block,
                        &pack(&kk.params, &[&ptr(&mut o), &ptr(&mut inp), &b(&a), &b(&w), &b(&h)]),
                        0,
                    );
                    assert_eq!(o[(w * h) as usize], 7.0, "{t:?} gs_2d {block:?}x{grid:?} {form} {w}x{h}: past the end");
                    assert_eq!(&o[..(w * h) as usize], &want[..], "{t:?} gs_2d {block:?}x{grid:?} {form} {w}x{h}");
                }
            }
            let g = img.kernel("gs_2d_sum").unwrap();
            let s = g.specialise(block, false).unwrap();
            for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                for (w, h) in [(0i32, 3i32), (-4, 7), (gx as i32 + 3, gy as i32 * 2 + 1), (1, 100)] {
                    let want: Vec<f32> = (0..gx * gy)
                        .map(|flat| {
                            let (ry, cx) = ((flat / gx) as i32, (flat % gx) as i32);
                            let mut sum = 0f32;
                            let mut r = ry;
                            while r < h {
                                let mut c = cx;
                                while c < w {
                                    sum += x[((r * 31 + c) & 4095) as usize];
                                    c += gx as i32;
                                }
                                r += gy as i32;
                            }
                            sum
                        })
                        .collect();
                    let mut o = vec![7f32; (gx * gy) as usize];
                    let mut inp = x.clone();
                    launch(kk, grid, block, &pack(&kk.params, &[&ptr(&mut o), &ptr(&mut inp), &b(&w), &b(&h)]), 0);
                    assert_eq!(o, want, "{t:?} gs_2d_sum {block:?}x{grid:?} {form} {w}x{h}");
                }
            }
        }
        // a `break`: x[i % 4096] > 11 at i % 13 == 12, each work-item stops at its first such i
        let g = img.kernel("gs_break").unwrap();
        let (block, grid) = ([64u32, 1, 1], [3u32, 1, 1]);
        let s = g.specialise(block, false).unwrap();
        let total = 192u32;
        for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
            for n in [0u32, 100, 5000] {
                let mut want = vec![7f32; 5000];
                for gi in 0..total {
                    let mut i = gi;
                    while i < n && x[(i % 4096) as usize] <= 11.0 {
                        want[i as usize] = x[(i % 4096) as usize] + 1.0;
                        i += total;
                    }
                }
                let mut o = vec![7f32; 5000];
                let mut inp = x.clone();
                launch(kk, grid, block, &pack(&kk.params, &[&ptr(&mut o), &ptr(&mut inp), &b(&n)]), 0);
                assert_eq!(o, want, "{t:?} gs_break {form} n {n}");
            }
        }
    }
}

/// The classic CUDA sum (a grid-stride loop, a warp's butterfly, an atomic add per warp) gives the host's
/// sum, generic and specialised, for n of none, fewer than a warp, partial and many rounds, on every
/// target; the data are small integers, so that every order of adding gives the same float. Specialised
/// under warp lanes, the loop's region has two branches the same for a warp's lanes (`b + max off < n`,
/// the loop's exit test): ol-unswitch-warp-branches decides both (the second in a lane loop that the
/// first copied, where the first left blocks unreachable whose edges into the loop must go).
#[test]
fn grid_stride_warp_sums_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("grid_stride", t) else {
            return;
        };
        let bc = bitcode("grid_stride", t).unwrap();
        if t != Tgt::Spv {
            let on = transform_stats(&bc, "", Some(("gs_wsum", [256, 1, 1])));
            let s = on.iter().find(|(kn, _)| kn == "gs_wsum").map(|(_, s)| *s).unwrap();
            assert!(s.of("ol-unswitch-warp-branches") >= 3, "{t:?}: {on:?}");
        }
        let x: Vec<f32> = (0..4096u32).map(|i| (i % 7) as f32).collect();
        for (block, grid) in [([256u32, 1, 1], [3u32, 1, 1]), ([64, 1, 1], [5, 1, 1])] {
            let total = block[0] * grid[0];
            let g = img.kernel("gs_wsum").unwrap();
            let s = g.specialise(block, false).unwrap();
            for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                for n in [0u32, 5, total - 1, total + 7, 10 * total + 3] {
                    let want: f32 = (0..n).map(|i| x[(i % 4096) as usize]).sum();
                    let mut o = vec![0f32; 1];
                    let mut inp = x.clone();
                    launch(kk, grid, block, &pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&n)]), 0);
                    assert_eq!(o[0], want, "{t:?} gs_wsum {block:?}x{grid:?} {form} n {n}");
                }
            }
        }
    }
}

/// Block-stride loops (`for (j = t + c; j < n; j += nt)`, ol-block-stride-loops) between barriers give the
/// host's results, generic and specialised, for every n around the group size (none, fewer than the group,
/// partial last chunks), a uniform start offset c, two accumulators leaving the loop, 1-D groups with the
/// stride the group size and 2-D groups with the flat id and a constant stride; n near 2^32 takes the
/// original loop (the uniform one could wrap around: here with starts at or past n, so that no loop wraps).
#[test]
fn block_stride_loops_match_the_host() {
    let _g = shared();
    let src = "#include <gpuintrin.h>\n#include <stdint.h>\n\
        __gpu_kernel void k1(float *o, const float *in, uint32_t n, uint32_t c) { static __gpu_local float s[1024]; \
          uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(); float a = 0.0f, m = -1.0f; \
          for (uint32_t j = t + c; j < n; j += nt) { a += in[j % 4096]; m = __builtin_fmaxf(m, in[j % 4096]); } \
          s[t] = a + m * 1000.0f; __gpu_sync_threads(); o[__gpu_block_id_x() * nt + t] = s[nt - 1 - t]; }\n\
        __gpu_kernel void k2(float *o, const float *in, uint32_t n, uint32_t c) { static __gpu_local float s[64]; \
          uint32_t t = __gpu_thread_id_y() * 8 + __gpu_thread_id_x(); float a = 0.0f; \
          for (uint32_t j = t + c; j < n; j += 64) a += in[j % 4096] * (float)(j & 3); \
          s[t] = a; __gpu_sync_threads(); o[__gpu_block_id_x() * 64 + t] = s[63 - t]; }\n\
        __gpu_kernel void k3(float *o, const float *in, uint32_t n, uint32_t c) { static __gpu_local float s[1024]; \
          uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(); const float *row = in + (c & 7); float a = 0.0f; \
          for (uint32_t j = t; j < n; j += nt) a += row[j % 4000]; \
          s[t] = a + row[t % 8]; __gpu_sync_threads(); o[__gpu_block_id_x() * nt + t] = s[nt - 1 - t]; }\n";
    let Some(bc) = nvptx_bitcode_of(src) else {
        return;
    };
    let img = load(&bc).unwrap();
    let input: Vec<f32> = (0..4096u32).map(|i| (i % 17) as f32).collect();
    // (straight from the compiler: a launch's specialisation may come from the caches)
    let stats = transform_stats(&bc, "", Some(("k1", [64, 1, 1])));
    assert!(stats.iter().any(|(_, s)| s.of("ol-block-stride-loops") > 0), "{stats:?}");
    for (name, block) in
        [("k1", [64u32, 1, 1]), ("k1", [256, 1, 1]), ("k1", [32, 1, 1]), ("k2", [8, 8, 1]), ("k3", [64, 1, 1])]
    {
        let g = img.kernel(name).unwrap();
        let s = g.specialise(block, false).unwrap();
        let nt = block[0] * block[1];
        for (n, c) in [
            (0u32, 0u32),
            (1, 0),
            (nt - 1, 0),
            (nt, 0),
            (nt + 1, 0),
            (1000, 0),
            (1000, 3),
            (1000, 999),
            (5, 7),
            (u32::MAX - 300, u32::MAX - 290),
            (u32::MAX - 290, u32::MAX - 300),
        ] {
            if name == "k3" && n > 1 << 16 {
                continue; // (k3 starts at t: these would run 2^32 / nt rounds)
            }
            let grid = [2u32, 1, 1];
            let mut want = vec![0f32; (grid[0] * nt) as usize];
            for gx in 0..grid[0] {
                let mut per = vec![0f32; nt as usize];
                for (t, p) in per.iter_mut().enumerate() {
                    let (mut a, mut m) = (0f32, -1f32);
                    if name == "k3" {
                        // (k3 starts at t, whatever c is: c only moves its row)
                        let row = (c & 7) as usize;
                        let mut j = t as u32;
                        while j < n {
                            a += input[row + (j % 4000) as usize];
                            j = match j.checked_add(nt) {
                                Some(v) => v,
                                None => break,
                            };
                        }
                        *p = a + input[row + t % 8];
                        continue;
                    }
                    let step = if name == "k1" { nt } else { 64 };
                    let mut j = (t as u32).wrapping_add(c);
                    while j < n {
                        let v = input[(j % 4096) as usize];
                        if name == "k1" {
                            a += v;
                            m = m.max(v);
                        } else {
                            a += v * (j & 3) as f32;
                        }
                        j = j.wrapping_add(step);
                        if j < step {
                            break; // (wrapped: the kernel would go on; no case here does)
                        }
                    }
                    *p = if name == "k1" { a + m * 1000.0 } else { a };
                }
                for t in 0..nt as usize {
                    want[gx as usize * nt as usize + t] = per[nt as usize - 1 - t];
                }
            }
            for kk in [&g, &s] {
                let mut out = vec![7f32; want.len()];
                let mut inp = input.clone();
                let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp), &b(&n), &b(&c)]);
                launch(kk, grid, block, &args, 0);
                assert_eq!(out, want, "{name} {block:?} n={n} c={c}");
            }
        }
    }
}

/// Block-stride loops over the whole group that carry nothing between iterations (ol-group-loops: run by
/// one work-item, taken apart into rows where the body uses `i / C` and `i % C`) give the host's results,
/// generic and specialised: a 1-D copy into shared memory for every n around the group size (none, fewer
/// than the group, partial last rounds, more than two rounds), and a 2-D group filling a tile with a halo
/// (12 columns, 10 rows: 120 elements over 64 work-items) from an image whose right and bottom edges cut
/// it, at every tile position; a loop whose elements the work-items stored to before it, and one that only
/// some of the work-items reach, stay as they are.
#[test]
fn group_loops_match_the_host() {
    let _g = shared();
    let src = "#include <gpuintrin.h>\n#include <stdint.h>\n\
        __gpu_kernel void g1(float *o, const float *in, uint32_t n) { static __gpu_local float s[1024]; \
          uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(); \
          for (uint32_t i = t; i < n; i += nt) s[i] = in[i] * 2.0f + (float)(i & 7); \
          __gpu_sync_threads(); float a = t < n ? s[t] : 0.0f, b = t + nt < n ? s[t + nt] : 0.0f; \
          o[__gpu_block_id_x() * nt + t] = a + 1000.0f * b; }\n\
        __gpu_kernel void g2(float *o, const float *in, uint32_t w, uint32_t h) { static __gpu_local float tile[10][12]; \
          uint32_t tx = __gpu_thread_id_x(), ty = __gpu_thread_id_y(), t = ty * 8 + tx; \
          int x0 = (int)(__gpu_block_id_x() * 8) - 2, y0 = (int)(__gpu_block_id_y() * 8) - 1; \
          for (uint32_t i = t; i < 120; i += 64) { int x = x0 + (int)(i % 12), y = y0 + (int)(i / 12); \
            tile[i / 12][i % 12] = x >= 0 && y >= 0 && x < (int)w && y < (int)h ? in[y * (int)w + x] : 0.0f; } \
          __gpu_sync_threads(); uint32_t x = __gpu_block_id_x() * 8 + tx, y = __gpu_block_id_y() * 8 + ty; \
          if (x < w && y < h) o[y * w + x] = tile[ty][tx] + 10.0f * tile[ty + 2][tx + 4] + 100.0f * tile[ty + 1][tx + 2]; }\n\
        __gpu_kernel void g3(float *o, const float *in, uint32_t n) { static __gpu_local float s[1024]; \
          uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(); s[t] = -1.0f; \
          for (uint32_t i = t; i < n; i += nt) s[i] = in[i]; \
          __gpu_sync_threads(); o[__gpu_block_id_x() * nt + t] = s[t]; }\n\
        __gpu_kernel void g4(float *o, const float *in, uint32_t n) { static __gpu_local float s[1024]; \
          uint32_t t = __gpu_thread_id_x(), nt = __gpu_num_threads_x(); \
          if (t >= 16) { for (uint32_t i = t; i < n; i += nt) s[i] = in[i]; } else s[t] = -1.0f; \
          __gpu_sync_threads(); o[__gpu_block_id_x() * nt + t] = t < 16 || t < n ? s[t] : 0.0f; }\n";
    let Some(bc) = nvptx_bitcode_of(src) else {
        return;
    };
    assert!(times_fired(&bc, "g1", Some([64, 1, 1]), "ol-group-loops") > 0);
    assert!(times_fired(&bc, "g2", Some([8, 8, 1]), "ol-group-loops") > 0);
    // (g3's work-items store to the shared array before the loop: one work-item's iterations would come
    // before the others' own stores)
    assert_eq!(times_fired(&bc, "g3", Some([64, 1, 1]), "ol-group-loops"), 0);
    // (g4's loop is run by the work-items from 16 on only)
    assert_eq!(times_fired(&bc, "g4", Some([64, 1, 1]), "ol-group-loops"), 0);
    let img = load(&bc).unwrap();
    let input: Vec<f32> = (0..4096u32).map(|i| (i % 23) as f32).collect();
    for block in [[64u32, 1, 1], [256, 1, 1]] {
        let g = img.kernel("g1").unwrap();
        let s = g.specialise(block, false).unwrap();
        let nt = block[0];
        for n in [0u32, 1, nt - 1, nt, nt + 1, 2 * nt + 3, 1024] {
            let grid = [2u32, 1, 1];
            let mut want = vec![0f32; (grid[0] * nt) as usize];
            for gx in 0..grid[0] as usize {
                for t in 0..nt {
                    let sv = |i: u32| if i < n { input[i as usize] * 2.0 + (i & 7) as f32 } else { 0.0 };
                    want[gx * nt as usize + t as usize] = sv(t) + 1000.0 * sv(t + nt);
                }
            }
            for kk in [&g, &s] {
                let mut out = vec![7f32; want.len()];
                let mut inp = input.clone();
                let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp), &b(&n)]);
                launch(kk, grid, block, &args, 0);
                assert_eq!(out, want, "g1 {block:?} n={n}");
            }
        }
    }
    // g3: its own -1 overwritten by its iteration; g4: -1 below 16, its iteration from 16 on
    let g3 = |t: u32, n: u32| if t < n { input[t as usize] } else { -1.0 };
    let g4 = |t: u32, n: u32| {
        if t < 16 {
            -1.0
        } else if t < n {
            input[t as usize]
        } else {
            0.0
        }
    };
    for (name, f) in [("g3", &g3 as &dyn Fn(u32, u32) -> f32), ("g4", &g4)] {
        let g = img.kernel(name).unwrap();
        let s = g.specialise([64, 1, 1], false).unwrap();
        for n in [0u32, 10, 64, 100] {
            let want: Vec<f32> = (0..64u32).map(|t| f(t, n)).collect();
            for kk in [&g, &s] {
                let mut out = vec![7f32; 64];
                let mut inp = input.clone();
                let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp), &b(&n)]);
                launch(kk, [1, 1, 1], [64, 1, 1], &args, 0);
                assert_eq!(out, want, "{name} n={n}");
            }
        }
    }
    let g = img.kernel("g2").unwrap();
    let s = g.specialise([8, 8, 1], false).unwrap();
    for (w, h) in [(8u32, 8u32), (21, 13), (3, 30), (40, 5)] {
        let grid = [w.div_ceil(8), h.div_ceil(8), 1];
        let px = |x: i64, y: i64| {
            if x >= 0 && y >= 0 && x < w as i64 && y < h as i64 { input[(y * w as i64 + x) as usize] } else { 0.0 }
        };
        let mut want = vec![-1f32; (w * h) as usize];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                want[(y * w as i64 + x) as usize] = px(x - 2, y - 1) + 10.0 * px(x + 2, y + 1) + 100.0 * px(x, y);
            }
        }
        for kk in [&g, &s] {
            let mut out = vec![-1f32; want.len()];
            let mut inp = input.clone();
            let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp), &b(&w), &b(&h)]);
            launch(kk, grid, [8, 8, 1], &args, 0);
            assert_eq!(out, want, "g2 {w}x{h}");
        }
    }
}

/// Warp collectives that a warp's lanes reach apart (ffi-tests/kernels/warp_apart.c: the two sides of a
/// divergent branch, lanes that returned before it, gpuintrin's match_any loop on amdgcn, in which each lane
/// leaves in its own iteration, and nvptx64's match.any/match.all.sync) see only the lanes that reach them
/// together, the GPU's active lanes: the lane mask, ballots, the first lane, matches; generic and
/// specialised, in groups of whole and of partial warps. (Before, every lane that existed was active: a
/// lane mask of the whole warp, and amdgcn's match_any loop never ended.)
#[test]
fn warp_collectives_see_the_active_lanes() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("warp_apart", t) else {
            return;
        };
        let w = img.kernel("sides").unwrap().warp_size as usize;
        if t == Tgt::Amd {
            // (gpuintrin's match_any loop, one collective: ol-match-loops)
            let bc = bitcode("warp_apart", t).unwrap();
            for (k, spec) in
                [("leave", None), ("keyed", None), ("keyed", Some([64, 1, 1])), ("keyed", Some([96, 1, 1]))]
            {
                assert!(times_fired(&bc, k, spec, "ol-match-loops") > 0, "{k} {spec:?}");
            }
        }
        let groups = 3usize;
        for nt in [w, 2 * w, w + w / 2, 33, 5] {
            let n = groups * nt;
            let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 9).collect();
            let bits = |ls: &mut dyn Iterator<Item = usize>| ls.fold(0u64, |m, l| m | 1 << l);
            // the host's results: per warp (wb: its first work-item, its lanes those of the group from there)
            let (mut sides, mut leave) = (vec![0u64; 3 * n], vec![9u64; 3 * n]);
            let mut hist = vec![0u32; 16];
            for g in 0..groups {
                for wb in (0..nt).step_by(w) {
                    let lanes: Vec<usize> = (wb..nt.min(wb + w)).map(|t| g * nt + t).collect();
                    let v = |l: usize| input[lanes[l]];
                    let on = |f: &dyn Fn(usize) -> bool| (0..lanes.len()).filter(|l| f(*l)).collect::<Vec<_>>();
                    for odd in [true, false] {
                        let side = on(&|l| (v(l) & 1 == 1) == odd);
                        let m = bits(&mut side.iter().copied());
                        let bit = if odd { 2 } else { 4 };
                        let b = bits(&mut side.iter().copied().filter(|l| v(*l) & bit != 0));
                        for &l in &side {
                            let i = lanes[l];
                            let first = lanes[side[0]] as u64;
                            sides[3 * i..3 * i + 3].copy_from_slice(&[m, b, if odd { first } else { first * 3 }]);
                        }
                    }
                    let stay = on(&|l| v(l) % 3 != 0);
                    let m = bits(&mut stay.iter().copied());
                    for &l in &stay {
                        let i = lanes[l];
                        let same = bits(&mut stay.iter().copied().filter(|k| v(*k) % 4 == v(l) % 4));
                        let all = stay.iter().all(|k| lanes[*k] / 40 == i / 40);
                        let odd = bits(&mut stay.iter().copied().filter(|k| v(*k) & 1 == 1));
                        leave[3 * i..3 * i + 3].copy_from_slice(&[odd, same, if all { m } else { 0 }]);
                    }
                }
            }
            for v in &input {
                hist[(v % 16) as usize] += 1;
            }
            // (guarded_sum on nvptx64: the last warp of each group stops 3 lanes short of the group's end)
            let stop = |g: usize| g * nt + nt - 3.min(nt - 1);
            // (a lane outside the mask gives 0: the butterfly over the active lanes, not their sum everywhere)
            let mut gsum = vec![7u32; n];
            for g in 0..groups {
                for wb in (0..nt).step_by(w) {
                    let first = g * nt + wb;
                    let on = |l: usize| first + l < (g * nt + nt.min(wb + w)).min(stop(g));
                    let mut v: Vec<u32> = (0..w).map(|l| if on(l) { input[first + l] } else { 0 }).collect();
                    let mut off = w / 2;
                    while off > 0 {
                        v = (0..w).map(|l| v[l].wrapping_add(if on(l ^ off) { v[l ^ off] } else { 0 })).collect();
                        off /= 2;
                    }
                    (0..w).filter(|l| on(*l)).for_each(|l| gsum[first + l] = v[l]);
                }
            }
            // (reduces, nvptx64: add, umin, signed max and the even lanes' xor over the lanes with v % 5 != 0,
            // and the sum over them of their mask's low 3 bits)
            let mut red = vec![7u32; 5 * n];
            for g in 0..groups {
                for wb in (0..nt).step_by(w) {
                    let first = g * nt + wb;
                    let on: Vec<usize> =
                        (0..nt.min(wb + w) - wb).filter(|l| !input[first + l].is_multiple_of(5)).collect();
                    let vals = || on.iter().map(|l| input[first + l]);
                    let mask = on.iter().fold(0u64, |m, l| m | 1 << l); // (computed for 64 lanes too, unused)
                    let r = [
                        vals().fold(0u32, |a, v| a.wrapping_add(v)),
                        vals().min().unwrap_or(0),
                        vals().map(|v| v as i32).max().unwrap_or(0) as u32,
                        on.iter().filter(|l| *l % 2 == 0).fold(0, |a, l| a ^ input[first + l]),
                        on.len() as u32 * (mask & 7) as u32,
                    ];
                    on.iter().for_each(|l| red[5 * (first + l)..5 * (first + l) + 5].copy_from_slice(&r));
                }
            }
            for name in ["sides", "leave", "keyed", "guarded_sum", "reduces"] {
                if (name == "guarded_sum" || name == "reduces") && t != Tgt::Nv {
                    continue; // (amdgcn's and spirv64's shuffles read lanes outside the mask: undefined)
                }
                let g = img.kernel(name).unwrap();
                let s = g.specialise([nt as u32, 1, 1], false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let ctx = format!("{t:?} {name} [{nt}, 1, 1] {form}");
                    let mut inp = input.clone();
                    let grid = [groups as u32, 1, 1];
                    let block = [nt as u32, 1, 1];
                    if name == "guarded_sum" {
                        // (each group's own n: one group at a time)
                        for gi in 0..groups {
                            let mut o = vec![7u32; n];
                            let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&(stop(gi) as u32))]);
                            launch(kk, [gi as u32 + 1, 1, 1], block, &args, 0);
                            let want = &gsum[gi * nt..(gi + 1) * nt];
                            assert_eq!(&o[gi * nt..(gi + 1) * nt], want, "{ctx} group {gi}");
                        }
                        continue;
                    }
                    if name == "reduces" {
                        let mut o = vec![7u32; 5 * n];
                        let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o)]);
                        launch(kk, grid, block, &args, 0);
                        assert_eq!(o, red, "{ctx}");
                        continue;
                    }
                    if name == "keyed" {
                        let mut h = vec![0u32; 16];
                        let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut h), &b(&(n as u32))]);
                        launch(kk, grid, block, &args, 0);
                        assert_eq!(h, hist, "{ctx}");
                        continue;
                    }
                    let mut out = vec![9u64; 3 * n];
                    let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut out)]);
                    launch(kk, grid, block, &args, 0);
                    let want = if name == "sides" { &sides } else { &leave };
                    if let Some(i) = (0..3 * n).find(|i| out[*i] != want[*i]) {
                        panic!("{ctx}: work-item {} value {}: {:#x}, the host {:#x}", i / 3, i % 3, out[i], want[i]);
                    }
                }
            }
        }
    }
}

/// Work-items that leave early while the others go on to barriers and warp collectives (ffi-tests/kernels/
/// early_exits.c: a bounds guard around a group barrier, a data-dependent return between barriers with
/// rounds of barriers after it, a return before a ballot, nvptx64's warp butterfly behind a return) give the
/// host's results, generic and specialised, in groups of whole and partial warps and for every n around the
/// groups' ends; the specialisations run under uniform barriers or warp lanes with the lanes that left marked
/// (ol-early-exits), not the general scheduler.
#[test]
fn early_exits_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("early_exits", t) else {
            return;
        };
        let bc = bitcode("early_exits", t).unwrap();
        let w = img.kernel("guard").unwrap().warp_size as usize;
        assert!(times_fired(&bc, "guard", Some([64, 1, 1]), "ol-early-exits") > 0, "{t:?}");
        assert!(times_fired(&bc, "ballots", Some([2 * w as u32, 1, 1]), "ol-early-exits") > 0, "{t:?}");
        let groups = 3usize;
        for nt in [w, 2 * w, w + w / 2, 48, 5, 256] {
            let len = groups * nt;
            let input: Vec<f32> = (0..len).map(|i| ((i * 7) % 11) as f32 - 3.0).collect();
            let mut ns = vec![0usize, 1, nt - 1, nt, nt + 1, 2 * nt - 3, len - 1, len];
            ns.retain(|n| *n <= len);
            for name in ["guard", "rounds", "ballots", "wsums"] {
                if name == "wsums" && t != Tgt::Nv {
                    continue; // (amdgcn's and spirv64's shuffles read lanes outside the mask: undefined)
                }
                let g = img.kernel(name).unwrap();
                let s = g.specialise([nt as u32, 1, 1], false).unwrap();
                let block = [nt as u32, 1, 1];
                let grid = [groups as u32, 1, 1];
                for &n in if name == "rounds" { &[0usize, 1, 2, 5][..] } else { &ns[..] } {
                    let (mut fwant, mut uwant) = (vec![7f32; len], vec![7u32; 2 * len]);
                    for gi in 0..groups {
                        let base = gi * nt;
                        let live = n.saturating_sub(base).min(nt);
                        let x = |t: usize| input[base + t];
                        match name {
                            "guard" => (0..live).for_each(|t| fwant[base + t] = x((t + 1) % live) * 2.0 + x(t)),
                            "rounds" => {
                                let stay: Vec<usize> = (0..nt).filter(|t| x(*t) >= 0.0).collect();
                                let mut sh: Vec<f32> = (0..nt).map(x).collect();
                                let mut a = sh.clone();
                                for k in 0..n {
                                    stay.iter().for_each(|&t| a[t] += sh[(t + k) % nt]);
                                    stay.iter().for_each(|&t| sh[t] = a[t]);
                                }
                                (0..nt).for_each(|t| fwant[base + t] = if x(t) < 0.0 { -1.0 } else { a[t] });
                            }
                            "ballots" => {
                                let count = |wb: usize| (wb..live.min(wb + w)).filter(|t| x(*t) > 0.0).count() as u32;
                                for t in 0..live {
                                    uwant[2 * (base + t)] = count(t / w * w);
                                    uwant[2 * (base + t) + 1] = count(0);
                                }
                            }
                            _ => {
                                // (a lane outside the mask gives 0: each warp's butterfly over its live lanes)
                                let mut sum = 0f32;
                                for wb in (0..live).step_by(w) {
                                    let on = |l: usize| wb + l < live;
                                    let mut v: Vec<f32> = (0..w).map(|l| if on(l) { x(wb + l) } else { 0.0 }).collect();
                                    let mut d = w / 2;
                                    while d > 0 {
                                        v = (0..w).map(|l| v[l] + if on(l ^ d) { v[l ^ d] } else { 0.0 }).collect();
                                        d /= 2;
                                    }
                                    sum += v[0];
                                }
                                if live > 0 {
                                    fwant[gi] = sum;
                                }
                            }
                        }
                    }
                    for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                        let ctx = format!("{t:?} {name} [{nt}, 1, 1] n={n} {form}");
                        let mut inp = input.clone();
                        let (mut fo, mut uo) = (vec![7f32; len], vec![7u32; 2 * len]);
                        let out = if name == "ballots" { ptr(&mut uo) } else { ptr(&mut fo) };
                        let args = pack(&kk.params, &[&ptr(&mut inp), &out, &b(&(n as u32))]);
                        launch(kk, grid, block, &args, 0);
                        if name == "ballots" {
                            assert_eq!(uo, uwant, "{ctx}");
                        } else {
                            assert_eq!(fo, fwant, "{ctx}");
                        }
                    }
                }
            }
        }
    }
}

/// gpuintrin's match_any where the target has no match instruction (a loop on amdgcn and spirv64;
/// ol-match-loops makes it one collective), of 32- and 64-bit keys (a 64-bit one known to fit in 32 bits,
/// one that does not) behind a branch some lanes do not take,
/// gives the host's results, generic and specialised, in groups of one and a half warps and of five
/// work-items: each active lane gets the active lanes of its warp with its key.
#[test]
fn match_loops_match_the_host() {
    let _g = shared();
    let src = format!(
        "{H}__gpu_kernel void k64(uint64_t *o, const uint64_t *in) {{ if (in[G] != 3) o[G] = __gpu_match_any_u64(__gpu_lane_mask(), in[G] >> 40); }}\n\
         __gpu_kernel void k64w(uint64_t *o, const uint64_t *in) {{ if (in[G] != 3) o[G] = __gpu_match_any_u64(__gpu_lane_mask(), in[G]); }}\n\
         __gpu_kernel void k32(uint64_t *o, const uint64_t *in) {{ if (in[G] != 3) o[G] = __gpu_match_any_u32(__gpu_lane_mask(), (uint32_t)(in[G] >> 40)); }}\n"
    );
    for t in [Tgt::Amd, Tgt::Spv] {
        let Some(bc) = bitcode_of_source(&src, t) else {
            return;
        };
        for k in ["k64", "k64w", "k32"] {
            assert!(times_fired(&bc, k, None, "ol-match-loops") > 0, "{t:?} {k}");
        }
        let img = load(&bc).unwrap();
        for k in ["k64", "k64w", "k32"] {
            let g = img.kernel(k).unwrap();
            let w = g.warp_size as usize;
            for nt in [w + w / 2, 5] {
                let groups = 3;
                let n = groups * nt;
                // (k64w's key is the whole value: 15 of them, in both halves)
                let input: Vec<u64> = (0..n as u64)
                    .map(|i| match i {
                        _ if i % 7 == 2 => 3,
                        _ if k == "k64w" => (i.wrapping_mul(2654435761) % 5) << 40 | (i % 3) << 8 | 1,
                        _ => (i.wrapping_mul(2654435761) % 5) << 40 | i,
                    })
                    .collect();
                let key = |v: u64| if k == "k64w" { v } else { v >> 40 };
                let mut want = vec![9u64; n];
                for g0 in (0..n).step_by(nt) {
                    for wb in (g0..g0 + nt).step_by(w) {
                        let lanes: Vec<usize> = (wb..(wb + w).min(g0 + nt)).filter(|i| input[*i] != 3).collect();
                        for &i in &lanes {
                            let same = lanes.iter().filter(|j| key(input[**j]) == key(input[i]));
                            want[i] = same.fold(0u64, |m, j| m | 1 << (j - wb));
                        }
                    }
                }
                let s = g.specialise([nt as u32, 1, 1], false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let (mut out, mut inp) = (vec![9u64; n], input.clone());
                    let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp)]);
                    launch(kk, [groups as u32, 1, 1], [nt as u32, 1, 1], &args, 0);
                    assert_eq!(out, want, "{t:?} {k} [{nt}, 1, 1] {form}");
                }
            }
        }
    }
}

/// Warp collectives without group barriers, a private array live across them (indexed at run time, so it
/// stays an array slot): the host's results, generic and specialised in 1- and 2-D groups of whole warps,
/// nvptx64 and amdgcn. Specialised, a warp's regions follow one another without the scheduler
/// (ol-chain-warp-regions) and its slots are on the stack (ol-warp-local-slots), but a slot that would take
/// the stack past 64 KiB (4 KiB a lane: in the group's scratch, as before).
#[test]
fn warp_local_slots_match_the_host() {
    let _g = shared();
    let body = |n: usize| {
        format!(
            "uint32_t i = (__gpu_block_id_x() * __gpu_num_threads_y() + __gpu_thread_id_y()) * N + T; \
             uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(), x = in[i], a[{n}]; \
             for (uint32_t j = 0; j < {n}; j++) a[j] = x * (j + 1); \
             uint32_t v = a[x % 8]; v += __gpu_shuffle_idx_u32(__gpu_lane_mask(), l ^ 1, v, w); a[v % 8] += v; \
             v += __gpu_shuffle_idx_u32(__gpu_lane_mask(), (l + 3) % w, a[(v >> 3) % 8], w); o[i] = v + a[l % 8];"
        )
    };
    let src = format!(
        "{H}__gpu_kernel void small(uint32_t *o, const uint32_t *in) {{ {} }}\n\
         __gpu_kernel void big(uint32_t *o, const uint32_t *in) {{ {} }}\n",
        body(8),
        body(1024)
    );
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(bc) = bitcode_of_source(&src, t) else {
            return;
        };
        let img = load(&bc).unwrap();
        for k in ["small", "big"] {
            let g = img.kernel(k).unwrap();
            let w = g.warp_size as usize;
            let local = times_fired(&bc, k, Some([2 * w as u32, 1, 1]), "ol-warp-local-slots");
            assert!(local > 0, "{t:?} {k}: ol-warp-local-slots did not fire");
            // (small's array of 32 bytes a lane is on the stack, W of them; big's of 4 KiB a lane stays in the
            // group's scratch: the stack it takes is below 64 KiB)
            let spec = g.specialise([2 * w as u32, 1, 1], false).unwrap();
            let stack = spec.code().map_or(0, |c| c.stack_bytes.unwrap_or(0));
            assert!(stack < 64 << 10 && (k == "big" || stack >= 32 * w), "{t:?} {k}: {stack} bytes of stack");
            let chained = times_fired(&bc, k, Some([2 * w as u32, 1, 1]), "ol-chain-warp-regions");
            assert!(chained > 0, "{t:?} {k}: ol-chain-warp-regions did not fire");
            for block in [[2 * w as u32, 1, 1], [w as u32, 2, 1]] {
                let nt = (block[0] * block[1]) as usize;
                let groups = 3;
                let n = groups * nt;
                let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 9).collect();
                let mut want = vec![0u32; n];
                for wb in (0..n).step_by(w) {
                    let x = |l: usize| input[wb + l];
                    let v1: Vec<u32> = (0..w)
                        .map(|l| {
                            let v = |l: usize| x(l).wrapping_mul(x(l) % 8 + 1);
                            v(l).wrapping_add(v(l ^ 1))
                        })
                        .collect();
                    let arr: Vec<[u32; 8]> = (0..w)
                        .map(|l| {
                            let mut a: [u32; 8] = std::array::from_fn(|j| x(l).wrapping_mul(j as u32 + 1));
                            a[(v1[l] % 8) as usize] = a[(v1[l] % 8) as usize].wrapping_add(v1[l]);
                            a
                        })
                        .collect();
                    for l in 0..w {
                        let src = (l + 3) % w;
                        let v2 = v1[l].wrapping_add(arr[src][((v1[src] >> 3) % 8) as usize]);
                        want[wb + l] = v2.wrapping_add(arr[l][l % 8]);
                    }
                }
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let (mut out, mut inp) = (vec![0u32; n], input.clone());
                    let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp)]);
                    launch(kk, [groups as u32, 1, 1], block, &args, 0);
                    assert_eq!(out, want, "{t:?} {k} {block:?} {form}");
                }
            }
        }
    }
}

/// Warp collectives of every exchange kind (shuffles of 32- and 64-bit integers and floats, a ballot, a read of
/// the first lane, gpuintrin's lane sum) on both sides of a group barrier, the same areas used again after it:
/// the host's results, generic and specialised, in 1- and 2-D groups of whole warps, nvptx64 and amdgcn.
/// Specialised, the exchange areas are one warp's, on the stack (ol-warp-local-exchanges), and hold nothing of
/// the group's scratch.
#[test]
fn warp_local_exchanges_match_the_host() {
    let _g = shared();
    let src = format!(
        "{H}__gpu_kernel void k(uint32_t *o, const uint32_t *in) {{ static __gpu_local uint32_t s[512]; \
           uint32_t nt = N * __gpu_num_threads_y(), t = __gpu_thread_id_y() * N + T, i = __gpu_block_id_x() * nt + t; \
           uint64_t m = __gpu_lane_mask(); uint32_t l = __gpu_lane_id(), w = __gpu_num_lanes(), x = in[i]; \
           uint32_t a = __gpu_shuffle_idx_u32(m, l ^ 1, x, w); \
           uint32_t b = __gpu_shuffle_idx_u32(m, (l + w - 3) % w, x, w); \
           uint64_t c = __gpu_shuffle_idx_u64(m, (l + 5) % w, ((uint64_t)x << 33) | a, w); \
           float f = __gpu_shuffle_idx_f32(m, w - 1 - l, (float)(x & 1023), w); \
           uint32_t bal = (uint32_t)__builtin_popcountll(__gpu_ballot(m, x & 1)); \
           uint32_t first = __gpu_read_first_lane_u32(m, b), sum = __gpu_lane_sum_u32(m, x & 255); \
           s[t] = a + b; __gpu_sync_threads(); uint32_t y = s[nt - 1 - t]; \
           uint32_t d = __gpu_shuffle_idx_u32(m, l ^ 2, y, w); \
           o[i] = a ^ (b * 3) ^ (uint32_t)(c >> 7) ^ (uint32_t)f ^ (bal * 5) ^ (first << 1) ^ (sum * 7) ^ (d << 2); }}\n"
    );
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(bc) = bitcode_of_source(&src, t) else {
            return;
        };
        let img = load(&bc).unwrap();
        let g = img.kernel("k").unwrap();
        let w = g.warp_size as usize;
        for block in [[2 * w as u32, 1, 1], [w as u32, 2, 1]] {
            let fired = times_fired(&bc, "k", Some(block), "ol-warp-local-exchanges");
            assert!(fired > 0, "{t:?} {block:?}: ol-warp-local-exchanges did not fire");
            let nt = (block[0] * block[1]) as usize;
            let groups = 3;
            let n = groups * nt;
            let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 7).collect();
            let mut want = vec![0u32; n];
            for gb in (0..n).step_by(nt) {
                let x = |t: usize| input[gb + t];
                let a = |t: usize| x(t - t % w + ((t % w) ^ 1));
                let b = |t: usize| x(t - t % w + (t % w + w - 3) % w);
                let y = |t: usize| a(nt - 1 - t).wrapping_add(b(nt - 1 - t));
                for tt in 0..nt {
                    let (base, l) = (tt - tt % w, tt % w);
                    let cs = base + (l + 5) % w;
                    let c = ((x(cs) as u64) << 33) | a(cs) as u64;
                    let f = x(base + w - 1 - l) & 1023;
                    let bal = (base..base + w).filter(|&u| x(u) & 1 != 0).count() as u32;
                    let sum = (base..base + w).fold(0u32, |s, u| s.wrapping_add(x(u) & 255));
                    let d = y(base + (l ^ 2));
                    want[gb + tt] = a(tt)
                        ^ b(tt).wrapping_mul(3)
                        ^ (c >> 7) as u32
                        ^ f
                        ^ bal.wrapping_mul(5)
                        ^ (b(base) << 1)
                        ^ sum.wrapping_mul(7)
                        ^ (d << 2);
                }
            }
            let s = g.specialise(block, false).unwrap();
            for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                let (mut out, mut inp) = (vec![0u32; n], input.clone());
                let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp)]);
                launch(kk, [groups as u32, 1, 1], block, &args, 0);
                assert_eq!(out, want, "{t:?} {block:?} {form}");
            }
        }
    }
}

/// Bounds guards around a ballot and a group barrier (the work-items out of range leave early): the host's
/// results, generic and specialised, nvptx64 and amdgcn, for bounds around the groups' ends, where the
/// guarded index wraps around 2^32 inside a group (unsigned), crosses 2^31 (signed), is 64-bit, and in 2-D
/// (`x < w && y < h`). Specialised, the groups all of whose work-items pass run a copy without the guard
/// (ol-full-groups), the others the body with its early exits; neither is the host's to tell.
#[test]
fn full_groups_match_the_host() {
    let _g = shared();
    // (BODY(idx, t): the lanes of the warp still in it with odd inputs, and the work-item's own value through
    // shared memory across a group barrier)
    let src = format!(
        "{H}#define BODY(idx, t) {{ uint32_t v = in[idx]; uint64_t b = __gpu_ballot(__gpu_lane_mask(), v & 1); \
         s[t] = v; __gpu_sync_threads(); o[idx] = (uint32_t)__builtin_popcountll(b) + s[t] * 3; }}\n\
         __gpu_kernel void ku(uint32_t *o, const uint32_t *in, uint32_t off, int32_t n) {{ static __gpu_local uint32_t s[256]; \
           uint32_t i = G + off; if (i < (uint32_t)n) BODY(G, T) }}\n\
         __gpu_kernel void ks(uint32_t *o, const uint32_t *in, uint32_t off, int32_t n) {{ static __gpu_local uint32_t s[256]; \
           int32_t i = (int32_t)(G + off); if (i >= n) return; BODY(G, T) }}\n\
         __gpu_kernel void k64(uint32_t *o, const uint32_t *in, uint32_t off, int32_t n) {{ static __gpu_local uint32_t s[256]; \
           uint64_t i = (uint64_t)__gpu_block_id_x() * N + T + off; if (i < (uint64_t)(uint32_t)n + 0x100000000ull) BODY(G, T) }}\n\
         __gpu_kernel void k2(uint32_t *o, const uint32_t *in, uint32_t off, int32_t n) {{ static __gpu_local uint32_t s[256]; \
           uint32_t x = G, y = __gpu_block_id_y() * __gpu_num_threads_y() + __gpu_thread_id_y(); \
           if (x < off && y < (uint32_t)n) BODY(y * __gpu_num_blocks_x() * N + x, __gpu_thread_id_y() * N + T) }}\n"
    );
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(bc) = bitcode_of_source(&src, t) else {
            return;
        };
        let img = load(&bc).unwrap();
        for k in ["ku", "ks", "k64", "k2"] {
            let g = img.kernel(k).unwrap();
            let w = g.warp_size as usize;
            let block: [u32; 3] = if k == "k2" { [w as u32, 4, 1] } else { [256, 1, 1] };
            let grid: [u32; 3] = if k == "k2" { [3, 3, 1] } else { [4, 1, 1] };
            let fired = times_fired(&bc, k, Some(block), "ol-full-groups");
            assert!(fired > 0, "{t:?} {k}: ol-full-groups did not fire at {block:?}");
            let (nx, ny) = ((grid[0] * block[0]) as usize, (grid[1] * block[1]) as usize);
            let nt = (block[0] * block[1]) as usize;
            let n = nx * ny;
            // (off, n): bounds around the groups' ends; wrapping around 2^32 (ku, k64), crossing 2^31 (ks)
            let cases: &[(u32, i32)] = match k {
                "k2" => &[(0, 5), (nx as u32, 12), (w as u32 + 3, 4), (nx as u32 - 1, 7), (2 * w as u32, 0)],
                // (0x7fff_fef5: group 1's ids pass, reach i32::MAX, which leaves, and pass again as negatives)
                "ks" => &[
                    (0, 0),
                    (0, 300),
                    (0, -5),
                    (0x7fff_ff00, i32::MAX),
                    (0x7fff_fef5, i32::MAX),
                    (0x7fff_ff00, -2_000_000_000),
                    (0, 1024),
                ],
                "k64" => &[(0, 0), (0, 511), (0xffff_ff00, 0), (0xffff_ff00, 0x100)],
                // (0xffff_fe7f, -128: group 1's ids pass below 0xffff_ff80, leave up to 2^32 - 1, and pass again
                // from 0 after the wrap)
                _ => &[
                    (0, 0),
                    (0, 1),
                    (0, 256),
                    (0, 300),
                    (0, 1024),
                    (0xffff_fe00, 0x100),
                    (0xffff_ff00, 1000),
                    (0xffff_fe7f, -128),
                ],
            };
            let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 5).collect();
            for &(off, bound) in cases {
                // which work-items pass the guard (by output index), and each warp's lanes: the group's flat
                // local ids in rows of W
                let pass = |gx: usize, gy: usize, lx: usize, ly: usize| -> Option<usize> {
                    let x = gx * block[0] as usize + lx;
                    match k {
                        "ku" => ((x as u32).wrapping_add(off) < bound as u32).then_some(x),
                        "ks" => (((x as u32).wrapping_add(off) as i32) < bound).then_some(x),
                        "k64" => (x as u64 + off as u64 <= bound as u32 as u64 + 0xffff_ffff).then_some(x),
                        _ => {
                            let y = gy * block[1] as usize + ly;
                            ((x as u32) < off && (y as u32) < bound as u32).then_some(y * nx + x)
                        }
                    }
                };
                let mut want = vec![7u32; n];
                for gy in 0..grid[1] as usize {
                    for gx in 0..grid[0] as usize {
                        let ids: Vec<Option<usize>> =
                            (0..nt).map(|f| pass(gx, gy, f % block[0] as usize, f / block[0] as usize)).collect();
                        for lanes in ids.chunks(w) {
                            let odd = lanes.iter().flatten().filter(|&&i| input[i] & 1 == 1).count() as u32;
                            for &i in lanes.iter().flatten() {
                                want[i] = odd + input[i].wrapping_mul(3);
                            }
                        }
                    }
                }
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let (mut out, mut inp) = (vec![7u32; n], input.clone());
                    let args = pack(&kk.params, &[&ptr(&mut out), &ptr(&mut inp), &b(&off), &b(&bound)]);
                    launch(kk, grid, block, &args, 0);
                    assert_eq!(out, want, "{t:?} {k} off {off:#x} n {bound} {form}");
                }
            }
        }
    }
}

/// A shared tile the whole group fills with a loop of a constant bound (bench/kernels/classes.c's conv1d: a
/// 17-tap convolution's tile of 256 + 16 with a halo, its 64-bit index checked against the input's ends)
/// gives the host's results, generic and specialised, for every n around the groups' ends; in the
/// specialisation for its group size the loop is one work-item's plain loop (ol-group-loops; clang leaves
/// it behind a guard and a preheader, and amdgcn reads the group's size from its implicit arguments
/// before it). (Before, its second round was a masked vector store per 8 work-items into the guard page
/// after the tile: right, but a microcode assist each with AVX2 code.)
#[test]
fn halo_tiles_match_the_host() {
    let _g = shared();
    const WG: usize = 256;
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(bc) = bitcode_of("bench/kernels/classes.c", t) else {
            return;
        };
        assert!(times_fired(&bc, "conv1d", Some([WG as u32, 1, 1]), "ol-group-loops") > 0, "{t:?}");
        let img = load(&bc).unwrap();
        let g = img.kernel("conv1d").unwrap();
        let s = g.specialise([WG as u32, 1, 1], false).unwrap();
        let groups = 3usize;
        let len = groups * WG;
        // (small integers: every sum exact, whatever the order and contraction)
        let input: Vec<f32> = (0..len).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let wts: Vec<f32> = (0..17).map(|j| (j % 4) as f32 + 1.0).collect();
        for n in [0usize, 1, 7, WG - 1, WG, WG + 1, WG + 8, 2 * WG + 3, len] {
            let x = |i: i64| if i >= 0 && (i as usize) < n { input[i as usize] } else { 0.0 };
            let mut want = vec![7f32; len];
            (0..n).for_each(|g| want[g] = (0..17).map(|j| wts[j] * x(g as i64 + j as i64 - 8)).sum());
            for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                let (mut i, mut w, mut out) = (input.clone(), wts.clone(), vec![7f32; len]);
                let args = pack(&kk.params, &[&ptr(&mut i), &ptr(&mut w), &ptr(&mut out), &b(&(n as u32))]);
                launch(kk, [groups as u32, 1, 1], [WG as u32, 1, 1], &args, 0);
                assert_eq!(out, want, "{t:?} n={n} {form}");
            }
        }
    }
}

/// A row per warp whose lanes stride over it (ffi-tests/kernels/warp_rows.c: `for (j = lane; j < n; j += W)`, a
/// row's sum and maximum, then the row written) and a loop the same for a warp's lanes with work per lane
/// (a dot product of the row with each lane's column) give the host's results, generic and specialised, for
/// rows shorter than a warp, of whole warps and longer, with the last warps of the last group past the rows;
/// in the specialisations of whole warps the strided loops are one loop per warp with the lanes inside
/// (ol-block-stride-loops, then ol-implicit-loop-barriers' warp barriers around them).
#[test]
fn warp_stride_loops_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("warp_rows", t) else {
            return;
        };
        let bc = bitcode("warp_rows", t).unwrap();
        let w = img.kernel("rows").unwrap().warp_size as usize;
        let spec = Some([2 * w as u32, 1, 1]);
        assert!(times_fired(&bc, "rows", spec, "ol-block-stride-loops") >= 2, "{t:?}");
        assert!(times_fired(&bc, "rows", spec, "ol-implicit-loop-barriers") >= 2, "{t:?}");
        assert!(times_fired(&bc, "dots", spec, "ol-implicit-loop-barriers") >= 1, "{t:?}");
        let x: Vec<f32> = (0..64).map(|i| (i % 8) as f32).collect();
        // (whole warps only: `row = gid / W` of a group of partial warps names rows across two warps)
        for nt in [w, 2 * w, 4 * w] {
            let groups = 3usize;
            let warps = groups * nt / w;
            for cols in [0usize, 1, w - 1, w, w + 1, 100, 1000] {
                for nrows in [1usize, warps - 1] {
                    let input: Vec<f32> = (0..nrows * cols.max(1)).map(|i| ((i * 7) % 13) as f32).collect();
                    let (mut rwant, mut dwant) = (vec![7f32; nrows * cols.max(1)], vec![7f32; groups * nt]);
                    for row in 0..nrows {
                        let r = &input[row * cols..(row + 1) * cols];
                        let (s, m) = (r.iter().sum::<f32>(), r.iter().fold(-1f32, |a, v| a.max(*v)));
                        (1..cols).for_each(|j| rwant[row * cols + j] = r[j] - m + s);
                    }
                    for gi in 0..groups {
                        for wb in (0..nt).step_by(w) {
                            let row = (gi * nt + wb) / w;
                            if row >= nrows || cols > 200 {
                                continue;
                            }
                            let r = &input[row * cols..(row + 1) * cols];
                            let acc: Vec<f32> =
                                (0..w).map(|l| (0..cols).map(|k| r[k] * x[(k + l) % 64]).sum::<f32>()).collect();
                            for l in 0..w {
                                dwant[gi * nt + wb + l] = acc[l] + acc[(l + 1) % w] + x[l] * 3.0;
                            }
                        }
                    }
                    for name in ["rows", "dots"] {
                        if name == "dots" && cols > 200 {
                            continue;
                        }
                        let g = img.kernel(name).unwrap();
                        let s = g.specialise([nt as u32, 1, 1], false).unwrap();
                        for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                            let ctx = format!("{t:?} {name} [{nt}, 1, 1] cols={cols} rows={nrows} {form}");
                            let mut inp = input.clone();
                            let mut xs = x.clone();
                            let (nr, nc) = (nrows as u32, cols as u32);
                            if name == "rows" {
                                let mut o = vec![7f32; rwant.len()];
                                let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&nr), &b(&nc)]);
                                launch(kk, [groups as u32, 1, 1], [nt as u32, 1, 1], &args, 0);
                                assert_eq!(o, rwant, "{ctx}");
                            } else {
                                let mut o = vec![7f32; dwant.len()];
                                let args =
                                    pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut xs), &ptr(&mut o), &b(&nr), &b(&nc)]);
                                launch(kk, [groups as u32, 1, 1], [nt as u32, 1, 1], &args, 0);
                                assert_eq!(o, dwant, "{ctx}");
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Warp collectives between group barriers (ffi-tests/kernels/warp_lanes.c) give the host's results, generic
/// and specialised, in 1-, 2- and 3-D groups of whole warps on every target; ol-warp-lanes runs the
/// specialisations whose x size is a multiple of the warp (and only those) warp by warp, consecutive
/// exchanges in two areas with one barrier each (ol-alternate-exchanges), `wsum`'s branch
/// around the first warp's shuffles decided once per warp (ol-unswitch-warp-branches). `shifts` reads
/// its shuffles at fixed lane distances (ol-lane-offset-reads) in every specialisation of whole warps,
/// the lane loops that compare lanes unrolled after the vectoriser (ol-unroll-lane-vectors).
#[test]
fn warp_lanes_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("warp_lanes", t) else {
            return;
        };
        let w = img.kernel("wsum").unwrap().warp_size as usize;
        let bc = bitcode("warp_lanes", t).unwrap();
        for k in ["wsum", "lib", "rounds"] {
            let on = |spec: Option<[u32; 3]>| times_fired(&bc, k, spec, "ol-warp-lanes");
            assert!(
                on(Some([2 * w as u32, 1, 1])) > 0,
                "{t:?} {k}: ol-warp-lanes did not fire at [{}, 1, 1]: {:?}",
                2 * w,
                transform_stats(&bc, "", Some((k, [2 * w as u32, 1, 1])))
            );
            assert_eq!(on(None), 0, "{t:?} {k}: ol-warp-lanes fired on the generic kernel");
        }
        // (wsum's `t < lanes` around the warps' sums, t the flat id: decided per warp from its first lane's
        // y; on amdgcn the group size the flat id is computed from is a load, computed once per group)
        let unswitched = times_fired(&bc, "wsum", Some([w as u32, 2, 1]), "ol-unswitch-warp-branches");
        assert!(unswitched > 0, "{t:?} wsum: ol-unswitch-warp-branches did not fire at [{w}, 2, 1]");
        // (shifts' ten shuffles take turns between the two exchange areas)
        let alternate = |k: &str| times_fired(&bc, k, Some([w as u32, 2, 1]), "ol-alternate-exchanges");
        assert!(alternate("shifts") >= 9, "{t:?} shifts: ol-alternate-exchanges {}", alternate("shifts"));
        let reads = |spec: Option<[u32; 3]>| times_fired(&bc, "shifts", spec, "ol-lane-offset-reads");
        // (10 shuffles, the 64-bit one two on nvptx64)
        assert!(reads(Some([w as u32, 2, 1])) >= 10, "{t:?} shifts: {}", reads(Some([w as u32, 2, 1])));
        assert_eq!(reads(None), 0, "{t:?} shifts: ol-lane-offset-reads fired on the generic kernel");
        // (its exchanges' reads select among lane distances by comparing lanes: their vector loops unrolled)
        let unrolled = times_fired(&bc, "shifts", Some([w as u32, 2, 1]), "ol-unroll-lane-vectors");
        assert!(unrolled > 0, "{t:?} shifts: ol-unroll-lane-vectors did not fire at [{w}, 2, 1]");
        let grid = [3u32, 2, 1];
        let ng = (grid[0] * grid[1]) as usize;
        for block in [[64u32, 1, 1], [256, 1, 1], [64, 2, 1], [128, 2, 2], [32, 2, 1], [32, 4, 2]] {
            let nt = (block[0] * block[1] * block[2]) as usize;
            if !nt.is_multiple_of(w) {
                continue;
            }
            let n = ng * nt;
            let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 7).collect();
            // the host's results
            let mut sum = vec![0u32; ng];
            let mut wsum = vec![0u32; n];
            let mut lib = vec![0u32; 4 * n];
            let mut rounds = input.clone();
            let mut shifts = vec![0u32; 10 * n];
            for (i, s) in shifts.chunks_mut(10).enumerate() {
                let (l, wb) = (i % nt % w, i - i % nt % w);
                let at = |src: usize| input[wb + (src & (w - 1))];
                s[0] = at(l + w - 1);
                s[1] = at(l + 3);
                s[2] = at(l + w - 1);
                s[3] = at(l ^ 1);
                s[4] = at(l ^ 2).wrapping_mul(7);
                s[5] = at(l ^ (w / 2));
                s[6] = if l >= 3 { at(l - 3) } else { input[i] };
                let x = at(l + 5);
                s[7] = x ^ 0xabcd;
                s[8] = x;
                s[9] = at(l + w - 2) & 0xffff;
            }
            for gi in 0..ng {
                let grp = &input[gi * nt..(gi + 1) * nt];
                sum[gi] = grp.iter().fold(0u32, |a, v| a.wrapping_add(*v));
                for wb in (0..nt).step_by(w) {
                    let lanes = &grp[wb..wb + w];
                    let s = lanes.iter().fold(0u32, |a, v| a.wrapping_add(*v));
                    let ballot: u64 = (0..w).filter(|l| lanes[*l] & 1 == 1).map(|l| 1u64 << l).sum();
                    let mut scan = 0u32;
                    for l in 0..w {
                        let i = gi * nt + wb + l;
                        scan = scan.wrapping_add(lanes[l]);
                        wsum[i] = s;
                        lib[4 * i] = scan;
                        lib[4 * i + 1] = s;
                        lib[4 * i + 2] = (ballot & ((1u64 << l) - 1)).count_ones();
                        lib[4 * i + 3] = lanes[0].wrapping_add((ballot >> 32) as u32);
                    }
                }
                let v = &mut rounds[gi * nt..(gi + 1) * nt];
                for r in 0..5usize {
                    for wb in (0..nt).step_by(w) {
                        for k in 0..=((wb / w + r) % 3) {
                            let old: Vec<u32> = v[wb..wb + w].to_vec();
                            for l in 0..w {
                                v[wb + l] = old[l].wrapping_add(old[(l + 1 + k) & (w - 1)].wrapping_mul(3));
                            }
                        }
                    }
                    let sh = v.to_vec();
                    for (i, x) in v.iter_mut().enumerate() {
                        *x ^= sh[nt - 1 - i];
                    }
                }
            }
            for name in ["wsum", "lib", "rounds", "shifts"] {
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let mut inp = input.clone();
                    let ctx = format!("{t:?} {name} {block:?} {form}");
                    match name {
                        "wsum" => {
                            let (mut o, mut wo) = (vec![7u32; ng], vec![7u32; n]);
                            let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &ptr(&mut wo)]);
                            launch(kk, grid, block, &args, 0);
                            assert_eq!(wo, wsum, "{ctx}: warp sums");
                            assert_eq!(o, sum, "{ctx}: group sums");
                        }
                        "lib" => {
                            let mut o = vec![7u32; 4 * n];
                            let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o)]);
                            launch(kk, grid, block, &args, 0);
                            let bad = o.iter().zip(&lib).position(|(a, b)| a != b);
                            assert!(
                                bad.is_none(),
                                "{ctx}: first difference at {bad:?} (item, output) of {n}: {:?}",
                                bad.map(|i| (i / 4, i % 4, o[i], lib[i]))
                            );
                        }
                        "shifts" => {
                            let mut o = vec![7u32; 10 * n];
                            let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o)]);
                            launch(kk, grid, block, &args, 0);
                            let bad = o.iter().zip(&shifts).position(|(a, b)| a != b);
                            assert!(
                                bad.is_none(),
                                "{ctx}: first difference at {bad:?} (item, output, got, want): {:?}",
                                bad.map(|i| (i / 10, i % 10, o[i], shifts[i]))
                            );
                        }
                        _ => {
                            let mut o = vec![7u32; n];
                            let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &b(&5u32)]);
                            launch(kk, grid, block, &args, 0);
                            let bad = o.iter().zip(&rounds).position(|(a, b)| a != b);
                            assert!(bad.is_none(), "{ctx}: first difference at {bad:?} of {n}");
                        }
                    }
                }
            }
        }
    }
}

/// Booleans live across group barriers and warp collectives (ffi-tests/kernels/bools.c; their demotion
/// slots hold bytes) give the host's results, generic and specialised, in 1-, 2- and 3-D groups.
#[test]
fn booleans_across_barriers_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("bools", t) else {
            return;
        };
        let w = img.kernel("wbools").unwrap().warp_size as usize;
        let grid = [3u32, 2, 1];
        let ng = (grid[0] * grid[1]) as usize;
        for block in [[64u32, 1, 1], [256, 1, 1], [64, 2, 1], [128, 2, 2], [32, 2, 1], [8, 4, 2]] {
            let nt = (block[0] * block[1] * block[2]) as usize;
            let n = ng * nt;
            let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 9).collect();
            let (mut bools, mut wbools) = (vec![0u32; n], vec![0u32; n]);
            for gi in 0..ng {
                let base = gi * nt;
                let a = |i: usize| input[base + i].is_multiple_of(3);
                let b = |i: usize| input[base + i] & 4 != 0;
                let s: Vec<u32> = (0..nt).map(|i| input[base + nt - 1 - i] + a(i) as u32).collect();
                for i in 0..nt {
                    bools[base + i] =
                        (if a(i) { s[(i + 1) % nt] } else { 7 }) + if b(i) { 100 } else { 0 } + (a(i) != b(i)) as u32;
                }
                if nt.is_multiple_of(w) {
                    for i in 0..nt {
                        let (l, wb) = (i % w, i - i % w);
                        let below = (0..l).filter(|m| a(wb + m)).count() as u32;
                        let x = input[base + wb + (l + 1) % w];
                        wbools[base + i] = (if a(i) { below } else { 1000 + x }) + if b(i) { 100000 } else { 0 };
                    }
                }
            }
            for name in ["bools", "wbools"] {
                if name == "wbools" && !nt.is_multiple_of(w) {
                    continue;
                }
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                let want = if name == "bools" { &bools } else { &wbools };
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let mut inp = input.clone();
                    let mut o = vec![7u32; n];
                    let args = pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o)]);
                    launch(kk, grid, block, &args, 0);
                    let bad = o.iter().zip(want).position(|(x, y)| x != y);
                    assert!(
                        bad.is_none(),
                        "{t:?} {name} {block:?} {form}: first difference at {bad:?}: {:?}",
                        bad.map(|i| (o[i], want[i]))
                    );
                }
            }
        }
    }
}

/// Loops the same for a warp's lanes (ffi-tests/kernels/warp_loops.c) give the host's results, generic and
/// specialised, in 1-, 2- and 3-D groups of whole warps on every target; in the specialisations of 1-D
/// groups of whole warps `ranks`' sum over shared memory up to the warp's index and `segments`' search of
/// a kernel buffer (a loop with two exits, between two shuffles) run once per warp (ol-warp-uniform-loops),
/// and `perlane`'s loops (the lane's trip count, only odd lanes, shared memory the lanes write) never do.
#[test]
fn warp_uniform_loops_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("warp_loops", t) else {
            return;
        };
        let w = img.kernel("ranks").unwrap().warp_size as usize;
        let bc = bitcode("warp_loops", t).unwrap();
        let fired = |k: &str, spec: Option<[u32; 3]>| times_fired(&bc, k, spec, "ol-warp-uniform-loops");
        for k in ["ranks", "segments"] {
            assert!(fired(k, Some([4 * w as u32, 1, 1])) > 0, "{t:?} {k}: ol-warp-uniform-loops did not fire");
            assert_eq!(fired(k, None), 0, "{t:?} {k}: fired on the generic kernel");
        }
        assert_eq!(fired("perlane", Some([4 * w as u32, 1, 1])), 0, "{t:?} perlane: a per-lane loop was hoisted");
        let grid = [3u32, 2, 1];
        let ng = (grid[0] * grid[1]) as usize;
        for block in [[64u32, 1, 1], [256, 1, 1], [64, 2, 1], [128, 2, 2], [32, 2, 1], [32, 4, 2], [512, 1, 1]] {
            let nt = (block[0] * block[1] * block[2]) as usize;
            if !nt.is_multiple_of(w) || nt / w > 64 {
                continue;
            }
            let n = ng * nt;
            let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761) >> 9).collect();
            // (sorted; the search stops at an end above the warp's index or, past the 30th, at n)
            let ends: Vec<u32> = (1..=40u32).map(|k| k * k * 5).collect();
            let nends = 30u32;
            let (mut ranks, mut counts, mut segments, mut perlane) =
                (vec![0u32; 2 * n], vec![0u32; ng], vec![0u32; n], vec![0u32; n]);
            for (gi, count) in counts.iter_mut().enumerate() {
                let base = gi * nt;
                let kept: Vec<u32> = (0..nt / w)
                    .map(|wi| (0..w).filter(|l| input[base + wi * w + l].is_multiple_of(3)).count() as u32)
                    .collect();
                *count = kept.iter().sum();
                let mut x = vec![0u32; nt];
                for (i, xi) in x.iter_mut().enumerate() {
                    let (l, wi) = (i % w, i / w);
                    let g = base + i;
                    let before: u32 = kept[..wi].iter().sum();
                    let weighted = kept[..wi].iter().fold(0u32, |a, k| a.wrapping_mul(3).wrapping_add(*k));
                    let below = (0..l).filter(|m| input[base + wi * w + m].is_multiple_of(3)).count() as u32;
                    ranks[2 * g] = if input[g].is_multiple_of(3) { before + below } else { !0 };
                    ranks[2 * g + 1] = weighted;
                    let at = |lane: usize| input[base + wi * w + (lane & (w - 1))];
                    let first = (base + wi * w) as u32;
                    let s = ends[..nends as usize].iter().take_while(|e| **e <= first).count() as u32;
                    *xi = at(l + 1).wrapping_mul(1000).wrapping_add(s);
                }
                for i in 0..nt {
                    segments[base + i] = x[i ^ 1];
                }
                let sh: Vec<u32> = (0..nt).map(|i| input[base + i] ^ 0x55).collect();
                for i in 0..nt {
                    let (l, wi) = (i % w, i / w);
                    let v = input[base + (i ^ 1)];
                    let a = (0..l).fold(0u32, |s, k| s.wrapping_add(input[base + k]));
                    let b = if l & 1 == 1 {
                        (0..wi).fold(0u32, |s, k| s.wrapping_add(input[base + k * 7 % nt]))
                    } else {
                        0
                    };
                    let c = (0..=wi).fold(0u32, |s, k| s.wrapping_add(sh[k]));
                    x[i] = v.wrapping_add(a).wrapping_add(b.wrapping_mul(3)).wrapping_add(c.wrapping_mul(5));
                }
                for i in 0..nt {
                    perlane[base + i] = x[i ^ 2];
                }
            }
            for name in ["ranks", "segments", "perlane"] {
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let mut inp = input.clone();
                    let ctx = format!("{t:?} {name} {block:?} {form}");
                    let mut o = vec![7u32; if name == "ranks" { 2 * n } else { n }];
                    let want = match name {
                        "ranks" => &ranks,
                        "segments" => &segments,
                        _ => &perlane,
                    };
                    let mut c = vec![7u32; ng];
                    let mut e = ends.clone();
                    let args = match name {
                        "ranks" => pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o), &ptr(&mut c)]),
                        "segments" => pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut e), &b(&nends), &ptr(&mut o)]),
                        _ => pack(&kk.params, &[&ptr(&mut inp), &ptr(&mut o)]),
                    };
                    launch(kk, grid, block, &args, 0);
                    let bad = o.iter().zip(want).position(|(a, b)| a != b);
                    assert!(
                        bad.is_none(),
                        "{ctx}: first difference at {bad:?} (got, want): {:?}",
                        bad.map(|i| (o[i], want[i]))
                    );
                    if name == "ranks" {
                        assert_eq!(c, counts, "{ctx}: counts");
                    }
                }
            }
        }
    }
}

/// Reduction loops per work-item (ffi-tests/kernels/reductions.c) give the host's results, float sums
/// bit for bit (the same additions in the same order), generic and specialised, on every target, at
/// trip counts 0 to 256 that are and are not multiples of the unroll factor; on nvptx64, whose clang
/// unrolls them by 4, ol-reroll-loops rolls them back in both kernels; on amdgcn, whose clang vectorises
/// integer reductions (two lanes, unrolled: two interleaved chains), it rolls `counts`' loops back into one
/// chain each.
#[test]
fn reduction_loops_match_the_host() {
    let _g = shared();
    let hash = |i: u32| i.wrapping_mul(2654435761).rotate_left(13);
    for t in TARGETS {
        let Some(img) = load_ok("reductions", t) else {
            return;
        };
        if t == Tgt::Nv {
            let bc = bitcode("reductions", t).unwrap();
            for (k, g) in [("ranks", [256u32, 1, 1]), ("rows", [64, 1, 1])] {
                for spec in [None, Some(g)] {
                    assert!(
                        times_fired(&bc, k, spec, "ol-reroll-loops") > 0,
                        "{k} {spec:?}: ol-reroll-loops did not fire"
                    );
                }
            }
        }
        // values whose sums round differently in another order
        let val = |i: u32| {
            let h = hash(i);
            let m = (h % 1000) as f32 * 0.37 - 150.0;
            if h % 9 == 0 { m * 1.0e7 } else { m }
        };
        let ranks = img.kernel("ranks").unwrap();
        for block in [[256u32, 1, 1], [64, 1, 1], [99, 1, 1]] {
            let (nt, ng) = (block[0] as usize, 3usize);
            let n = nt * ng;
            let mut keys: Vec<u32> = (0..n as u32).map(|i| hash(i) % 7).collect();
            let mut vals: Vec<f32> = (0..n as u32).map(val).collect();
            let (mut want, mut fwant) = (vec![0u32; 3 * n], vec![0f32; 2 * n]);
            for g in 0..n {
                let base = g - g % nt;
                let (mut same, mut top, mut x, mut sum, mut diff) = (0u32, 0u32, 0u32, 0f32, 1f32);
                for j in base..g {
                    same += (keys[j] == keys[g]) as u32;
                    sum += vals[j];
                    diff -= vals[j];
                    top = top.max(keys[j]);
                    x ^= keys[j].wrapping_mul(2654435761);
                }
                want[3 * g..3 * g + 3].copy_from_slice(&[same, top, x]);
                fwant[2 * g..2 * g + 2].copy_from_slice(&[sum, diff]);
            }
            let s = ranks.specialise(block, false).unwrap();
            for (kk, form) in [(&ranks, "generic"), (&s, "specialised")] {
                let (mut o, mut fo) = (vec![7u32; 3 * n], vec![7f32; 2 * n]);
                let args = pack(&kk.params, &[&ptr(&mut keys), &ptr(&mut vals), &ptr(&mut o), &ptr(&mut fo)]);
                launch(kk, [ng as u32, 1, 1], block, &args, 0);
                assert_eq!(o, want, "{t:?} ranks {block:?} {form}: counts, maxima, xors");
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fo), bits(&fwant), "{t:?} ranks {block:?} {form}: float sums");
            }
        }
        // integer reductions one per loop: amdgcn's clang vectorised them (two lanes as two chains)
        if t == Tgt::Amd {
            let bc = bitcode("reductions", t).unwrap();
            for spec in [None, Some([256u32, 1, 1])] {
                assert!(
                    times_fired(&bc, "counts", spec, "ol-reroll-loops") > 0,
                    "counts {spec:?}: ol-reroll-loops did not fire on amdgcn"
                );
            }
        }
        let counts = img.kernel("counts").unwrap();
        for block in [[256u32, 1, 1], [64, 1, 1], [99, 1, 1], [1, 1, 1]] {
            let (nt, ng) = (block[0] as usize, 3usize);
            let n = nt * ng;
            let mut keys: Vec<u32> = (0..n as u32).map(|i| hash(i) % 13).collect();
            let mut want = vec![0u32; 4 * n];
            for g in 0..n {
                let base = g - g % nt;
                let (mut same, mut any, mut top, mut x) = (0u32, 0u32, 0u32, 0u32);
                for j in base..g {
                    same += (keys[j] == keys[g]) as u32;
                    any |= keys[j] << (j & 7);
                    top = top.max(keys[j] * 3);
                    x ^= keys[j].wrapping_mul(2654435761);
                }
                want[4 * g..4 * g + 4].copy_from_slice(&[same, any, top, x]);
            }
            let s = counts.specialise(block, false).unwrap();
            for (kk, form) in [(&counts, "generic"), (&s, "specialised")] {
                let mut o = vec![7u32; 4 * n];
                let args = pack(&kk.params, &[&ptr(&mut keys), &ptr(&mut o)]);
                launch(kk, [ng as u32, 1, 1], block, &args, 0);
                assert_eq!(o, want, "{t:?} counts {block:?} {form}");
            }
        }
        let rows = img.kernel("rows").unwrap();
        for block in [[64u32, 1, 1], [37, 1, 1]] {
            let s = rows.specialise(block, false).unwrap();
            let nw = 2 * block[0] as usize;
            for (cols, start) in [(0u32, 0u32), (1, 0), (3, 0), (4, 0), (5, 1), (17, 2), (64, 3), (6, 9)] {
                let mut a: Vec<f32> = (0..(nw as u32 * cols).max(1)).map(val).collect();
                let mut wsum = vec![0f32; nw];
                let mut wneg = vec![0u32; nw];
                for g in 0..nw {
                    for i in start..cols {
                        let x = a[g * cols as usize + i as usize];
                        wsum[g] += x;
                        wneg[g] += (x < 0.0) as u32;
                    }
                }
                for (kk, form) in [(&rows, "generic"), (&s, "specialised")] {
                    let (mut o, mut c) = (vec![7f32; nw], vec![7u32; nw]);
                    let args = pack(&kk.params, &[&ptr(&mut a), &b(&cols), &b(&start), &ptr(&mut o), &ptr(&mut c)]);
                    launch(kk, [2, 1, 1], block, &args, 0);
                    let ctx = format!("{t:?} rows {block:?} n {cols} from {start} {form}");
                    assert_eq!(
                        o.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
                        wsum.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
                        "{ctx}: sums"
                    );
                    assert_eq!(c, wneg, "{ctx}: negatives");
                }
            }
        }
    }
}

/// Loops with barriers whose trip count the group size decides (ffi-tests/kernels/barrier_loops.c: a tree
/// by halves, a doubling scan, a fold of a 2-D group's rows by `(h + 1) / 2`, a loop over the group's warps)
/// give the host's results, generic and specialised, on every target, for groups whose sizes are and are
/// not powers of two (odd halves, one trip, none); in a specialisation ol-unroll-barrier-loops unrolls each
/// where it has 2 to 16 trips, and never in the generic kernel, where the group size is not known.
#[test]
fn barrier_loops_match_the_host() {
    let _g = shared();
    let hash = |i: u32| i.wrapping_mul(2654435761).rotate_left(13) % 1000;
    for t in TARGETS {
        let Some(img) = load_ok("barrier_loops", t) else {
            return;
        };
        if t != Tgt::Spv {
            let bc = bitcode("barrier_loops", t).unwrap();
            for (k, g) in
                [("halves", [256u32, 1, 1]), ("doubling", [96, 1, 1]), ("rows", [8, 12, 1]), ("warps", [128, 1, 1])]
            {
                assert!(
                    times_fired(&bc, k, Some(g), "ol-unroll-barrier-loops") > 0,
                    "{t:?} {k} {g:?}: ol-unroll-barrier-loops did not fire"
                );
                assert_eq!(times_fired(&bc, k, None, "ol-unroll-barrier-loops"), 0, "{t:?} {k}: fired generic");
            }
        }
        let ng = 3usize;
        let run = |name: &str, block: [u32; 3], outs: &[usize]| {
            let k = img.kernel(name).unwrap();
            let nt = (block[0] * block[1]) as usize;
            let mut input: Vec<u32> = (0..(nt * ng) as u32).map(hash).collect();
            let s = k.specialise(block, false).unwrap();
            let mut got = Vec::new();
            for kk in [&k, &s] {
                let mut bufs: Vec<Vec<u32>> = outs.iter().map(|&n| vec![7u32; n]).collect();
                let mut vals = vec![ptr(&mut input)];
                vals.extend(bufs.iter_mut().map(|v| ptr(v)));
                let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
                launch(kk, [ng as u32, 1, 1], block, &pack(&kk.params, &refs), 0);
                got.push(bufs);
            }
            (input, got)
        };
        for n in [256usize, 96, 1024, 33, 2, 1] {
            let block = [n as u32, 1, 1];
            // halves
            let (input, got) = run("halves", block, &[ng, n * ng]);
            let (mut sums, mut after) = (vec![0u32; ng], vec![0u32; n * ng]);
            for g in 0..ng {
                let s = &mut after[g * n..(g + 1) * n];
                s.copy_from_slice(&input[g * n..(g + 1) * n]);
                let mut d = n / 2;
                while d > 0 {
                    for i in 0..d {
                        s[i] = s[i].wrapping_add(s[i + d]);
                    }
                    d /= 2;
                }
                sums[g] = s[0];
            }
            for (form, bufs) in ["generic", "specialised"].iter().zip(&got) {
                assert_eq!(bufs[0], sums, "{t:?} halves {n} {form}: sums");
                assert_eq!(bufs[1], after, "{t:?} halves {n} {form}: what each step left");
            }
            // doubling
            let (input, got) = run("doubling", block, &[n * ng]);
            let mut want = vec![0u32; n * ng];
            for g in 0..ng {
                let mut acc = 0u32;
                for i in 0..n {
                    acc = acc.wrapping_add(input[g * n + i]);
                    want[g * n + i] = acc;
                }
            }
            for (form, bufs) in ["generic", "specialised"].iter().zip(&got) {
                assert_eq!(bufs[0], want, "{t:?} doubling {n} {form}");
            }
            // warps (not spirv64: LLVM 22 declares its barrier intrinsic `nosync`, so clang's -O2 keeps
            // acc[0] in a register across the barriers, before the JIT sees the kernel)
            if t == Tgt::Spv {
                continue;
            }
            let (input, got) = run("warps", block, &[n * ng]);
            let mut want = vec![0u32; n * ng];
            for g in 0..ng {
                let acc = (0..n / 32).fold(0u32, |a, c| a.wrapping_mul(3).wrapping_add(input[g * n + 32 * c]));
                for i in 0..n {
                    want[g * n + i] = acc.wrapping_add(i as u32);
                }
            }
            for (form, bufs) in ["generic", "specialised"].iter().zip(&got) {
                assert_eq!(bufs[0], want, "{t:?} warps {n} {form}");
            }
        }
        for block in [[8u32, 12, 1], [16, 16, 1], [4, 5, 1], [32, 1, 1], [3, 7, 1]] {
            let (w, h) = (block[0] as usize, block[1] as usize);
            let (input, got) = run("rows", block, &[w * h * ng]);
            let mut want = vec![0u32; w * h * ng];
            for g in 0..ng {
                for x in 0..w {
                    let col = (0..h).fold(0u32, |a, y| a.wrapping_add(input[g * w * h + y * w + x]));
                    for y in 0..h {
                        want[g * w * h + y * w + x] = col;
                    }
                }
            }
            for (form, bufs) in ["generic", "specialised"].iter().zip(&got) {
                assert_eq!(bufs[0], want, "{t:?} rows {block:?} {form}");
            }
        }
    }
}

/// The optimised IR of kernel `k` of `bc` specialised for `g`, compiled with `lowering`
/// (`OFFLOAD_RS_JIT_LOWERING`'s syntax).
fn optimised_ir(bc: &[u8], k: &str, g: [u32; 3], lowering: &str) -> String {
    let mut target = service::cpu_target().unwrap().clone();
    target.lowering = lowering.to_string();
    let spec = crate::jit::compile::Spec { kernel: k.to_string(), group_size: g, quick: false };
    super::compile::CAPTURE.with(|c| *c.borrow_mut() = Some(("opt", String::new())));
    let r = super::compile::compile_in_process(bc, &target, 3, false, false, false, Some(&spec));
    let ir = super::compile::CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default().1;
    r.unwrap_or_else(|e| panic!("{k} with OFFLOAD_RS_JIT_LOWERING={lowering:?}: {e}"));
    ir
}

/// u32s that end where the process's mapping does: the page after the last one is mapped PROT_NONE, so
/// a load past the end faults (a prefetch past it must not).
struct Guarded {
    map: *mut libc::c_void,
    bytes: usize,
    data: *mut u32,
    len: usize,
}

impl Guarded {
    fn new(vals: &[u32]) -> Guarded {
        let page = 4096usize;
        let data_bytes = (vals.len() * 4).div_ceil(page) * page;
        let bytes = data_bytes + page;
        // SAFETY: a fresh anonymous mapping; its last page made inaccessible; the data copied to the end of
        // the accessible part, inside the mapping.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            assert_eq!(libc::mprotect((map as *mut u8).add(data_bytes) as *mut libc::c_void, page, libc::PROT_NONE), 0);
            let data = (map as *mut u8).add(data_bytes - vals.len() * 4) as *mut u32;
            std::ptr::copy_nonoverlapping(vals.as_ptr(), data, vals.len());
            Guarded { map, bytes, data, len: vals.len() }
        }
    }

    fn slice(&mut self) -> &mut [u32] {
        // SAFETY: `len` u32s inside the mapping, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.map, self.bytes) };
    }
}

/// ol-prefetch-streams (src/jit/llvm/prefetch_streams.cpp): the work-items' loops over ragged segments,
/// matrix rows and a window of taps get prefetches (and none without the pass), and every result is the
/// host's, generic and specialised, with the streams ending right before an inaccessible page (the
/// prefetches reach past it) and a partial last group.
#[test]
fn stream_prefetches_match_the_host() {
    let _g = shared();
    let hash = |i: u32| i.wrapping_mul(2654435761).rotate_left(13) % 1000;
    for t in TARGETS {
        let Some(img) = load_ok("streams", t) else {
            return;
        };
        let bc = bitcode("streams", t).unwrap();
        for k in ["segments", "rows", "window"] {
            let with = optimised_ir(&bc, k, [64, 1, 1], "");
            assert!(with.contains("call void @llvm.prefetch"), "{t:?} {k}: no prefetch");
            // (ol-prefetch-next-group prefetches the next group's rows in `rows`: off too)
            let without = optimised_ir(&bc, k, [64, 1, 1], "-ol-prefetch-streams,-ol-prefetch-next-group");
            assert!(!without.contains("call void @llvm.prefetch"), "{t:?} {k}: a prefetch without the pass");
        }
        let block = [64u32, 1, 1];
        let run = |name: &str, n: u32, ins: &mut [&mut Guarded], scalars: &[u32]| -> Vec<Vec<u32>> {
            let k = img.kernel(name).unwrap();
            let s = k.specialise(block, false).unwrap();
            let mut got = Vec::new();
            for kk in [&k, &s] {
                let mut out = vec![7u32; n as usize];
                let mut vals: Vec<Vec<u8>> = ins.iter_mut().map(|g| ptr(g.slice())).collect();
                vals.push(ptr(&mut out));
                vals.extend(scalars.iter().map(b));
                let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
                launch(kk, [n.div_ceil(block[0]), 1, 1], block, &pack(&kk.params, &refs), 0);
                got.push(out);
            }
            got
        };
        // segments: 1001 rows of 0-39 elements
        let n = 1001u32;
        let mut off = vec![0u32];
        for i in 0..n {
            off.push(off[i as usize] + hash(i) % 40);
        }
        let v: Vec<u32> = (0..off[n as usize]).map(|i| hash(i + 5)).collect();
        let want: Vec<u32> = (0..n as usize).map(|i| v[off[i] as usize..off[i + 1] as usize].iter().sum()).collect();
        let (mut go, mut gv) = (Guarded::new(&off), Guarded::new(&v));
        for (form, got) in ["generic", "specialised"].iter().zip(run("segments", n, &mut [&mut go, &mut gv], &[n])) {
            assert_eq!(got, want, "{t:?} segments {form}");
        }
        // rows: 299 rows of 37
        let (n, cols) = (299u32, 37u32);
        let a: Vec<u32> = (0..n * cols).map(hash).collect();
        let x: Vec<u32> = (0..cols).map(|i| hash(i + 7)).collect();
        let want: Vec<u32> = (0..n)
            .map(|i| {
                (0..cols).fold(0u32, |s, k| s.wrapping_add(a[(i * cols + k) as usize].wrapping_mul(x[k as usize])))
            })
            .collect();
        let (mut ga, mut gx) = (Guarded::new(&a), Guarded::new(&x));
        for (form, got) in ["generic", "specialised"].iter().zip(run("rows", n, &mut [&mut ga, &mut gx], &[n, cols])) {
            assert_eq!(got, want, "{t:?} rows {form}");
        }
        // window: 2001 outputs of 9 taps
        let (n, taps) = (2001u32, 9u32);
        let input: Vec<u32> = (0..n + taps - 1).map(hash).collect();
        let w: Vec<u32> = (0..taps).map(|i| i + 1).collect();
        let want: Vec<u32> = (0..n)
            .map(|i| (0..taps).fold(0u32, |s, k| s.wrapping_add(w[k as usize].wrapping_mul(input[(i + k) as usize]))))
            .collect();
        let (mut gi, mut gw) = (Guarded::new(&input), Guarded::new(&w));
        for (form, got) in ["generic", "specialised"].iter().zip(run("window", n, &mut [&mut gi, &mut gw], &[n, taps]))
        {
            assert_eq!(got, want, "{t:?} window {form}");
        }
    }
}

/// The best and the median of 7 runs of `f`, in ms.
fn best_median_of_7(mut f: impl FnMut()) -> (f64, f64) {
    let mut ms: Vec<f64> = (0..7)
        .map(|_| {
            let t0 = std::time::Instant::now();
            f();
            t0.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[0], ms[3])
}

/// ol-prefetch-streams' effect on the kernels of [`stream_prefetches_match_the_host`] at sizes beyond the
/// caches, one thread (this harness runs the groups one after another), nvptx64 and amdgcn: prints each
/// kernel's best and median of 7 runs. Run it twice, the second time with
/// OFFLOAD_RS_JIT_LOWERING=-ol-prefetch-streams (read once per process):
/// `cargo test --release --lib -- --ignored --nocapture stream_prefetch_times`.
#[test]
#[ignore]
fn stream_prefetch_times() {
    let _g = shared();
    let hash = |i: u32| i.wrapping_mul(2654435761).rotate_left(13) % 1000;
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(img) = load_ok("streams", t) else {
            return;
        };
        let block = [256u32, 1, 1];
        let time = |name: &str, n: u32, ins: &mut [&mut Vec<u32>], scalars: &[u32]| {
            let k = img.kernel(name).unwrap().specialise(block, false).unwrap();
            let mut out = vec![0u32; n as usize];
            let mut vals: Vec<Vec<u8>> = ins.iter_mut().map(|v| ptr(v)).collect();
            vals.push(ptr(&mut out));
            vals.extend(scalars.iter().map(b));
            let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
            let args = pack(&k.params, &refs);
            let (best, median) = best_median_of_7(|| launch(&k, [n.div_ceil(block[0]), 1, 1], block, &args, 0));
            eprintln!("{t:?} {name}: best {best:.2} ms, median {median:.2}");
        };
        let n = 1u32 << 20;
        let mut off = vec![0u32];
        for i in 0..n {
            off.push(off[i as usize] + hash(i) % 40);
        }
        let mut v: Vec<u32> = (0..off[n as usize]).map(hash).collect();
        time("segments", n, &mut [&mut off, &mut v], &[n]);
        let (n, cols) = (1u32 << 16, 300u32);
        let (mut a, mut x): (Vec<u32>, Vec<u32>) = ((0..n * cols).map(hash).collect(), (0..cols).map(hash).collect());
        time("rows", n, &mut [&mut a, &mut x], &[n, cols]);
        let (n, taps) = (1u32 << 24, 9u32);
        let (mut input, mut w): (Vec<u32>, Vec<u32>) = ((0..n + taps).map(hash).collect(), (0..taps).collect());
        time("window", n, &mut [&mut input, &mut w], &[n, taps]);
    }
}

/// ol-prefetch-next-group (src/jit/llvm/prefetch_next_group.cpp): the 2-D tile kernels whose next group
/// along x is rows away (the suite's transpose through a shared tile, bench/kernels/suite.c;
/// ffi-tests/kernels/tiles.c's element-wise sum whose grid's x goes down the rows, when ol-group-order does not
/// run its groups y fastest) get prefetches, the suite's
/// stencil, whose next group is the next piece of the same rows, none, and none without the pass; every
/// result is the host's, generic and specialised, with partial groups at the right and bottom edges and
/// every buffer ending right before an inaccessible page (the last groups' prefetches reach past it).
#[test]
fn next_group_prefetches_match_the_host() {
    let _g = shared();
    let hash = |i: u32| i.wrapping_mul(2654435761).rotate_left(13) % 1000;
    let block = [16u32, 16, 1];
    for t in TARGETS {
        let (Some(suite), Some(tiles)) = (bitcode_of("bench/kernels/suite.c", t), bitcode("tiles", t)) else {
            return;
        };
        for (bc, k, fires) in [(&suite, "transpose", true), (&suite, "stencil", false)] {
            let with = optimised_ir(bc, k, block, "");
            assert_eq!(with.contains("call void @llvm.prefetch"), fires, "{t:?} {k}: prefetches with the pass");
            assert!(!with.contains(".ol.groups_y_first"), "{t:?} {k}: marked to run y fastest");
            let without = optimised_ir(bc, k, block, "-ol-prefetch-next-group");
            assert!(!without.contains("call void @llvm.prefetch"), "{t:?} {k}: a prefetch without the pass");
        }
        // add_rows runs its groups y fastest (ol-group-order), its next group the same rows: no prefetch;
        // x fastest (without ol-group-order), the next group's rows prefetched
        let y_first = optimised_ir(&tiles, "add_rows", block, "");
        assert!(y_first.contains(".ol.groups_y_first"), "{t:?} add_rows: not marked to run y fastest");
        assert!(!y_first.contains("call void @llvm.prefetch"), "{t:?} add_rows: prefetches for the group along x");
        let x_first = optimised_ir(&tiles, "add_rows", block, "-ol-group-order");
        assert!(!x_first.contains(".ol.groups_y_first"), "{t:?} add_rows: marked without ol-group-order");
        assert!(x_first.contains("call void @llvm.prefetch"), "{t:?} add_rows: no prefetch x fastest");
        let (suite, tiles) = (load(&suite).unwrap(), load(&tiles).unwrap());
        // each kernel's groups, inputs and scalars; its output's length (u32s: the bits of the suite's floats)
        let run =
            |img: &LoadedImage, name: &str, grid: [u32; 3], ins: &mut [&mut Guarded], n: usize, scalars: &[u32]| {
                let k = img.kernel(name).unwrap();
                let s = k.specialise(block, false).unwrap();
                let mut got = Vec::new();
                for kk in [&k, &s] {
                    let mut out = Guarded::new(&vec![7u32; n]);
                    let mut vals: Vec<Vec<u8>> = ins.iter_mut().map(|g| ptr(g.slice())).collect();
                    vals.push(ptr(out.slice()));
                    vals.extend(scalars.iter().map(b));
                    let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
                    launch(kk, grid, block, &pack(&kk.params, &refs), 0);
                    got.push(out.slice().to_vec());
                }
                got
            };
        let (w, h) = (37u32, 21u32);
        let input: Vec<f32> = (0..w * h).map(|i| hash(i) as f32).collect();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        let grid = [w.div_ceil(16), h.div_ceil(16), 1];
        let mut gi = Guarded::new(&bits(&input));
        let want: Vec<f32> = (0..w * h).map(|i| input[((i % h) * w + i / h) as usize]).collect();
        for (form, got) in
            ["generic", "specialised"].iter().zip(run(&suite, "transpose", grid, &mut [&mut gi], want.len(), &[w, h]))
        {
            assert_eq!(got, bits(&want), "{t:?} transpose {form}");
        }
        let at = |x: u32, y: u32| input[(y * w + x) as usize];
        let want: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                    at(x, y)
                } else {
                    4.0 * at(x, y) - at(x, y - 1) - at(x, y + 1) - at(x - 1, y) - at(x + 1, y)
                }
            })
            .collect();
        for (form, got) in
            ["generic", "specialised"].iter().zip(run(&suite, "stencil", grid, &mut [&mut gi], want.len(), &[w, h]))
        {
            assert_eq!(got, bits(&want), "{t:?} stencil {form}");
        }
        let (rows, cols) = (45u32, 29u32);
        let a: Vec<u32> = (0..rows * cols).map(hash).collect();
        let bb: Vec<u32> = (0..rows * cols).map(|i| hash(i + 3)).collect();
        let want: Vec<u32> = a.iter().zip(&bb).map(|(x, y)| x + y).collect();
        let (mut ga, mut gb) = (Guarded::new(&a), Guarded::new(&bb));
        let grid = [rows.div_ceil(16), cols.div_ceil(16), 1];
        for (form, got) in ["generic", "specialised"].iter().zip(run(
            &tiles,
            "add_rows",
            grid,
            &mut [&mut ga, &mut gb],
            want.len(),
            &[rows, cols],
        )) {
            assert_eq!(got, want, "{t:?} add_rows {form}");
        }
    }
}

/// ol-prefetch-next-group's effect on the kernels of [`next_group_prefetches_match_the_host`] at 4096 x 2048
/// (32 MiB a buffer), one thread (this harness runs the groups one after another), nvptx64 and amdgcn:
/// prints each kernel's best and median of 7 runs. Run it twice, the second time with
/// OFFLOAD_RS_JIT_LOWERING=-ol-prefetch-next-group (read once per process):
/// `cargo test --release --lib -- --ignored --nocapture next_group_prefetch_times`.
#[test]
#[ignore]
fn next_group_prefetch_times() {
    let _g = shared();
    let block = [16u32, 16, 1];
    for t in [Tgt::Nv, Tgt::Amd] {
        let (Some(suite), Some(tiles)) = (bitcode_of("bench/kernels/suite.c", t), bitcode("tiles", t)) else {
            return;
        };
        let (suite, tiles) = (load(&suite).unwrap(), load(&tiles).unwrap());
        let (w, h) = (4096u32, 2048u32);
        let mut a: Vec<u32> = (0..w * h).map(|i| ((i % 4096) as f32).to_bits()).collect();
        let mut bb: Vec<u32> = (0..w * h).rev().collect();
        let mut out = vec![0u32; (w * h) as usize];
        for (img, name, grid, scalars) in [
            (&suite, "transpose", [w / 16, h / 16, 1], [w, h]),
            (&tiles, "add_rows", [h / 16, w / 16, 1], [h, w]),
            (&suite, "stencil", [w / 16, h / 16, 1], [w, h]),
        ] {
            let k = img.kernel(name).unwrap().specialise(block, false).unwrap();
            let mut vals = vec![ptr(&mut a)];
            if name == "add_rows" {
                vals.push(ptr(&mut bb));
            }
            vals.push(ptr(&mut out));
            vals.extend(scalars.iter().map(b));
            let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
            let args = pack(&k.params, &refs);
            let (best, median) = best_median_of_7(|| launch(&k, grid, block, &args, 0));
            eprintln!("{t:?} {name}: best {best:.2} ms, median {median:.2}");
        }
    }
}

/// ol-nested-selects (src/jit/llvm/nested_selects.cpp): where the vectoriser's predication of nested
/// branches leaves a select of a select keeping the same value, the pass changes the optimised code: the
/// lockstep loop of the suite's mandel (bench/kernels/suite.c) on every CPU target; those of
/// ffi-tests/kernels/lockstep.c where the vectoriser's output has the pattern (all of them for x86-64-v3,
/// skylake and x86-64-v4; for x86-64-v2, escape's on nvptx64 only: printed). Their results, with the pass (the default),
/// are `lockstep_loops_match_the_host`'s and the suite's.
#[test]
fn nested_selects_fire_on_lockstep_loops() {
    let _g = shared();
    for t in [Tgt::Nv, Tgt::Amd] {
        let (Some(suite), Some(lockstep)) = (bitcode_of("bench/kernels/suite.c", t), bitcode("lockstep", t)) else {
            return;
        };
        let mut fired = Vec::new();
        for (bc, k, g) in [
            (&suite, "mandel", [16u32, 16, 1]),
            (&lockstep, "escape", [64, 1, 1]),
            (&lockstep, "collatz", [64, 1, 1]),
            (&lockstep, "mixes", [64, 1, 1]),
        ] {
            if optimised_ir(bc, k, g, "") != optimised_ir(bc, k, g, "-ol-nested-selects") {
                fired.push(k);
            }
        }
        eprintln!("{t:?}: ol-nested-selects changes {fired:?}");
        assert!(fired.contains(&"mandel"), "{t:?}: fired on {fired:?}");
    }
}

/// ol-nested-selects' effect on the lockstep loops of [`nested_selects_fire_on_lockstep_loops`]'s
/// ffi-tests/kernels/lockstep.c (the suite's mandel is in build/bench/suite), one thread, groups of 64,
/// nvptx64 and amdgcn: prints each kernel's best and median of 7 runs. Run it twice, the second time with
/// OFFLOAD_RS_JIT_LOWERING=-ol-nested-selects (read once per process):
/// `cargo test --release --lib -- --ignored --nocapture nested_selects_times`.
#[test]
#[ignore]
fn nested_selects_times() {
    let _g = shared();
    let block = [64u32, 1, 1];
    for t in [Tgt::Nv, Tgt::Amd] {
        let Some(img) = load_ok("lockstep", t) else {
            return;
        };
        let n = 1u32 << 20;
        let mut out = vec![0u32; n as usize];
        // escape: a 1024 x 1024 grid over [-2, 1] x [-1.5, 1.5]; collatz: 1..=n; mixes: 1024 x 1024 hashes
        let mut cx: Vec<f32> = (0..n).map(|i| -2.0 + 3.0 * (i % 1024) as f32 / 1024.0).collect();
        let mut cy: Vec<f32> = (0..n).map(|i| -1.5 + 3.0 * (i / 1024) as f32 / 1024.0).collect();
        let mut walks: Vec<u32> = (1..=n).collect();
        let mut hashes: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761)).collect();
        for name in ["escape", "collatz", "mixes"] {
            let (grid, g) = if name == "mixes" { ([16u32, 1024, 1], block) } else { ([n / 64, 1, 1], block) };
            let k = img.kernel(name).unwrap().specialise(g, false).unwrap();
            let mut vals = vec![ptr(&mut out)];
            match name {
                "escape" => vals.extend([ptr(&mut cx), ptr(&mut cy), b(&n)]),
                "collatz" => vals.extend([ptr(&mut walks), b(&n)]),
                _ => vals.extend([ptr(&mut hashes), b(&1024u32), b(&1024u32)]),
            }
            let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
            let args = pack(&k.params, &refs);
            let (best, median) = best_median_of_7(|| launch(&k, grid, g, &args, 0));
            eprintln!("{t:?} {name}: best {best:.2} ms, median {median:.2}");
        }
    }
}

/// Choices on the id against a group-uniform bound (ffi-tests/kernels/orders.c) give the host's results,
/// generic and specialised, for unsigned and signed, strict and non-strict orders, bounds below 0, inside
/// the group and past it, in 1- and 2-D groups, and in a scan's `t >= off` between barriers; the loops are
/// cut there (ol-range-split) on every target.
#[test]
fn range_splits_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("orders", t) else {
            return;
        };
        let bc = bitcode("orders", t).unwrap();
        for (k, g) in [("orders", [64u32, 1, 1]), ("steps", [256, 1, 1])] {
            for spec in [None, Some(g)] {
                assert!(
                    times_fired(&bc, k, spec, "ol-range-split") > 0,
                    "{t:?} {k} {spec:?}: ol-range-split did not fire"
                );
            }
        }
        let orders = img.kernel("orders").unwrap();
        for block in [[64u32, 1, 1], [37, 1, 1], [16, 4, 1]] {
            let s = orders.specialise(block, false).unwrap();
            let grid = [2u32, 2, 1];
            let nt = (block[0] * block[1]) as usize;
            let n = nt * 4;
            let mut input: Vec<f32> = (0..n as u32).map(|i| (i.wrapping_mul(2654435761) >> 20) as f32 * 0.25).collect();
            for (bs, u) in [
                (-5i32, 0u32),
                (-1, 1),
                (0, 5),
                (3, 63),
                (63, 64),
                (64, 1000),
                (100000, u32::MAX),
                (i32::MIN, 16),
                (i32::MAX, 15),
            ] {
                let (mut want, mut whits) = (vec![0f32; n], vec![0u32; n]);
                for gi in 0..n {
                    let tx = (gi % nt) as u32 % block[0];
                    let mut r = input[gi];
                    if tx >= u {
                        r += input[gi - u as usize];
                    }
                    whits[gi] = if (tx as i32) < bs { 1 } else { 2 } + if (tx as i32) <= bs { 10 } else { 0 };
                    if tx > u {
                        r *= 3.0;
                    }
                    want[gi] = r;
                }
                for (kk, form) in [(&orders, "generic"), (&s, "specialised")] {
                    let (mut o, mut h) = (vec![7f32; n], vec![7u32; n]);
                    let args = pack(&kk.params, &[&ptr(&mut input), &ptr(&mut o), &ptr(&mut h), &b(&bs), &b(&u)]);
                    launch(kk, grid, block, &args, 0);
                    let ctx = format!("{t:?} orders {block:?} b {bs} u {u} {form}");
                    assert_eq!(h, whits, "{ctx}: signed choices");
                    assert_eq!(o, want, "{ctx}: unsigned choices");
                }
            }
        }
        let steps = img.kernel("steps").unwrap();
        for nt in [256u32, 64, 100] {
            let s = steps.specialise([nt, 1, 1], false).unwrap();
            let n = nt as usize * 3;
            let mut input: Vec<f32> = (0..n as u32).map(|i| (i.wrapping_mul(2654435761) >> 22) as f32).collect();
            for shift in [0i32, 2] {
                let mut want = input.clone();
                for grp in want.chunks_mut(nt as usize) {
                    let mut off = 1 + shift;
                    while off < nt as i32 {
                        let prev = grp.to_vec();
                        for (i, x) in grp.iter_mut().enumerate() {
                            if i as i32 >= off {
                                *x += prev[i - off as usize];
                            }
                        }
                        off <<= 1;
                    }
                }
                for (kk, form) in [(&steps, "generic"), (&s, "specialised")] {
                    let mut o = vec![7f32; n];
                    let args = pack(&kk.params, &[&ptr(&mut input), &ptr(&mut o), &b(&shift)]);
                    launch(kk, [3, 1, 1], [nt, 1, 1], &args, 0);
                    assert_eq!(o, want, "{t:?} steps {nt} shift {shift} {form}");
                }
            }
        }
    }
}

/// Barrier-free kernels with divergent, memory-free loops (ffi-tests/kernels/lockstep.c: an escape-time
/// loop in floats, a capped Collatz walk, a 2-D walk with an inner loop and a second exit) give the
/// host's results generic and specialised, in groups whose rows are whole chunks, shorter than one, and
/// not a number of them (partial chunks and partial groups), on every target; ol-lockstep-loops fires on
/// each and ol-promote-slots with it (scripts/test.sh runs this test with the transforms off too).
#[test]
fn lockstep_loops_match_the_host() {
    let _g = shared();
    for t in TARGETS {
        let Some(img) = load_ok("lockstep", t) else {
            return;
        };
        let bc = bitcode("lockstep", t).unwrap();
        for k in ["escape", "collatz", "mixes"] {
            for spec in [None, Some([64u32, 1, 1]), Some([20, 3, 1])] {
                let on = transform_stats(&bc, "", spec.map(|g| (k, g)));
                let of = |n: &str| on.iter().filter(|(kn, _)| kn == k).map(|(_, s)| s.of(n)).sum::<u32>();
                assert!(of("ol-lockstep-loops") > 0 && of("ol-promote-slots") > 0, "{t:?} {k} {spec:?}: {on:?}");
            }
        }
        let shapes = [
            ([64u32, 1, 1], [5u32, 1, 1]),
            ([16, 1, 1], [9, 1, 1]),
            ([20, 3, 1], [4, 3, 1]),
            ([8, 4, 2], [3, 2, 1]),
            ([256, 1, 1], [2, 1, 1]),
        ];
        for (block, grid) in shapes {
            let nt = (block[0] * block[1] * block[2]) as usize;
            let total = nt * (grid[0] * grid[1] * grid[2]) as usize;
            // 1-D kernels over n items of the x ids (the last group partial; y and z ids repeat them);
            // `mixes` over a w x h image
            let n = (block[0] * grid[0]) as usize - 3;
            let cx: Vec<f32> = (0..total).map(|i| -2.2 + 3.0 * ((i * 7919) % 1000) as f32 / 1000.0).collect();
            let cy: Vec<f32> = (0..total).map(|i| -1.3 + 2.6 * ((i * 104729) % 997) as f32 / 997.0).collect();
            let seeds: Vec<u32> = (0..total as u32).map(|i| 1 + (i.wrapping_mul(2654435761) >> 12)).collect();
            let escape = |i: usize| {
                let (cr, ci) = (cx[i], cy[i]);
                let (mut zr, mut zi, mut k) = (0.0f32, 0.0f32, 0u32);
                while k < 200 {
                    let (zr2, zi2, zri) = (zr * zr, zi * zi, zr * zi);
                    if zr2 + zi2 > 4.0 {
                        break;
                    }
                    zr = zr2 - zi2 + cr;
                    zi = zri + zri + ci;
                    k += 1;
                }
                k
            };
            let collatz = |i: usize| {
                let (mut v, mut s) = (seeds[i], 0u32);
                while v > 1 && s < 500 {
                    v = if v & 1 == 1 { v.wrapping_mul(3).wrapping_add(1) } else { v / 2 };
                    s += 1;
                }
                if s < 500 { s } else { 500 + v }
            };
            let mixes = |v: u32| {
                let mut h = v;
                for _ in 0..v % 37 {
                    for r in 0..3 {
                        h = (h ^ (h >> 13)).wrapping_mul(0x5bd1e995).wrapping_add(r);
                    }
                    if h >> 31 != 0 {
                        break;
                    }
                }
                h
            };
            let (w, h) = ((block[0] * grid[0]) as usize - 1, (block[1] * grid[1]) as usize);
            for name in ["escape", "collatz", "mixes"] {
                let g = img.kernel(name).unwrap();
                let s = g.specialise(block, false).unwrap();
                for (kk, form) in [(&g, "generic"), (&s, "specialised")] {
                    let ctx = format!("{t:?} {name} {block:?} {form}");
                    let mut o = vec![7u32; total];
                    let (mut a, mut bb, mut sd) = (cx.clone(), cy.clone(), seeds.clone());
                    let (want, args): (Vec<u32>, Vec<u64>) = match name {
                        "escape" => (
                            (0..total).map(|i| if i < n { escape(i) } else { 7 }).collect(),
                            pack(&kk.params, &[&ptr(&mut o), &ptr(&mut a), &ptr(&mut bb), &b(&(n as u32))]),
                        ),
                        "collatz" => (
                            (0..total).map(|i| if i < n { collatz(i) } else { 7 }).collect(),
                            pack(&kk.params, &[&ptr(&mut o), &ptr(&mut sd), &b(&(n as u32))]),
                        ),
                        _ => (
                            (0..total).map(|i| if i < w * h { mixes(seeds[i]) } else { 7 }).collect(),
                            pack(&kk.params, &[&ptr(&mut o), &ptr(&mut sd), &b(&(w as u32)), &b(&(h as u32))]),
                        ),
                    };
                    launch(kk, grid, block, &args, 0);
                    let bad = o.iter().zip(&want).position(|(x, y)| x != y);
                    assert!(bad.is_none(), "{ctx}: first difference at {bad:?}: {:?}", bad.map(|i| (o[i], want[i])));
                }
            }
        }
    }
}

/// Every kernel of every C kernel file in the repository (ffi-tests/kernels, ffi-tests/device, bench/kernels), for each
/// target, specialised at group shapes of odd kinds (one work-item, a size that is no power of two, 3-D)
/// compiles: a lowering that fails or crashes on some shape shows only as a slower launch in a client (the
/// generic code runs instead); test_api23's grid barrier did, unnoticed, until OFFLOAD_RS_JIT_SPECIALISE=
/// require. `--ignored` (scripts/test.sh runs it once: about 2000 compiles, a minute or two on 2 CPUs);
/// `OFFLOAD_RS_SWEEP_ALL=1`: the quick versions too, at 8 shapes (warps of both widths, the largest group,
/// 2-D; about 9000 compiles, 9 minutes on one); `OFFLOAD_RS_SWEEP_FILES=a,b`: the files whose path contains
/// one of those.
#[test]
#[ignore]
fn every_kernel_specialises_at_odd_shapes() {
    const SHAPES: [[u32; 3]; 8] =
        [[1, 1, 1], [100, 1, 1], [8, 4, 2], [3, 1, 1], [32, 1, 1], [64, 1, 1], [1024, 1, 1], [16, 16, 1]];
    let all = std::env::var_os("OFFLOAD_RS_SWEEP_ALL").is_some_and(|v| v != "0");
    let (shapes, tiers): (&[[u32; 3]], &[bool]) =
        if all { (&SHAPES, &[true, false]) } else { (&SHAPES[..3], &[false]) };
    // (traps and printf call the CPU device's runtime, which its plugin registers)
    crate::jit::set_runtime_functions(crate::plugin::cpu::devicelib::functions());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let only = std::env::var("OFFLOAD_RS_SWEEP_FILES").ok();
    let mut files: Vec<String> = ["ffi-tests/kernels", "ffi-tests/device", "bench/kernels"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().map(|e| e.unwrap().path()))
        // (not the hand loops; not ffi-tests/device's constructor and destructor programs, whose loading runs
        // their deliberate faults and endless loops)
        .filter(|p| p.extension().is_some_and(|e| e == "c") && !p.to_string_lossy().ends_with("_hand.c"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with("ctor_") && !n.to_string_lossy().starts_with("dtor_"))
        })
        .map(|p| p.strip_prefix(&root).unwrap().to_string_lossy().into_owned())
        .filter(|p| only.as_ref().is_none_or(|o| o.split(',').any(|s| p.contains(s))))
        .collect();
    files.sort();
    let sweep = |rel: &String| {
        let (mut bad, mut compiled) = (Vec::new(), 0);
        for t in TARGETS {
            // (a file that is not for this target: skipped, as clang says)
            let Ok(Some(bc)) = std::panic::catch_unwind(|| bitcode_of(rel, t)) else {
                eprintln!("{rel} for {t:?}: does not compile, skipped");
                continue;
            };
            let img = match load(&bc) {
                Ok(img) => img,
                Err(e) => {
                    bad.push(format!("{rel} for {t:?}: not loaded: {e}"));
                    continue;
                }
            };
            for name in img.kernel_names() {
                let k = img.kernel(&name).unwrap();
                if !k.specialisable() {
                    continue;
                }
                for &gs in shapes {
                    for &quick in tiers {
                        compiled += 1;
                        if let Err(e) = k.specialise(gs, quick) {
                            let q = if quick { " (quick)" } else { "" };
                            bad.push(format!("{rel} {name} for {t:?} at {gs:?}{q}: {e}"));
                        }
                    }
                }
            }
        }
        (bad, compiled)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(Vec<String>, usize)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = (Vec::new(), 0);
                    while let Some(f) = files.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let (b, c) = sweep(f);
                        out.0.extend(b);
                        out.1 += c;
                    }
                    out
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let compiled: usize = results.iter().map(|(_, c)| c).sum();
    let bad: Vec<String> = results.into_iter().flat_map(|(b, _)| b).collect();
    eprintln!("{compiled} versions of the kernels of {} files", files.len());
    assert!(bad.is_empty(), "{} did not compile:\n{}", bad.len(), bad.join("\n"));
}
