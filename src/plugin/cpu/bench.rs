//! Timing of the CPU device (not a test; numbers only). Run with
//! `cargo test --release --lib -- --ignored --nocapture bench_cpu_pool`.
//!
//! * empty-kernel `launch_sync` latency: 1 group (inline on the caller) and 2/64 groups (pool wake-up);
//! * empty-kernel launch + sync through a queue, and pipelined queue launches;
//! * saxpy over 16M floats (groups of 256) vs a 2-thread memcpy of one 64 MiB array in the same run.

use super::*;
use crate::jit::{ParamLayout, WgCtx};
use std::time::{Duration, Instant};

unsafe extern "C" fn empty_wg(_ctx: *const WgCtx) {}

/// saxpy(float a, const float* x, float* y, uint n), natural layout a@0 x@8 y@16 n@24
unsafe extern "C" fn saxpy_wg(ctx: *const WgCtx) {
    // SAFETY: launched with the saxpy layout and x, y of n floats.
    unsafe {
        let c = &*ctx;
        let a = *(c.args as *const f32);
        let x = *(c.args.add(8) as *const *const f32);
        let y = *(c.args.add(16) as *const *mut f32);
        let n = *(c.args.add(24) as *const u32) as usize;
        let gs = c.group_size[0] as usize;
        let start = c.group_id[0] as usize * gs;
        let end = (start + gs).min(n);
        if start >= end {
            return;
        }
        let xs = std::slice::from_raw_parts(x.add(start), end - start);
        let ys = std::slice::from_raw_parts_mut(y.add(start), end - start);
        for (yv, xv) in ys.iter_mut().zip(xs) {
            *yv += a * *xv;
        }
    }
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let med = v[v.len() / 2].as_secs_f64() * 1e6;
    let min = v[0].as_secs_f64() * 1e6;
    (med, min)
}

