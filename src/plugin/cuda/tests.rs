//! Tests of the CUDA plugin through its safe objects. Every `gpu_*` test prints `SKIP` and passes
//! when there is no CUDA device (this machine, CI); `scripts/gpu-check.sh` runs them on a GPU.
//! Kernels: `ffi-tests/kernels/cuda/*.c` as NVPTX bitcode (the same kind the CPU device runs),
//! prebuilt in `$OFFLOAD_RS_KERNELS_DIR` or compiled with clang-22.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::device::{CudaDevice, CudaKernel};
use super::driver::*;
use super::ptx::tests::kernel_bitcode;
use super::*;
use crate::plugin::{AllocKind, Event, LaunchDims, PluginError, PluginResult, Program};

fn gpu() -> Option<Arc<dyn Device>> {
    let d = devices();
    match d.first() {
        Some(d) => Some(d.clone()),
        None => {
            eprintln!("SKIP: no CUDA device (set OFFLOAD_RS_DEBUG=1 to see why)");
            None
        }
    }
}

fn load(dev: &Arc<dyn Device>, name: &str) -> Arc<dyn Program> {
    let bc = kernel_bitcode(name).unwrap_or_else(|| panic!("kernel bitcode '{name}' unavailable (no $OFFLOAD_RS_KERNELS_DIR, no clang-22)"));
    assert!(dev.is_valid_binary(&bc), "is_valid_binary({name}.bc)");
    match dev.load_program(&bc) {
        Ok(p) => p,
        Err(e) => panic!("load_program({name}.bc): {e:?}"),
    }
}

fn dims1(groups: u32, threads: u32) -> LaunchDims {
    LaunchDims { num_groups: [groups, 1, 1], group_size: [threads, 1, 1], dyn_shared_mem: 0 }
}

/// A device allocation freed on drop.
struct Buf {
    dev: Arc<dyn Device>,
    ptr: usize,
    size: usize,
    kind: AllocKind,
}

impl Buf {
    fn new(dev: &Arc<dyn Device>, size: usize, kind: AllocKind) -> Buf {
        let ptr = dev.alloc(size, kind).unwrap_or_else(|e| panic!("alloc {size} {kind:?}: {e:?}"));
        assert_ne!(ptr, 0);
        Buf { dev: dev.clone(), ptr, size, kind }
    }
    fn upload<T: Copy>(&self, v: &[T]) {
        let n = std::mem::size_of_val(v);
        assert!(n <= self.size);
        self.dev.memcpy_sync(self.ptr, true, v.as_ptr() as usize, false, n).expect("memcpy H2D");
    }
    fn download<T: Copy + Default>(&self, n: usize) -> Vec<T> {
        let mut v = vec![T::default(); n];
        let bytes = n * std::mem::size_of::<T>();
        assert!(bytes <= self.size);
        self.dev.memcpy_sync(v.as_mut_ptr() as usize, false, self.ptr, true, bytes).expect("memcpy D2H");
        v
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        if let Err(e) = self.dev.free(self.ptr, self.kind) {
            eprintln!("free failed: {e:?}");
        }
    }
}

/// Kernel argument buffer laid out like a C struct: natural alignment (LLVM's convention) or packed
/// (Unified Runtime's adapter).
#[derive(Default)]
struct Args {
    bytes: Vec<u8>,
    packed: bool,
}

impl Args {
    fn packed() -> Args {
        Args { bytes: Vec::new(), packed: true }
    }
    fn arg<T: Copy>(mut self, v: T) -> Args {
        let size = std::mem::size_of::<T>();
        if !self.packed {
            while self.bytes.len() % size != 0 {
                self.bytes.push(0);
            }
        }
        // SAFETY: T is Copy plain data; we read its bytes.
        let b = unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, size) };
        self.bytes.extend_from_slice(b);
        self
    }
    fn finish(mut self) -> Vec<u8> {
        if !self.packed {
            while self.bytes.len() % 8 != 0 {
                self.bytes.push(0);
            }
        }
        self.bytes
    }
}

