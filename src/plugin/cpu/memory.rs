//! CPU device memory: allocations, the registered (locked) host ranges, copies and fills.
//!
//! * HOST, DEVICE and MANAGED allocations are all ordinary host memory.
//! * Up to [`SMALL_MAX`] bytes: the global allocator with 64-byte alignment.
//! * Larger: anonymous `mmap` (page-aligned), with the length rounded up to a size class (at most 25 %
//!   more), pre-faulted with `MAP_POPULATE` up to [`POPULATE_MAX`] and kept in a reuse cache of at most
//!   [`cache_limit`] bytes when freed. First-touch page faults cost ~3x a populated mapping on the VMs
//!   we measured (cpu-kernels.md §4d), and a cached block has no faults at all.
//! * Mappings from [`HUGE_PAGE`] to [`POPULATE_MAX`] bytes start on a 2 MiB boundary and are marked for
//!   transparent huge pages (`MADV_HUGEPAGE`, which the kernel's default `madvise` mode honours for the
//!   marked mappings only) before they are pre-faulted (`MADV_POPULATE_WRITE`): as a GPU driver backs
//!   device memory with large pages. A kernel whose work-groups reach rows far apart (a 4096-float-wide
//!   transpose touches 16 pages per group for each of its two buffers) then misses the TLB 512x less
//!   often, and pre-faulting takes fewer faults. Measured (bench/tiles, 32 MiB per buffer, 2 threads):
//!   see BENCHMARKS.md's "huge pages" section. Where the kernel has no transparent huge pages built in
//!   (`madvise` refuses the mark), the mapping is the plain one below; with them switched off (`never`)
//!   the mark is taken and ignored: the same aligned mapping, of small pages.
//! * Registering host memory is bookkeeping only (as CUDA in LLVM 22.1.8): the pinned pointer is the
//!   host pointer. Rules of liboffload-22-behaviour.md §8.
//! * Copies and fills of at least [`PARALLEL_MIN`] bytes are split over the thread pool in
//!   [`PARALLEL_BLOCK`] blocks: one thread does not saturate memory bandwidth (11 vs 20 GB/s with 2
//!   threads on an idle 2-vCPU VM, cpu-kernels.md §4d). Measured here (bench `bench_cpu_copy`, a
//!   loaded 2-vCPU VM): best of N 16 MiB 24 vs 17 GB/s, 64 MiB 19 vs 6 GB/s; below 16 MiB the copy is
//!   cache-resident and both reach ~48 GB/s, so smaller copies stay on the calling thread. Medians on
//!   a loaded machine can be worse than one thread (a descheduled helper holds its block).

use super::kernel_memory::page_size;
use super::pool::{Task, WorkerSlot, pool};
use crate::plugin::host_ranges::HostRanges;
use crate::plugin::{PluginError, PluginResult};
use crate::sync::Mutex;
use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};

/// Largest allocation served by the global allocator.
pub(crate) const SMALL_MAX: usize = 256 * 1024;
/// Largest mapping pre-faulted at allocation time (larger ones may be sparsely used).
pub(crate) const POPULATE_MAX: usize = 1 << 30;
/// A transparent huge page (x86-64's PMD size): mappings from this size on start on such a boundary and
/// ask for huge pages.
pub(crate) const HUGE_PAGE: usize = 2 << 20;
/// Copies/fills from this size on run on the pool.
pub(crate) const PARALLEL_MIN: usize = 16 << 20;
/// Bytes per pool item of a parallel copy/fill.
pub(crate) const PARALLEL_BLOCK: usize = 1 << 20;
/// Alignment of every allocation.
pub(crate) const MIN_ALIGN: usize = 64;
/// The largest alignment `olMemAllocAligned` gives on the CPU device (1 GiB, a huge page's).
pub(crate) const MAX_ALIGN: usize = 1 << 30;

enum Backing {
    Heap(Layout),
    Map(usize),
}

