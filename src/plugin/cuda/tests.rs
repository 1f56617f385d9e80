//! Tests of the CUDA plugin through its safe objects. Every `gpu_*` test prints `SKIP` and passes
//! when there is no CUDA device (this machine, CI); `scripts/gpu-check.sh` runs them on a GPU.
//! Kernels: `ffi-tests/kernels/cuda/*.c` as NVPTX bitcode (the same kind the CPU device runs),
//! prebuilt in `$OFFLOAD_RS_KERNELS_DIR` or compiled with clang-22.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::device::CudaDevice;
use super::driver::*;
use super::kernel::CudaKernel;
use super::ptx::tests::kernel_bitcode;
use super::*;
use crate::plugin::{AllocKind, Event, LaunchArgs, LaunchDims, PluginError, PluginResult, Program};

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
    let bc = kernel_bitcode(name)
        .unwrap_or_else(|| panic!("kernel bitcode '{name}' unavailable (no $OFFLOAD_RS_KERNELS_DIR, no clang-22)"));
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
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { self.dev.memcpy_sync(self.ptr, v.as_ptr() as usize, n) }.expect("memcpy H2D");
    }
    fn download<T: Copy + Default>(&self, n: usize) -> Vec<T> {
        let mut v = vec![T::default(); n];
        let bytes = n * std::mem::size_of::<T>();
        assert!(bytes <= self.size);
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { self.dev.memcpy_sync(v.as_mut_ptr() as usize, self.ptr, bytes) }.expect("memcpy D2H");
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
            while !self.bytes.len().is_multiple_of(size) {
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
            while !self.bytes.len().is_multiple_of(8) {
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
    q.launch(k.clone(), LaunchArgs::Buffer(&args), dims1(n / 256, 256)).unwrap();
    q.sync().unwrap();
    let out: Vec<f32> = by.download(n as usize);
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, 2.0 * i as f32 + 1.0, "saxpy at {i}");
    }
    // Packed arguments (24 bytes instead of 28): repacked when the driver reports the layout.
    let packed = Args::packed().arg(1.0f32).arg(bx.ptr).arg(by.ptr).arg(n).finish();
    assert_eq!(packed.len(), 24);
    if ck.param_layout().is_some() {
        dev.launch_sync(k.clone(), LaunchArgs::Buffer(&packed), dims1(n / 256, 256)).unwrap();
        let out: Vec<f32> = by.download(n as usize);
        for (i, &v) in out.iter().enumerate() {
            assert_eq!(v, 3.0 * i as f32 + 1.0, "packed saxpy at {i}");
        }
        // any other short buffer: LLVM's error
        match dev.launch_sync(k.clone(), LaunchArgs::Buffer(&packed[..20]), dims1(1, 1)) {
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
        dev.launch_sync(k, LaunchArgs::Buffer(&args), d).unwrap();
        let got: Vec<u32> = bout.download(blocks as usize);
        assert_eq!(got, expect, "{name}");
    }
    // dynamic shared memory above 48 KiB: the plugin raises the kernel's limit
    let k = prog.kernel("reduce_sum_dyn").unwrap();
    let args = Args::default().arg(bin.ptr).arg(bout.ptr).arg(n).finish();
    let mut d = dims1(blocks, 256);
    d.dyn_shared_mem = 64 * 1024;
    match dev.launch_sync(k, LaunchArgs::Buffer(&args), d) {
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
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.fill(b.ptr, &[0xff], (4 * w * h) as usize) }.unwrap();
    let args = Args::default().arg(b.ptr).arg(w).arg(h).finish();
    let dims = LaunchDims { num_groups: [w.div_ceil(16), h.div_ceil(8), 1], group_size: [16, 8, 1], dyn_shared_mem: 0 };
    q.launch(k, LaunchArgs::Buffer(&args), dims).unwrap();
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
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { dev.memcpy_sync(&mut seven as *mut u32 as usize, s.addr, 4) }.unwrap();
    assert_eq!(seven, 7);
    let vals: Vec<u32> = (0..64).map(|i| i * 10).collect();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { dev.memcpy_sync(g.addr, vals.as_ptr() as usize, 256) }.unwrap();
    let out = Buf::new(&dev, 256, AllocKind::Device);
    let args = Args::default().arg(out.ptr).finish();
    dev.launch_sync(prog.kernel("read_global").unwrap(), LaunchArgs::Buffer(&args), dims1(1, 64)).unwrap();
    let got: Vec<u32> = out.download(64);
    assert_eq!(got, (0..64).map(|i| i * 20 + 7).collect::<Vec<u32>>());
    dev.launch_sync(prog.kernel("write_global").unwrap(), LaunchArgs::Buffer(&[]), dims1(1, 64)).unwrap();
    let mut back = vec![0u32; 64];
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { dev.memcpy_sync(back.as_mut_ptr() as usize, g.addr, 256) }.unwrap();
    assert_eq!(back, (0..64).map(|i| i * 3).collect::<Vec<u32>>());
    // lookups that fail
    match prog.kernel("no_such_kernel") {
        Err(PluginError::NotFound(m)) => {
            assert!(m.starts_with("error in cuModuleGetFunction('no_such_kernel'): "), "{m}")
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("found a missing kernel"),
    }
    assert!(matches!(prog.global("no_such_global"), Err(PluginError::NotFound(_))));
    assert!(matches!(prog.global("saxpy"), Err(PluginError::NotFound(_))), "kernel name as global");
    // multiargs(char, int*, short) with the natural 24-byte struct
    let out2 = Buf::new(&dev, 8, AllocKind::Device);
    let args = Args::default().arg(b'x' as i8).arg(out2.ptr).arg(-3i16).finish();
    assert_eq!(args.len(), 24);
    dev.launch_sync(prog.kernel("multiargs").unwrap(), LaunchArgs::Buffer(&args), dims1(1, 1)).unwrap();
    assert_eq!(out2.download::<i32>(2), vec![b'x' as i32, -3]);
}

#[test]
fn gpu_global_ctors() {
    let Some(dev) = gpu() else { return };
    let prog = load(&dev, "ctor");
    let out = Buf::new(&dev, 4, AllocKind::Device);
    let args = Args::default().arg(out.ptr).finish();
    dev.launch_sync(prog.kernel("get_value").unwrap(), LaunchArgs::Buffer(&args), dims1(1, 1)).unwrap();
    assert_eq!(out.download::<i32>(1), vec![100], "constructors 200, 201, 202 in priority order");
    let g = prog.global("dtor_ran").unwrap();
    let mut ran = -1i32;
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { dev.memcpy_sync(&mut ran as *mut i32 as usize, g.addr, 4) }.unwrap();
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
    let ptx = ptx::compile_to_ptx(&bc, &cpu, &image::ptx_feature(cd.ptx_isa(), cd.inner.major * 10 + cd.inner.minor))
        .unwrap();
    assert!(dev.is_valid_binary(ptx.as_bytes()));
    let p = dev.load_program(ptx.as_bytes()).expect("load PTX text");
    p.kernel("saxpy").unwrap();
    // a CUBIN made by NVIDIA's ptxas (scripts/gpu-build.sh puts kernels.sm_<XY>.cubin in the kit)
    let sm = cd.inner.major * 10 + cd.inner.minor;
    let cubin = std::env::var("OFFLOAD_RS_KERNELS_DIR")
        .ok()
        .and_then(|dir| std::fs::read(std::path::Path::new(&dir).join(format!("kernels.sm_{sm}.cubin"))).ok());
    match cubin {
        Some(c) => {
            assert_eq!(image::cubin_sm(&c), Some(sm));
            assert!(dev.is_valid_binary(&c), "is_valid_binary(cubin for sm_{sm})");
            let p = dev.load_program(&c).expect("load ptxas's cubin");
            p.kernel("saxpy").unwrap();
            eprintln!("cubin for sm_{sm}: loaded");
        }
        None => eprintln!("NOTE: no kernels.sm_{sm}.cubin in the kit: CUBIN loading not checked"),
    }
    // garbage
    assert!(!dev.is_valid_binary(b"garbage"));
    assert!(!dev.is_valid_binary(b""));
    match dev.load_program(b"garbage!") {
        Err(PluginError::InvalidBinary(m)) => {
            assert!(m.starts_with("expected a CUBIN ELF, PTX text or NVPTX LLVM bitcode, found"), "{m}")
        }
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
    // (no count assertion: tests running in parallel load other images meanwhile)
    drop(a);
    drop(b);
    eprintln!("ptx cache entries: before {before}, after {}", ptx::cache_len());
}

#[test]
fn gpu_memory_kinds_and_fills() {
    let Some(dev) = gpu() else { return };
    let q = dev.create_queue().unwrap();
    for kind in [AllocKind::Device, AllocKind::Host, AllocKind::Managed] {
        for pattern in
            [vec![0xAB], vec![1, 2], vec![1, 2, 3, 4], (10..26).collect::<Vec<u8>>(), (30..47).collect::<Vec<u8>>()]
        {
            let reps = 1000;
            let size = pattern.len() * reps;
            let b = Buf::new(&dev, size + 64, kind);
            // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
            unsafe { q.fill(b.ptr, &[0u8], size + 64) }.unwrap();
            // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
            unsafe { q.fill(b.ptr, &pattern, size) }.unwrap();
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
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.memcpy(a.ptr, src.as_ptr() as usize, 4096) }.unwrap();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.memcpy(c.ptr, a.ptr, 4096) }.unwrap();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.memcpy(pinned, c.ptr, 4096) }.unwrap();
    q.sync().unwrap();
    assert_eq!(host, src);
    dev.unregister_host(pinned).unwrap();
    assert!(matches!(dev.unregister_host(pinned), Err(PluginError::InvalidArgument(_))));
    // zero-size copies are fine
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { dev.memcpy_sync(a.ptr, src.as_ptr() as usize, 0) }.unwrap();
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
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q2.fill(b.ptr, &[1, 0, 0, 0], 4) }.unwrap();
    let foreign = Arc::new(AtomicBool::new(false));
    q2.wait_event(Arc::new(ForeignEvent(foreign.clone()))).unwrap();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q2.fill(b.ptr, &[2, 0, 0, 0], 4) }.unwrap();
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
                    q.launch(k.clone(), LaunchArgs::Buffer(&args), dims1(n / 128, 128)).unwrap();
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
        let r =
            unsafe { (drv.cuLaunchKernel)(func, 1, 1, 1, 1, 1, 1, 0, raw, std::ptr::null_mut(), std::ptr::null_mut()) };
        drv.check(r, "cuLaunchKernel").unwrap();
    };
    // SAFETY: live stream.
    let raw_sync = || drv.check(unsafe { (drv.cuStreamSynchronize)(raw) }, "cuStreamSynchronize").unwrap();
    // warm up
    for _ in 0..100 {
        raw_launch();
        q.launch(k.clone(), LaunchArgs::Buffer(&[]), dims).unwrap();
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
            q.launch(k.clone(), LaunchArgs::Buffer(&[]), dims).unwrap();
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
        dev.launch_sync(k.clone(), LaunchArgs::Buffer(&[]), dims).unwrap();
    }
    let ours_s = t.elapsed();
    rows.push(("launch + sync each (us/launch)", per_launch_us(raw_s, M), per_launch_us(ours_s, M)));
    let t = Instant::now();
    for _ in 0..M {
        q.launch(k.clone(), LaunchArgs::Buffer(&[]), dims).unwrap();
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
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    let h2d_pageable = best(&mut || unsafe { dev.memcpy_sync(dbuf.ptr, pp, SIZE) }.unwrap());
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    let d2h_pageable = best(&mut || unsafe { dev.memcpy_sync(pp, dbuf.ptr, SIZE) }.unwrap());
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    let h2d_pinned = best(&mut || unsafe { dev.memcpy_sync(dbuf.ptr, pinned.ptr, SIZE) }.unwrap());
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    let d2h_pinned = best(&mut || unsafe { dev.memcpy_sync(pinned.ptr, dbuf.ptr, SIZE) }.unwrap());
    dev.register_host(pp, SIZE).unwrap();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    let h2d_reg = best(&mut || unsafe { dev.memcpy_sync(dbuf.ptr, pp, SIZE) }.unwrap());
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    let d2h_reg = best(&mut || unsafe { dev.memcpy_sync(pp, dbuf.ptr, SIZE) }.unwrap());
    dev.unregister_host(pp).unwrap();
    println!("\n=== copy bandwidth, 256 MiB, best of 3 (GB/s) ===");
    println!("{:<34} {:>8} {:>8}", "host memory", "H2D", "D2H");
    println!("{:<34} {:>8.2} {:>8.2}", "pageable (Vec)", h2d_pageable, d2h_pageable);
    println!("{:<34} {:>8.2} {:>8.2}", "pinned (AllocKind::Host)", h2d_pinned, d2h_pinned);
    println!("{:<34} {:>8.2} {:>8.2}", "registered (register_host)", h2d_reg, d2h_reg);
}