#[test]
fn no_driver_means_no_devices_and_no_panic() {
    // On a machine without libcuda this is empty; with one it lists the GPUs. Never panics.
    let d = devices();
    for dev in &d {
        eprintln!("CUDA device: {:?}", dev.info());
    }
    if Driver::load().is_err() {
        assert!(d.is_empty());
    }
    // twice: the driver table is loaded once, devices can be listed again
    assert_eq!(devices().len(), d.len());
}

#[test]
fn gpu_info() {
    let Some(dev) = gpu() else { return };
    let i = dev.info();
    eprintln!("{i:#?}");
    assert!(i.uid.starts_with("CUDA-") && i.uid.len() == 37, "{}", i.uid);
    assert!(i.uid[5..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(i.vendor, "NVIDIA Corporation");
    assert_eq!(i.vendor_id, 0x10de);
    assert_eq!(i.device_type, 2);
    assert!(i.max_work_group_size >= 512);
    assert!(i.num_compute_units > 0 && i.global_mem_size > (1 << 30));
    assert!(i.driver_version.contains('.'));
    let cd = dev.as_any().downcast_ref::<CudaDevice>().unwrap();
    eprintln!("sm_{}{} ptx ISA {}", cd.inner.major, cd.inner.minor, cd.ptx_isa());
}

#[test]
fn gpu_saxpy() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "kernels");
    let k = prog.kernel("saxpy").unwrap();
    let ck = k.as_any().downcast_ref::<CudaKernel>().unwrap();
    eprintln!("saxpy param layout: {:?}", ck.param_layout());
    let n = 1u32 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = vec![1.0; n as usize];
    let bx = Buf::new(&dev, 4 * n as usize, AllocKind::Device);
    let by = Buf::new(&dev, 4 * n as usize, AllocKind::Device);
    bx.upload(&x);
    by.upload(&y);
    let q = dev.create_queue().unwrap();
    let args = Args::default().arg(2.0f32).arg(bx.ptr).arg(by.ptr).arg(n).finish();
    assert_eq!(args.len(), 32);
    q.launch(k.clone(), &args, dims1(n / 256, 256)).unwrap();
    q.sync().unwrap();
    let out: Vec<f32> = by.download(n as usize);
    for i in 0..n as usize {
        assert_eq!(out[i], 2.0 * i as f32 + 1.0, "saxpy at {i}");
    }
    // Packed arguments (24 bytes instead of 28): repacked when the driver reports the layout.
    let packed = Args::packed().arg(1.0f32).arg(bx.ptr).arg(by.ptr).arg(n).finish();
    assert_eq!(packed.len(), 24);
    if ck.param_layout().is_some() {
        dev.launch_sync(k.clone(), &packed, dims1(n / 256, 256)).unwrap();
        let out: Vec<f32> = by.download(n as usize);
        for i in 0..n as usize {
            assert_eq!(out[i], 3.0 * i as f32 + 1.0, "packed saxpy at {i}");
        }
        // any other short buffer: LLVM's error
        match dev.launch_sync(k.clone(), &packed[..20], dims1(1, 1)) {
            Err(PluginError::InvalidArgument(m)) => assert_eq!(m, "mismatch in kernel arguments"),
            other => panic!("{other:?}"),
        }
    } else {
        eprintln!("NOTE: no cuFuncGetParamInfo: packed-argument repacking not exercised");
    }
}

