//! The handle table: one generation-checked table for every object the API hands out.
//!
//! A handle is `generation << 32 | index`, XORed with a salt, used as a pointer value and never
//! dereferenced. A destroyed, stale, garbage or wrong-kind handle simply fails the lookup, with the kind's
//! error code; it can never crash.
//!
//! Lookups take no lock and touch no reference count: the slot's full handle is compared exactly, and
//! the object is borrowed for as long as the call's context reference, i.e. while the call's pin
//! ([`super::pin`]) lives. Slots sit in segments
//! that are never moved or freed. Removing is one compare-and-swap of the slot's handle to 0, so of
//! several concurrent destroys of one handle exactly one wins; the object itself is dropped, and the slot
//! reused with the next generation, only after every call that could still be reading it has returned.
//! Inserts take a mutex (they allocate an object anyway).

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering::*};

use crate::sync::Mutex;

use super::pin;
use super::{Context, Device, Event, Platform, Program, Queue, Symbol};
use crate::error::{OlError, OlResult};
use crate::ffi::*;

/// Makes handle values look unlike small integers; an occupied slot's handle never XORs to 0 (its
/// generation is odd).
const SALT: u64 = 0x6f6c_0000_0000_0000;

/// The raw value of a handle (what the C side sees as a pointer).
pub type Handle = u64;

#[derive(Clone)]
pub enum Object {
    Platform(Arc<Platform>),
    Device(Arc<Device>),
    Queue(Arc<Queue>),
    Event(Arc<Event>),
    Program(Arc<Program>),
    Symbol(Arc<Symbol>),
}

impl Object {
    fn kind_name(&self) -> &'static str {
        match self {
            Object::Platform(_) => "platform",
            Object::Device(_) => "device",
            Object::Queue(_) => "queue",
            Object::Event(_) => "event",
            Object::Program(_) => "program",
            Object::Symbol(_) => "symbol",
        }
    }
}

struct Slot {
    /// The live handle, or 0 when the slot is free or its object is waiting to be dropped.
    handle: AtomicU64,
    /// The generation the next object in this slot gets (odd; changed only under `ALLOC`).
    next_gen: AtomicU32,
    /// Initialised while `handle != 0`, and after that until the deferred drop.
    obj: UnsafeCell<MaybeUninit<Object>>,
}

// SAFETY: `obj` is written only while no handle of the slot is published and no pinned call can still
// read it (a fresh index, or one returned by the deferred drop), and read only through a published
// handle by pinned calls; `Object` is Send + Sync.
unsafe impl Sync for Slot {}

/// Segment `s` holds `FIRST << s` slots, for indices `FIRST * (2^s - 1) ..`; 27 segments cover 2^32.
const FIRST: usize = 64;
const SEGMENTS: usize = 27;

static SEGS: [AtomicPtr<Slot>; SEGMENTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SEGMENTS];

struct Alloc {
    free: Vec<u32>,
    next: u32,
}
static ALLOC: Mutex<Alloc> = Mutex::new(Alloc { free: Vec::new(), next: 0 });

#[inline]
fn locate(index: u32) -> (usize, usize) {
    let i = index as usize + FIRST;
    let s = (usize::BITS - 1 - i.leading_zeros()) as usize - FIRST.trailing_zeros() as usize;
    (s, i - (FIRST << s))
}

/// The slot of an index whose segment exists.
#[inline]
fn slot(index: u32) -> Option<&'static Slot> {
    let (s, off) = locate(index);
    let seg = SEGS.get(s)?.load(Acquire);
    // SAFETY: a published segment is never freed and holds `FIRST << s` slots; `off` is below that.
    (!seg.is_null()).then(|| unsafe { &*seg.add(off) })
}

fn new_segment(s: usize) -> *mut Slot {
    let slots: Box<[Slot]> = (0..FIRST << s)
        .map(|_| Slot {
            handle: AtomicU64::new(0),
            next_gen: AtomicU32::new(1),
            obj: UnsafeCell::new(MaybeUninit::uninit()),
        })
        .collect();
    Box::leak(slots).as_mut_ptr()
}

/// Insert an object built from its own future handle (objects remember their handle).
pub fn insert_with(make: impl FnOnce(Handle) -> Object) -> Handle {
    let mut a = ALLOC.lock();
    let index = match a.free.pop() {
        Some(i) => i,
        None => {
            let i = a.next;
            a.next = a.next.checked_add(1).expect("more than 2^32 live handles");
            let (s, _) = locate(i);
            if SEGS[s].load(Relaxed).is_null() {
                SEGS[s].store(new_segment(s), Release);
            }
            i
        }
    };
    let Some(slot) = slot(index) else { unreachable!("the segment of a handed-out index exists") };
    let g = slot.next_gen.load(Relaxed);
    slot.next_gen.store(g.wrapping_add(2), Relaxed);
    let h = ((u64::from(g) << 32) | u64::from(index)) ^ SALT;
    let obj = make(h);
    // SAFETY: the slot is free (fresh, or handed back by `drop_slot`): no published handle, no reader.
    unsafe { (*slot.obj.get()).write(obj) };
    slot.handle.store(h, SeqCst);
    h
}

