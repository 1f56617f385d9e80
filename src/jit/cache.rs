//! Content-addressed caches with single flight, and the CPU JIT's cache of compiled objects.
//!
//! [`ContentCache`] (shared by the CPU JIT and the CUDA plugin's PTX): key = a blake3 of everything that
//! decides the result; value = a `Weak<V>`, so an entry is evicted when the last user drops its `Arc`
//! (`V`'s `Drop` calls [`ContentCache::evict`]). One producer per key however many threads ask at once:
//! the first installs an in-flight slot and produces outside the map lock, the others wait on its condvar
//! and share its result (an error is shared too, then forgotten).
//!
//! The CPU JIT's key: blake3 of (image bytes, the target's triple/CPU/features as the client chose them
//! (target.rs) and sent them to the compile helper, JIT options, build id, LLVM version). Below the memory cache, the on-disk cache (disk.rs), consulted on a miss before compiling.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use crate::sync::{Condvar, Mutex};

use super::compile;
use super::request::CpuTarget;
use super::{JitError, KernelMeta};

pub(crate) type Key = [u8; 32];

/// A compiled image: object bytes plus kernel metadata, the value of a cache entry. Shared by all loads
/// of the same content; dropping the last `Arc` evicts the entry.
pub(crate) struct CompiledObject {
    /// empty when the compile deferred the generic code (`compile_in_process`'s `defer`)
    pub object: Vec<u8>,
    pub kernels: Vec<KernelMeta>,
    pub key: Key,
}

impl CompiledObject {
    /// Whether this is the kernels' metadata of generic code left uncompiled (no object).
    pub(crate) fn deferred(&self) -> bool {
        self.object.is_empty()
    }
}

impl Drop for CompiledObject {
    fn drop(&mut self) {
        evict(&self.key);
    }
}

struct InFlight<V, E> {
    done: Mutex<Option<Result<Arc<V>, E>>>,
    cv: Condvar,
}

enum Slot<V, E> {
    InFlight(Arc<InFlight<V, E>>),
    Ready(Weak<V>),
}

/// A content-keyed cache of shared values with single flight (see the module docs).
pub struct ContentCache<V, E> {
    map: Mutex<HashMap<Key, Slot<V, E>>>,
}

impl<V, E: Clone> Default for ContentCache<V, E> {
    fn default() -> Self {
        ContentCache { map: Mutex::new(HashMap::new()) }
    }
}

impl<V, E: Clone> ContentCache<V, E> {
    /// The value for `key`: a live one, the one another thread is producing, or `produce()`'s (called
    /// outside the lock, at most once at a time per key). The flag says whether `produce` ran here.
    pub fn get_or_produce(&self, key: Key, produce: impl FnOnce() -> Result<Arc<V>, E>) -> Result<(Arc<V>, bool), E> {
        let flight = {
            let mut map = self.map.lock();
            match map.get(&key) {
                Some(Slot::Ready(w)) => match w.upgrade() {
                    Some(a) => return Ok((a, false)),
                    None => None,
                },
                Some(Slot::InFlight(f)) => Some(f.clone()),
                None => None,
            }
            .map(Err)
            .unwrap_or_else(|| {
                let f = Arc::new(InFlight { done: Mutex::new(None), cv: Condvar::new() });
                map.insert(key, Slot::InFlight(f.clone()));
                Ok(f)
            })
        };
        match flight {
            Err(f) => {
                // someone else produces: wait for its result
                let mut g = f.done.lock();
                loop {
                    if let Some(r) = g.as_ref() {
                        return r.clone().map(|a| (a, false));
                    }
                    f.cv.wait(&mut g);
                }
            }
            Ok(f) => {
                // A panic in `produce` must not leave waiters hanging: the slot is cleared on unwind.
                struct Clear<'a, V, E: Clone>(&'a ContentCache<V, E>, Key, bool);
                impl<V, E: Clone> Drop for Clear<'_, V, E> {
                    fn drop(&mut self) {
                        if self.2 {
                            self.0.map.lock().remove(&self.1);
                        }
                    }
                }
                let mut guard = Clear(self, key, true);
                let r = produce();
                guard.2 = false;
                {
                    let mut map = self.map.lock();
                    match &r {
                        Ok(a) => {
                            map.insert(key, Slot::Ready(Arc::downgrade(a)));
                        }
                        Err(_) => {
                            map.remove(&key);
                        }
                    }
                }
                *f.done.lock() = Some(r.clone());
                f.cv.notify_all();
                r.map(|a| (a, true))
            }
        }
    }

    /// Forgets `key` if its value is gone (called from the value's `Drop`).
    pub fn evict(&self, key: &Key) {
        let mut map = self.map.lock();
        if let Some(Slot::Ready(w)) = map.get(key)
            && w.strong_count() == 0
        {
            map.remove(key);
        }
    }

    /// The live value for `key`, if there is one (nothing is produced or waited for).
    pub fn live_value(&self, key: &Key) -> Option<Arc<V>> {
        match self.map.lock().get(key) {
            Some(Slot::Ready(w)) => w.upgrade(),
            _ => None,
        }
    }

    /// Whether `key` has an entry (live, in flight, or not yet evicted).
    pub fn contains(&self, key: &Key) -> bool {
        self.map.lock().contains_key(key)
    }

    /// Entries with a live value.
    pub fn live(&self) -> usize {
        self.map.lock().values().filter(|s| matches!(s, Slot::Ready(w) if w.strong_count() > 0)).count()
    }
}

struct Cache {
    objects: ContentCache<CompiledObject, JitError>,
    compiles: AtomicU64,
    hits: AtomicU64,
}

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(|| Cache { objects: ContentCache::default(), compiles: AtomicU64::new(0), hits: AtomicU64::new(0) })
}

