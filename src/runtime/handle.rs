//! The handle table: one generation-checked slotmap for every object the API hands out.
//!
//! A handle is the slotmap key's `as_ffi()` value (index in the low 32 bits, generation in the high 32)
//! XORed with a salt, used as a pointer value and never dereferenced. A destroyed, stale, garbage or
//! wrong-kind handle simply fails the lookup, with the kind's error code; it can never crash.

use std::sync::{Arc, LazyLock};

use parking_lot::RwLock;
use slotmap::{DefaultKey, Key, KeyData, SlotMap};

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::runtime::{Device, Event, Platform, Program, Queue, Symbol};

/// Makes handle values look unlike small integers; an occupied key never XORs to 0 (its generation is odd).
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

static TABLE: LazyLock<RwLock<SlotMap<DefaultKey, Object>>> = LazyLock::new(Default::default);

fn to_key(h: Handle) -> DefaultKey {
    KeyData::from_ffi(h ^ SALT).into()
}

/// Insert an object built from its own future handle (objects remember their handle).
pub fn insert_with(make: impl FnOnce(Handle) -> Object) -> Handle {
    let mut t = TABLE.write();
    let key = t.insert_with_key(|k| make(k.data().as_ffi() ^ SALT));
    key.data().as_ffi() ^ SALT
}

/// Remove a handle; returns the object if it was live.
pub fn remove(h: Handle) -> Option<Object> {
    TABLE.write().remove(to_key(h))
}

/// Look a handle up: take the lock, clone the `Arc`, drop the lock.
pub fn get(h: Handle) -> Option<Object> {
    TABLE.read().get(to_key(h)).cloned()
}

/// Drop every object (olShutDown): all existing handles become stale.
pub fn clear() -> Vec<Object> {
    let mut t = TABLE.write();
    let objs: Vec<Object> = t.drain().map(|(_, o)| o).collect();
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
        pub fn $fn_name(h: Handle) -> OlResult<Arc<$ty>> {
            if h == 0 {
                return Err(OlError::new(OL_ERRC_INVALID_NULL_HANDLE, concat!("the ", $what, " handle is NULL")));
            }
            match get(h) {
                Some(Object::$variant(o)) => Ok(o),
                other => Err(OlError::new($code, describe(h, other.as_ref(), $what))),
            }
        }
    };
}

typed_lookup!(platform, Platform, Platform, OL_ERRC_INVALID_PLATFORM, "platform");
typed_lookup!(device, Device, Device, OL_ERRC_INVALID_DEVICE, "device");
typed_lookup!(queue, Queue, Queue, OL_ERRC_INVALID_QUEUE, "queue");
typed_lookup!(event, Event, Event, OL_ERRC_INVALID_EVENT, "event");
typed_lookup!(program, Program, Program, OL_ERRC_INVALID_ARGUMENT, "program");
typed_lookup!(symbol, Symbol, Symbol, OL_ERRC_INVALID_ARGUMENT, "symbol");
