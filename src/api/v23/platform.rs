//! 23.1's new `olPlatformRegisterRPCCallback`.

use crate::api::{entry, raw_handle, validate};
use crate::ffi::*;
use crate::runtime::handle;
use crate::trace;

/// Register `Callback` for device-to-host RPC calls of `Platform`'s devices. Accepted and kept (a later
/// registration replaces it); never called: our devices make no RPC calls (the CPU device's kernels call
/// the C library directly, the CUDA plugin runs no RPC server), which is what a platform without RPC
/// traffic does with it in LLVM 23 too.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Platform), `INVALID_NULL_POINTER` (Callback),
/// `INVALID_PLATFORM`.
///
/// # Safety
/// `Callback` must be NULL or a valid function.
#[unsafe(export_name = "offload_rs_v23_olPlatformRegisterRPCCallback")]
pub unsafe extern "C" fn ol_platform_register_rpc_callback(
    Platform: ol_platform_handle_t,
    Callback: ol_platform_rpc_cb_t,
) -> ol_result_t {
    entry(
        "olPlatformRegisterRPCCallback",
        |ctx| {
            validate(
                ctx,
                &[
                    (Platform.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Platform"),
                    (Callback.is_none(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Callback"),
                ],
            )?;
            let p = handle::platform(ctx, raw_handle(Platform))?;
            ctx.rpc_callbacks.lock().insert(p.handle, Callback.map_or(0, |f| f as usize));
            Ok(())
        },
        || {
            format!(
                ".Platform = {}, .Callback = {}",
                trace::ptr(Platform),
                trace::fnptr(Callback.map_or(0, |f| f as usize))
            )
        },
    )
}