/// The allocations and registered ranges of the CPU device.
pub struct Memory {
    live: Mutex<HashMap<usize, Backing>>,
    /// bytes of live mappings (`Backing::Map`)
    mapped: std::sync::atomic::AtomicUsize,
    cache: Mutex<MapCache>,
    registered: Mutex<HostRanges<()>>,
}

#[derive(Default)]
struct MapCache {
    /// mapped length -> free blocks of that length
    blocks: BTreeMap<usize, Vec<usize>>,
    bytes: usize,
}

impl MapCache {
    /// Takes one of the largest cached blocks out, `(address, length)`: the largest go first, as the least
    /// likely to be asked for again.
    fn pop_largest(&mut self) -> Option<(usize, usize)> {
        let mut e = self.blocks.last_entry()?;
        let l = *e.key();
        let p = e.get_mut().pop();
        if e.get().is_empty() {
            e.remove();
        }
        let p = p?;
        self.bytes -= l;
        Some((p, l))
    }
}

/// Unmaps blocks taken out of the cache.
fn unmap_blocks(blocks: Vec<(usize, usize)>) {
    for (p, l) in blocks {
        // SAFETY: the block was mapped by `map` with length `l` and is in no table any more.
        unsafe { libc::munmap(p as *mut libc::c_void, l) };
    }
}

/// Bytes of freed mappings kept for reuse: an eighth of the memory the process may use (RAM, or its
/// memory cgroup's limit: [`super::machine::usable_memory`]), at most 4 GiB.
pub fn cache_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| (super::machine::usable_memory() / 8).min(4 << 30) as usize)
}

/// Under pressure the cache gives its blocks back: a new mapping that would take the live mappings,
/// the cached ones and itself past this many bytes (half of the usable memory) first unmaps cached
/// blocks (largest first) until it fits or the cache is empty.
fn pressure_bytes() -> usize {
    (super::machine::usable_memory() / 2) as usize
}

/// Round a mapping length up to its size class: a multiple of a quarter of its power of two, and of
/// the page size.
fn size_class(size: usize) -> Option<usize> {
    let page = page_size();
    let len = size.checked_next_multiple_of(page)?;
    let p2 = 1usize << (usize::BITS - 1 - len.leading_zeros());
    let step = (p2 / 4).max(page);
    len.checked_next_multiple_of(step)
}

impl Memory {
    pub fn new() -> Memory {
        Memory {
            live: Mutex::new(HashMap::new()),
            mapped: std::sync::atomic::AtomicUsize::new(0),
            cache: Mutex::new(MapCache::default()),
            registered: Mutex::new(HostRanges::default()),
        }
    }

