//! `olIterateDevices`, `olGetDeviceInfo`, `olGetDeviceInfoSize`.

use std::ffi::c_void;

use crate::api::entry;
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoQuery, InfoValue};
use crate::runtime::handle;
use crate::runtime::{Abi, Context};
use crate::runtime::{Device, DeviceKind};
use crate::trace;

pub(crate) fn device_info_name(name: ol_device_info_t) -> &'static str {
    enumerator_name!(name;
        OL_DEVICE_INFO_TYPE,
        OL_DEVICE_INFO_PLATFORM,
        OL_DEVICE_INFO_NAME,
        OL_DEVICE_INFO_PRODUCT_NAME,
        OL_DEVICE_INFO_UID,
        OL_DEVICE_INFO_VENDOR,
        OL_DEVICE_INFO_DRIVER_VERSION,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION,
        OL_DEVICE_INFO_MAX_WORK_SIZE,
        OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION,
        OL_DEVICE_INFO_VENDOR_ID,
        OL_DEVICE_INFO_NUM_COMPUTE_UNITS,
        OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY,
        OL_DEVICE_INFO_MEMORY_CLOCK_RATE,
        OL_DEVICE_INFO_ADDRESS_BITS,
        OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE,
        OL_DEVICE_INFO_GLOBAL_MEM_SIZE,
        OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE,
        OL_DEVICE_INFO_SINGLE_FP_CONFIG,
        OL_DEVICE_INFO_DOUBLE_FP_CONFIG,
        OL_DEVICE_INFO_HALF_FP_CONFIG,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF,
    )
}

fn device_type_name(t: u32) -> &'static str {
    enumerator_name!(ol_device_type_t(t);
        OL_DEVICE_TYPE_DEFAULT,
        OL_DEVICE_TYPE_ALL,
        OL_DEVICE_TYPE_GPU,
        OL_DEVICE_TYPE_CPU,
        OL_DEVICE_TYPE_HOST,
    )
}

/// The value of a device property: LLVM 22's values for the virtual host device, the plugin's for others.
#[inline(always)]
pub(crate) fn device_info(dev: &Device, name: ol_device_info_t) -> OlResult<InfoValue<'_>> {
    use InfoValue::*;
    if name.0 >= OL_DEVICE_INFO_LAST.0 {
        return Err(OlError::invalid_enum(format!("getDeviceInfo enum '{}' is invalid", name.0 as i32)));
    }
    let v = match &dev.kind {
        DeviceKind::Host => match name {
            OL_DEVICE_INFO_TYPE => Enum(OL_DEVICE_TYPE_HOST.0, device_type_name),
            OL_DEVICE_INFO_PLATFORM => Ptr(dev.platform),
            OL_DEVICE_INFO_NAME | OL_DEVICE_INFO_PRODUCT_NAME => Str("Virtual Host Device"),
            OL_DEVICE_INFO_UID => Str("HOST"),
            OL_DEVICE_INFO_VENDOR => Str("Liboffload"),
            OL_DEVICE_INFO_DRIVER_VERSION => Str("22.1.8"),
            OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE => U32(1),
            OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION => Dims([1, 1, 1]),
            OL_DEVICE_INFO_MAX_WORK_SIZE => U32(u32::MAX),
            OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION => Dims([u32::MAX; 3]),
            OL_DEVICE_INFO_VENDOR_ID => U32(0),
            OL_DEVICE_INFO_NUM_COMPUTE_UNITS => U32(1),
            // LLVM 22 reports the bit width of uintptr_t here (a quirk kept for compatibility).
            OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY | OL_DEVICE_INFO_MEMORY_CLOCK_RATE => U32(64),
            OL_DEVICE_INFO_ADDRESS_BITS => U32(64),
            OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE | OL_DEVICE_INFO_GLOBAL_MEM_SIZE => U64(0),
            OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE => U64(0),
            OL_DEVICE_INFO_SINGLE_FP_CONFIG | OL_DEVICE_INFO_DOUBLE_FP_CONFIG => U32(0x7F),
            OL_DEVICE_INFO_HALF_FP_CONFIG => U32(0),
            OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF => U32(0),
            _ => U32(1), // NATIVE_VECTOR_WIDTH_{CHAR..DOUBLE}
        },
        DeviceKind::Plugin(p) => {
            let i = p.info();
            match name {
                OL_DEVICE_INFO_TYPE => Enum(i.device_type, device_type_name),
                OL_DEVICE_INFO_PLATFORM => Ptr(dev.platform),
                OL_DEVICE_INFO_NAME => Str(&i.name),
                OL_DEVICE_INFO_PRODUCT_NAME => Str(&i.product_name),
                OL_DEVICE_INFO_UID => Str(&i.uid),
                OL_DEVICE_INFO_VENDOR => Str(&i.vendor),
                OL_DEVICE_INFO_DRIVER_VERSION => Str(&i.driver_version),
                OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE => U32(i.max_work_group_size),
                OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION => Dims(i.max_work_group_size_per_dim),
                OL_DEVICE_INFO_MAX_WORK_SIZE => U32(i.max_work_size),
                OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION => Dims(i.max_work_size_per_dim),
                OL_DEVICE_INFO_VENDOR_ID => U32(i.vendor_id),
                OL_DEVICE_INFO_NUM_COMPUTE_UNITS => U32(i.num_compute_units),
                OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY => U32(i.max_clock_frequency),
                OL_DEVICE_INFO_MEMORY_CLOCK_RATE => U32(i.memory_clock_rate),
                OL_DEVICE_INFO_ADDRESS_BITS => U32(i.address_bits),
                OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE => U64(i.max_mem_alloc_size),
                OL_DEVICE_INFO_GLOBAL_MEM_SIZE => U64(p.global_mem_size()),
                OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE => U64(i.work_group_local_mem_size),
                OL_DEVICE_INFO_SINGLE_FP_CONFIG => U32(i.single_fp_config),
                OL_DEVICE_INFO_DOUBLE_FP_CONFIG => U32(i.double_fp_config),
                OL_DEVICE_INFO_HALF_FP_CONFIG => U32(i.half_fp_config),
                n => U32(i.native_vector_width[(n.0 - OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR.0) as usize]),
            }
        }
    };
    Ok(v)
}