#[test]
fn gpu_reduce_shared_memory_barriers() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "kernels");
    let n = 1u32 << 18;
    let input: Vec<u32> = (0..n).map(|i| (i * 7919) % 1000).collect();
    let blocks = n / 256;
    let bin = Buf::new(&dev, 4 * n as usize, AllocKind::Device);
    let bout = Buf::new(&dev, 4 * blocks as usize, AllocKind::Device);
    bin.upload(&input);
    let expect: Vec<u32> = input.chunks(256).map(|c| c.iter().sum()).collect();
    for (name, shm) in [("reduce_sum", 0usize), ("reduce_sum_dyn", 256 * 4)] {
        let k = prog.kernel(name).unwrap();
        let args = Args::default().arg(bin.ptr).arg(bout.ptr).arg(n).finish();
        let mut d = dims1(blocks, 256);
        d.dyn_shared_mem = shm;
        dev.launch_sync(k, &args, d).unwrap();
        let got: Vec<u32> = bout.download(blocks as usize);
        assert_eq!(got, expect, "{name}");
    }
    // dynamic shared memory above 48 KiB: the plugin raises the kernel's limit
    let k = prog.kernel("reduce_sum_dyn").unwrap();
    let args = Args::default().arg(bin.ptr).arg(bout.ptr).arg(n).finish();
    let mut d = dims1(blocks, 256);
    d.dyn_shared_mem = 64 * 1024;
    match dev.launch_sync(k, &args, d) {
        Ok(()) => assert_eq!(bout.download::<u32>(blocks as usize), expect, "64 KiB dyn shared"),
        Err(e) => panic!("launch with 64 KiB dynamic shared memory: {e:?}"),
    }
}

#[test]
fn gpu_grid_2d() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "kernels");
    let k = prog.kernel("grid2d").unwrap();
    let (w, h) = (1000u32, 300u32);
    let b = Buf::new(&dev, (4 * w * h) as usize, AllocKind::Device);
    let q = dev.create_queue().unwrap();
    q.fill(b.ptr, &[0xff], (4 * w * h) as usize).unwrap();
    let args = Args::default().arg(b.ptr).arg(w).arg(h).finish();
    let dims = LaunchDims { num_groups: [w.div_ceil(16), h.div_ceil(8), 1], group_size: [16, 8, 1], dyn_shared_mem: 0 };
    q.launch(k, &args, dims).unwrap();
    q.sync().unwrap();
    let got: Vec<u32> = b.download((w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(got[(y * w + x) as usize], (y << 16) | x, "at ({x},{y})");
        }
    }
}

#[test]
fn gpu_globals() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "kernels");
    let g = prog.global("global_array").unwrap();
    assert_eq!(g.size, 256);
    let s = prog.global("global_scalar").unwrap();
    assert_eq!(s.size, 4);
    let mut seven = 0u32;
    dev.memcpy_sync(&mut seven as *mut u32 as usize, false, s.addr, true, 4).unwrap();
    assert_eq!(seven, 7);
    let vals: Vec<u32> = (0..64).map(|i| i * 10).collect();
    dev.memcpy_sync(g.addr, true, vals.as_ptr() as usize, false, 256).unwrap();
    let out = Buf::new(&dev, 256, AllocKind::Device);
    let args = Args::default().arg(out.ptr).finish();
    dev.launch_sync(prog.kernel("read_global").unwrap(), &args, dims1(1, 64)).unwrap();
    let got: Vec<u32> = out.download(64);
    assert_eq!(got, (0..64).map(|i| i * 20 + 7).collect::<Vec<u32>>());
    dev.launch_sync(prog.kernel("write_global").unwrap(), &[], dims1(1, 64)).unwrap();
    let mut back = vec![0u32; 64];
    dev.memcpy_sync(back.as_mut_ptr() as usize, false, g.addr, true, 256).unwrap();
    assert_eq!(back, (0..64).map(|i| i * 3).collect::<Vec<u32>>());
    // lookups that fail
    match prog.kernel("no_such_kernel") {
        Err(PluginError::NotFound(m)) => assert!(m.starts_with("error in cuModuleGetFunction('no_such_kernel'): "), "{m}"),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("found a missing kernel"),
    }
    assert!(matches!(prog.global("no_such_global"), Err(PluginError::NotFound(_))));
    assert!(matches!(prog.global("saxpy"), Err(PluginError::NotFound(_))), "kernel name as global");
    // multiargs(char, int*, short) with the natural 24-byte struct
    let out2 = Buf::new(&dev, 8, AllocKind::Device);
    let args = Args::default().arg(b'x' as i8).arg(out2.ptr).arg(-3i16).finish();
    assert_eq!(args.len(), 24);
    dev.launch_sync(prog.kernel("multiargs").unwrap(), &args, dims1(1, 1)).unwrap();
    assert_eq!(out2.download::<i32>(2), vec![b'x' as i32, -3]);
}