/// A fake driver on host memory: exercises the device layer's call sequences without a GPU
/// (argument repacking as the driver sees it, fills, the constructor protocol, the JIT log).
// Test fake: every unsafe block writes through out-pointers that the code under test passes, or
// reads the buffers it hands over; documenting each would only repeat that.
#[allow(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
mod fake {
    use super::*;

    /// (kernel name, grid, block, shmem, argument bytes as passed)
    pub type Launch = (String, [u32; 3], [u32; 3], u32, Vec<u8>);
    use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

    #[derive(Default)]
    pub struct State {
        pub launches: Vec<Launch>,
        /// function pointers the init/fini kernels would call, in call order
        pub ctor_calls: Vec<u64>,
        pub dtor_calls: Vec<u64>,
        pub set_attrs: Vec<(c_int, c_int)>,
    }
    pub static STATE: Mutex<Option<State>> = Mutex::new(None);

    // globals of the fake module: name -> 8-byte cell
    pub static GLOBALS: Mutex<Vec<(String, Box<u64>)>> = Mutex::new(Vec::new());
    const FUNCS: &[&str] = &["saxpy", "empty", "nvptx$device$init", "nvptx$device$fini"];

    fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
        f(STATE.lock().unwrap().get_or_insert_with(State::default))
    }
    unsafe fn name_of(p: *const c_char) -> String {
        // SAFETY: callers pass NUL-terminated names.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
    fn global_addr(name: &str) -> Option<u64> {
        GLOBALS.lock().unwrap().iter().find(|(n, _)| n == name).map(|(_, b)| &**b as *const u64 as u64)
    }

    unsafe extern "C" fn ok0() -> CUresult {
        0
    }
    unsafe extern "C" fn ok_ptr(_: *mut c_void) -> CUresult {
        0
    }
    unsafe extern "C" fn error_name(code: CUresult, out: *mut *const c_char) -> CUresult {
        let s: &'static CStr = if code == 500 { c"CUDA_ERROR_NOT_FOUND" } else { c"CUDA_ERROR_INVALID_PTX" };
        unsafe { *out = s.as_ptr() };
        0
    }
    unsafe extern "C" fn error_string(code: CUresult, out: *mut *const c_char) -> CUresult {
        let s: &'static CStr = if code == 500 { c"named symbol not found" } else { c"a PTX JIT compilation failed" };
        unsafe { *out = s.as_ptr() };
        0
    }
    unsafe extern "C" fn device_get(out: *mut CUdevice, ord: c_int) -> CUresult {
        unsafe { *out = ord };
        0
    }
    unsafe extern "C" fn retain(out: *mut CUcontext, _: CUdevice) -> CUresult {
        unsafe { *out = 0x1000 as CUcontext };
        0
    }
    unsafe extern "C" fn ctx_get(out: *mut CUcontext) -> CUresult {
        unsafe { *out = std::ptr::null_mut() };
        0
    }
    unsafe extern "C" fn get_name(buf: *mut c_char, len: c_int, _: CUdevice) -> CUresult {
        let n = b"Fake GPU\0";
        assert!(len as usize >= n.len());
        unsafe { std::ptr::copy_nonoverlapping(n.as_ptr().cast(), buf, n.len()) };
        0
    }
    unsafe extern "C" fn get_attr(out: *mut c_int, a: c_int, _: CUdevice) -> CUresult {
        let v = match a {
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 9,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => 0,
            CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK => 1024,
            CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X | CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y => 1024,
            CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z => 64,
            CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X => i32::MAX,
            CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y | CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z => 65535,
            CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => 132,
            CU_DEVICE_ATTRIBUTE_CLOCK_RATE => 1_980_000,
            CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE => 2_619_000,
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK => 49152,
            _ => return 1,
        };
        unsafe { *out = v };
        0
    }
    unsafe extern "C" fn total_mem(out: *mut usize, _: CUdevice) -> CUresult {
        unsafe { *out = 80 << 30 };
        0
    }
    unsafe extern "C" fn uuid(out: *mut [u8; 16], _: CUdevice) -> CUresult {
        unsafe { *out = std::array::from_fn(|i| (i as u8) * 17) };
        0
    }
    unsafe extern "C" fn mem_alloc(out: *mut CUdeviceptr, n: usize) -> CUresult {
        unsafe { *out = libc::calloc(n, 1) as CUdeviceptr };
        0
    }
    unsafe extern "C" fn mem_alloc_managed(out: *mut CUdeviceptr, n: usize, _: c_uint) -> CUresult {
        unsafe { mem_alloc(out, n) }
    }
    unsafe extern "C" fn mem_alloc_host(out: *mut *mut c_void, n: usize) -> CUresult {
        unsafe { *out = libc::calloc(n, 1) };
        0
    }
    unsafe extern "C" fn mem_free(p: CUdeviceptr) -> CUresult {
        unsafe { libc::free(p as *mut c_void) };
        0
    }
    unsafe extern "C" fn mem_free_host(p: *mut c_void) -> CUresult {
        unsafe { libc::free(p) };
        0
    }
    unsafe extern "C" fn memcpy_async(d: CUdeviceptr, s: CUdeviceptr, n: usize, _: CUstream) -> CUresult {
        unsafe { std::ptr::copy(s as *const u8, d as *mut u8, n) };
        0
    }
    unsafe extern "C" fn memset8(d: CUdeviceptr, v: u8, n: usize, _: CUstream) -> CUresult {
        unsafe { std::ptr::write_bytes(d as *mut u8, v, n) };
        0
    }
    unsafe extern "C" fn memset16(d: CUdeviceptr, v: u16, n: usize, _: CUstream) -> CUresult {
        assert_eq!(d % 2, 0);
        for i in 0..n {
            unsafe { *(d as *mut u16).add(i) = v };
        }
        0
    }
    unsafe extern "C" fn memset32(d: CUdeviceptr, v: u32, n: usize, _: CUstream) -> CUresult {
        assert_eq!(d % 4, 0);
        for i in 0..n {
            unsafe { *(d as *mut u32).add(i) = v };
        }
        0
    }
    unsafe extern "C" fn memset2d8(d: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, _: CUstream) -> CUresult {
        for r in 0..h {
            for c in 0..w {
                unsafe { *((d as usize + r * pitch) as *mut u8).add(c) = v };
            }
        }
        0
    }
    unsafe extern "C" fn memset2d16(d: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, _: CUstream) -> CUresult {
        for r in 0..h {
            for c in 0..w {
                unsafe { ((d as usize + r * pitch) as *mut u16).add(c).write_unaligned(v) };
            }
        }
        0
    }
    unsafe extern "C" fn memset2d32(d: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, _: CUstream) -> CUresult {
        for r in 0..h {
            for c in 0..w {
                unsafe { ((d as usize + r * pitch) as *mut u32).add(c).write_unaligned(v) };
            }
        }
        0
    }
    unsafe extern "C" fn stream_create(out: *mut CUstream, flags: c_uint) -> CUresult {
        assert_eq!(flags, CU_STREAM_NON_BLOCKING);
        unsafe { *out = 0x5000 as CUstream };
        0
    }
    unsafe extern "C" fn host_func(_: CUstream, f: CUhostFn, p: *mut c_void) -> CUresult {
        unsafe { f(p) };
        0
    }
    unsafe extern "C" fn module_load(
        out: *mut CUmodule,
        image: *const c_void,
        n: c_uint,
        opts: *mut c_uint,
        vals: *mut *mut c_void,
    ) -> CUresult {
        let text = unsafe { name_of(image.cast()) };
        if text.contains("FAIL") {
            for i in 0..n as usize {
                if unsafe { *opts.add(i) } == CU_JIT_ERROR_LOG_BUFFER {
                    let size = unsafe { *vals.add(i + 1) } as usize;
                    let msg = b"ptxas fatal: fake syntax error\0";
                    assert!(size >= msg.len());
                    unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), *vals.add(i) as *mut u8, msg.len()) };
                }
            }
            return 218;
        }
        // globals of the image: every identifier after ".u64 " in a declaration
        let mut g = GLOBALS.lock().unwrap();
        g.clear();
        for l in text.lines() {
            if let Some(p) = l.find(".u64 ") {
                let name: String =
                    l[p + 5..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
                // a ctor entry's value: a fake function address derived from its priority
                let val = name.rsplit('_').next().and_then(|p| p.parse::<u64>().ok()).map_or(0, |p| 0xF000 + p);
                g.push((name, Box::new(val)));
            }
        }
        unsafe { *out = 0x7000 as CUmodule };
        0
    }
    unsafe extern "C" fn get_function(out: *mut CUfunction, _: CUmodule, name: *const c_char) -> CUresult {
        let n = unsafe { name_of(name) };
        match FUNCS.iter().position(|f| *f == n) {
            Some(i) => {
                unsafe { *out = FUNCS[i].as_ptr() as CUfunction };
                0
            }
            None => CUDA_ERROR_NOT_FOUND,
        }
    }
    unsafe extern "C" fn get_global(
        out: *mut CUdeviceptr,
        size: *mut usize,
        _: CUmodule,
        name: *const c_char,
    ) -> CUresult {
        match global_addr(&unsafe { name_of(name) }) {
            Some(a) => {
                unsafe { *out = a };
                unsafe { *size = 8 };
                0
            }
            None => CUDA_ERROR_NOT_FOUND,
        }
    }
    fn func_name(f: CUfunction) -> &'static str {
        FUNCS.iter().find(|n| n.as_ptr() as CUfunction == f).copied().unwrap_or("?")
    }
    unsafe extern "C" fn param_info(f: CUfunction, i: usize, off: *mut usize, size: *mut usize) -> CUresult {
        let layout: &[(usize, usize)] = match func_name(f) {
            "saxpy" => &[(0, 4), (8, 8), (16, 8), (24, 4)],
            _ => &[],
        };
        match layout.get(i) {
            Some(&(o, s)) => {
                unsafe { *off = o };
                unsafe { *size = s };
                0
            }
            None => CUDA_ERROR_INVALID_VALUE,
        }
    }
    unsafe extern "C" fn set_attr(_: CUfunction, a: c_int, v: c_int) -> CUresult {
        with(|s| s.set_attrs.push((a, v)));
        0
    }
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn launch(
        f: CUfunction,
        gx: c_uint,
        gy: c_uint,
        gz: c_uint,
        bx: c_uint,
        by: c_uint,
        bz: c_uint,
        shm: c_uint,
        _: CUstream,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CUresult {
        assert!(params.is_null());
        let name = func_name(f);
        let mut args = Vec::new();
        if !extra.is_null() {
            unsafe {
                assert_eq!(*extra, CU_LAUNCH_PARAM_BUFFER_POINTER);
                assert_eq!(*extra.add(2), CU_LAUNCH_PARAM_BUFFER_SIZE);
                assert_eq!(*extra.add(4), CU_LAUNCH_PARAM_END);
                let size = *(*extra.add(3) as *const usize);
                let buf = *extra.add(1) as *const u8;
                assert_eq!(buf as usize % 8, 0, "argument buffer alignment");
                args = std::slice::from_raw_parts(buf, size).to_vec();
            }
        }
        let table = |start: &str, end: &str| -> Vec<u64> {
            let (s, e) = (global_addr(start).unwrap(), global_addr(end).unwrap());
            let (s, e) = unsafe { (*(s as *const u64), *(e as *const u64)) };
            (s..e).step_by(8).map(|p| unsafe { *(p as *const u64) }).collect()
        };
        if name == "nvptx$device$init" {
            let t = table("__init_array_start", "__init_array_end");
            with(|s| s.ctor_calls.extend(t));
        }
        if name == "nvptx$device$fini" {
            let mut t = table("__fini_array_start", "__fini_array_end");
            t.reverse();
            with(|s| s.dtor_calls.extend(t));
        }
        with(|s| s.launches.push((name.to_string(), [gx, gy, gz], [bx, by, bz], shm, args)));
        0
    }
    unsafe extern "C" fn occupancy(
        min: *mut c_int,
        block: *mut c_int,
        _: CUfunction,
        _: CUoccupancyB2DSize,
        _: usize,
        _: c_int,
    ) -> CUresult {
        unsafe { *min = 264 };
        unsafe { *block = 768 };
        0
    }

    pub fn driver() -> &'static Driver {
        Box::leak(Box::new(driver_table()))
    }

    pub fn driver_table() -> Driver {
        Driver {
            cuGetErrorName: error_name,
            cuGetErrorString: error_string,
            cuDeviceGet: device_get,
            cuDevicePrimaryCtxRetain: retain,
            cuDeviceGetName: get_name,
            cuDeviceGetAttribute: get_attr,
            cuDeviceTotalMem: total_mem,
            cuDeviceGetUuid_v2: Some(uuid),
            cuCtxSetCurrent: ok_ptr,
            cuCtxGetCurrent: ctx_get,
            cuMemAlloc: mem_alloc,
            cuMemAllocManaged: mem_alloc_managed,
            cuMemAllocHost: mem_alloc_host,
            cuMemFree: mem_free,
            cuMemFreeHost: mem_free_host,
            cuMemcpyAsync: memcpy_async,
            cuMemsetD8Async: memset8,
            cuMemsetD16Async: memset16,
            cuMemsetD32Async: memset32,
            cuMemsetD2D8Async: memset2d8,
            cuMemsetD2D16Async: memset2d16,
            cuMemsetD2D32Async: memset2d32,
            cuStreamCreate: stream_create,
            cuStreamSynchronize: ok_ptr,
            cuStreamQuery: ok_ptr,
            cuStreamDestroy: ok_ptr,
            cuLaunchHostFunc: host_func,
            cuModuleLoadDataEx: module_load,
            cuModuleUnload: ok_ptr,
            cuModuleGetFunction: get_function,
            cuModuleGetGlobal: get_global,
            cuFuncGetParamInfo: Some(param_info),
            cuFuncSetAttribute: set_attr,
            cuLaunchKernel: launch,
            cuOccupancyMaxPotentialBlockSize: occupancy,
            ..Driver::stub()
        }
    }

    #[allow(dead_code)]
    fn _unused() -> CUresult {
        // SAFETY: trivial.
        unsafe { ok0() }
    }
}