/// Call `Callback(device, UserData)` for every device (CUDA, then CPU, then the virtual host device
/// last); a `false` return stops the iteration.
///
/// Errors: `INVALID_NULL_POINTER` (Callback).
///
/// # Safety
/// `Callback` must be a valid function; it must not call `olShutDown`.
#[unsafe(export_name = "olIterateDevices")]
pub unsafe extern "C" fn ol_iterate_devices(Callback: ol_device_iterate_cb_t, UserData: *mut c_void) -> ol_result_t {
    entry(
        "olIterateDevices",
        |ctx| {
            // The one check, in both validation modes (a NULL check always runs: see `validate`).
            let Some(cb) = Callback else {
                return Err(OlError::validation(OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"));
            };
            for d in &ctx.devices {
                // SAFETY: the caller provides a valid callback; the handle is ours and the user data is
                // passed through untouched.
                if !unsafe { cb(d.handle as usize as ol_device_handle_t, UserData) } {
                    break;
                }
            }
            Ok(())
        },
        || {
            format!(
                ".Callback = {}, .UserData = {}",
                trace::fnptr(Callback.map_or(0, |f| f as usize)),
                trace::ptr(UserData)
            )
        },
    )
}

/// `olGetDeviceInfo` / `olGetDeviceInfoSize`.
pub(crate) enum DeviceQuery {}

impl InfoQuery for DeviceQuery {
    type Name = ol_device_info_t;
    const FUNCTION: &'static str = "olGetDeviceInfo";
    const SIZE_FUNCTION: &'static str = "olGetDeviceInfoSize";
    const ARG: &'static str = "Device";
    const NULL_CHECK: &'static str = "NULL == Device";
    fn name(name: ol_device_info_t) -> &'static str {
        let v23 = || crate::runtime::context(&crate::runtime::pin::pin()).is_some_and(|c| c.abi == Abi::V23);
        match super::v23::device::device_info_name(name) {
            Some(n) if v23() => n,
            _ => device_info_name(name),
        }
    }
    #[inline(always)]
    fn value(ctx: &Context, obj: u64, name: ol_device_info_t) -> OlResult<InfoValue<'_>> {
        let dev = handle::device(ctx, obj)?;
        // the infos 23.1 appended exist for a 23 client only (src/api/v23)
        if ctx.abi == Abi::V23 {
            if (OL_DEVICE_INFO_LAST.0..OL_DEVICE_INFO_LAST_23.0).contains(&name.0) {
                return super::v23::device::device_info(dev, name);
            }
            if dev.is_host()
                && let Some(v) = super::v23::device::host_device_info(name)
            {
                return Ok(v);
            }
        }
        device_info(dev, name)
    }
}

/// Query a device property.
///
/// Errors, in order: `INVALID_SIZE` (PropSize == 0), `INVALID_NULL_HANDLE` (Device),
/// `INVALID_NULL_POINTER` (PropValue), `INVALID_DEVICE` (stale or wrong-kind handle),
/// `INVALID_ENUMERATION`, `INVALID_SIZE` (PropSize too small; nothing written).
///
/// # Safety
/// `PropValue` must be NULL or valid for `PropSize` writable bytes.
#[unsafe(export_name = "olGetDeviceInfo")]
pub unsafe extern "C" fn ol_get_device_info(
    Device: ol_device_handle_t,
    PropName: ol_device_info_t,
    PropSize: usize,
    PropValue: *mut c_void,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query::<DeviceQuery>(Device as usize as u64, PropName, PropSize, PropValue) }
}

/// Query the byte size of a device property.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (PropSizeRet),
/// `INVALID_DEVICE`, `INVALID_ENUMERATION`.
///
/// # Safety
/// `PropSizeRet` must be NULL or valid for writing a `size_t`.
#[unsafe(export_name = "olGetDeviceInfoSize")]
pub unsafe extern "C" fn ol_get_device_info_size(
    Device: ol_device_handle_t,
    PropName: ol_device_info_t,
    PropSizeRet: *mut usize,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query_size::<DeviceQuery>(Device as usize as u64, PropName, PropSizeRet) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerator_names_come_from_their_constants() {
        assert_eq!(device_info_name(OL_DEVICE_INFO_TYPE), "OL_DEVICE_INFO_TYPE");
        assert_eq!(
            device_info_name(OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF),
            "OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF"
        );
        assert_eq!(device_info_name(OL_DEVICE_INFO_LAST), "unknown enumerator");
        assert_eq!(device_type_name(OL_DEVICE_TYPE_HOST.0), "OL_DEVICE_TYPE_HOST");
        assert_eq!(crate::error::errc_name(OL_ERRC_SYMBOL_KIND), "OL_ERRC_SYMBOL_KIND");
        assert_eq!(crate::error::errc_name(OL_ERRC_LAST), "unknown enumerator");
    }
}