    /// Allocate `size` (> 0) bytes, at least 64-byte aligned.
    /// `olMemAllocAligned`: `align` a power of two. Up to [`MIN_ALIGN`] (and page alignment for large
    /// blocks, which are mapped) as [`Memory::alloc`]; larger alignments from the global allocator with
    /// that alignment, up to [`MAX_ALIGN`]; beyond it UNSUPPORTED.
    pub fn alloc_aligned(&self, size: usize, align: usize) -> PluginResult<usize> {
        if align <= MIN_ALIGN || (size > SMALL_MAX && align <= page_size()) {
            return self.alloc(size);
        }
        if align > MAX_ALIGN {
            return Err(PluginError::Unsupported(format!(
                "an alignment of {align} bytes is more than the CPU device gives ({MAX_ALIGN})"
            )));
        }
        if size == 0 {
            return Err(PluginError::InvalidSize("allocation size must be non-zero".into()));
        }
        let oom = |why: &str| {
            PluginError::OutOfResources(format!("failed to allocate {size} bytes of CPU device memory: {why}"))
        };
        let layout = Layout::from_size_align(size, align).map_err(|e| oom(&e.to_string()))?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return Err(oom("out of memory"));
        }
        self.live.lock().insert(p as usize, Backing::Heap(layout));
        super::memcheck::track(p as usize, size, super::memcheck::AllocKind::Device);
        Ok(p as usize)
    }

    pub fn alloc(&self, size: usize) -> PluginResult<usize> {
        let oom = |why: &str| {
            PluginError::OutOfResources(format!("failed to allocate {size} bytes of CPU device memory: {why}"))
        };
        if size == 0 {
            return Err(PluginError::InvalidSize("allocation size must be non-zero".into()));
        }
        let (ptr, backing) = if size <= SMALL_MAX {
            let layout = Layout::from_size_align(size, MIN_ALIGN).map_err(|e| oom(&e.to_string()))?;
            // SAFETY: non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            if p.is_null() {
                return Err(oom("out of memory"));
            }
            (p as usize, Backing::Heap(layout))
        } else {
            let len = size_class(size).ok_or_else(|| oom("size too large"))?;
            let p = match self.cache_take(len) {
                Some(p) => p,
                None => {
                    self.relieve(len);
                    map(len).map_err(|e| oom(&e))?
                }
            };
            self.mapped.fetch_add(len, std::sync::atomic::Ordering::Relaxed);
            (p, Backing::Map(len))
        };
        self.live.lock().insert(ptr, backing);
        super::memcheck::track(ptr, size, super::memcheck::AllocKind::Device);
        Ok(ptr)
    }

    /// Free an allocation made by [`Memory::alloc`].
    pub fn free(&self, ptr: usize) -> PluginResult<()> {
        let backing = self
            .live
            .lock()
            .remove(&ptr)
            .ok_or_else(|| PluginError::InvalidArgument("address is not a known allocation".into()))?;
        super::memcheck::untrack(ptr);
        match backing {
            // SAFETY: allocated in `alloc` with this layout, removed from the table so freed once.
            Backing::Heap(layout) => unsafe { std::alloc::dealloc(ptr as *mut u8, layout) },
            Backing::Map(len) => {
                self.mapped.fetch_sub(len, std::sync::atomic::Ordering::Relaxed);
                self.cache_put(ptr, len)
            }
        }
        Ok(())
    }

    /// Bytes of freed blocks the reuse cache holds.
    pub fn cached_bytes(&self) -> usize {
        self.cache.lock().bytes
    }

    /// Makes room for a new mapping of `len` bytes: cached blocks are unmapped (largest first) while the
    /// live mappings, the cache and `len` together exceed [`pressure_bytes`].
    fn relieve(&self, len: usize) {
        self.relieve_to(len, pressure_bytes());
    }

    fn relieve_to(&self, len: usize, bound: usize) {
        let live = self.mapped.load(std::sync::atomic::Ordering::Relaxed);
        let mut evict = Vec::new();
        {
            let mut guard = self.cache.lock();
            let c = &mut *guard;
            while c.bytes > 0 && live.saturating_add(c.bytes).saturating_add(len) > bound {
                let Some(b) = c.pop_largest() else { break };
                evict.push(b);
            }
        }
        unmap_blocks(evict);
    }

    fn cache_take(&self, len: usize) -> Option<usize> {
        let mut c = self.cache.lock();
        let v = c.blocks.get_mut(&len)?;
        let p = v.pop()?;
        if v.is_empty() {
            c.blocks.remove(&len);
        }
        c.bytes -= len;
        Some(p)
    }

    fn cache_put(&self, ptr: usize, len: usize) {
        let limit = cache_limit();
        let mut evict = Vec::new();
        {
            let mut guard = self.cache.lock();
            let c = &mut *guard;
            if len > limit {
                evict.push((ptr, len));
            } else {
                c.blocks.entry(len).or_default().push(ptr);
                c.bytes += len;
                while c.bytes > limit {
                    let Some(b) = c.pop_largest() else { break };
                    evict.push(b);
                }
            }
        }
        unmap_blocks(evict);
    }

    /// `olMemRegister`: record `[ptr, ptr+size)`; the pinned pointer is `ptr`.
    pub fn register_host(&self, ptr: usize, size: usize) -> PluginResult<usize> {
        let mut t = self.registered.lock();
        if !t.add_use(ptr, size)? {
            t.insert(ptr, size, ());
            super::memcheck::track(ptr, size, super::memcheck::AllocKind::Registered);
        }
        Ok(ptr)
    }

    /// `olMemUnregister`: `ptr` may be anywhere in a registered range.
    pub fn unregister_host(&self, ptr: usize) -> PluginResult<()> {
        if let Some((start, ())) = self.registered.lock().release(ptr)? {
            super::memcheck::untrack(start);
        }
        Ok(())
    }

    /// The registered range containing `ptr`, as (base, length).
    pub fn registered_range(&self, ptr: usize) -> Option<(usize, usize)> {
        self.registered.lock().find(ptr)
    }
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        for (p, b) in self.live.get_mut().drain() {
            match b {
                // SAFETY: still-live allocations of this allocator; nobody can use them past its drop.
                Backing::Heap(layout) => unsafe { std::alloc::dealloc(p as *mut u8, layout) },
                // SAFETY: as above.
                Backing::Map(len) => unsafe {
                    libc::munmap(p as *mut libc::c_void, len);
                },
            }
        }
        for (len, v) in std::mem::take(&mut self.cache.get_mut().blocks) {
            for p in v {
                // SAFETY: cached mappings belong to this allocator only.
                unsafe { libc::munmap(p as *mut libc::c_void, len) };
            }
        }
    }
}