/// (live entries, compiles, hits) — for tests and benchmarks.
pub fn cache_stats() -> (usize, u64, u64) {
    let c = cache();
    (c.objects.live(), c.compiles.load(Ordering::Relaxed), c.hits.load(Ordering::Relaxed))
}

pub(crate) fn key_of(
    bc: &[u8],
    opt: u32,
    memcheck: bool,
    stop_points: bool,
    defer: bool,
    spec: Option<&compile::Spec>,
) -> Key {
    let mut k = blake3::Hasher::new();
    k.update(b"offload-rs jit\0");
    k.update(super::BUILD_ID.as_bytes());
    k.update(super::disk::llvm_version().as_bytes());
    let replaced = compile::generic_is_replaced(memcheck, spec);
    k.update(&[opt as u8, memcheck as u8, replaced as u8, stop_points as u8, defer as u8]);
    // what decides the target (target.rs), not the resolved target: a hit needs no LLVM
    k.update(super::target::key_bytes());
    k.update(&(bc.len() as u64).to_le_bytes());
    k.update(bc);
    if let Some(s) = spec {
        k.update(b"\0spec\0");
        k.update(&(s.kernel.len() as u64).to_le_bytes());
        k.update(s.kernel.as_bytes());
        for g in s.group_size {
            k.update(&g.to_le_bytes());
        }
        k.update(&[u8::from(s.quick)]);
    }
    *k.finalize().as_bytes()
}

pub(crate) fn evict(key: &Key) {
    cache().objects.evict(key);
}

/// Returns the compiled object for `bc` (specialised per `spec`; instrumented with the memory checker per
/// `memcheck`), compiling it at most once for concurrent callers. `defer`: generic code that need not be
/// compiled yet is not ([`CompiledObject::deferred`]; see `compile_in_process`).
pub(crate) fn get_or_compile(
    bc: &[u8],
    memcheck: bool,
    defer: bool,
    spec: Option<&compile::Spec>,
) -> Result<Arc<CompiledObject>, JitError> {
    let opt = compile::opt_level();
    let stop_points = super::stop_points();
    let key = key_of(bc, opt, memcheck, stop_points, defer, spec);
    let c = cache();
    let (obj, produced) =
        c.objects.get_or_produce(key, || produce(bc, stop_points, opt, memcheck, defer, key, spec))?;
    if !produced {
        c.hits.fetch_add(1, Ordering::Relaxed);
    }
    Ok(obj)
}

/// The compiled object for `bc` (as [`get_or_compile`] with `defer` false) if the memory or the disk
/// cache has it, without compiling: whether a launch can have a specialisation's full version now.
pub(crate) fn get_cached(bc: &[u8], memcheck: bool, spec: Option<&compile::Spec>) -> Option<Arc<CompiledObject>> {
    let opt = compile::opt_level();
    let key = key_of(bc, opt, memcheck, super::stop_points(), false, spec);
    let c = cache();
    if let Some(obj) = c.objects.live_value(&key) {
        c.hits.fetch_add(1, Ordering::Relaxed);
        return Some(obj);
    }
    let (object, kernels) = from_disk(&super::disk::Dir::open()?, &key, false)?;
    // (one that another thread produced meanwhile is as good)
    let (obj, _) = c.objects.get_or_produce(key, || Ok(Arc::new(CompiledObject { object, kernels, key }))).ok()?;
    c.hits.fetch_add(1, Ordering::Relaxed);
    Some(obj)
}

/// The disk cache's entry for `key`, if it is one this build wrote and its object loads (or, for `defer`,
/// the metadata of deferred generic code).
fn from_disk(d: &super::disk::Dir, key: &Key, defer: bool) -> Option<(Vec<u8>, Vec<KernelMeta>)> {
    let (object, kernels) = compile::decode_object(&d.read(key)?)?;
    ((defer && object.is_empty() && !kernels.is_empty()) || super::elf::LoadedObject::loads(&object))
        .then_some((object, kernels))
}

fn produce(
    bc: &[u8],
    stop_points: bool,
    opt: u32,
    memcheck: bool,
    defer: bool,
    key: Key,
    spec: Option<&compile::Spec>,
) -> Result<Arc<CompiledObject>, JitError> {
    // a quick specialisation serves one launch while its full version compiles: not worth a file
    let dir = if spec.is_some_and(|s| s.quick) { None } else { super::disk::Dir::open() };
    if let Some((object, kernels)) = dir.as_ref().and_then(|d| from_disk(d, &key, defer)) {
        cache().hits.fetch_add(1, Ordering::Relaxed);
        return Ok(Arc::new(CompiledObject { object, kernels, key }));
    }
    super::check_before_compile(bc)?;
    // resolved on the first miss (the compile service knows LLVM's CPU names)
    let chosen = super::service::cpu_target()?;
    let target = CpuTarget { stop_points, ..chosen.clone() };
    let t0 = std::time::Instant::now();
    let (object, kernels) = super::service::compile_cpu(bc, &target, opt, memcheck, defer, spec)?;
    if compile::timing() {
        let what = spec.map_or("a program".to_string(), |s| {
            format!("{} at {}, {}", s.kernel, s.shape(), if s.quick { "quick" } else { "full" })
        });
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        compile::time_line(&format!("compiled {what} in {ms:.2} ms (as the client waits: request, compile, answer)"));
    }
    cache().compiles.fetch_add(1, Ordering::Relaxed);
    if let Some(d) = &dir {
        d.write(&key, &compile::encode_object(&object, &kernels));
    }
    Ok(Arc::new(CompiledObject { object, kernels, key }))
}
