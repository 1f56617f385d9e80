//! One query shape for every `olGet*Info` / `olGet*InfoSize` pair (rusticl's `CLInfo` model).
//!
//! Each kind of object says, in one [`InfoQuery`] impl beside its entry points, what its pair is called,
//! how its object argument is checked and looked up, and what each property's [`InfoValue`] is; [`query`]
//! and [`query_size`] do the rest the same way for all six: the validation prologue in the header's
//! order, the lookup, LLVM 22's writing rules, the trace. The rules: the size query reports the exact
//! byte count (strings include their NUL); a value query with `PropSize` below it fails with
//! `INVALID_SIZE "provided size is invalid"` and writes nothing; otherwise exactly that many bytes are
//! written and the rest of the caller's buffer is left untouched.

use std::cell::OnceCell;
use std::ffi::c_void;

use crate::api::{entry, validate};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::runtime::Context;
use crate::trace;

/// One object kind's info pair.
pub(crate) trait InfoQuery {
    /// The property enumeration (`ol_device_info_t`, ...).
    type Name: Copy;
    /// The C names of the value and size queries.
    const FUNCTION: &'static str;
    const SIZE_FUNCTION: &'static str;
    /// The object parameter as the header names it (for the trace), and its NULL check.
    const ARG: &'static str;
    const NULL_CHECK: &'static str;
    const NULL_CODE: ol_errc_t = OL_ERRC_INVALID_NULL_HANDLE;
    /// The enumerator's name, for the trace.
    fn name(name: Self::Name) -> &'static str;
    /// Look the object up (`obj` is the handle or pointer as passed) and compute the property; errors in
    /// LLVM's order (the object's, then `INVALID_ENUMERATION`, then the property's own).
    fn value(ctx: &Context, obj: u64, name: Self::Name) -> OlResult<InfoValue<'_>>;
}