fn time_n(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

pub fn run() {
    let dev = device();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("CPU device: {} ({} threads), loadavg {}", dev.info().name, pool::pool().threads(), load.trim());
    // SAFETY: does nothing.
    let empty: Arc<dyn Kernel> = Arc::new(unsafe { CpuKernel::from_raw("empty", empty_wg, vec![], 0) });
    let d1 = LaunchDims { num_groups: [1, 1, 1], group_size: [1, 1, 1], dyn_shared_mem: 0 };
    for groups in [1u32, 2, 64] {
        let d = LaunchDims { num_groups: [groups, 1, 1], ..d1 };
        for _ in 0..1000 {
            dev.launch_sync(empty.clone(), LaunchArgs::Buffer(&[]), d).unwrap();
        }
        let (med, min) = stats(time_n(20000, || dev.launch_sync(empty.clone(), LaunchArgs::Buffer(&[]), d).unwrap()));
        println!("empty launch_sync, {groups:>2} groups: median {med:.2} us, min {min:.2} us");
    }
    let q = dev.create_queue().unwrap();
    for _ in 0..1000 {
        q.launch(empty.clone(), LaunchArgs::Buffer(&[]), d1).unwrap();
        q.sync().unwrap();
    }
    let (med, min) = stats(time_n(20000, || {
        q.launch(empty.clone(), LaunchArgs::Buffer(&[]), d1).unwrap();
        q.sync().unwrap();
    }));
    println!("empty queue launch + sync: median {med:.2} us, min {min:.2} us");
    // after the queue threads and the pool workers parked (the sleep itself is not timed)
    let idle = |f: &mut dyn FnMut()| -> Vec<Duration> {
        (0..50)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(3));
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect()
    };
    let (med, min) = stats(idle(&mut || {
        q.launch(empty.clone(), LaunchArgs::Buffer(&[]), d1).unwrap();
        q.sync().unwrap();
    }));
    println!("empty queue launch + sync after 3 ms idle: median {med:.2} us, min {min:.2} us");
    let (med, min) = stats(idle(&mut || q.launch(empty.clone(), LaunchArgs::Buffer(&[]), d1).unwrap()));
    println!("  of which the enqueue (wakes a parked queue thread): median {med:.2} us, min {min:.2} us");
    q.sync().unwrap();
    let d64 = LaunchDims { num_groups: [64, 1, 1], ..d1 };
    let (med, min) = stats(idle(&mut || dev.launch_sync(empty.clone(), LaunchArgs::Buffer(&[]), d64).unwrap()));
    println!("empty launch_sync, 64 groups, after 3 ms idle: median {med:.2} us, min {min:.2} us");
    let host = |q: &Arc<dyn Queue>| {
        q.host_fn(Box::new(|| {})).unwrap();
        q.sync().unwrap();
    };
    let (med, min) = stats(time_n(2000, || host(&q)));
    println!("empty host function + sync (queue threads hot): median {med:.2} us, min {min:.2} us");
    let (med, min) = stats(idle(&mut || host(&q)));
    println!("empty host function + sync after 3 ms idle: median {med:.2} us, min {min:.2} us");
    let n = 100_000;
    let t = Instant::now();
    for _ in 0..n {
        q.launch(empty.clone(), LaunchArgs::Buffer(&[]), d1).unwrap();
    }
    let enq = t.elapsed();
    q.sync().unwrap();
    let all = t.elapsed();
    println!(
        "pipelined empty queue launches: enqueue {:.2} us each, {:.2} us each until synced",
        enq.as_secs_f64() * 1e6 / n as f64,
        all.as_secs_f64() * 1e6 / n as f64
    );

    // saxpy 16M vs 2-thread memcpy of 64 MiB
    let n = 16usize << 20;
    let bytes = n * 4;
    let x = dev.alloc(bytes, AllocKind::Device).unwrap();
    let y = dev.alloc(bytes, AllocKind::Device).unwrap();
    let z = dev.alloc(bytes, AllocKind::Device).unwrap();
    // SAFETY: fresh allocations of `bytes`.
    unsafe {
        let xs = std::slice::from_raw_parts_mut(x as *mut f32, n);
        let ys = std::slice::from_raw_parts_mut(y as *mut f32, n);
        for i in 0..n {
            xs[i] = i as f32;
            ys[i] = 1.0;
        }
        std::ptr::write_bytes(z as *mut u8, 0, bytes);
    }
    let params = vec![
        ParamLayout { size: 4, align: 4 },
        ParamLayout { size: 8, align: 8 },
        ParamLayout { size: 8, align: 8 },
        ParamLayout { size: 4, align: 4 },
    ];
    // SAFETY: saxpy_wg reads the declared params and stays within n elements.
    let saxpy: Arc<dyn Kernel> = Arc::new(unsafe { CpuKernel::from_raw("saxpy", saxpy_wg, params, 0) });
    let mut args = vec![0u8; 28];
    args[0..4].copy_from_slice(&0.5f32.to_ne_bytes());
    args[8..16].copy_from_slice(&x.to_ne_bytes());
    args[16..24].copy_from_slice(&y.to_ne_bytes());
    args[24..28].copy_from_slice(&(n as u32).to_ne_bytes());
    let ds = LaunchDims { num_groups: [(n / 256) as u32, 1, 1], group_size: [256, 1, 1], dyn_shared_mem: 0 };
    let mut sax = Vec::new();
    let mut cp2 = Vec::new();
    let mut cpp = Vec::new();
    let mut cp1 = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        dev.launch_sync(saxpy.clone(), LaunchArgs::Buffer(&args), ds).unwrap();
        sax.push(t.elapsed());
        let t = Instant::now();
        std::thread::scope(|s| {
            let half = bytes / 2;
            for k in 0..2 {
                s.spawn(move || {
                    // SAFETY: disjoint halves of two separate allocations of `bytes`.
                    unsafe {
                        std::ptr::copy_nonoverlapping((x + k * half) as *const u8, (z + k * half) as *mut u8, half)
                    }
                });
            }
        });
        cp2.push(t.elapsed());
        let t = Instant::now();
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { dev.memcpy_sync(z, x, bytes) }.unwrap();
        cpp.push(t.elapsed());
        let t = Instant::now();
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(x as *const u8, z as *mut u8, bytes) };
        cp1.push(t.elapsed());
    }
    let (s_med, s_min) = stats(sax);
    let (c_med, c_min) = stats(cp2);
    let (p_med, p_min) = stats(cpp);
    let (o_med, o_min) = stats(cp1);
    println!("saxpy 16M floats, groups of 256: median {:.2} ms, min {:.2} ms", s_med / 1e3, s_min / 1e3);
    println!("memcpy 64 MiB, 2 scoped threads: median {:.2} ms, min {:.2} ms", c_med / 1e3, c_min / 1e3);
    println!("memcpy 64 MiB, memcpy_sync (pool): median {:.2} ms, min {:.2} ms", p_med / 1e3, p_min / 1e3);
    println!("memcpy 64 MiB, 1 thread: median {:.2} ms, min {:.2} ms", o_med / 1e3, o_min / 1e3);
    println!("saxpy / 2-thread memcpy: {:.2} (median), {:.2} (min)", s_med / c_med, s_min / c_min);
    for p in [x, y, z] {
        dev.free(p, AllocKind::Device).unwrap();
    }
}