#[test]
fn fake_driver_device_layer() {
    let drv = fake::driver();
    let dev: Arc<dyn Device> = Arc::new(CudaDevice::open(drv, 0, 12040).expect("open fake device"));
    let i = dev.info();
    assert_eq!(i.name, "Fake GPU");
    assert_eq!(i.uid, "CUDA-00112233445566778899aabbccddeeff");
    assert_eq!(i.driver_version, "12.4");
    assert_eq!((i.max_clock_frequency, i.memory_clock_rate), (1980, 2619));
    assert_eq!(i.max_work_size_per_dim, [u32::MAX, 65535 * 1024, 65535 * 64]);
    assert_eq!(i.global_mem_size, 80 << 30);
    assert_eq!(dev.as_any().downcast_ref::<CudaDevice>().unwrap().ptx_isa(), 84);

    // fills of every pattern size on "device" memory
    let q = dev.create_queue().unwrap();
    for plen in [1usize, 2, 4, 6, 16, 17] {
        let pattern: Vec<u8> = (0..plen as u8).map(|b| b + 1).collect();
        let b = Buf::new(&dev, plen * 10 + 8, AllocKind::Device);
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { q.fill(b.ptr, &pattern, plen * 10) }.unwrap();
        let got: Vec<u8> = b.download(plen * 10 + 8);
        for (k, &v) in got[..plen * 10].iter().enumerate() {
            assert_eq!(v, pattern[k % plen], "pattern {plen} at {k}");
        }
        assert!(got[plen * 10..].iter().all(|&v| v == 0));
    }
    // misaligned 4-byte pattern goes through the 2-D path
    let b = Buf::new(&dev, 64, AllocKind::Host);
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.fill(b.ptr + 1, &[9, 8, 7, 6], 40) }.unwrap();
    let got: Vec<u8> = b.download(64);
    assert_eq!(&got[1..9], &[9, 8, 7, 6, 9, 8, 7, 6]);
    assert_eq!(got[0], 0);

    // program with constructors/destructors (PTX as the NVPTX backend writes it)
    let ptx = "\
//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.4\n.target sm_90\n.address_size 64\n
.visible .const .align 8 .u64 __init_array_object_c3_a7e8_202 = c3;
.visible .const .align 8 .u64 __init_array_object_c1_a7e8_200 = c1;
.visible .const .align 8 .u64 __init_array_object_c2_a7e8_201 = c2;
.weak .global .align 8 .u64 __init_array_start;
.weak .global .align 8 .u64 __init_array_end;
.visible .const .align 8 .u64 __fini_array_object_d1_a7e8_65535 = d1;
.visible .const .align 8 .u64 __fini_array_object_d0_a7e8_101 = d0;
.weak .global .align 8 .u64 __fini_array_start;
.weak .global .align 8 .u64 __fini_array_end;
";
    *fake::STATE.lock().unwrap() = None;
    assert!(dev.is_valid_binary(ptx.as_bytes()));
    let p = dev.load_program(ptx.as_bytes()).expect("load fake PTX");
    let calls = fake::STATE.lock().unwrap().as_ref().unwrap().ctor_calls.clone();
    assert_eq!(calls, vec![0xF000 + 200, 0xF000 + 201, 0xF000 + 202], "ctors by priority");
    {
        let st = fake::STATE.lock().unwrap();
        let l = &st.as_ref().unwrap().launches[0];
        assert_eq!((l.0.as_str(), l.1, l.2), ("nvptx$device$init", [1, 1, 1], [1, 1, 1]));
    }

    // kernel arguments as the driver receives them
    let k = p.kernel("saxpy").unwrap();
    let natural = Args::default().arg(2.0f32).arg(0x1111usize).arg(0x2222usize).arg(7u32).finish();
    let packed = Args::packed().arg(2.0f32).arg(0x1111usize).arg(0x2222usize).arg(7u32).finish();
    q.launch(
        k.clone(),
        LaunchArgs::Buffer(&natural),
        LaunchDims { num_groups: [3, 2, 1], group_size: [64, 2, 1], dyn_shared_mem: 0 },
    )
    .unwrap();
    dev.launch_sync(
        k.clone(),
        LaunchArgs::Buffer(&packed),
        LaunchDims { num_groups: [1, 1, 1], group_size: [1, 1, 1], dyn_shared_mem: 64 * 1024 },
    )
    .unwrap();
    assert!(matches!(
        q.launch(k.clone(), LaunchArgs::Buffer(&packed[..20]), dims1(1, 1)),
        Err(PluginError::InvalidArgument(_))
    ));
    {
        let st = fake::STATE.lock().unwrap();
        let st = st.as_ref().unwrap();
        let n = st.launches.len();
        let (a, b) = (&st.launches[n - 2], &st.launches[n - 1]);
        assert_eq!((a.1, a.2), ([3, 2, 1], [64, 2, 1]));
        assert_eq!(a.4, natural[..28].to_vec(), "natural struct cut to the real block");
        assert_eq!(b.4, natural[..28].to_vec(), "packed arguments repacked to the real layout");
        assert_eq!(b.3, 64 * 1024);
        assert_eq!(st.set_attrs, vec![(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024)]);
    }
    // no-parameter kernel: no argument buffer at all
    dev.launch_sync(p.kernel("empty").unwrap(), LaunchArgs::Buffer(&[]), dims1(1, 1)).unwrap();
    assert!(fake::STATE.lock().unwrap().as_ref().unwrap().launches.last().unwrap().4.is_empty());
    assert_eq!(dev.optimal_group_size(&*k, 0).unwrap(), 768);

    // lookups
    match p.kernel("nope") {
        Err(PluginError::NotFound(m)) => {
            assert_eq!(m, "error in cuModuleGetFunction('nope'): CUDA_ERROR_NOT_FOUND: named symbol not found")
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("found nope"),
    }
    let g = p.global("__init_array_start").unwrap();
    assert_eq!(g.size, 8);

    // host functions and events on an idle (fake) stream
    let hit = Arc::new(AtomicUsize::new(0));
    let h = hit.clone();
    q.host_fn(Box::new(move || {
        h.fetch_add(1, Ordering::SeqCst);
    }))
    .unwrap();
    assert_eq!(hit.load(Ordering::SeqCst), 1);
    q.host_fn(Box::new(|| panic!("fake boom"))).unwrap();
    assert!(matches!(q.sync(), Err(PluginError::Backend(m)) if m.contains("fake boom")));
    q.sync().unwrap();
    assert!(q.record_event().unwrap().is_none());
    assert!(q.is_empty().unwrap());

    // destructors at unload, reverse priority order walk (LLVM's fini kernel iterates backwards)
    p.unload().unwrap();
    let d = fake::STATE.lock().unwrap().as_ref().unwrap().dtor_calls.clone();
    assert_eq!(d, vec![0xF000 + 65535, 0xF000 + 101]);

    // a module the driver's JIT rejects: COMPILE_FAILURE, its JIT log in the message
    match dev.load_program(b".version 8.4\n.target sm_90\nFAIL\n") {
        Err(PluginError::Compile(m)) => assert_eq!(
            m,
            "error in cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed: ptxas fatal: fake syntax error"
        ),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("loaded FAIL"),
    }
    // host registration bookkeeping (fake cuMemHostRegister fails: accounted only)
    let mut v = vec![0u8; 100];
    let pp = dev.register_host(v.as_mut_ptr() as usize, 100).unwrap();
    assert_eq!(pp, v.as_mut_ptr() as usize);
    dev.register_host(pp, 100).unwrap();
    dev.unregister_host(pp + 10).unwrap();
    dev.unregister_host(pp).unwrap();
    assert!(dev.unregister_host(pp).is_err());

    // a driver older than 12.4 (no cuFuncGetParamInfo): arguments are passed exactly as given
    let old: &'static Driver = Box::leak(Box::new(Driver { cuFuncGetParamInfo: None, ..fake::driver_table() }));
    let dev_old: Arc<dyn Device> = Arc::new(CudaDevice::open(old, 0, 12020).unwrap());
    assert_eq!(dev_old.as_any().downcast_ref::<CudaDevice>().unwrap().ptx_isa(), 82);
    let p_old = dev_old.load_program(ptx.as_bytes()).unwrap();
    let k_old = p_old.kernel("saxpy").unwrap();
    assert!(k_old.as_any().downcast_ref::<CudaKernel>().unwrap().param_layout().is_none());
    dev_old.launch_sync(k_old.clone(), LaunchArgs::Buffer(&packed), dims1(1, 1)).unwrap();
    assert_eq!(fake::STATE.lock().unwrap().as_ref().unwrap().launches.last().unwrap().4, packed);
}