/// The slot of a live handle.
#[inline]
fn live(h: Handle) -> Option<&'static Slot> {
    let s = slot((h ^ SALT) as u32)?;
    // Sequentially consistent: ordered after the caller's pin announcement (see `pin`).
    (h != 0 && s.handle.load(SeqCst) == h).then_some(s)
}

/// The object of a live handle, borrowed for as long as the context reference (which only a pinned call
/// holds: [`super::context`]).
#[inline]
fn get(_ctx: &Context, h: Handle) -> Option<&Object> {
    // SAFETY: the handle was live after the call's pin was announced, so the object is initialised and will
    // not be dropped before the pin is released (`remove` defers the drop past every such pin).
    live(h).map(|s| unsafe { (*s.obj.get()).assume_init_ref() })
}

/// Drop a removed object and hand its slot back (deferred from `remove`).
fn drop_slot(index: usize) {
    let Some(s) = slot(index as u32) else { return };
    // SAFETY: the slot was unlinked before this was deferred and every call that could have read it has
    // returned; nothing else touches it until its index is handed back below.
    unsafe { (*s.obj.get()).assume_init_drop() };
    ALLOC.lock().free.push(index as u32);
}

/// Remove a live handle: true for exactly one of several concurrent removals, false if it was not live.
pub fn remove(h: Handle) -> bool {
    let Some(s) = slot((h ^ SALT) as u32) else { return false };
    if h == 0 || s.handle.compare_exchange(h, 0, SeqCst, SeqCst).is_err() {
        return false;
    }
    pin::defer(drop_slot, (h ^ SALT) as u32 as usize);
    true
}

/// Take every object out (the last olShutDown): all existing handles become stale. Only while no call is
/// in flight.
pub fn clear() -> Vec<Object> {
    pin::run_all_deferred();
    let mut a = ALLOC.lock();
    let mut objs = Vec::new();
    for index in 0..a.next {
        let Some(s) = slot(index) else { continue };
        if s.handle.swap(0, SeqCst) != 0 {
            // SAFETY: the handle was live, so the object is initialised; no call is in flight and the
            // handle is gone, so nothing else reads it; the index is handed back only after the read.
            objs.push(unsafe { (*s.obj.get()).assume_init_read() });
            a.free.push(index);
        }
    }
    objs
}

fn describe(h: Handle, found: Option<&Object>, want: &str) -> String {
    match found {
        Some(o) => format!("handle 0x{h:x} is a {}, not a {want}", o.kind_name()),
        None => format!(
            "{want} handle 0x{h:x} is not valid: it was destroyed, belongs to an earlier olInit, or was never created by this library"
        ),
    }
}

macro_rules! typed_lookup {
    ($fn_name:ident, $variant:ident, $ty:ty, $code:expr, $what:literal) => {
        /// Look a handle up for the rest of the call (clone the `Arc` to keep the object longer).
        #[inline(always)]
        pub fn $fn_name(ctx: &Context, h: Handle) -> OlResult<&Arc<$ty>> {
            if h == 0 {
                return Err(OlError::new(OL_ERRC_INVALID_NULL_HANDLE, concat!("the ", $what, " handle is NULL")));
            }
            match get(ctx, h) {
                Some(Object::$variant(o)) => Ok(o),
                other => Err(OlError::new($code, describe(h, other, $what))),
            }
        }
    };
}

/// Look up and remove in one step: of several concurrent calls exactly one succeeds; the others get the
/// error of a destroyed handle.
macro_rules! typed_take {
    ($fn_name:ident, $lookup:ident, $ty:ty, $code:expr, $what:literal) => {
        pub fn $fn_name(ctx: &Context, h: Handle) -> OlResult<&Arc<$ty>> {
            let p = $lookup(ctx, h)?;
            if !remove(h) {
                return Err(OlError::new($code, describe(h, None, $what)));
            }
            Ok(p)
        }
    };
}

typed_lookup!(platform, Platform, Platform, OL_ERRC_INVALID_PLATFORM, "platform");
typed_lookup!(device, Device, Device, OL_ERRC_INVALID_DEVICE, "device");
typed_lookup!(queue, Queue, Queue, OL_ERRC_INVALID_QUEUE, "queue");
typed_lookup!(event, Event, Event, OL_ERRC_INVALID_EVENT, "event");
typed_lookup!(program, Program, Program, OL_ERRC_INVALID_ARGUMENT, "program");
typed_lookup!(symbol, Symbol, Symbol, OL_ERRC_INVALID_ARGUMENT, "symbol");
typed_take!(take_queue, queue, Queue, OL_ERRC_INVALID_QUEUE, "queue");
typed_take!(take_event, event, Event, OL_ERRC_INVALID_EVENT, "event");
typed_take!(take_program, program, Program, OL_ERRC_INVALID_ARGUMENT, "program");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_tile_the_index_space() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(63), (0, 63));
        assert_eq!(locate(64), (1, 0));
        assert_eq!(locate(191), (1, 127));
        assert_eq!(locate(192), (2, 0));
        assert_eq!(locate(u32::MAX).0, SEGMENTS - 1);
    }
}
