//! The device infos 23.1 appended: `SINGLE/DOUBLE/HALF_FP_SUPPORT`, `COOPERATIVE_LAUNCH_SUPPORT`.

use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::InfoValue;
use crate::runtime::{Device, DeviceKind};

/// The trace name of a 23-only device info (None for 22's).
pub(crate) fn device_info_name(n: ol_device_info_t) -> Option<&'static str> {
    Some(match n {
        OL_DEVICE_INFO_SINGLE_FP_SUPPORT => "OL_DEVICE_INFO_SINGLE_FP_SUPPORT",
        OL_DEVICE_INFO_DOUBLE_FP_SUPPORT => "OL_DEVICE_INFO_DOUBLE_FP_SUPPORT",
        OL_DEVICE_INFO_HALF_FP_SUPPORT => "OL_DEVICE_INFO_HALF_FP_SUPPORT",
        OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT => "OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT",
        _ => return None,
    })
}

/// What LLVM 23's host plugin reports for the host device where it differs from 22's virtual host
/// device (offload/plugins-nextgen/host/src/rtl.cpp, 23.1.1); None: 22's value.
pub(crate) fn host_device_info(name: ol_device_info_t) -> Option<InfoValue<'static>> {
    use InfoValue::*;
    Some(match name {
        OL_DEVICE_INFO_NAME => Str("Host Offload Device"),
        OL_DEVICE_INFO_PRODUCT_NAME => Str("Host"),
        OL_DEVICE_INFO_VENDOR | OL_DEVICE_INFO_DRIVER_VERSION => Str("Unknown"),
        OL_DEVICE_INFO_VENDOR_ID => U32(1),
        OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE
        | OL_DEVICE_INFO_GLOBAL_MEM_SIZE
        | OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE => U64(1),
        _ => return None,
    })
}

/// Values 29-32 for a 23 client: the FP support from the device's FP configs (the CPU device's come from
/// its CPU features: half is supported where the CPU converts halves, F16C), cooperative launches where
/// the plugin runs them. The virtual host device answers as 23's host plugin does: single and double,
/// no half, and COOPERATIVE_LAUNCH_SUPPORT UNIMPLEMENTED.
pub(crate) fn device_info(dev: &Device, name: ol_device_info_t) -> OlResult<InfoValue<'_>> {
    use InfoValue::Bool;
    Ok(match &dev.kind {
        DeviceKind::Host => match name {
            OL_DEVICE_INFO_SINGLE_FP_SUPPORT | OL_DEVICE_INFO_DOUBLE_FP_SUPPORT => Bool(true),
            OL_DEVICE_INFO_HALF_FP_SUPPORT => Bool(false),
            _ => {
                return Err(OlError::new(
                    OL_ERRC_UNIMPLEMENTED,
                    "the host device does not report OL_DEVICE_INFO_COOPERATIVE_LAUNCH_SUPPORT",
                ));
            }
        },
        DeviceKind::Plugin(p) => {
            let i = p.info();
            match name {
                OL_DEVICE_INFO_SINGLE_FP_SUPPORT => Bool(i.single_fp_config != 0),
                OL_DEVICE_INFO_DOUBLE_FP_SUPPORT => Bool(i.double_fp_config != 0),
                OL_DEVICE_INFO_HALF_FP_SUPPORT => Bool(i.half_fp_config != 0),
                _ => Bool(p.cooperative_launch_support()),
            }
        }
    })
}
