//! `olGetPlatformInfo`, `olGetPlatformInfoSize`.

use std::ffi::c_void;

use crate::api::{entry, h, validate};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoValue};
use crate::runtime::Platform;
use crate::runtime::handle;
use crate::trace;

fn backend_name(b: u32) -> &'static str {
    match ol_platform_backend_t(b) {
        OL_PLATFORM_BACKEND_UNKNOWN => "OL_PLATFORM_BACKEND_UNKNOWN",
        OL_PLATFORM_BACKEND_CUDA => "OL_PLATFORM_BACKEND_CUDA",
        OL_PLATFORM_BACKEND_AMDGPU => "OL_PLATFORM_BACKEND_AMDGPU",
        OL_PLATFORM_BACKEND_LEVEL_ZERO => "OL_PLATFORM_BACKEND_LEVEL_ZERO",
        OL_PLATFORM_BACKEND_HOST => "OL_PLATFORM_BACKEND_HOST",
        OL_PLATFORM_BACKEND_CPU => "OL_PLATFORM_BACKEND_CPU",
        _ => "unknown enumerator",
    }
}

pub(crate) fn platform_info(p: &Platform, name: ol_platform_info_t) -> OlResult<InfoValue<'_>> {
    Ok(match name {
        OL_PLATFORM_INFO_NAME => InfoValue::Str(&p.name),
        OL_PLATFORM_INFO_VENDOR_NAME => InfoValue::Str(&p.vendor),
        OL_PLATFORM_INFO_VERSION => InfoValue::Str("v0.0.1"),
        OL_PLATFORM_INFO_BACKEND => InfoValue::Enum(p.backend.0, backend_name),
        other => return Err(OlError::invalid_enum(format!("getPlatformInfo enum '{}' is invalid", other.0 as i32))),
    })
}

pub(crate) fn platform_info_name(name: ol_platform_info_t) -> &'static str {
    match name {
        OL_PLATFORM_INFO_NAME => "OL_PLATFORM_INFO_NAME",
        OL_PLATFORM_INFO_VENDOR_NAME => "OL_PLATFORM_INFO_VENDOR_NAME",
        OL_PLATFORM_INFO_VERSION => "OL_PLATFORM_INFO_VERSION",
        OL_PLATFORM_INFO_BACKEND => "OL_PLATFORM_INFO_BACKEND",
        _ => "unknown enumerator",
    }
}

/// Query a platform property.
///
/// Errors, in order: `INVALID_SIZE` (PropSize == 0), `INVALID_NULL_HANDLE` (Platform),
/// `INVALID_NULL_POINTER` (PropValue), `INVALID_PLATFORM` (stale or wrong-kind handle),
/// `INVALID_ENUMERATION`, `INVALID_SIZE` (PropSize too small; nothing written).
///
/// # Safety
/// `PropValue` must be NULL or valid for `PropSize` writable bytes.
#[unsafe(export_name = "olGetPlatformInfo")]
pub unsafe extern "C" fn ol_get_platform_info(
    Platform: ol_platform_handle_t,
    PropName: ol_platform_info_t,
    PropSize: usize,
    PropValue: *mut c_void,
) -> ol_result_t {
    let shown = std::cell::OnceCell::new();
    entry(
        "olGetPlatformInfo",
        |ctx| {
            validate(
                ctx,
                &[
                    (PropSize == 0, OL_ERRC_INVALID_SIZE, "PropSize == 0"),
                    (Platform.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Platform"),
                    (PropValue.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == PropValue"),
                ],
            )?;
            let p = handle::platform(ctx, h(Platform))?;
            let v = platform_info(p, PropName)?;
            // SAFETY: PropValue is valid for PropSize bytes (caller contract).
            unsafe { info::write(&v, PropSize, PropValue) }?;
            if ctx.trace {
                let _ = shown.set(v.trace());
            }
            Ok(())
        },
        || {
            format!(
                ".Platform = {}, .PropName = {}, .PropSize = {PropSize}, .PropValue = {}",
                trace::ptr(Platform),
                platform_info_name(PropName),
                trace::out(PropValue, shown.get().cloned())
            )
        },
    )
}

/// Query the byte size of a platform property.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Platform), `INVALID_NULL_POINTER` (PropSizeRet),
/// `INVALID_PLATFORM`, `INVALID_ENUMERATION`.
///
/// # Safety
/// `PropSizeRet` must be NULL or valid for writing a `size_t`.
#[unsafe(export_name = "olGetPlatformInfoSize")]
pub unsafe extern "C" fn ol_get_platform_info_size(
    Platform: ol_platform_handle_t,
    PropName: ol_platform_info_t,
    PropSizeRet: *mut usize,
) -> ol_result_t {
    entry(
        "olGetPlatformInfoSize",
        |ctx| {
            validate(
                ctx,
                &[
                    (Platform.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Platform"),
                    (PropSizeRet.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == PropSizeRet"),
                ],
            )?;
            let p = handle::platform(ctx, h(Platform))?;
            let v = platform_info(p, PropName)?;
            // SAFETY: PropSizeRet is NULL or writable (caller contract).
            unsafe { info::write_size(&v, PropSizeRet) }?;
            Ok(())
        },
        || {
            format!(
                ".Platform = {}, .PropName = {}, .PropSizeRet = {}",
                trace::ptr(Platform),
                platform_info_name(PropName),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_usize(PropSizeRet) }
            )
        },
    )
}
