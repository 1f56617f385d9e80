//! `olGetPlatformInfo`, `olGetPlatformInfoSize`.

use std::ffi::c_void;

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoQuery, InfoValue};
use crate::runtime::Context;
use crate::runtime::Platform;
use crate::runtime::handle;

fn backend_name(b: u32) -> &'static str {
    enumerator_name!(ol_platform_backend_t(b);
        OL_PLATFORM_BACKEND_UNKNOWN,
        OL_PLATFORM_BACKEND_CUDA,
        OL_PLATFORM_BACKEND_AMDGPU,
        OL_PLATFORM_BACKEND_LEVEL_ZERO,
        OL_PLATFORM_BACKEND_HOST,
        OL_PLATFORM_BACKEND_CPU,
    )
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
    enumerator_name!(name;
        OL_PLATFORM_INFO_NAME,
        OL_PLATFORM_INFO_VENDOR_NAME,
        OL_PLATFORM_INFO_VERSION,
        OL_PLATFORM_INFO_BACKEND,
    )
}

/// `olGetPlatformInfo` / `olGetPlatformInfoSize`.
pub(crate) enum PlatformQuery {}

impl InfoQuery for PlatformQuery {
    type Name = ol_platform_info_t;
    const FUNCTION: &'static str = "olGetPlatformInfo";
    const SIZE_FUNCTION: &'static str = "olGetPlatformInfoSize";
    const ARG: &'static str = "Platform";
    const NULL_CHECK: &'static str = "NULL == Platform";
    fn name(name: ol_platform_info_t) -> &'static str {
        platform_info_name(name)
    }
    #[inline(always)]
    fn value(ctx: &Context, obj: u64, name: ol_platform_info_t) -> OlResult<InfoValue<'_>> {
        platform_info(handle::platform(ctx, obj)?, name)
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
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query::<PlatformQuery>(Platform as usize as u64, PropName, PropSize, PropValue) }
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
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query_size::<PlatformQuery>(Platform as usize as u64, PropName, PropSizeRet) }
}
