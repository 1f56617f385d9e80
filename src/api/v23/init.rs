//! 23.1's `olInit(const ol_init_args_t *)`.

use crate::api::{guarded, to_c};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::runtime::{self, Abi, InitOptions, PlatformSet, pin};
use crate::trace;

/// The platforms an `ol_init_args_t` asks for (NULL or an empty list: all).
///
/// # Safety
/// `args` must be NULL or point to `Size` readable bytes; `Platforms` to `NumPlatforms` entries.
unsafe fn options(args: *const ol_init_args_t) -> OlResult<InitOptions> {
    let mut o = InitOptions { abi: Abi::V23, platforms: PlatformSet::ALL };
    if args.is_null() {
        return Ok(o);
    }
    // SAFETY: the caller passes a readable struct of at least `Size` bytes; `Size` is read first.
    let size = unsafe { std::ptr::addr_of!((*args).Size).read_unaligned() };
    if size < std::mem::size_of::<ol_init_args_t>() {
        return Err(OlError::new(
            OL_ERRC_INVALID_SIZE,
            format!("ol_init_args_t::Size is {size}, less than sizeof(ol_init_args_t) = 24 (use OL_INIT_ARGS_INIT)"),
        ));
    }
    // SAFETY: Size covers the whole struct.
    let a = unsafe { args.read_unaligned() };
    if a.NumPlatforms == 0 {
        return Ok(o);
    }
    if a.Platforms.is_null() {
        return Err(OlError::new(OL_ERRC_INVALID_NULL_POINTER, "NumPlatforms > 0 && Platforms == NULL"));
    }
    // SAFETY: NumPlatforms entries per the caller contract.
    let list = unsafe { std::slice::from_raw_parts(a.Platforms, a.NumPlatforms as usize) };
    o.platforms = PlatformSet { cuda: false, cpu: false };
    for &b in list {
        match b {
            OL_PLATFORM_BACKEND_CUDA => o.platforms.cuda = true,
            OL_PLATFORM_BACKEND_CPU => o.platforms.cpu = true,
            // the host is always created; AMDGPU and Level Zero have no plugin here (no devices, as in
            // a LLVM build without them)
            OL_PLATFORM_BACKEND_HOST | OL_PLATFORM_BACKEND_AMDGPU | OL_PLATFORM_BACKEND_LEVEL_ZERO => {}
            _ => {
                return Err(OlError::invalid_enum(format!(
                    "ol_init_args_t::Platforms holds {} (not an ol_platform_backend_t)",
                    b.0
                )));
            }
        }
    }
    Ok(o)
}

/// Initialise the library (reference counted). `InitArgs` NULL = defaults; with a `Platforms` list only
/// those backends are created (the host platform always), eagerly, as LLVM 23 does. A repeated call only
/// counts. `OFFLOAD_RS_PLATFORMS` restricts the platforms further (README).
///
/// Errors: `INVALID_SIZE` (`Size < sizeof(ol_init_args_t)`), `INVALID_NULL_POINTER` (`NumPlatforms > 0`
/// and `Platforms == NULL`), `INVALID_ENUMERATION` (a value outside `ol_platform_backend_t`),
/// `INVALID_VALUE` (a bad `OFFLOAD_RS_PLATFORMS`).
///
/// # Safety
/// `InitArgs` must be NULL or valid for `InitArgs->Size` bytes, `Platforms` for `NumPlatforms` entries.
#[unsafe(export_name = "offload_rs_v23_olInit")]
pub unsafe extern "C" fn ol_init(InitArgs: *const ol_init_args_t) -> ol_result_t {
    let r = guarded("olInit", || {
        // a repeated call only bumps the count: its arguments are not looked at (LLVM 23)
        if runtime::context(&pin::pin()).is_some() {
            return runtime::init(InitOptions { abi: Abi::V23, platforms: PlatformSet::ALL });
        }
        // SAFETY: per the caller contract.
        let o = unsafe { options(InitArgs) }?;
        runtime::init(o)
    });
    if runtime::context(&pin::pin()).is_some_and(|c| c.trace) {
        trace::begin("olInit");
        // SAFETY: NULL or readable per the caller contract (a short struct was refused before any read of
        // more than `Size`; the tracer then shows only the pointer).
        let shown = if !InitArgs.is_null() && unsafe { std::ptr::addr_of!((*InitArgs).Size).read_unaligned() } < 24 {
            trace::ptr(InitArgs)
        } else {
            // SAFETY: as above, Size covers the struct.
            unsafe { super::print::pointee(InitArgs, super::print::init_args) }
        };
        trace::end(&format!(".InitArgs = {shown}"), &r);
    }
    to_c(r)
}