fn map(len: usize) -> Result<usize, String> {
    if (HUGE_PAGE..=POPULATE_MAX).contains(&len)
        && let Some(p) = map_huge(len)
    {
        return Ok(p);
    }
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    if len <= POPULATE_MAX {
        flags |= libc::MAP_POPULATE;
    } else {
        // `max_mem_alloc_size` is all of RAM; do not let the kernel's overcommit heuristic refuse a
        // mapping that size when most of it may never be touched
        flags |= libc::MAP_NORESERVE;
    }
    // SAFETY: a fresh anonymous mapping; no existing memory is affected.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error().to_string());
    }
    Ok(p as usize)
}

/// A pre-faulted mapping of `len` bytes on a [`HUGE_PAGE`] boundary, marked for transparent huge pages;
/// `None` where the kernel has none built in (`madvise(MADV_HUGEPAGE)` fails) or the mapping fails (the
/// caller then maps the plain way, which reports the error).
fn map_huge(len: usize) -> Option<usize> {
    let span = len.checked_add(HUGE_PAGE)?;
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a fresh anonymous mapping; no existing memory is affected.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), span, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if p == libc::MAP_FAILED {
        return None;
    }
    let (p, a) = (p as usize, (p as usize).next_multiple_of(HUGE_PAGE));
    // SAFETY: the parts of our own fresh mapping before and after [a, a + len); both are inside it.
    unsafe {
        if a > p {
            libc::munmap(p as *mut libc::c_void, a - p);
        }
        if p + span > a + len {
            libc::munmap((a + len) as *mut libc::c_void, p + span - (a + len));
        }
    }
    let region = a as *mut libc::c_void;
    // SAFETY: advice on our own mapping [a, a + len), which nobody else has seen yet.
    if unsafe { libc::madvise(region, len, libc::MADV_HUGEPAGE) } != 0 {
        // SAFETY: as above; unmapped before anyone saw it.
        unsafe { libc::munmap(region, len) };
        return None;
    }
    // pre-fault as `MAP_POPULATE` does (after the advice: populating first would take small pages); before
    // Linux 5.14 (`EINVAL`) by touching each page. Like `MAP_POPULATE`, a failure (out of memory) is not
    // reported: the pages are then faulted in on first touch.
    // SAFETY: as above.
    if unsafe { libc::madvise(region, len, libc::MADV_POPULATE_WRITE) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
    {
        for off in (0..len).step_by(page_size()) {
            // SAFETY: inside our own fresh read-write mapping; its pages are zero and stay zero.
            unsafe { std::ptr::write_volatile((a + off) as *mut u8, 0) };
        }
    }
    Some(a)
}

struct CopyTask {
    dst: usize,
    src: usize,
    size: usize,
}