#[test]
fn gpu_global_ctors() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "ctor");
    let out = Buf::new(&dev, 4, AllocKind::Device);
    let args = Args::default().arg(out.ptr).finish();
    dev.launch_sync(prog.kernel("get_value").unwrap(), &args, dims1(1, 1)).unwrap();
    assert_eq!(out.download::<i32>(1), vec![100], "constructors 200, 201, 202 in priority order");
    let g = prog.global("dtor_ran").unwrap();
    let mut ran = -1i32;
    dev.memcpy_sync(&mut ran as *mut i32 as usize, false, g.addr, true, 4).unwrap();
    assert_eq!(ran, 0, "destructor not yet run");
    prog.unload().expect("unload runs destructors");
    prog.unload().expect("second unload is a no-op");
    assert!(prog.kernel("get_value").is_err());
}

#[test]
fn gpu_program_formats_and_errors() {
    let Some(dev) = gpu() else { return };
    let cd = dev.as_any().downcast_ref::<CudaDevice>().unwrap();
    let bc = kernel_bitcode("kernels").expect("kernels.bc");
    // PTX text, compiled here, loads too
    let cpu = image::llvm_cpu_for_sm(cd.inner.major, cd.inner.minor);
    let ptx = ptx::compile_to_ptx(&bc, &cpu, &image::ptx_feature(cd.ptx_isa(), cd.inner.major * 10 + cd.inner.minor)).unwrap();
    assert!(dev.is_valid_binary(ptx.as_bytes()));
    let p = dev.load_program(ptx.as_bytes()).expect("load PTX text");
    p.kernel("saxpy").unwrap();
    // garbage
    assert!(!dev.is_valid_binary(b"garbage"));
    assert!(!dev.is_valid_binary(b""));
    match dev.load_program(b"garbage!") {
        Err(PluginError::InvalidBinary(m)) => assert!(m.starts_with("expected a CUBIN ELF, PTX text or NVPTX LLVM bitcode, found"), "{m}"),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("loaded garbage"),
    }
    // broken PTX: the driver's JIT log is in the message
    let bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry broken() { this is not ptx; }\n";
    match dev.load_program(bad.as_bytes()) {
        Err(e) => {
            let m = e.to_string();
            eprintln!("broken PTX -> {m}");
            assert!(m.starts_with("error in cuModuleLoadDataEx: "), "{m}");
        }
        Ok(_) => panic!("loaded broken PTX"),
    }
    // content cache: two programs from the same bitcode share one PTX, evicted after both go
    let before = ptx::cache_len();
    let a = dev.load_program(&bc).unwrap();
    let b = dev.load_program(&bc).unwrap();
    assert!(ptx::cache_len() <= before + 1);
    drop(a);
    drop(b);
    eprintln!("ptx cache entries: before {before}, after {}", ptx::cache_len());
}