/// Parallel (pool) vs single-threaded copies and fills at several sizes, interleaved.
pub fn copy() {
    let dev = device();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("loadavg {}", load.trim());
    for mib in [1usize, 4, 16, 64, 256] {
        let bytes = mib << 20;
        let a = dev.alloc(bytes, AllocKind::Device).unwrap();
        let b = dev.alloc(bytes, AllocKind::Device).unwrap();
        // SAFETY: fresh allocations of `bytes`.
        unsafe {
            std::ptr::write_bytes(a as *mut u8, 1, bytes);
            std::ptr::write_bytes(b as *mut u8, 2, bytes);
        }
        let reps = (2048 / mib).clamp(5, 200);
        let (mut one, mut par, mut fill1, mut fillp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let pat = [1u8, 2, 3, 4];
        for _ in 0..reps {
            let t = Instant::now();
            // SAFETY: both allocations have `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(a as *const u8, b as *mut u8, bytes) };
            one.push(t.elapsed());
            let t = Instant::now();
            // SAFETY: as above.
            unsafe { memory::copy(b, a, bytes) };
            par.push(t.elapsed());
            let t = Instant::now();
            // SAFETY: as above; 4 divides bytes.
            unsafe {
                let p = b as *mut u32;
                for i in 0..bytes / 4 {
                    p.add(i).write(u32::from_ne_bytes(pat));
                }
            }
            fill1.push(t.elapsed());
            let t = Instant::now();
            // SAFETY: as above.
            unsafe { memory::fill(b, &pat, bytes).unwrap() };
            fillp.push(t.elapsed());
        }
        let gbs = |d: f64| bytes as f64 / d / 1e3; // d in us -> GB/s
        let (m1, n1) = stats(one);
        let (mp, np) = stats(par);
        let (f1, g1) = stats(fill1);
        let (fp, gp) = stats(fillp);
        println!(
            "{mib:>4} MiB copy: 1 thread {:.1} GB/s (best {:.1}), memory::copy {:.1} GB/s (best {:.1}); \
             fill: loop {:.1} (best {:.1}), memory::fill {:.1} (best {:.1})",
            gbs(m1),
            gbs(n1),
            gbs(mp),
            gbs(np),
            gbs(f1),
            gbs(g1),
            gbs(fp),
            gbs(gp)
        );
        dev.free(a, AllocKind::Device).unwrap();
        dev.free(b, AllocKind::Device).unwrap();
    }
}
