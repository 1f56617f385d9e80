//! Content-addressed cache of compiled objects.
//!
//! Key: blake3 of (image bytes, host triple/CPU/features, JIT options, crate version, JIT_ABI_VERSION).
//! Value: a `Weak<CompiledObject>`; every `LoadedImage` holds the `Arc`, so the entry is evicted when the
//! last program made from it is destroyed (`CompiledObject::drop`). Compilation never happens under the
//! map lock: the first loader of a key installs an in-flight slot, later loaders wait on its condvar.
//! Optional on-disk layer: `OFFLOAD_RS_JIT_CACHE_DIR=<dir>`, one file per key (hex), verified with a
//! magic, the format version and a blake3 of the payload; bad files are ignored and rewritten.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::{Condvar, Mutex};

use super::compile;
use super::{JitError, KernelMeta};

type Key = [u8; 32];

/// A compiled image: object bytes plus kernel metadata, the value of a cache entry. Shared by all loads
/// of the same content; dropping the last `Arc` evicts the entry.
pub(crate) struct CompiledObject {
    pub object: Vec<u8>,
    pub kernels: Vec<KernelMeta>,
    pub key: Key,
}

impl Drop for CompiledObject {
    fn drop(&mut self) {
        evict(&self.key);
    }
}
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
    k.update(env!("CARGO_PKG_VERSION").as_bytes());
    k.update(&super::JIT_ABI_VERSION.to_le_bytes());
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
    let dir = disk_dir();
    if let Some(d) = &dir
        && let Some((object, meta_text)) = disk_read(d, &key)
        && let Ok(kernels) = compile::parse_meta(&meta_text)
    {
        cache().hits.fetch_add(1, Ordering::Relaxed);
        return Ok(Arc::new(CompiledObject { object, kernels, key }));
    }
    let (object, meta_text) = compile::compile(bc, opt)?;
    let kernels = compile::parse_meta(&meta_text)?;
    cache().compiles.fetch_add(1, Ordering::Relaxed);
    if let Some(d) = &dir {
        disk_write(d, &key, &object, &meta_text);
    }
    Ok(Arc::new(CompiledObject { object, kernels, key }))
}

const DISK_MAGIC: &[u8; 8] = b"OLRSJIT\0";
const DISK_VERSION: u32 = 1;

/// Tests point the disk layer at a private directory without touching the process environment.
#[cfg(test)]
pub(crate) static DISK_DIR_OVERRIDE: Mutex<Option<PathBuf>> = Mutex::new(None);

fn disk_dir() -> Option<PathBuf> {
    #[cfg(test)]
    if let Some(d) = DISK_DIR_OVERRIDE.lock().clone() {
        return Some(d);
    }
    let d = std::env::var_os("OFFLOAD_RS_JIT_CACHE_DIR")?;
    if d.is_empty() {
        return None;
    }
    Some(PathBuf::from(d))
}

pub(crate) fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// File: magic(8) version(4) blake3(payload)(32) payload; payload = objlen(8) obj metalen(8) meta.
fn disk_read(dir: &std::path::Path, key: &Key) -> Option<(Vec<u8>, String)> {
    let data = std::fs::read(dir.join(hex(key))).ok()?;
    if data.len() < 44 || &data[..8] != DISK_MAGIC || data[8..12] != DISK_VERSION.to_le_bytes() {
        return None;
    }
    let payload = &data[44..];
    if blake3::hash(payload).as_bytes() != &data[12..44] {
        return None;
    }
    let rd = |at: usize| -> Option<usize> {
        let b: [u8; 8] = payload.get(at..at + 8)?.try_into().ok()?;
        usize::try_from(u64::from_le_bytes(b)).ok()
    };
    let ol = rd(0)?;
    let obj = payload.get(8..8usize.checked_add(ol)?)?.to_vec();
    let ml = rd(8 + ol)?;
    let meta = payload.get(16 + ol..(16 + ol).checked_add(ml)?)?;
    Some((obj, String::from_utf8(meta.to_vec()).ok()?))
}

fn disk_write(dir: &std::path::Path, key: &Key, obj: &[u8], meta: &str) {
    let mut payload = Vec::with_capacity(obj.len() + meta.len() + 16);
    payload.extend_from_slice(&(obj.len() as u64).to_le_bytes());
    payload.extend_from_slice(obj);
    payload.extend_from_slice(&(meta.len() as u64).to_le_bytes());
    payload.extend_from_slice(meta.as_bytes());
    let mut data = Vec::with_capacity(payload.len() + 44);
    data.extend_from_slice(DISK_MAGIC);
    data.extend_from_slice(&DISK_VERSION.to_le_bytes());
    data.extend_from_slice(blake3::hash(&payload).as_bytes());
    data.extend_from_slice(&payload);
    let _ = std::fs::create_dir_all(dir);
    let tmp = dir.join(format!("{}.tmp.{}", hex(key), std::process::id()));
    if std::fs::write(&tmp, &data).is_ok() && std::fs::rename(&tmp, dir.join(hex(key))).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}