#[test]
fn gpu_memory_kinds_and_fills() {
    let Some(dev) = gpu() else { return };
    let q = dev.create_queue().unwrap();
    for kind in [AllocKind::Device, AllocKind::Host, AllocKind::Managed] {
        for pattern in [vec![0xAB], vec![1, 2], vec![1, 2, 3, 4], (10..26).collect::<Vec<u8>>(), (30..47).collect::<Vec<u8>>()] {
            let reps = 1000;
            let size = pattern.len() * reps;
            let b = Buf::new(&dev, size + 64, kind);
            q.fill(b.ptr, &[0u8], size + 64).unwrap();
            q.fill(b.ptr, &pattern, size).unwrap();
            q.sync().unwrap();
            let got: Vec<u8> = b.download(size + 64);
            for (i, &v) in got[..size].iter().enumerate() {
                assert_eq!(v, pattern[i % pattern.len()], "{kind:?} pattern {} at {i}", pattern.len());
            }
            assert!(got[size..].iter().all(|&v| v == 0), "{kind:?} fill overran");
            if kind != AllocKind::Device {
                // host-visible memory: read directly
                // SAFETY: pinned/managed allocation of `size` bytes, the queue is synchronized.
                let direct = unsafe { std::slice::from_raw_parts(b.ptr as *const u8, size) };
                assert_eq!(direct, &got[..size]);
            }
        }
    }
    // D2D and host<->host-registered copies through the queue
    let a = Buf::new(&dev, 4096, AllocKind::Device);
    let c = Buf::new(&dev, 4096, AllocKind::Device);
    let src: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
    let mut host = vec![0u8; 4096];
    let pinned = dev.register_host(host.as_mut_ptr() as usize, 4096).unwrap();
    assert_eq!(pinned, host.as_mut_ptr() as usize);
    q.memcpy(a.ptr, true, src.as_ptr() as usize, false, 4096).unwrap();
    q.memcpy(c.ptr, true, a.ptr, true, 4096).unwrap();
    q.memcpy(pinned, false, c.ptr, true, 4096).unwrap();
    q.sync().unwrap();
    assert_eq!(host, src);
    dev.unregister_host(pinned).unwrap();
    assert!(matches!(dev.unregister_host(pinned), Err(PluginError::InvalidArgument(_))));
    // zero-size copies are fine
    dev.memcpy_sync(a.ptr, true, src.as_ptr() as usize, false, 0).unwrap();
}

/// An event of "another plugin": completes when its flag is set.
struct ForeignEvent(Arc<AtomicBool>);
impl Event for ForeignEvent {
    fn is_complete(&self) -> PluginResult<bool> {
        Ok(self.0.load(Ordering::SeqCst))
    }
    fn sync(&self) -> PluginResult<()> {
        while !self.0.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[test]
fn gpu_queues_events_host_functions() {
    let Some(dev) = gpu() else { return };
    let q = dev.create_queue().unwrap();
    assert!(q.is_empty().unwrap());
    assert!(q.record_event().unwrap().is_none(), "idle queue: no event");
    // host functions run in order
    let log = Arc::new(Mutex::new(Vec::new()));
    for i in 0..10 {
        let l = log.clone();
        q.host_fn(Box::new(move || l.lock().unwrap().push(i))).unwrap();
    }
    q.sync().unwrap();
    assert_eq!(*log.lock().unwrap(), (0..10).collect::<Vec<_>>());
    // a blocking host function keeps the queue busy; events see it
    let gate = Arc::new(AtomicBool::new(false));
    let g = gate.clone();
    q.host_fn(Box::new(move || {
        let t = Instant::now();
        while !g.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }))
    .unwrap();
    assert!(!q.is_empty().unwrap());
    let ev = q.record_event().unwrap().expect("busy queue: an event");
    assert!(!ev.is_complete().unwrap());
    // a second queue waits on that event (device-side), then on a foreign event
    let q2 = dev.create_queue().unwrap();
    let b = Buf::new(&dev, 4, AllocKind::Device);
    q2.wait_event(ev.clone()).unwrap();
    q2.fill(b.ptr, &[1, 0, 0, 0], 4).unwrap();
    let foreign = Arc::new(AtomicBool::new(false));
    q2.wait_event(Arc::new(ForeignEvent(foreign.clone()))).unwrap();
    q2.fill(b.ptr, &[2, 0, 0, 0], 4).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!q2.is_empty().unwrap(), "q2 must wait for q's event");
    gate.store(true, Ordering::SeqCst);
    ev.sync().unwrap();
    assert!(ev.is_complete().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    assert!(!q2.is_empty().unwrap(), "q2 must wait for the foreign event");
    foreign.store(true, Ordering::SeqCst);
    q2.sync().unwrap();
    assert_eq!(b.download::<u32>(1), vec![2]);
    // a panicking host function is reported by the next sync, the queue stays usable
    q.host_fn(Box::new(|| panic!("boom"))).unwrap();
    match q.sync() {
        Err(PluginError::Backend(m)) => assert!(m.contains("boom"), "{m}"),
        other => panic!("{other:?}"),
    }
    q.sync().unwrap();
    // dropping a busy queue does not block
    let q3 = dev.create_queue().unwrap();
    let g3 = Arc::new(AtomicBool::new(false));
    let g3c = g3.clone();
    q3.host_fn(Box::new(move || {
        let t = Instant::now();
        while !g3c.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }))
    .unwrap();
    let t = Instant::now();
    drop(q3);
    assert!(t.elapsed() < Duration::from_secs(1), "drop blocked");
    g3.store(true, Ordering::SeqCst);
}

#[test]
fn gpu_one_queue_twenty_threads() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "kernels");
    let k = prog.kernel("saxpy").unwrap();
    let q = dev.create_queue().unwrap();
    let n = 1024u32;
    let bx = Arc::new(Buf::new(&dev, 4 * n as usize, AllocKind::Device));
    let by = Arc::new(Buf::new(&dev, 4 * n as usize, AllocKind::Device));
    bx.upload(&vec![1.0f32; n as usize]);
    by.upload(&vec![0.0f32; n as usize]);
    let launched = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..20 {
            let (q, k, bx, by, launched) = (q.clone(), k.clone(), bx.clone(), by.clone(), launched.clone());
            s.spawn(move || {
                for _ in 0..50 {
                    let args = Args::default().arg(1.0f32).arg(bx.ptr).arg(by.ptr).arg(n).finish();
                    q.launch(k.clone(), &args, dims1(n / 128, 128)).unwrap();
                    launched.fetch_add(1, Ordering::Relaxed);
                    if let Some(e) = q.record_event().unwrap() {
                        let _ = e.is_complete().unwrap();
                    }
                }
                q.sync().unwrap();
            });
        }
    });
    q.sync().unwrap();
    // stream order serialises the read-modify-writes: every element was incremented 1000 times
    assert_eq!(launched.load(Ordering::Relaxed), 1000);
    assert!(by.download::<f32>(n as usize).iter().all(|&v| v == 1000.0));
}

