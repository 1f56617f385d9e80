//! Tests of the CPU device with hand-written work-group functions.

use super::*;
use crate::jit::{ParamLayout, WgCtx};
use crate::plugin::Event;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn p(size: usize, align: usize) -> ParamLayout {
    ParamLayout { size, align }
}

fn kernel(name: &str, f: jit::WgFn, params: Vec<ParamLayout>, local: usize) -> Arc<dyn Kernel> {
    // SAFETY: every WG function in this file reads only the params it declares and stays inside the
    // buffers the test passes.
    Arc::new(unsafe { CpuKernel::from_raw(name, f, params, local) })
}

fn dims(num_groups: [u32; 3], group_size: [u32; 3]) -> LaunchDims {
    LaunchDims { num_groups, group_size, dyn_shared_mem: 0 }
}

/// Read a `T` at byte offset `off` of the argument buffer.
///
/// # Safety
/// The buffer must hold a `T` there, naturally aligned.
unsafe fn arg<T: Copy>(ctx: &WgCtx, off: usize) -> T {
    // SAFETY: caller's contract.
    unsafe { *(ctx.args.add(off) as *const T) }
}

// ---- work-group functions ----

/// saxpy(float a, const float* x, float* y, uint n): natural layout a@0 x@8 y@16 n@24
unsafe extern "C" fn saxpy_wg(ctx: *const WgCtx) {
    // SAFETY: launched with the saxpy parameter layout and valid x/y of n floats.
    unsafe {
        let c = &*ctx;
        let a: f32 = arg(c, 0);
        let x: *const f32 = arg(c, 8);
        let y: *mut f32 = arg(c, 16);
        let n: u32 = arg(c, 24);
        for l in 0..c.group_size[0] {
            let i = (c.group_id[0] * c.group_size[0] + l) as usize;
            if i < n as usize {
                *y.add(i) = a * *x.add(i) + *y.add(i);
            }
        }
    }
}

fn saxpy_params() -> Vec<ParamLayout> {
    vec![p(4, 4), p(8, 8), p(8, 8), p(4, 4)]
}

fn saxpy_args(a: f32, x: *const f32, y: *mut f32, n: u32) -> Vec<u8> {
    let mut v = vec![0u8; 32];
    v[0..4].copy_from_slice(&a.to_ne_bytes());
    v[8..16].copy_from_slice(&(x as usize).to_ne_bytes());
    v[16..24].copy_from_slice(&(y as usize).to_ne_bytes());
    v[24..28].copy_from_slice(&n.to_ne_bytes());
    v.truncate(28);
    v
}

/// coords(uint* out): out[3*g + d] = global id in dimension d, g = linear global index
unsafe extern "C" fn coords_wg(ctx: *const WgCtx) {
    // SAFETY: `out` holds 3 u32 per work-item of the grid.
    unsafe {
        let c = &*ctx;
        let out: *mut u32 = arg(c, 0);
        let gdim = [0, 1, 2].map(|d| c.num_groups[d] * c.group_size[d]);
        for lz in 0..c.group_size[2] {
            for ly in 0..c.group_size[1] {
                for lx in 0..c.group_size[0] {
                    let g = [
                        c.group_id[0] * c.group_size[0] + lx,
                        c.group_id[1] * c.group_size[1] + ly,
                        c.group_id[2] * c.group_size[2] + lz,
                    ];
                    let lin = ((g[2] * gdim[1] + g[1]) * gdim[0] + g[0]) as usize;
                    for (d, v) in g.iter().enumerate() {
                        *out.add(3 * lin + d) = v + 1;
                    }
                }
            }
        }
    }
}

