//! Real JIT'd kernels (`ffi-tests/kernels/*.c`, built with clang-22 for nvptx64 and amdgcn) through
//! the CPU plugin: argument layouts (natural and packed), barriers with static local memory, dynamic
//! local memory, atomics, 3-D grids, queues and events. Skipped with a message when clang-22, the
//! kernel sources or a JIT that accepts bitcode are missing (the `cpu` branch has a JIT stub; the
//! tests were run against the `jit` branch's JIT in a scratch merge).

use super::*;
use std::process::Command;
use std::time::Instant;

/// Device bitcode of `ffi-tests/kernels/<name>.c`, or `None` (with a message) when it cannot be
/// built or the JIT does not take it.
fn bitcode(name: &str, nv: bool) -> Option<Vec<u8>> {
    let src = format!("{}/ffi-tests/kernels/{name}.c", env!("CARGO_MANIFEST_DIR"));
    if !std::path::Path::new(&src).exists() {
        eprintln!("SKIPPED: {src} not found");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("offload-rs-cpu-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join(format!("{name}-{nv}.bc"));
    let mut c = Command::new("clang-22");
    if nv {
        c.args(["--target=nvptx64-nvidia-cuda", "-march=sm_90", "--cuda-feature=+ptx80"]);
    } else {
        c.args(["--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a"]);
    }
    let ok = c
        .args(["-nogpulib", "-ffreestanding", "-flto", "-O2", "-c", &src, "-o"])
        .arg(&out)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: clang-22 could not build {src}");
        return None;
    }
    let bc = std::fs::read(&out).ok()?;
    let _ = std::fs::remove_file(&out);
    if !device().is_valid_binary(&bc) {
        eprintln!("SKIPPED: this build's JIT does not take bitcode (stub?)");
        return None;
    }
    Some(bc)
}

fn bc(name: &str, nv: bool) -> Vec<u8> {
    bitcode(name, nv).expect("checked by the caller")
}

fn d(ng: [u32; 3], gs: [u32; 3], dynm: usize) -> LaunchDims {
    LaunchDims { num_groups: ng, group_size: gs, dyn_shared_mem: dynm }
}

fn natural(fields: &[(&[u8], usize)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (b, align) in fields {
        while v.len() % align != 0 {
            v.push(0);
        }
        v.extend_from_slice(b);
    }
    v
}

#[test]
fn real_kernels() {
    let dev = device();
    if bitcode("saxpy", true).is_none() {
        return;
    }
    for nv in [true, false] {
        let t = Instant::now();
        let img = bc("saxpy", nv);
        assert!(dev.is_valid_binary(&img));
        let prog = dev.load_program(&img).unwrap();
        println!("nv={nv} load saxpy {:?}", t.elapsed());
        let k = prog.kernel("saxpy").unwrap();
        assert!(prog.kernel("nope").is_err());
        let n = 100_003u32;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut y = vec![1.0f32; n as usize];
        let a = 2.0f32.to_ne_bytes();
        let xp = (x.as_ptr() as usize).to_ne_bytes();
        let yp = (y.as_mut_ptr() as usize).to_ne_bytes();
        let nn = n.to_ne_bytes();
        let nat = natural(&[(&a, 4), (&xp, 8), (&yp, 8), (&nn, 4)]);
        assert_eq!(nat.len(), 28);
        let packed: Vec<u8> = [&a[..], &xp, &yp, &nn].concat();
        assert_eq!(packed.len(), 24);
        let dims = d([n.div_ceil(256), 1, 1], [256, 1, 1], 0);
        dev.launch_sync(k.clone(), LaunchArgs::Buffer(&nat), dims).unwrap();
        let q = dev.create_queue().unwrap();
        q.launch(k.clone(), LaunchArgs::Buffer(&packed), dims).unwrap();
        q.sync().unwrap();
        assert!(y.iter().enumerate().all(|(i, v)| *v == 1.0 + 4.0 * i as f32), "saxpy nv={nv}");
        assert!(dev.launch_sync(k.clone(), LaunchArgs::Buffer(&packed[..20]), dims).is_err());

        // barriers + static local memory
        let prog = dev.load_program(&bc("reduce", nv)).unwrap();
        let k = prog.kernel("reduce_sum").unwrap();
        let n = 1_000_000u32;
        let input: Vec<f32> = (0..n).map(|i| (i % 10) as f32).collect();
        let groups = n.div_ceil(256);
        let mut out = vec![0f32; groups as usize];
        let args = natural(&[
            (&(input.as_ptr() as usize).to_ne_bytes(), 8),
            (&(out.as_mut_ptr() as usize).to_ne_bytes(), 8),
            (&n.to_ne_bytes(), 4),
        ]);
        let q = dev.create_queue().unwrap();
        q.launch(k.clone(), LaunchArgs::Buffer(&args), d([groups, 1, 1], [256, 1, 1], 0)).unwrap();
        let ev = q.record_event().unwrap();
        if let Some(ev) = ev {
            ev.sync().unwrap();
        }
        let total: f64 = out.iter().map(|&v| v as f64).sum();
        let expect: f64 = input.iter().map(|&v| v as f64).sum();
        assert_eq!(total, expect, "reduce nv={nv}");

        // dynamic local memory
        let prog = dev.load_program(&bc("dynshared", nv)).unwrap();
        let k = prog.kernel("reverse_block").unwrap();
        let bs = 128u32;
        let groups = 300u32;
        let input: Vec<u32> = (0..bs * groups).collect();
        let mut out = vec![0u32; (bs * groups) as usize];
        let args =
            natural(&[(&(input.as_ptr() as usize).to_ne_bytes(), 8), (&(out.as_mut_ptr() as usize).to_ne_bytes(), 8)]);
        dev.launch_sync(k, LaunchArgs::Buffer(&args), d([groups, 1, 1], [bs, 1, 1], 4 * bs as usize)).unwrap();
        for g in 0..groups {
            for t in 0..bs {
                assert_eq!(out[(g * bs + t) as usize], 2 * (g * bs + bs - 1 - t), "dynshared nv={nv}");
            }
        }

        // atomics
        let prog = dev.load_program(&bc("atomics", nv)).unwrap();
        let k = prog.kernel("atomics").unwrap();
        let (mut c, mut m, mut cl) = (0u32, 0u32, 0u32);
        let args = natural(&[
            (&(&mut c as *mut u32 as usize).to_ne_bytes(), 8),
            (&(&mut m as *mut u32 as usize).to_ne_bytes(), 8),
            (&(&mut cl as *mut u32 as usize).to_ne_bytes(), 8),
        ]);
        dev.launch_sync(k, LaunchArgs::Buffer(&args), d([1000, 1, 1], [64, 1, 1], 0)).unwrap();
        assert_eq!((c, m), (64000, 63999));
        assert!((1..=64000).contains(&cl));

        // 3-D grid
        let prog = dev.load_program(&bc("grid", nv)).unwrap();
        let k = prog.kernel("coords3d").unwrap();
        let (ng, gs) = ([3u32, 2, 4], [4u32, 2, 3]);
        let (w, h, dd) = (12u32, 4u32, 12u32);
        let mut out = vec![0u32; (4 * w * h * dd) as usize];
        dev.launch_sync(k, LaunchArgs::Buffer(&(out.as_mut_ptr() as usize).to_ne_bytes()), d(ng, gs, 0)).unwrap();
        for z in 0..dd {
            for yy in 0..h {
                for xx in 0..w {
                    let i = (4 * ((z * h + yy) * w + xx)) as usize;
                    assert_eq!(&out[i..i + 4], &[xx, yy, z, 4 * 1000 + 3], "grid nv={nv}");
                }
            }
        }
        prog.unload().unwrap();
    }
}

/// The argument block of `reduce_sum(in, out, n)` (ffi-tests/kernels/reduce.c).
fn reduce_args(input: &[f32], out: &mut [f32], n: u32) -> Vec<u8> {
    natural(&[
        (&(input.as_ptr() as usize).to_ne_bytes(), 8),
        (&(out.as_mut_ptr() as usize).to_ne_bytes(), 8),
        (&n.to_ne_bytes(), 4),
    ])
}

/// Checks `reduce_sum`'s partial sums of the first `n` of `input` for groups of `g` work-items.
fn check_sums(input: &[f32], out: &[f32], n: u32, g: usize, what: &str) {
    for (i, got) in out.iter().enumerate() {
        let want: f32 = input[i * g..((i + 1) * g).min(n as usize)].iter().sum();
        assert_eq!(*got, want, "{what}: group {i}");
    }
}

/// A kernel's version for a group shape that did not compile: its launches run the generic code, or, under
/// `OFFLOAD_RS_JIT_SPECIALISE=require` (the ffi tests' setting in scripts/test.sh), fail with why.
#[test]
fn a_version_that_did_not_compile_is_the_launchs_error_only_where_required() {
    let why = "kernel 'k': its version for groups of 32x1x1 did not compile: a verifier failure";
    assert!(matches!(launch::not_compiled(Some(why), false), Ok(None)));
    assert!(matches!(launch::not_compiled(None, false), Ok(None)));
    for (w, text) in [(Some(why), why), (None, "its compile panicked")] {
        match launch::not_compiled(w, true) {
            Err(crate::plugin::PluginError::Backend(e)) => {
                assert!(e.contains(text) && e.contains("OFFLOAD_RS_JIT_SPECIALISE=require"), "{e}")
            }
            _ => panic!("{w:?}: no error where a version is required"),
        }
    }
}

/// The first launch at a new group shape runs the quick version while the full one compiles on the
/// tier-up thread; every later launch runs the full one (tier_up.rs); a program whose full version is
/// already in the JIT's cache runs that from its first launch. Results are the same either way (a
/// kernel with barriers and local memory, launched at a shape only this test uses).
#[test]
fn first_launch_at_a_shape_runs_the_quick_version_then_the_full_one() {
    let dev = device();
    if bitcode("reduce", true).is_none() || crate::jit::tiers() != crate::jit::Tiers::QuickFirst {
        return;
    }
    for nv in [true, false] {
        let img = bc("reduce", nv);
        let prog = dev.load_program(&img).unwrap();
        let k = prog.kernel("reduce_sum").unwrap();
        let ck = k.as_any().downcast_ref::<launch::CpuKernel>().unwrap();
        let gs = [32u32, 1, 1];
        let (first, upgrade) = ck.specialised_for(gs).unwrap().expect("a quick version");
        let (second, none) = ck.specialised_for(gs).unwrap().expect("the full version");
        let (third, _) = ck.specialised_for(gs).unwrap().expect("the full version");
        assert!(!Arc::ptr_eq(&first, &second), "nv={nv}: the second launch ran the first's code");
        assert!(Arc::ptr_eq(&second, &third), "nv={nv}");
        // the first launch moves to the full version (the second's) once it is compiled; no later one
        let full = upgrade.expect("the first launch's full version").try_get().expect("compiled by now");
        assert!(Arc::ptr_eq(&full.expect("compiled").unwrap(), &second), "nv={nv}");
        assert!(none.is_none(), "nv={nv}");
        // a second instance of the program: the full version is cached (the first instance keeps it)
        let prog2 = dev.load_program(&img).unwrap();
        let k2 = prog2.kernel("reduce_sum").unwrap();
        let ck2 = k2.as_any().downcast_ref::<launch::CpuKernel>().unwrap();
        let (a, none) = ck2.specialised_for(gs).unwrap().unwrap();
        assert!(none.is_none(), "nv={nv}: a cached full version not used");
        assert!(
            Arc::ptr_eq(&a, &ck2.specialised_for(gs).unwrap().unwrap().0),
            "nv={nv}: a cached full version not used"
        );
        // launches: a fresh program (its first launch quick), then the same kernel again (full)
        let prog3 = dev.load_program(&img).unwrap();
        let k3 = prog3.kernel("reduce_sum").unwrap();
        for n in [32u32 * 40 + 5, 32 * 41] {
            let input: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
            let groups = n.div_ceil(32);
            for _ in 0..2 {
                let mut out = vec![0f32; groups as usize];
                let args = reduce_args(&input, &mut out, n);
                dev.launch_sync(k3.clone(), LaunchArgs::Buffer(&args), d([groups, 1, 1], gs, 0)).unwrap();
                check_sums(&input, &out, n, 32, &format!("nv={nv} n={n}"));
            }
        }
        // a first launch whose full version is compiled before its work-groups start runs them with it
        let prog4 = dev.load_program(&img).unwrap();
        let k4 = prog4.kernel("reduce_sum").unwrap();
        let n = 32u32 * 64;
        let input: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let mut out = vec![0f32; 32];
        let args = reduce_args(&input, &mut out, n);
        // (a shape of its own: the full versions of 32 are cached by now)
        let gs4 = [64u32, 1, 1];
        let l = launch::prepare(k4.clone(), LaunchArgs::Buffer(&args), d([32, 1, 1], gs4, 0)).unwrap();
        let full = l.upgrade().expect("a first launch with a quick version").get();
        assert!(full.is_some_and(|f| f.is_ok()), "nv={nv}: the full version did not compile");
        l.execute().unwrap();
        assert!(l.upgraded_chunks.load(std::sync::atomic::Ordering::Relaxed) > 0, "nv={nv}: no work-group moved");
        check_sums(&input, &out, n, 64, &format!("nv={nv}, moved to the full version"));
        drop((k, k2, k3, k4));
        prog4.unload().unwrap();
        prog.unload().unwrap();
        prog2.unload().unwrap();
        prog3.unload().unwrap();
    }
}

/// ol-group-order through real launches: ffi-tests/kernels/tiles.c's `add_rows` (a grid whose x goes down
/// the rows) runs its groups y fastest once its full version runs (its first launch, quick, x fastest to
/// the end), a 1-D kernel x fastest; run in place (`c` is `a`: a group run twice would add `b` twice, one
/// not run would add nothing), on 2-D and 3-D grids with partial groups at both edges, every element gets
/// exactly one `b` per launch; `bias_rows` (a scale per row, a bias per column) is y fastest too and exact.
#[test]
fn groups_y_first_run_each_group_once() {
    let dev = device();
    if bitcode("tiles", true).is_none() {
        return;
    }
    for nv in [true, false] {
        let prog = dev.load_program(&bc("tiles", nv)).unwrap();
        let k = prog.kernel("add_rows").unwrap();
        let gs = [16u32, 16, 1];
        for (rows, cols, gz) in [(45u32, 29u32, 1u32), (64, 48, 1), (37, 70, 3)] {
            let b: Vec<u32> = (0..rows * cols).map(|i| i.wrapping_mul(2654435761) >> 8).collect();
            let mut a: Vec<u32> = (0..rows * cols).collect();
            let dims = d([rows.div_ceil(16), cols.div_ceil(16), gz], gs, 0);
            for launch_no in 1..=3u32 {
                let ap = (a.as_mut_ptr() as usize).to_ne_bytes();
                let bp = (b.as_ptr() as usize).to_ne_bytes();
                let args = natural(&[(&ap, 8), (&bp, 8), (&ap, 8), (&rows.to_ne_bytes(), 4), (&cols.to_ne_bytes(), 4)]);
                let l = launch::prepare(k.clone(), LaunchArgs::Buffer(&args), dims).unwrap();
                // (a 3-D grid's layers each add b once more)
                if launch_no > 1 || l.upgrade().is_none() {
                    assert!(l.groups_y_first(), "nv={nv} {rows}x{cols}x{gz}: launch {launch_no} not y fastest");
                }
                l.execute().unwrap();
                let want: Vec<u32> = (0..rows * cols).map(|i| i + launch_no * gz * b[i as usize]).collect();
                assert_eq!(a, want, "nv={nv} {rows}x{cols}x{gz}: launch {launch_no}");
            }
        }
        // another shape: a scale per row and a bias per column
        let k = prog.kernel("bias_rows").unwrap();
        let (rows, cols) = (53u32, 38u32);
        let a: Vec<f32> = (0..rows * cols).map(|i| (i % 97) as f32).collect();
        let sc: Vec<f32> = (0..rows).map(|r| (r % 5) as f32 + 0.5).collect();
        let v: Vec<f32> = (0..cols).map(|c| c as f32 * 0.25).collect();
        let want: Vec<f32> =
            (0..rows * cols).map(|i| a[i as usize] * sc[(i / cols) as usize] + v[(i % cols) as usize]).collect();
        for launch_no in 1..=2 {
            let mut out = vec![0f32; (rows * cols) as usize];
            let ptr = |p: *const f32| (p as usize).to_ne_bytes();
            let (pa, ps, pv, po) = (ptr(a.as_ptr()), ptr(sc.as_ptr()), ptr(v.as_ptr()), ptr(out.as_mut_ptr()));
            let args =
                natural(&[(&pa, 8), (&ps, 8), (&pv, 8), (&po, 8), (&rows.to_ne_bytes(), 4), (&cols.to_ne_bytes(), 4)]);
            let l = launch::prepare(
                k.clone(),
                LaunchArgs::Buffer(&args),
                d([rows.div_ceil(16), cols.div_ceil(16), 1], gs, 0),
            )
            .unwrap();
            if launch_no > 1 {
                assert!(l.groups_y_first(), "nv={nv} bias_rows: not y fastest");
            }
            l.execute().unwrap();
            assert_eq!(out, want, "nv={nv} bias_rows: launch {launch_no}");
        }
        // a 1-D kernel: x fastest
        let prog = dev.load_program(&bc("saxpy", nv)).unwrap();
        let k = prog.kernel("saxpy").unwrap();
        let mut y = vec![0f32; 256];
        let x = vec![1f32; 256];
        let args = natural(&[
            (&2f32.to_ne_bytes(), 4),
            (&(x.as_ptr() as usize).to_ne_bytes(), 8),
            (&(y.as_mut_ptr() as usize).to_ne_bytes(), 8),
            (&256u32.to_ne_bytes(), 4),
        ]);
        for _ in 0..2 {
            let l = launch::prepare(k.clone(), LaunchArgs::Buffer(&args), d([4, 1, 1], [64, 1, 1], 0)).unwrap();
            assert!(!l.groups_y_first(), "nv={nv}: saxpy y fastest");
            l.execute().unwrap();
        }
    }
}

/// Twenty threads launch one kernel at a shape none has run with, all at once: one of them gets the quick
/// version, the others the full one (one compile of each, whoever runs it), and every result is right.
#[test]
fn concurrent_first_launches_at_a_new_shape() {
    let dev = device();
    if bitcode("reduce", false).is_none() {
        return;
    }
    let prog = dev.load_program(&bc("reduce", false)).unwrap();
    let k = prog.kernel("reduce_sum").unwrap();
    let gs = [16u32, 1, 1];
    let n = 16u32 * 50 + 3;
    let input: Vec<f32> = (0..n).map(|i| (i % 11) as f32).collect();
    std::thread::scope(|s| {
        for _ in 0..20 {
            s.spawn(|| {
                let groups = n.div_ceil(16);
                let mut out = vec![0f32; groups as usize];
                let args = reduce_args(&input, &mut out, n);
                dev.launch_sync(k.clone(), LaunchArgs::Buffer(&args), d([groups, 1, 1], gs, 0)).unwrap();
                check_sums(&input, &out, n, 16, "concurrent first launches");
            });
        }
    });
    drop(k);
    prog.unload().unwrap();
}

/// Timing, not a test: `cargo test --release --lib -- --ignored --nocapture jit_saxpy_bench`.
#[test]
#[ignore]
fn jit_saxpy_bench() {
    let dev = device();
    if bitcode("saxpy", true).is_none() {
        return;
    }
    let prog = dev.load_program(&bc("saxpy", true)).unwrap();
    let k = prog.kernel("saxpy").unwrap();
    let n = 16usize << 20;
    let x = dev.alloc(n * 4, AllocKind::Device).unwrap();
    let y = dev.alloc(n * 4, AllocKind::Device).unwrap();
    let z = dev.alloc(n * 4, AllocKind::Device).unwrap();
    // SAFETY: fresh allocations of n * 4 bytes.
    unsafe {
        std::ptr::write_bytes(x as *mut u8, 0, n * 4);
        std::ptr::write_bytes(y as *mut u8, 0, n * 4);
        std::ptr::write_bytes(z as *mut u8, 0, n * 4);
    }
    let args = natural(&[
        (&1.5f32.to_ne_bytes(), 4),
        (&x.to_ne_bytes(), 8),
        (&y.to_ne_bytes(), 8),
        (&(n as u32).to_ne_bytes(), 4),
    ]);
    let dims = d([(n / 256) as u32, 1, 1], [256, 1, 1], 0);
    let mut s = Vec::new();
    let mut c = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        dev.launch_sync(k.clone(), LaunchArgs::Buffer(&args), dims).unwrap();
        s.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        std::thread::scope(|sc| {
            for h in 0..2 {
                // SAFETY: disjoint halves of two allocations of n * 4 bytes.
                sc.spawn(move || unsafe {
                    std::ptr::copy_nonoverlapping((x + h * n * 2) as *const u8, (z + h * n * 2) as *mut u8, n * 2)
                });
            }
        });
        c.push(t.elapsed().as_secs_f64() * 1e3);
    }
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    c.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "JIT saxpy 16M: median {:.2} ms min {:.2} ms; 2-thread memcpy 64 MiB: median {:.2} min {:.2}; ratio {:.2}/{:.2}",
        s[7],
        s[0],
        c[7],
        c[0],
        s[7] / c[7],
        s[0] / c[0]
    );
    let empty_q = dev.create_queue().unwrap();
    let d1 = d([1, 1, 1], [1, 1, 1], 0);
    let small =
        natural(&[(&1.5f32.to_ne_bytes(), 4), (&x.to_ne_bytes(), 8), (&y.to_ne_bytes(), 8), (&0u32.to_ne_bytes(), 4)]);
    let mut v = Vec::new();
    for _ in 0..20000 {
        let t = Instant::now();
        empty_q.launch(k.clone(), LaunchArgs::Buffer(&small), d1).unwrap();
        empty_q.sync().unwrap();
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("JIT saxpy n=0, 1 group, queue launch+sync: median {:.2} us", v[10000]);
}