#[test]
fn gpu_occupancy() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "kernels");
    let k = prog.kernel("saxpy").unwrap();
    let g = dev.optimal_group_size(&*k, 0).unwrap();
    eprintln!("optimal group size for saxpy: {g}");
    assert!(g >= 32 && g <= dev.info().max_work_group_size as usize);
}

fn per_launch_us(t: Duration, n: usize) -> f64 {
    t.as_secs_f64() * 1e6 / n as f64
}

/// Launch latency (ours vs raw cuLaunchKernel, same kernel, same process) and copy bandwidth.
/// `cargo test ... gpu_bench -- --ignored --nocapture`
#[test]
#[ignore]
fn gpu_bench() {
    let Some(dev) = gpu() else { return };
    let cd = dev.as_any().downcast_ref::<CudaDevice>().unwrap();
    let d = &cd.inner;
    let drv = d.drv;
    let prog = load(&dev, "kernels");
    let k = prog.kernel("empty").unwrap();
    let func = k.as_any().downcast_ref::<CudaKernel>().unwrap().func();
    let q = dev.create_queue().unwrap();
    let dims = dims1(1, 1);
    const N: usize = 10000;
    // raw stream of the same context
    d.bind().unwrap();
    let mut raw: CUstream = std::ptr::null_mut();
    // SAFETY: out-pointer valid, context current.
    drv.check(unsafe { (drv.cuStreamCreate)(&mut raw, CU_STREAM_NON_BLOCKING) }, "cuStreamCreate").unwrap();
    let raw_launch = || {
        // SAFETY: empty() has no parameters; live stream.
        let r = unsafe { (drv.cuLaunchKernel)(func, 1, 1, 1, 1, 1, 1, 0, raw, std::ptr::null_mut(), std::ptr::null_mut()) };
        drv.check(r, "cuLaunchKernel").unwrap();
    };
    // SAFETY: live stream.
    let raw_sync = || drv.check(unsafe { (drv.cuStreamSynchronize)(raw) }, "cuStreamSynchronize").unwrap();
    // warm up
    for _ in 0..100 {
        raw_launch();
        q.launch(k.clone(), &[], dims).unwrap();
    }
    raw_sync();
    q.sync().unwrap();

    let mut rows = Vec::new();
    for round in 0..2 {
        let t = Instant::now();
        for _ in 0..N {
            raw_launch();
        }
        let enq = t.elapsed();
        raw_sync();
        let tot = t.elapsed();
        let t2 = Instant::now();
        for _ in 0..N {
            q.launch(k.clone(), &[], dims).unwrap();
        }
        let enq2 = t2.elapsed();
        q.sync().unwrap();
        let tot2 = t2.elapsed();
        if round == 1 {
            rows.push(("async enqueue (us/launch)", per_launch_us(enq, N), per_launch_us(enq2, N)));
            rows.push(("async total incl. sync (us/launch)", per_launch_us(tot, N), per_launch_us(tot2, N)));
        }
    }
    const M: usize = 2000;
    let t = Instant::now();
    for _ in 0..M {
        raw_launch();
        raw_sync();
    }
    let raw_s = t.elapsed();
    let t = Instant::now();
    for _ in 0..M {
        dev.launch_sync(k.clone(), &[], dims).unwrap();
    }
    let ours_s = t.elapsed();
    rows.push(("launch + sync each (us/launch)", per_launch_us(raw_s, M), per_launch_us(ours_s, M)));
    let t = Instant::now();
    for _ in 0..M {
        q.launch(k.clone(), &[], dims).unwrap();
        q.sync().unwrap();
    }
    rows.push(("queue launch + queue sync (us/launch)", per_launch_us(raw_s, M), per_launch_us(t.elapsed(), M)));
    // SAFETY: live stream, idle.
    let _ = unsafe { (drv.cuStreamDestroy)(raw) };

    println!("\n=== launch latency: empty kernel, {N} async launches / {M} synchronous ===");
    println!("{:<40} {:>12} {:>12} {:>8}", "", "raw cuda", "offload-rs", "ratio");
    for (name, r, o) in &rows {
        println!("{name:<40} {r:>12.2} {o:>12.2} {:>8.2}", o / r);
    }

    // bandwidth, 256 MiB
    const SIZE: usize = 256 << 20;
    let dbuf = Buf::new(&dev, SIZE, AllocKind::Device);
    let pinned = Buf::new(&dev, SIZE, AllocKind::Host);
    let mut pageable = vec![1u8; SIZE];
    let gbs = |t: Duration| SIZE as f64 / t.as_secs_f64() / 1e9;
    let best = |f: &mut dyn FnMut()| {
        let mut b = Duration::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            f();
            b = b.min(t.elapsed());
        }
        gbs(b)
    };
    let pp = pageable.as_mut_ptr() as usize;
    let h2d_pageable = best(&mut || dev.memcpy_sync(dbuf.ptr, true, pp, false, SIZE).unwrap());
    let d2h_pageable = best(&mut || dev.memcpy_sync(pp, false, dbuf.ptr, true, SIZE).unwrap());
    let h2d_pinned = best(&mut || dev.memcpy_sync(dbuf.ptr, true, pinned.ptr, false, SIZE).unwrap());
    let d2h_pinned = best(&mut || dev.memcpy_sync(pinned.ptr, false, dbuf.ptr, true, SIZE).unwrap());
    dev.register_host(pp, SIZE).unwrap();
    let h2d_reg = best(&mut || dev.memcpy_sync(dbuf.ptr, true, pp, false, SIZE).unwrap());
    let d2h_reg = best(&mut || dev.memcpy_sync(pp, false, dbuf.ptr, true, SIZE).unwrap());
    dev.unregister_host(pp).unwrap();
    println!("\n=== copy bandwidth, 256 MiB, best of 3 (GB/s) ===");
    println!("{:<34} {:>8} {:>8}", "host memory", "H2D", "D2H");
    println!("{:<34} {:>8.2} {:>8.2}", "pageable (Vec)", h2d_pageable, d2h_pageable);
    println!("{:<34} {:>8.2} {:>8.2}", "pinned (AllocKind::Host)", h2d_pinned, d2h_pinned);
    println!("{:<34} {:>8.2} {:>8.2}", "registered (register_host)", h2d_reg, d2h_reg);
}