/// The project's shared device code (`ffi-tests/device/*.c`, what the CPU device runs) on the GPU,
/// and the seed scenario: programs loaded one after another from different images must never get
/// each other's code (LLVM's address-keyed JIT cache did).
#[test]
fn gpu_project_device_code_and_seed_scenario() {
    let Some(dev) = gpu() else { return };
    let p = load(&dev, "device/kernels");
    let out = Buf::new(&dev, 64 * 4, AllocKind::Device);
    let args = Args::default().arg(out.ptr).finish();
    dev.launch_sync(p.kernel("read_ctor").unwrap(), LaunchArgs::Buffer(&args), dims1(1, 64)).unwrap();
    assert_eq!(out.download::<u32>(64), (0..64).map(|i| 100 + i).collect::<Vec<u32>>(), "read_ctor");
    let n = 4096u32;
    let bx = Buf::new(&dev, 4 * n as usize, AllocKind::Device);
    let by = Buf::new(&dev, 4 * n as usize, AllocKind::Device);
    bx.upload(&(0..n).map(|i| i as f32).collect::<Vec<f32>>());
    by.upload(&vec![0.5f32; n as usize]);
    let args = Args::default().arg(3.0f32).arg(bx.ptr).arg(by.ptr).arg(n).finish();
    dev.launch_sync(p.kernel("saxpy").unwrap(), LaunchArgs::Buffer(&args), dims1(n / 128, 128)).unwrap();
    for (i, v) in by.download::<f32>(n as usize).into_iter().enumerate() {
        assert_eq!(v, 3.0 * i as f32 + 0.5, "device/kernels saxpy at {i}");
    }
    drop(p);

    let lanes = load(&dev, "device/lanes");
    let lo = Buf::new(&dev, 64 * 16, AllocKind::Device);
    let args = Args::default().arg(lo.ptr).finish();
    dev.launch_sync(lanes.kernel("lanes").unwrap(), LaunchArgs::Buffer(&args), dims1(1, 64)).unwrap();
    let got = lo.download::<u32>(256);
    for t in 0..64u32 {
        let o = &got[4 * t as usize..4 * t as usize + 4];
        assert_eq!(o, &[32, t % 32, t - t % 32, 32], "lanes thread {t}");
    }

    let get = |name: &str| -> u32 {
        let p = load(&dev, name);
        let o = Buf::new(&dev, 4, AllocKind::Device);
        let args = Args::default().arg(o.ptr).finish();
        dev.launch_sync(p.kernel("get").unwrap(), LaunchArgs::Buffer(&args), dims1(1, 1)).unwrap();
        o.download::<u32>(1)[0]
    };
    for round in 0..5 {
        assert_eq!(get("device/seed_a"), 0xAAAA0002, "seed A, round {round}");
        assert_eq!(get("device/seed_b"), 0xBBBB0004, "seed B, round {round}");
    }
}

