//! Content-addressed cache of compiled objects.
//!
//! Key: blake3 of (image bytes, host triple/CPU/features, JIT options, build id, LLVM version).
//! Value: a `Weak<CompiledObject>`; every `LoadedImage` holds the `Arc`, so the entry is evicted when the
//! last program made from it is destroyed (`CompiledObject::drop`). Compilation never happens under the
//! map lock: the first loader of a key installs an in-flight slot, later loaders wait on its condvar.
//! Below it, the on-disk cache (disk.rs), consulted on a miss before compiling.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::{Condvar, Mutex};

use super::JitError;
use super::compile::{self, CompiledObject};

type Key = [u8; 32];
type Outcome = Option<Result<Arc<CompiledObject>, JitError>>;

struct InFlight {
    done: Mutex<Outcome>,
    cv: Condvar,
}

enum Slot {
    InFlight(Arc<InFlight>),
    Ready(Weak<CompiledObject>),
}

struct Cache {
    map: Mutex<HashMap<Key, Slot>>,
    compiles: AtomicU64,
    hits: AtomicU64,
}

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(|| Cache { map: Mutex::new(HashMap::new()), compiles: AtomicU64::new(0), hits: AtomicU64::new(0) })
}

/// (live entries, compiles, hits) — for tests and benchmarks.
pub fn cache_stats() -> (usize, u64, u64) {
    let c = cache();
    let live = c
        .map
        .lock()
        .values()
        .filter(|s| match s {
            Slot::Ready(w) => w.strong_count() > 0,
            Slot::InFlight(_) => false,
        })
        .count();
    (live, c.compiles.load(Ordering::Relaxed), c.hits.load(Ordering::Relaxed))
}

pub(crate) fn key_of(bc: &[u8], opt: u32) -> Key {
    let h = compile::host();
    let mut k = blake3::Hasher::new();
    k.update(b"offload-rs jit\0");
    k.update(super::BUILD_ID.as_bytes());
    k.update(super::disk::llvm_version().as_bytes());
    k.update(&[opt as u8]);
    for s in [&h.triple, &h.cpu, &h.features] {
        k.update(&(s.len() as u64).to_le_bytes());
        k.update(s.as_bytes());
    }
    k.update(&(bc.len() as u64).to_le_bytes());
    k.update(bc);
    *k.finalize().as_bytes()
}

pub(crate) fn evict(key: &Key) {
    let mut map = cache().map.lock();
    if let Some(Slot::Ready(w)) = map.get(key)
        && w.strong_count() == 0
    {
        map.remove(key);
    }
}

/// Returns the compiled object for `bc`, compiling it at most once for concurrent callers.
pub(crate) fn get_or_compile(bc: &[u8]) -> Result<Arc<CompiledObject>, JitError> {
    let opt = compile::opt_level();
    let key = key_of(bc, opt);
    let c = cache();
    let flight = {
        let mut map = c.map.lock();
        match map.get(&key) {
            Some(Slot::Ready(w)) => {
                if let Some(a) = w.upgrade() {
                    c.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(a);
                }
                None
            }
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
            // someone else compiles: wait
            let mut g = f.done.lock();
            while g.is_none() {
                f.cv.wait(&mut g);
            }
            let r = g.as_ref().cloned().unwrap_or_else(|| Err(JitError::Compile("internal: empty slot".into())));
            if r.is_ok() {
                c.hits.fetch_add(1, Ordering::Relaxed);
            }
            r
        }
        Ok(f) => {
            let r = produce(bc, opt, key);
            {
                let mut map = c.map.lock();
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
            r
        }
    }
}

fn produce(bc: &[u8], opt: u32, key: Key) -> Result<Arc<CompiledObject>, JitError> {
    let dir = super::disk::Dir::open();
    if let Some(d) = &dir
        && let Some(payload) = d.read(&key)
        && let Some((object, meta_text)) = compile::decode_object(&payload)
        && let Ok(kernels) = compile::parse_meta(&meta_text)
        && super::elf::LoadedObject::load(&object).is_ok()
    {
        cache().hits.fetch_add(1, Ordering::Relaxed);
        return Ok(Arc::new(CompiledObject { object, kernels, key }));
    }
    let (object, meta_text) = compile::compile(bc, opt)?;
    let kernels = compile::parse_meta(&meta_text)?;
    cache().compiles.fetch_add(1, Ordering::Relaxed);
    if let Some(d) = &dir {
        d.write(&key, &compile::encode_object(&object, &meta_text));
    }
    Ok(Arc::new(CompiledObject { object, kernels, key }))
}