impl Task for CopyTask {
    fn run(&self, start: u64, end: u64, _slot: &mut WorkerSlot) -> bool {
        let a = start as usize * PARALLEL_BLOCK;
        let b = (end as usize * PARALLEL_BLOCK).min(self.size);
        // SAFETY: `copy` checked that the ranges do not overlap; the caller guaranteed them valid.
        unsafe { std::ptr::copy_nonoverlapping((self.src + a) as *const u8, (self.dst + a) as *mut u8, b - a) };
        true
    }
}

/// Copy `size` bytes (`memmove` semantics).
///
/// # Safety
/// `[src, src+size)` must be readable and `[dst, dst+size)` writable for the duration of the call,
/// and nobody else may write them meanwhile.
pub unsafe fn copy(dst: usize, src: usize, size: usize) {
    if size == 0 || dst == src {
        return;
    }
    let overlap = dst < src.saturating_add(size) && src < dst.saturating_add(size);
    if size >= PARALLEL_MIN && !overlap && pool().threads() > 1 {
        let t = CopyTask { dst, src, size };
        let n = size.div_ceil(PARALLEL_BLOCK) as u64;
        // cannot fail: CopyTask::run always succeeds
        let _ = pool().run(&t, n);
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
    }
}

/// Fill `[ptr, ptr+size)` with `pattern` repeated, single-threaded. `size % pattern.len() == 0`.
///
/// # Safety
/// The range must be writable.
unsafe fn fill_serial(ptr: *mut u8, pattern: &[u8], size: usize) {
    let n = pattern.len();
    if n == 1 {
        // SAFETY: caller's contract.
        unsafe { std::ptr::write_bytes(ptr, pattern[0], size) };
        return;
    }
    if size == 0 {
        return;
    }
    if matches!(n, 2 | 4 | 8) {
        // one 8-byte word of the repeated pattern, stored as words (vectorised), then the tail
        let mut w = [0u8; 8];
        for (i, b) in w.iter_mut().enumerate() {
            *b = pattern[i % n];
        }
        let word = u64::from_ne_bytes(w);
        let words = size / 8;
        // SAFETY: `words * 8 <= size` bytes from `ptr` are writable; the tail is `size % 8` bytes, a
        // multiple of `n`, so it starts at a pattern boundary and `w` begins with the pattern.
        unsafe {
            let p = ptr.cast::<u64>();
            for i in 0..words {
                p.add(i).write_unaligned(word);
            }
            std::ptr::copy_nonoverlapping(w.as_ptr(), ptr.add(words * 8), size % 8);
        }
        return;
    }
    // SAFETY: size >= n as size is a non-zero multiple of n; then each step doubles the filled prefix
    // within the range.
    unsafe {
        std::ptr::copy_nonoverlapping(pattern.as_ptr(), ptr, n);
        let mut done = n;
        while done < size {
            let k = done.min(size - done);
            std::ptr::copy_nonoverlapping(ptr, ptr.add(done), k);
            done += k;
        }
    }
}

struct FillTask<'a> {
    ptr: usize,
    pattern: &'a [u8],
    size: usize,
    block: usize,
}

impl Task for FillTask<'_> {
    fn run(&self, start: u64, end: u64, _slot: &mut WorkerSlot) -> bool {
        let a = start as usize * self.block;
        let b = (end as usize * self.block).min(self.size);
        // SAFETY: `fill`'s contract; `block` is a multiple of the pattern length so the phase is right.
        unsafe { fill_serial((self.ptr + a) as *mut u8, self.pattern, b - a) };
        true
    }
}