/// Launch dims are checked against the device's limits before the driver sees them (found with the fake
/// driver of ffi-tests/fake_cuda: the driver's CUDA_ERROR_INVALID_VALUE became OL_ERRC_UNKNOWN).
#[test]
fn launch_dims_checked_against_device_limits() {
    use super::kernel::check_dims;
    let dev = CudaDevice::open(fake::driver(), 0, 12080).expect("open fake device");
    let info = dev.info();
    let grid = [i32::MAX as u32, 65535, 65535];
    let d = |g: [u32; 3], b: [u32; 3]| LaunchDims { num_groups: g, group_size: b, dyn_shared_mem: 0 };
    assert!(check_dims("k", info, grid, &d([1, 1, 1], [1024, 1, 1])).is_ok());
    assert!(check_dims("k", info, grid, &d([i32::MAX as u32, 65535, 65535], [32, 32, 1])).is_ok());
    for (g, b, want) in [
        ([1, 1, 1], [4096, 1, 1], "group size 4096 in dimension x is outside 1..=1024"),
        ([1, 1, 1], [1, 1, 65], "group size 65 in dimension z is outside 1..=64"),
        ([1, 1, 1], [0, 1, 1], "group size 0 in dimension x is outside 1..=1024"),
        ([1, 1, 1], [64, 32, 1], "group size 64x32x1 = 2048 work-items exceeds the device's limit of 1024"),
        ([1, 65536, 1], [1, 1, 1], "65536 work-groups in dimension y; the device allows 1..=65535"),
        ([0, 1, 1], [1, 1, 1], "0 work-groups in dimension x; the device allows 1..=2147483647"),
    ] {
        match check_dims("k", info, grid, &d(g, b)) {
            Err(PluginError::InvalidArgument(m)) => assert_eq!(m, format!("invalid launch of kernel 'k': {want}")),
            other => panic!("{g:?} {b:?}: {other:?}"),
        }
    }
}