/// `olGet*Info`: errors in order `INVALID_SIZE` (PropSize == 0), the object's NULL code,
/// `INVALID_NULL_POINTER` (PropValue), then [`InfoQuery::value`]'s, then `INVALID_SIZE` (too small).
///
/// # Safety
/// `prop_value` must be NULL or valid for `prop_size` writable bytes.
#[inline(always)]
pub(crate) unsafe fn query<Q: InfoQuery>(
    obj: u64,
    name: Q::Name,
    prop_size: usize,
    prop_value: *mut c_void,
) -> ol_result_t {
    let shown = OnceCell::new();
    entry(
        Q::FUNCTION,
        |ctx| {
            validate(
                ctx,
                &[
                    (prop_size == 0, OL_ERRC_INVALID_SIZE, "PropSize == 0"),
                    (obj == 0, Q::NULL_CODE, Q::NULL_CHECK),
                    (prop_value.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == PropValue"),
                ],
            )?;
            let v = Q::value(ctx, obj, name)?;
            // SAFETY: prop_value is NULL or valid for prop_size bytes (caller contract).
            unsafe { write(&v, prop_size, prop_value) }?;
            if ctx.trace {
                let _ = shown.set(v.trace());
            }
            Ok(())
        },
        || {
            format!(
                ".{} = {}, .PropName = {}, .PropSize = {prop_size}, .PropValue = {}",
                Q::ARG,
                trace::ptr(obj as usize as *const c_void),
                Q::name(name),
                trace::out(prop_value, shown.get().cloned())
            )
        },
    )
}

/// `olGet*InfoSize`: errors in order the object's NULL code, `INVALID_NULL_POINTER` (PropSizeRet), then
/// [`InfoQuery::value`]'s.
///
/// # Safety
/// `size_ret` must be NULL or valid for writing a `size_t`.
#[inline(always)]
pub(crate) unsafe fn query_size<Q: InfoQuery>(obj: u64, name: Q::Name, size_ret: *mut usize) -> ol_result_t {
    entry(
        Q::SIZE_FUNCTION,
        |ctx| {
            validate(
                ctx,
                &[
                    (obj == 0, Q::NULL_CODE, Q::NULL_CHECK),
                    (size_ret.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == PropSizeRet"),
                ],
            )?;
            let v = Q::value(ctx, obj, name)?;
            // SAFETY: size_ret is NULL or writable (caller contract).
            unsafe { write_size(&v, size_ret) }
        },
        || {
            format!(
                ".{} = {}, .PropName = {}, .PropSizeRet = {}",
                Q::ARG,
                trace::ptr(obj as usize as *const c_void),
                Q::name(name),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_usize(size_ret) }
            )
        },
    )
}

#[derive(Clone, Copy, Debug)]
pub enum InfoValue<'a> {
    Str(&'a str),
    U32(u32),
    U64(u64),
    Bool(bool),
    /// pointers and handles (8 bytes)
    Ptr(u64),
    Dims([u32; 3]),
    /// an enumeration: 4 bytes, traced by its enumerator name
    Enum(u32, fn(u32) -> &'static str),
}

impl InfoValue<'_> {
    /// The exact byte size the value needs (strings include their NUL).
    #[inline]
    pub fn size(&self) -> usize {
        match self {
            InfoValue::Str(s) => s.len() + 1,
            InfoValue::U32(_) | InfoValue::Enum(..) => 4,
            InfoValue::U64(_) | InfoValue::Ptr(_) => 8,
            InfoValue::Bool(_) => 1,
            InfoValue::Dims(_) => 12,
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        match self {
            InfoValue::Str(s) => {
                let mut v = s.as_bytes().to_vec();
                v.push(0);
                v
            }
            InfoValue::U32(x) | InfoValue::Enum(x, _) => x.to_ne_bytes().to_vec(),
            InfoValue::U64(x) | InfoValue::Ptr(x) => x.to_ne_bytes().to_vec(),
            InfoValue::Bool(b) => vec![u8::from(*b)],
            InfoValue::Dims(d) => d.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        }
    }

    /// How the tracer prints the written value.
    pub fn trace(&self) -> String {
        match self {
            InfoValue::Str(s) => s.to_string(),
            InfoValue::Enum(x, name) => name(*x).to_string(),
            InfoValue::U32(x) => x.to_string(),
            InfoValue::U64(x) => x.to_string(),
            InfoValue::Bool(b) => u8::from(*b).to_string(),
            InfoValue::Ptr(0) => "nullptr".into(),
            InfoValue::Ptr(p) => format!("0x{p:x}"),
            InfoValue::Dims(d) => format!("(struct ol_dimensions_t){{.x = {}, .y = {}, .z = {}}}", d[0], d[1], d[2]),
        }
    }
}

/// Write `value` into the caller's buffer.
///
/// # Safety
/// `prop_value` must be NULL or valid for `prop_size` writable bytes.
#[inline(always)]
pub unsafe fn write(value: &InfoValue, prop_size: usize, prop_value: *mut c_void) -> OlResult<()> {
    if prop_value.is_null() {
        return Err(OlError::new(OL_ERRC_INVALID_NULL_POINTER, "value and size outputs are nullptr"));
    }
    if prop_size < value.size() {
        return Err(OlError::invalid_size("provided size is invalid"));
    }
    let dst = prop_value.cast::<u8>();
    // SAFETY: the caller guarantees prop_value is valid for prop_size >= value.size() bytes; each arm
    // writes exactly value.size() bytes.
    unsafe {
        match value {
            InfoValue::Str(s) => {
                std::ptr::copy_nonoverlapping(s.as_ptr(), dst, s.len());
                dst.add(s.len()).write(0);
            }
            InfoValue::U32(x) | InfoValue::Enum(x, _) => dst.cast::<u32>().write_unaligned(*x),
            InfoValue::U64(x) | InfoValue::Ptr(x) => dst.cast::<u64>().write_unaligned(*x),
            InfoValue::Bool(b) => dst.write(u8::from(*b)),
            InfoValue::Dims(d) => dst.cast::<[u32; 3]>().write_unaligned(*d),
        }
    }
    Ok(())
}

/// Write the byte size of `value` to `*size_ret`.
///
/// # Safety
/// `size_ret` must be NULL or valid for writing a `size_t`.
#[inline]
pub unsafe fn write_size(value: &InfoValue, size_ret: *mut usize) -> OlResult<()> {
    if size_ret.is_null() {
        return Err(OlError::new(OL_ERRC_INVALID_NULL_POINTER, "value and size outputs are nullptr"));
    }
    // SAFETY: checked non-NULL; the caller guarantees it is writable.
    unsafe { size_ret.write_unaligned(value.size()) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_include_nul_and_small_buffers_are_rejected_untouched() {
        let v = InfoValue::Str("Host");
        let mut sz = 0usize;
        // SAFETY: valid out pointer.
        unsafe { write_size(&v, &mut sz).unwrap() };
        assert_eq!(sz, 5);
        let mut buf = [0xAAu8; 8];
        // SAFETY: buf is 8 bytes.
        let e = unsafe { write(&v, 4, buf.as_mut_ptr().cast()) }.unwrap_err();
        assert_eq!(e.code, OL_ERRC_INVALID_SIZE);
        assert_eq!(buf, [0xAA; 8]);
        // SAFETY: buf is 8 bytes.
        unsafe { write(&v, 8, buf.as_mut_ptr().cast()).unwrap() };
        assert_eq!(&buf, b"Host\0\xAA\xAA\xAA");
    }
}
