//! `olCreateProgram`, `olIsValidBinary`, `olDestroyProgram`.

use std::ffi::c_void;

use crate::api::{bytes, entry, raw_handle, validate, write_out};
use crate::ffi::*;
use crate::runtime::handle;
use crate::runtime::objects;
use crate::trace;

/// Load a program on `Device`. The CPU device takes LLVM bitcode for nvptx64, amdgcn or the host (JIT
/// compiled through a content-addressed cache) and x86-64 ELF shared objects; CUDA devices take CUBIN, PTX
/// or NVPTX bitcode. The bytes are copied: `ProgData` need not outlive the call.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (ProgData, Program),
/// `INVALID_DEVICE`, `UNSUPPORTED` (virtual host device), `INVALID_BINARY` (not a supported format,
/// with what was found), `COMPILE_FAILURE` (`failure to jit IR image: ...`).
///
/// # Safety
/// `ProgData` must be valid for `ProgDataSize` bytes; `Program` NULL or writable.
#[unsafe(export_name = "olCreateProgram")]
pub unsafe extern "C" fn ol_create_program(
    Device: ol_device_handle_t,
    ProgData: *const c_void,
    ProgDataSize: usize,
    Program: *mut ol_program_handle_t,
) -> ol_result_t {
    entry(
        "olCreateProgram",
        |ctx| {
            validate(
                ctx,
                &[
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (ProgData.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == ProgData"),
                    (Program.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Program"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            // SAFETY: ProgData is valid for ProgDataSize bytes (caller contract); used only during the call.
            let image = unsafe { bytes(ProgData, ProgDataSize) };
            let p = objects::create_program(d, image)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            if let Err(e) = unsafe { write_out(Program, p as usize as ol_program_handle_t, "Program") } {
                handle::remove(p);
                return Err(e);
            }
            Ok(())
        },
        || {
            format!(
                ".Device = {}, .ProgData = {}, .ProgDataSize = {ProgDataSize}, .Program = {}",
                trace::ptr(Device),
                trace::ptr(ProgData),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(Program) }
            )
        },
    )
}

/// Whether `Device` could load this binary; never fails on the bytes themselves (garbage is `false`).
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Device), `INVALID_NULL_POINTER` (ProgData, Valid),
/// `INVALID_DEVICE`. On error `*Valid` is untouched.
///
/// # Safety
/// `ProgData` must be valid for `ProgDataSize` bytes; `Valid` NULL or writable.
#[unsafe(export_name = "olIsValidBinary")]
pub unsafe extern "C" fn ol_is_valid_binary(
    Device: ol_device_handle_t,
    ProgData: *const c_void,
    ProgDataSize: usize,
    Valid: *mut bool,
) -> ol_result_t {
    entry(
        "olIsValidBinary",
        |ctx| {
            validate(
                ctx,
                &[
                    (Device.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Device"),
                    (ProgData.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == ProgData"),
                    (Valid.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Valid"),
                ],
            )?;
            let d = handle::device(ctx, raw_handle(Device))?;
            // SAFETY: ProgData is valid for ProgDataSize bytes (caller contract).
            let image = unsafe { bytes(ProgData, ProgDataSize) };
            let ok = objects::is_valid_binary(d, image);
            // SAFETY: Valid is NULL (rejected) or writable per the caller contract.
            unsafe { write_out(Valid, ok, "Valid") }?;
            Ok(())
        },
        || {
            format!(
                ".Device = {}, .ProgData = {}, .ProgDataSize = {ProgDataSize}, .Valid = {}",
                trace::ptr(Device),
                trace::ptr(ProgData),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_bool(Valid) }
            )
        },
    )
}

/// Unload a program (device global destructors run) and invalidate it and all its symbol handles.
/// Kernels already enqueued keep their code alive until they finish.
///
/// Errors: `INVALID_NULL_HANDLE`, `INVALID_ARGUMENT` (destroyed, stale or wrong-kind handle).
///
/// # Safety
/// Any value is safe to pass.
#[unsafe(export_name = "olDestroyProgram")]
pub unsafe extern "C" fn ol_destroy_program(Program: ol_program_handle_t) -> ol_result_t {
    entry(
        "olDestroyProgram",
        |ctx| {
            validate(ctx, &[(Program.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Program")])?;
            let p = handle::take_program(ctx, raw_handle(Program))?;
            objects::destroy_program(p)
        },
        || format!(".Program = {}", trace::ptr(Program)),
    )
}