/// count(AtomicU64* c): one atomic increment per work-item
unsafe extern "C" fn count_wg(ctx: *const WgCtx) {
    // SAFETY: the argument is a pointer to a live AtomicU64.
    unsafe {
        let c = &*ctx;
        let counter: *const AtomicU64 = arg(c, 0);
        let n = c.group_size[0] * c.group_size[1] * c.group_size[2];
        for _ in 0..n {
            (*counter).fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// local(AtomicU32* errors): fills local and dynamic local memory with the group id, dawdles, checks.
const LOCAL_BYTES: usize = 4096;
unsafe extern "C" fn local_wg(ctx: *const WgCtx) {
    // SAFETY: local_mem has LOCAL_BYTES, dyn_local_mem has the launch's DYN_BYTES, both per thread.
    unsafe {
        let c = &*ctx;
        let errors: *const AtomicU32 = arg(c, 0);
        if !(c.local_mem as usize).is_multiple_of(64) || !(c.dyn_local_mem as usize).is_multiple_of(64) {
            (*errors).fetch_add(1, Ordering::Relaxed);
        }
        let id = c.group_id[0] + 1;
        let local = c.local_mem as *mut u32;
        let dynl = c.dyn_local_mem as *mut u32;
        for i in 0..LOCAL_BYTES / 4 {
            std::ptr::write_volatile(local.add(i), id);
        }
        for i in 0..DYN_BYTES / 4 {
            std::ptr::write_volatile(dynl.add(i), !id);
        }
        for _ in 0..200 {
            std::hint::spin_loop();
        }
        for i in 0..LOCAL_BYTES / 4 {
            if std::ptr::read_volatile(local.add(i)) != id {
                (*errors).fetch_add(1, Ordering::Relaxed);
            }
        }
        for i in 0..DYN_BYTES / 4 {
            if std::ptr::read_volatile(dynl.add(i)) != !id {
                (*errors).fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
const DYN_BYTES: usize = 1024;

/// seq(uint idx, uint* out): out[idx] = 42 + idx; natural layout idx@0 out@8 (16 bytes), packed 12
unsafe extern "C" fn seq_wg(ctx: *const WgCtx) {
    // SAFETY: natural layout of (u32, *mut u32); out has more than idx elements.
    unsafe {
        let c = &*ctx;
        let idx: u32 = arg(c, 0);
        let out: *mut u32 = arg(c, 8);
        *out.add(idx as usize) = 42 + idx;
    }
}

/// add1(uint* buf, uint n): buf[i] += 1
unsafe extern "C" fn add1_wg(ctx: *const WgCtx) {
    // SAFETY: buf has n elements and only this launch writes them.
    unsafe {
        let c = &*ctx;
        let buf: *mut u32 = arg(c, 0);
        let n: u32 = arg(c, 8);
        for l in 0..c.group_size[0] {
            let i = c.group_id[0] * c.group_size[0] + l;
            if i < n {
                *buf.add(i as usize) += 1;
            }
        }
    }
}

unsafe extern "C" fn empty_wg(_ctx: *const WgCtx) {}

/// release(AtomicU32* flag): flag 1 -> 2 (in every group)
unsafe extern "C" fn release_wg(ctx: *const WgCtx) {
    // SAFETY: the argument is a pointer to a live AtomicU32.
    unsafe {
        let flag: *const AtomicU32 = arg(&*ctx, 0);
        let _ = (*flag).compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// hold(AtomicU32* flag): group 0 sets flag to 1, then spins (at most 30 s) until it becomes 2, then
/// sets 4 (released) or 3 (timed out)
unsafe extern "C" fn hold_wg(ctx: *const WgCtx) {
    // SAFETY: the argument is a pointer to a live AtomicU32.
    unsafe {
        let c = &*ctx;
        let flag: *const AtomicU32 = arg(c, 0);
        if c.group_id[0] == 0 {
            (*flag).store(1, Ordering::SeqCst);
            let t0 = Instant::now();
            while (*flag).load(Ordering::SeqCst) != 2 && t0.elapsed() < Duration::from_secs(30) {
                std::thread::yield_now();
            }
            let released = (*flag).load(Ordering::SeqCst) == 2;
            (*flag).store(if released { 4 } else { 3 }, Ordering::SeqCst);
        }
    }
}

fn add1_args(buf: *mut u32, n: u32) -> Vec<u8> {
    let mut v = (buf as usize).to_ne_bytes().to_vec();
    v.extend_from_slice(&n.to_ne_bytes());
    v
}

fn add1_kernel() -> Arc<dyn Kernel> {
    kernel("add1", add1_wg, vec![p(8, 8), p(4, 4)], 0)
}

// ---- device and launch ----

#[test]
fn device_basics() {
    let d = devices();
    assert_eq!(d.len(), 1);
    assert!(d[0].host_addressable());
    assert_eq!(d[0].info().device_type, machine::DEVICE_TYPE_CPU);
    let k = kernel("empty", empty_wg, vec![], 0);
    assert_eq!(d[0].optimal_group_size(&*k, 0).unwrap(), OPTIMAL_GROUP_SIZE);
    assert_eq!(d[0].optimal_group_size(&*k, 1024).unwrap(), OPTIMAL_GROUP_SIZE);
    assert!(matches!(d[0].optimal_group_size(&*k, 1 << 20), Err(PluginError::OutOfResources(_))));
    assert!(!d[0].is_valid_binary(b"garbage"));
}

#[test]
fn saxpy_many_groups() {
    let dev = device();
    let n = 1_000_003u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let k = kernel("saxpy", saxpy_wg, saxpy_params(), 0);
    let groups = n.div_ceil(256);
    dev.launch_sync(
        k,
        LaunchArgs::Buffer(&saxpy_args(2.0, x.as_ptr(), y.as_mut_ptr(), n)),
        dims([groups, 1, 1], [256, 1, 1]),
    )
    .unwrap();
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f32 + (i % 7) as f32, "index {i}");
    }
}

#[test]
fn grid_coordinates_2d_3d() {
    let dev = device();
    for (ng, gs) in
        [([5u32, 3, 1], [4u32, 2, 1]), ([3, 2, 4], [2, 3, 5]), ([7, 1, 1], [1, 1, 1]), ([1, 1, 9], [1, 1, 64])]
    {
        let total: usize = (0..3).map(|d| (ng[d] * gs[d]) as usize).product();
        let mut out = vec![0u32; 3 * total];
        let k = kernel("coords", coords_wg, vec![p(8, 8)], 0);
        dev.launch_sync(k, LaunchArgs::Buffer(&(out.as_mut_ptr() as usize).to_ne_bytes()), dims(ng, gs)).unwrap();
        let gd = [0, 1, 2].map(|d| (ng[d] * gs[d]) as usize);
        for z in 0..gd[2] {
            for y in 0..gd[1] {
                for x in 0..gd[0] {
                    let lin = (z * gd[1] + y) * gd[0] + x;
                    assert_eq!(
                        &out[3 * lin..3 * lin + 3],
                        &[x as u32 + 1, y as u32 + 1, z as u32 + 1],
                        "{ng:?} {gs:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn atomics_across_groups() {
    let dev = device();
    let c = AtomicU64::new(0);
    let k = kernel("count", count_wg, vec![p(8, 8)], 0);
    let args = (&c as *const AtomicU64 as usize).to_ne_bytes();
    dev.launch_sync(k, LaunchArgs::Buffer(&args), dims([100, 30, 2], [8, 4, 2])).unwrap();
    assert_eq!(c.load(Ordering::Relaxed), 100 * 30 * 2 * 64);
}

#[test]
fn local_memory_is_per_worker() {
    let dev = device();
    let errors = AtomicU32::new(0);
    let k = kernel("local", local_wg, vec![p(8, 8)], LOCAL_BYTES);
    let args = (&errors as *const AtomicU32 as usize).to_ne_bytes();
    let d = LaunchDims { num_groups: [5000, 1, 1], group_size: [32, 1, 1], dyn_shared_mem: DYN_BYTES };
    dev.launch_sync(k.clone(), LaunchArgs::Buffer(&args), d).unwrap();
    assert_eq!(errors.load(Ordering::Relaxed), 0);
    // local + dynamic over the per-group limit
    let d = LaunchDims { dyn_shared_mem: machine::LOCAL_MEM_PER_GROUP as usize, ..d };
    assert!(matches!(dev.launch_sync(k.clone(), LaunchArgs::Buffer(&args), d), Err(PluginError::OutOfResources(_))));
    let d = LaunchDims { dyn_shared_mem: usize::MAX, ..d };
    assert!(matches!(dev.launch_sync(k.clone(), LaunchArgs::Buffer(&args), d), Err(PluginError::OutOfResources(_))));
    assert!(device().optimal_group_size(&*k, usize::MAX).is_err());
}

#[test]
fn argument_layouts() {
    let dev = device();
    let k = kernel("seq", seq_wg, vec![p(4, 4), p(8, 8)], 0);
    let mut out = vec![0u32; 8];
    let ptr = (out.as_mut_ptr() as usize).to_ne_bytes();
    // natural: {u32 idx; pad; void* out}
    let mut natural = vec![0u8; 16];
    natural[0..4].copy_from_slice(&1u32.to_ne_bytes());
    natural[8..16].copy_from_slice(&ptr);
    dev.launch_sync(k.clone(), LaunchArgs::Buffer(&natural), dims([1, 1, 1], [1, 1, 1])).unwrap();
    // natural with tail padding / extra bytes
    let mut longer = natural.clone();
    longer[0..4].copy_from_slice(&2u32.to_ne_bytes());
    longer.extend_from_slice(&[0xEE; 8]);
    dev.launch_sync(k.clone(), LaunchArgs::Buffer(&longer), dims([1, 1, 1], [1, 1, 1])).unwrap();
    // packed, as the UR adapter does: {u32 idx; void* out} without padding
    let mut packed = 3u32.to_ne_bytes().to_vec();
    packed.extend_from_slice(&ptr);
    assert_eq!(packed.len(), 12);
    dev.launch_sync(k.clone(), LaunchArgs::Buffer(&packed), dims([1, 1, 1], [1, 1, 1])).unwrap();
    assert_eq!(&out[1..4], &[43, 44, 45]);
    // 23.1's values, on the queue: copied into the block before launch returns
    let q = dev.create_queue().unwrap();
    let mut v = crate::plugin::TestValues(vec![4u32.to_ne_bytes().to_vec(), ptr.to_vec()]);
    q.launch(k.clone(), LaunchArgs::Values(&v), dims([1, 1, 1], [1, 1, 1])).unwrap();
    v.0[0] = 6u32.to_ne_bytes().to_vec();
    q.sync().unwrap();
    assert_eq!(out[4], 46);
    // too short
    let e = dev.launch_sync(k.clone(), LaunchArgs::Buffer(&natural[..8]), dims([1, 1, 1], [1, 1, 1])).unwrap_err();
    match e {
        PluginError::InvalidArgument(s) => {
            assert_eq!(s, "mismatch in kernel arguments: kernel 'seq' takes 16 bytes of arguments (12 packed), got 8")
        }
        e => panic!("{e:?}"),
    }
    assert!(dev.launch_sync(k, LaunchArgs::Buffer(&[]), dims([1, 1, 1], [1, 1, 1])).is_err());
    // no layout: raw pass-through
    let raw = kernel("seq_raw", seq_wg, vec![], 0);
    natural[0..4].copy_from_slice(&5u32.to_ne_bytes());
    dev.launch_sync(raw, LaunchArgs::Buffer(&natural), dims([1, 1, 1], [1, 1, 1])).unwrap();
    assert_eq!(out[5], 47);
}

#[test]
fn normalize_rules() {
    // {char; int*; short}: natural 0, 8, 16 -> end 18; packed 11
    let slots = crate::plugin::ArgSlots::natural(&[p(1, 1), p(8, 8), p(2, 2)]).unwrap();
    assert_eq!(slots.slots(), &[(0, 1), (8, 8), (16, 2)]);
    assert_eq!((slots.end(), slots.packed()), (18, 11));
    let block = |a: LaunchArgs<'_>| launch::arg_block("m", &slots, a);
    let mut packed = vec![7u8];
    packed.extend_from_slice(&0x1122334455667788u64.to_ne_bytes());
    packed.extend_from_slice(&0x99AAu16.to_ne_bytes());
    let check = |b: &launch::ArgBuf| {
        assert!(b.byte_len() >= 18);
        // SAFETY: the buffer holds at least 18 bytes (checked just above).
        let s = unsafe { std::slice::from_raw_parts(b.as_ptr(), 18) };
        assert_eq!(s[0], 7);
        assert_eq!(&s[1..8], &[0; 7]);
        assert_eq!(&s[8..16], &0x1122334455667788u64.to_ne_bytes());
        assert_eq!(&s[16..18], &0x99AAu16.to_ne_bytes());
    };
    check(&block(LaunchArgs::Buffer(&packed)).unwrap());
    assert!(block(LaunchArgs::Buffer(&[0u8; 24])).is_ok());
    assert!(block(LaunchArgs::Buffer(&[0u8; 18])).is_ok());
    assert!(block(LaunchArgs::Buffer(&[0u8; 12])).is_err());
    assert!(block(LaunchArgs::Buffer(&[0u8; 17])).is_err());
    // 23.1's values: each straight to its place
    let v = crate::plugin::TestValues(vec![packed[..1].to_vec(), packed[1..9].to_vec(), packed[9..].to_vec()]);
    check(&block(LaunchArgs::Values(&v)).unwrap());
    // values that do not fit the parameters (the entry point lets none through): an error, nothing written
    // outside the block
    let wrong = crate::plugin::TestValues(vec![vec![1], vec![2; 4], vec![3; 2]]);
    match block(LaunchArgs::Values(&wrong)) {
        Err(PluginError::InvalidArgument(m)) => assert_eq!(
            m,
            "mismatch in kernel arguments: kernel 'm' takes 3 arguments of [1, 8, 2] bytes, got 3 values that do \
             not match them"
        ),
        other => panic!("{:?}", other.err()),
    }
    let short = crate::plugin::TestValues(vec![vec![1]]);
    assert!(block(LaunchArgs::Values(&short)).is_err());
    // no parameter layout: the values packed
    let b = launch::arg_block("raw", &Default::default(), LaunchArgs::Values(&v)).unwrap();
    // SAFETY: 11 packed bytes in a block of at least 64.
    assert_eq!(unsafe { std::slice::from_raw_parts(b.as_ptr(), 11) }, &packed[..]);
}

#[test]
fn dims_are_validated() {
    let dev = device();
    let k = kernel("empty", empty_wg, vec![], 0);
    let bad = [
        dims([0, 1, 1], [1, 1, 1]),
        dims([1, 0, 1], [1, 1, 1]),
        dims([1 << 31, 1, 1], [1, 1, 1]),
        dims([1, 1, 1], [0, 1, 1]),
        dims([1, 1, 1], [1025, 1, 1]),
        dims([1, 1, 1], [1, 1, 65]),
        dims([1, 1, 1], [64, 32, 1]),
    ];
    for d in bad {
        match dev.launch_sync(k.clone(), LaunchArgs::Buffer(&[]), d) {
            Err(PluginError::InvalidArgument(s)) => {
                assert!(s.contains("invalid launch of kernel 'empty'"), "{s}")
            }
            r => panic!("{d:?}: {r:?}"),
        }
    }
    assert!(launch::validate_dims("empty", &dims([(1 << 31) - 1, 1, 1], [1, 1, 1]), 0).is_ok());
    dev.launch_sync(k, LaunchArgs::Buffer(&[]), dims([1, 1, 1], [32, 32, 1])).unwrap();
}

struct ForeignKernel;
impl Kernel for ForeignKernel {
    fn name(&self) -> &str {
        "foreign"
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn foreign_kernels_are_rejected() {
    let dev = device();
    let d = dims([1, 1, 1], [1, 1, 1]);
    assert!(matches!(
        dev.launch_sync(Arc::new(ForeignKernel), LaunchArgs::Buffer(&[]), d),
        Err(PluginError::InvalidArgument(_))
    ));
    let q = dev.create_queue().unwrap();
    assert!(q.launch(Arc::new(ForeignKernel), LaunchArgs::Buffer(&[]), d).is_err());
    assert!(q.is_empty().unwrap());
    assert!(dev.optimal_group_size(&ForeignKernel, 0).is_err());
}

#[test]
fn jit_errors_map_like_llvm() {
    assert!(matches!(map_jit_error(JitError::InvalidBinary("x".into())), PluginError::InvalidBinary(_)));
    match map_jit_error(JitError::Link("undefined symbol foo".into())) {
        PluginError::Compile(s) => assert_eq!(s, "failure to jit IR image: undefined symbol foo"),
        e => panic!("{e:?}"),
    }
    assert!(matches!(map_jit_error(JitError::NotFound("k".into())), PluginError::NotFound(_)));
    assert!(device().load_program(b"not an image").is_err());
}

#[test]
fn device_memory() {
    let dev = device();
    for kind in [AllocKind::Host, AllocKind::Device, AllocKind::Managed] {
        let a = dev.alloc(100, kind).unwrap();
        let b = dev.alloc(8 << 20, kind).unwrap();
        assert_eq!(a % 64, 0);
        assert_eq!(b % 4096, 0);
        let src: Vec<u8> = (0..100).collect();
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { dev.memcpy_sync(a, src.as_ptr() as usize, 100) }.unwrap();
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { dev.memcpy_sync(b + 5, a, 100) }.unwrap();
        let mut back = vec![0u8; 100];
        // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
        unsafe { dev.memcpy_sync(back.as_mut_ptr() as usize, b + 5, 100) }.unwrap();
        assert_eq!(back, src);
        dev.free(a, kind).unwrap();
        dev.free(b, kind).unwrap();
        assert!(dev.free(a, kind).is_err());
    }
    // the advertised maximum can be allocated (it is not touched)
    let max = dev.info().max_mem_alloc_size as usize;
    let big = dev.alloc(max, AllocKind::Device).unwrap();
    dev.free(big, AllocKind::Device).unwrap();
}

#[test]
fn launches_and_copies_do_not_wait_behind_a_kernel() {
    let dev = device();
    let q = dev.create_queue().unwrap();
    let flag = Arc::new(AtomicU32::new(0));
    let k = kernel("hold", hold_wg, vec![p(8, 8)], 0);
    let args = (Arc::as_ptr(&flag) as usize).to_ne_bytes();
    q.launch(k, LaunchArgs::Buffer(&args), dims([4, 1, 1], [1, 1, 1])).unwrap();
    let t0 = Instant::now();
    while flag.load(Ordering::SeqCst) != 1 {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::yield_now();
    }
    // the kernel now occupies a thread; a large synchronous copy and fill still complete
    let n = memory::PARALLEL_MIN + 4096;
    let src = vec![3u8; n];
    let mut dst = vec![0u8; n];
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { dev.memcpy_sync(dst.as_mut_ptr() as usize, src.as_ptr() as usize, n) }.unwrap();
    assert!(dst.iter().all(|&b| b == 3));
    // SAFETY: dst has n bytes.
    unsafe { memory::fill(dst.as_mut_ptr() as usize, &[7], n).unwrap() };
    assert!(dst.iter().all(|&b| b == 7));
    assert!(!q.is_empty().unwrap());
    // a second kernel releases the first: both run at once
    let r = kernel("release", release_wg, vec![p(8, 8)], 0);
    dev.launch_sync(r, LaunchArgs::Buffer(&args), dims([64, 1, 1], [1, 1, 1])).unwrap();
    q.sync().unwrap();
    assert_eq!(flag.load(Ordering::SeqCst), 4, "the first kernel was not released by the second");
}

// ---- queues and events ----

/// A gate a host function can block on.
fn gate() -> (mpsc::Sender<()>, Box<dyn FnOnce() + Send>) {
    let (tx, rx) = mpsc::channel::<()>();
    (
        tx,
        Box::new(move || {
            let _ = rx.recv_timeout(Duration::from_secs(30));
        }),
    )
}

#[test]
fn host_fns_run_in_order() {
    let q = device().create_queue().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    for i in 0..200 {
        let l = log.clone();
        q.host_fn(Box::new(move || l.lock().push(i))).unwrap();
    }
    q.sync().unwrap();
    assert_eq!(*log.lock(), (0..200).collect::<Vec<_>>());
    assert!(q.is_empty().unwrap());
    // host functions never run on the thread that syncs (it may hold the caller's locks)
    let me = std::thread::current().id();
    let other = Arc::new(AtomicBool::new(false));
    for _ in 0..50 {
        let o = other.clone();
        q.host_fn(Box::new(move || o.store(std::thread::current().id() != me, Ordering::SeqCst))).unwrap();
        q.sync().unwrap();
        assert!(other.load(Ordering::SeqCst));
    }
}

#[test]
fn queue_work_mixed_in_order() {
    let dev = device();
    let q = dev.create_queue().unwrap();
    let n = 10_000u32;
    let mut buf = vec![0u32; n as usize];
    let mut out = vec![0u32; n as usize];
    let bp = buf.as_mut_ptr();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.fill(bp as usize, &7u32.to_ne_bytes(), 4 * n as usize) }.unwrap();
    for _ in 0..5 {
        q.launch(add1_kernel(), LaunchArgs::Buffer(&add1_args(bp, n)), dims([n.div_ceil(64), 1, 1], [64, 1, 1]))
            .unwrap();
    }
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    unsafe { q.memcpy(out.as_mut_ptr() as usize, bp as usize, 4 * n as usize) }.unwrap();
    // SAFETY: the test's buffers are live and large enough for the whole copy or fill.
    assert!(unsafe { q.fill(bp as usize, &[1, 2, 3], 10) }.is_err());
    q.sync().unwrap();
    assert!(out.iter().all(|&v| v == 12));
    assert!(buf.iter().all(|&v| v == 12));
}

#[test]
fn enqueue_is_asynchronous() {
    let q = device().create_queue().unwrap();
    assert!(q.is_empty().unwrap());
    assert!(q.record_event().unwrap().is_none());
    let (release, blocker) = gate();
    let ran = Arc::new(AtomicBool::new(false));
    q.host_fn(blocker).unwrap();
    let r = ran.clone();
    q.host_fn(Box::new(move || r.store(true, Ordering::SeqCst))).unwrap();
    // enqueue returned while the first host fn blocks
    std::thread::sleep(Duration::from_millis(20));
    assert!(!q.is_empty().unwrap());
    assert!(!ran.load(Ordering::SeqCst));
    let ev = q.record_event().unwrap().expect("busy queue gives an event");
    assert!(!ev.is_complete().unwrap());
    release.send(()).unwrap();
    ev.sync().unwrap();
    assert!(ev.is_complete().unwrap());
    assert!(ran.load(Ordering::SeqCst));
    ev.sync().unwrap();
    q.sync().unwrap();
    assert!(q.is_empty().unwrap());
    assert!(q.record_event().unwrap().is_none());
}

#[test]
fn events_across_queues() {
    let dev = device();
    let q1 = dev.create_queue().unwrap();
    let q2 = dev.create_queue().unwrap();
    let x = Arc::new(AtomicU32::new(0));
    let y = Arc::new(AtomicU32::new(0));
    let (release, blocker) = gate();
    q1.host_fn(blocker).unwrap();
    let x1 = x.clone();
    q1.host_fn(Box::new(move || x1.store(1, Ordering::SeqCst))).unwrap();
    let e = q1.record_event().unwrap().unwrap();
    // the caller does not block
    q2.wait_event(e.clone()).unwrap();
    let (x2, y2) = (x.clone(), y.clone());
    q2.host_fn(Box::new(move || y2.store(x2.load(Ordering::SeqCst) + 10, Ordering::SeqCst))).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    assert!(!q2.is_empty().unwrap());
    assert_eq!(y.load(Ordering::SeqCst), 0);
    // waiting on an own event is a no-op
    let e2 = q2.record_event().unwrap().unwrap();
    q2.wait_event(e2).unwrap();
    release.send(()).unwrap();
    q2.sync().unwrap();
    assert_eq!(y.load(Ordering::SeqCst), 11);
    assert!(e.is_complete().unwrap());
    // an already complete event adds nothing
    q2.wait_event(e).unwrap();
    assert!(q2.is_empty().unwrap());
}

struct FailingEvent;
impl Event for FailingEvent {
    fn is_complete(&self) -> PluginResult<bool> {
        Ok(false)
    }
    fn sync(&self) -> PluginResult<()> {
        Err(PluginError::Driver("device lost".into()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn errors_surface_at_sync() {
    let q = device().create_queue().unwrap();
    let (release, blocker) = gate();
    q.host_fn(blocker).unwrap();
    let e0 = q.record_event().unwrap().unwrap();
    q.wait_event(Arc::new(FailingEvent)).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    q.host_fn(Box::new(move || r.store(true, Ordering::SeqCst))).unwrap();
    let e1 = q.record_event().unwrap().unwrap();
    release.send(()).unwrap();
    // the event before the failure is fine, the one after it reports it (every time)
    e0.sync().unwrap();
    assert!(e1.sync().unwrap_err().to_string().contains("device lost"));
    assert!(e1.sync().is_err());
    // later work still ran; the queue's sync reports the error once
    assert!(ran.load(Ordering::SeqCst));
    assert!(matches!(q.sync(), Err(PluginError::Backend(s)) if s.contains("device lost")));
    q.sync().unwrap();
    assert!(e1.sync().is_err());
    // a panicking host function is an error too, not a crash
    q.host_fn(Box::new(|| panic!("boom"))).unwrap();
    let e2 = q.record_event();
    assert!(q.sync().unwrap_err().to_string().contains("boom"));
    if let Some(e2) = e2.unwrap() {
        assert!(e2.sync().is_err());
    }
    q.sync().unwrap();
}

#[test]
fn dropping_a_queue_finishes_its_work() {
    let q = device().create_queue().unwrap();
    let (release, blocker) = gate();
    let done = Arc::new(AtomicUsize::new(0));
    q.host_fn(blocker).unwrap();
    for _ in 0..10 {
        let d = done.clone();
        q.host_fn(Box::new(move || {
            d.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
    }
    let ev = q.record_event().unwrap().unwrap();
    drop(q); // must not block: the host fn is still waiting
    assert_eq!(done.load(Ordering::SeqCst), 0);
    release.send(()).unwrap();
    ev.sync().unwrap();
    assert_eq!(done.load(Ordering::SeqCst), 10);

    // and without anyone syncing: the queue threads run it; drain_all waits for it
    let q = device().create_queue().unwrap();
    let (release, blocker) = gate();
    q.host_fn(blocker).unwrap();
    let d = done.clone();
    q.host_fn(Box::new(move || {
        std::thread::sleep(Duration::from_millis(20));
        d.fetch_add(100, Ordering::SeqCst);
    }))
    .unwrap();
    drop(q);
    release.send(()).unwrap();
    drain_all();
    assert_eq!(done.load(Ordering::SeqCst), 110);
}

#[test]
fn dropped_queue_runs_without_sync() {
    let q = device().create_queue().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    q.host_fn(Box::new(move || f.store(true, Ordering::SeqCst))).unwrap();
    drop(q);
    let t0 = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        assert!(t0.elapsed() < Duration::from_secs(30), "dropped queue never ran its work");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn many_threads_one_queue_and_many_queues() {
    let dev = device();
    let n = 3000u32;
    let shared_q = dev.create_queue().unwrap();
    std::thread::scope(|s| {
        for t in 0..20 {
            let dev = dev.clone();
            let shared_q = shared_q.clone();
            s.spawn(move || {
                let mut a = vec![t as u32; n as usize];
                let mut b = vec![t as u32; n as usize];
                let mut c = vec![t as u32; n as usize];
                let own_q = dev.create_queue().unwrap();
                let d = dims([n.div_ceil(128), 1, 1], [128, 1, 1]);
                for _ in 0..10 {
                    shared_q.launch(add1_kernel(), LaunchArgs::Buffer(&add1_args(a.as_mut_ptr(), n)), d).unwrap();
                    own_q.launch(add1_kernel(), LaunchArgs::Buffer(&add1_args(b.as_mut_ptr(), n)), d).unwrap();
                    dev.launch_sync(add1_kernel(), LaunchArgs::Buffer(&add1_args(c.as_mut_ptr(), n)), d).unwrap();
                }
                // a sync by any thread covers what this thread enqueued before it
                shared_q.sync().unwrap();
                own_q.sync().unwrap();
                for v in [&a, &b, &c] {
                    assert!(v.iter().all(|&x| x == t as u32 + 10));
                }
            });
        }
    });
    shared_q.sync().unwrap();
}

/// Many queues with blocked work share the runners: never more than `max_queue_threads` of them, and
/// every queue's work runs, in order, once the gate opens (more queues than blocking slots wait in line).
#[test]
fn busy_queues_share_a_bounded_set_of_threads() {
    let dev = device();
    let n = 600;
    let open = Arc::new((Mutex::new(false), crate::sync::Condvar::new()));
    let log: Arc<Vec<Mutex<Vec<u32>>>> = Arc::new((0..n).map(|_| Mutex::new(Vec::new())).collect());
    let mut bufs = vec![0u32; n];
    let mut queues = Vec::new();
    let mut most = 0;
    for i in 0..n {
        let q = dev.create_queue().unwrap();
        let o = open.clone();
        q.host_fn(Box::new(move || {
            let mut g = o.0.lock();
            while !*g {
                o.1.wait(&mut g);
            }
        }))
        .unwrap();
        // SAFETY: `bufs` outlives the queues (synced below).
        unsafe { q.fill(&mut bufs[i] as *mut u32 as usize, &7u32.to_ne_bytes(), 4) }.unwrap();
        let (l, b) = (log.clone(), &bufs[i] as *const u32 as usize);
        q.host_fn(Box::new(move || {
            // SAFETY: `bufs` is alive until the queues are synced; the fill before this has completed.
            let v = unsafe { std::ptr::read_volatile(b as *const u32) };
            l[i].lock().push(v);
        }))
        .unwrap();
        let l = log.clone();
        q.host_fn(Box::new(move || l[i].lock().push(1))).unwrap();
        queues.push(q);
        most = most.max(queue::runner_threads());
    }
    std::thread::sleep(Duration::from_millis(20));
    most = most.max(queue::runner_threads());
    assert!(most <= queue::max_queue_threads(), "{most} queue threads for {n} busy queues");
    *open.0.lock() = true;
    open.1.notify_all();
    for q in &queues {
        q.sync().unwrap();
    }
    for (i, l) in log.iter().enumerate() {
        assert_eq!(*l.lock(), vec![7, 1], "queue {i}");
    }
}

/// Queues whose next op waits for an event of a blocked queue do not hold threads: with many more of them
/// than runners, the blocked queue still runs its next op (itself handed to the runners by a syncing
/// thread) when released, and then every waiting queue.
#[test]
fn waiting_queues_never_starve_the_queue_they_wait_for() {
    let dev = device();
    let n = 4 * queue::max_queue_threads() + 8;
    for syncer in [false, true] {
        let g = dev.create_queue().unwrap();
        let (release, blocker) = gate();
        g.host_fn(blocker).unwrap();
        let f = g.record_event().unwrap().unwrap();
        let a = dev.create_queue().unwrap();
        a.wait_event(f).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        a.host_fn(Box::new(move || d.store(true, Ordering::SeqCst))).unwrap();
        let e = a.record_event().unwrap().unwrap();
        // another thread syncs `a`: it executes a's wait itself, then hands the host function on
        let sync_a = syncer.then(|| {
            let a = a.clone();
            std::thread::spawn(move || a.sync())
        });
        let seen = Arc::new(AtomicUsize::new(0));
        let waiting: Vec<_> = (0..n)
            .map(|_| {
                let q = dev.create_queue().unwrap();
                q.wait_event(e.clone()).unwrap();
                let (d, s) = (done.clone(), seen.clone());
                q.host_fn(Box::new(move || {
                    if d.load(Ordering::SeqCst) {
                        s.fetch_add(1, Ordering::SeqCst);
                    }
                }))
                .unwrap();
                q
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!e.is_complete().unwrap());
        assert!(queue::runner_threads() <= queue::max_queue_threads());
        release.send(()).unwrap();
        for q in &waiting {
            q.sync().unwrap();
        }
        assert_eq!(seen.load(Ordering::SeqCst), n, "syncer {syncer}");
        if let Some(t) = sync_a {
            t.join().unwrap().unwrap();
        }
    }
}

/// While every blocking slot holds a blocked host function, kernels and copies of other queues still run
/// on the runners (nobody syncs them), and the host functions in line run when the slots free.
#[test]
fn blocked_host_functions_leave_other_work_running() {
    let dev = device();
    let mut gates = Vec::new();
    let mut blocked = Vec::new();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..queue::BLOCKING_SLOTS + 4 {
        let q = dev.create_queue().unwrap();
        let (release, blocker) = gate();
        q.host_fn(blocker).unwrap();
        let r = ran.clone();
        q.host_fn(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
        gates.push(release);
        blocked.push(q);
    }
    let q = dev.create_queue().unwrap();
    let n = 4096u32;
    let mut buf = vec![0u32; n as usize];
    // SAFETY: `buf` outlives the queue's work (synced below).
    unsafe { q.fill(buf.as_mut_ptr() as usize, &1u32.to_ne_bytes(), 4 * n as usize) }.unwrap();
    q.launch(
        add1_kernel(),
        LaunchArgs::Buffer(&add1_args(buf.as_mut_ptr(), n)),
        dims([n.div_ceil(64), 1, 1], [64, 1, 1]),
    )
    .unwrap();
    let t0 = Instant::now();
    while !q.is_empty().unwrap() {
        assert!(t0.elapsed() < Duration::from_secs(30), "a copy and a launch waited behind blocked host functions");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(buf.iter().all(|&v| v == 2));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    for g in gates {
        g.send(()).unwrap();
    }
    for q in &blocked {
        q.sync().unwrap();
    }
    assert_eq!(ran.load(Ordering::SeqCst), queue::BLOCKING_SLOTS + 4);
}

/// Timing, not a test: `cargo test --release -- --ignored --nocapture bench_cpu_pool`.
#[test]
#[ignore]
fn bench_cpu_pool() {
    super::bench::run();
}

/// Timing, not a test: `cargo test --release -- --ignored --nocapture bench_cpu_copy`.
#[test]
#[ignore]
fn bench_cpu_copy() {
    super::bench::copy();
}