/// Fill `[ptr, ptr+size)` with `pattern` repeated. Requires `pattern` non-empty and
/// `size % pattern.len() == 0` (checked: `InvalidSize`).
///
/// # Safety
/// The range must be writable and not used by anyone else meanwhile.
pub unsafe fn fill(ptr: usize, pattern: &[u8], size: usize) -> PluginResult<()> {
    if pattern.is_empty() || !size.is_multiple_of(pattern.len()) {
        return Err(PluginError::InvalidSize(format!(
            "fill size {size} is not a multiple of the pattern size {}",
            pattern.len()
        )));
    }
    if size >= PARALLEL_MIN && pool().threads() > 1 {
        let block = (PARALLEL_BLOCK / pattern.len()).max(1) * pattern.len();
        let t = FillTask { ptr, pattern, size, block };
        let n = size.div_ceil(block) as u64;
        let _ = pool().run(&t, n);
    } else {
        // SAFETY: caller's contract.
        unsafe { fill_serial(ptr as *mut u8, pattern, size) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_alignment_and_reuse() {
        let m = Memory::new();
        for size in [1usize, 3, 64, 1000, SMALL_MAX, SMALL_MAX + 1, 3 << 20, 17 << 20] {
            let p = m.alloc(size).unwrap();
            assert_eq!(p % MIN_ALIGN, 0, "size {size}");
            if size > SMALL_MAX {
                assert_eq!(p % page_size(), 0);
            }
            // SAFETY: p is a fresh allocation of `size` bytes.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0x5A, size) };
            m.free(p).unwrap();
        }
        // a freed mapping of the same class comes back
        let a = m.alloc(5 << 20).unwrap();
        m.free(a).unwrap();
        let b = m.alloc(5 << 20).unwrap();
        assert_eq!(a, b);
        m.free(b).unwrap();
        assert!(matches!(m.free(b), Err(PluginError::InvalidArgument(_))));
        assert!(matches!(m.alloc(0), Err(PluginError::InvalidSize(_))));
    }

    /// Mappings from 2 MiB on start on a huge page's boundary, read as zero, and carry the huge-page advice
    /// (`hg` in the VMA's `VmFlags` in /proc/self/smaps) where the kernel has transparent huge pages; whether
    /// the kernel found huge pages for them (`AnonHugePages`) depends on its free memory and is printed.
    #[test]
    fn large_mappings_take_huge_pages() {
        let m = Memory::new();
        let size = 9 << 20;
        let p = m.alloc(size).unwrap();
        assert_eq!(p % HUGE_PAGE, 0);
        // SAFETY: p is a fresh allocation of `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
        assert!(bytes.iter().all(|&b| b == 0));
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if thp.is_empty() || thp.contains("[never]") {
            eprintln!("no transparent huge pages here ({thp:?}): alignment checked only");
        } else {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let (mut in_vma, mut flags, mut huge_kb) = (false, None, None);
            for line in smaps.lines() {
                if let Some((range, _)) = line.split_once(' ')
                    && let Some((lo, hi)) = range.split_once('-')
                    && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    in_vma = (lo..hi).contains(&p);
                } else if in_vma && let Some(kb) = line.strip_prefix("AnonHugePages:") {
                    huge_kb = kb.trim().trim_end_matches(" kB").parse::<usize>().ok();
                } else if in_vma && let Some(f) = line.strip_prefix("VmFlags:") {
                    flags = Some(f.split_whitespace().map(str::to_string).collect::<Vec<_>>());
                }
            }
            let flags = flags.expect("the mapping's VMA in /proc/self/smaps");
            assert!(flags.iter().any(|f| f == "hg"), "no huge-page advice on the mapping: {flags:?} ({thp})");
            eprintln!("{} kB of huge pages in a {size}-byte mapping", huge_kb.unwrap_or(0));
        }
        m.free(p).unwrap();
    }

    /// Cached blocks of other sizes are given back when a new mapping would take live + cached memory past
    /// the pressure bound (the cgroup OOM of issue 22: freed blocks kept resident by the cache).
    #[test]
    fn cached_blocks_are_given_back_under_pressure() {
        let m = Memory::new();
        let sizes = [1 << 20, 2 << 20, 3 << 20];
        let blocks: Vec<usize> = sizes.iter().map(|&s| m.alloc(s).unwrap()).collect();
        for b in blocks {
            m.free(b).unwrap();
        }
        let cached = m.cached_bytes();
        assert!(cached >= 6 << 20, "{cached}");
        // plenty of room: nothing given back
        m.relieve_to(4 << 20, usize::MAX);
        assert_eq!(m.cached_bytes(), cached);
        // a bound that live + cached + new exceed: the largest cached blocks go first, until it fits
        m.relieve_to(4 << 20, 4 << 20 | 1 << 20);
        assert!(m.cached_bytes() <= 1 << 20, "{}", m.cached_bytes());
        m.relieve_to(4 << 20, 0);
        assert_eq!(m.cached_bytes(), 0);
        // the live mappings count: one live block of 8 MiB and a bound of 9 MiB leave no room for a cache
        let big = m.alloc(8 << 20).unwrap();
        let small = m.alloc(1 << 20).unwrap();
        m.free(small).unwrap();
        assert!(m.cached_bytes() > 0);
        m.relieve_to(1 << 20, 9 << 20);
        assert_eq!(m.cached_bytes(), 0);
        m.free(big).unwrap();
    }

    #[test]
    fn size_classes() {
        assert_eq!(size_class(1), Some(page_size()));
        let c = size_class((5 << 20) + 1).unwrap();
        assert!(c > (5 << 20) && c <= (5 << 20) * 5 / 4 + page_size());
        assert!(size_class(usize::MAX).is_none());
    }

    #[test]
    fn register_rules() {
        let m = Memory::new();
        let buf = vec![0u8; 4096];
        let p = buf.as_ptr() as usize;
        assert!(
            matches!(m.unregister_host(p), Err(PluginError::InvalidArgument(s)) if s == "cannot find locked buffer")
        );
        assert_eq!(m.register_host(p, 1024).unwrap(), p);
        // contained: another use, pointer at the same offset
        assert_eq!(m.register_host(p + 16, 16).unwrap(), p + 16);
        assert_eq!(m.register_host(p, 1024).unwrap(), p);
        // partial overlap from inside and from before
        let e = m.register_host(p + 1000, 100).unwrap_err();
        assert!(
            matches!(e, PluginError::InvalidArgument(ref s) if s == "partial overlapping not allowed in locked buffers")
        );
        assert!(m.register_host(p - 8, 16).is_err() || p < 8);
        // disjoint range is fine
        assert_eq!(m.register_host(p + 2048, 100).unwrap(), p + 2048);
        // three uses of the first range; interior pointers unregister it
        m.unregister_host(p + 5).unwrap();
        m.unregister_host(p).unwrap();
        m.unregister_host(p + 1023).unwrap();
        assert!(m.unregister_host(p).is_err());
        m.unregister_host(p + 2048).unwrap();
        assert!(m.unregister_host(p + 2048).is_err());
    }

    #[test]
    fn copy_and_fill() {
        for size in [0usize, 5, 4096, PARALLEL_MIN + 12345] {
            let src: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
            let mut dst = vec![0u8; size];
            // SAFETY: both buffers have `size` bytes.
            unsafe { copy(dst.as_mut_ptr() as usize, src.as_ptr() as usize, size) };
            assert_eq!(src, dst);
        }
        // overlapping copy is a memmove
        let mut v: Vec<u8> = (0..100).collect();
        // SAFETY: in bounds.
        unsafe { copy(v.as_mut_ptr() as usize + 10, v.as_ptr() as usize, 50) };
        assert_eq!(&v[10..60], &(0..50).collect::<Vec<u8>>()[..]);

        for pat in [&[0xABu8][..], &[1, 2], &[1, 2, 3, 4], &[1, 2, 3, 4, 5, 6, 7, 8], &[9u8; 17], &[3u8; 16]] {
            for n in [0usize, 1, 3, 1000, PARALLEL_MIN / pat.len() + 77] {
                let size = n * pat.len();
                let mut d = vec![0u8; size];
                // SAFETY: d has size bytes.
                unsafe { fill(d.as_mut_ptr() as usize, pat, size).unwrap() };
                assert!(d.chunks(pat.len()).all(|c| c == pat), "pattern {pat:?} n {n}");
            }
        }
        let mut d = [0u8; 5];
        // SAFETY: in bounds; rejected before writing anyway.
        assert!(unsafe { fill(d.as_mut_ptr() as usize, &[1, 2], 5) }.is_err());
    }
}
