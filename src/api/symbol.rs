//! `olGetSymbol`, `olGetSymbolInfo`, `olGetSymbolInfoSize`.

use std::ffi::{CStr, c_char, c_void};

use crate::api::{entry, raw_handle, validate, write_out};
use crate::error::{OlError, OlResult};
use crate::ffi::*;
use crate::info::{self, InfoQuery, InfoValue};
use crate::runtime::Context;
use crate::runtime::handle;
use crate::runtime::{Symbol, SymbolKind, objects};
use crate::trace;

fn kind_name(k: ol_symbol_kind_t) -> &'static str {
    enumerator_name!(k;
        OL_SYMBOL_KIND_KERNEL,
        OL_SYMBOL_KIND_GLOBAL_VARIABLE,
    )
}

fn info_name(n: ol_symbol_info_t) -> &'static str {
    enumerator_name!(n;
        OL_SYMBOL_INFO_KIND,
        OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
        OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE,
    )
}

/// Look up a kernel or global variable by name. Repeated lookups return the same handle; handles die
/// with their program.
///
/// Errors, in order: `INVALID_NULL_HANDLE` (Program), `INVALID_NULL_POINTER` (Name, Symbol),
/// `INVALID_ARGUMENT` (destroyed or wrong-kind program handle), `INVALID_ENUMERATION` (Kind),
/// `NOT_FOUND`.
///
/// # Safety
/// `Name` must be NULL or a valid C string; `Symbol` NULL or writable.
#[unsafe(export_name = "olGetSymbol")]
pub unsafe extern "C" fn ol_get_symbol(
    Program: ol_program_handle_t,
    Name: *const c_char,
    Kind: ol_symbol_kind_t,
    Symbol: *mut ol_symbol_handle_t,
) -> ol_result_t {
    entry(
        "olGetSymbol",
        |ctx| {
            validate(
                ctx,
                &[
                    (Program.is_null(), OL_ERRC_INVALID_NULL_HANDLE, "NULL == Program"),
                    (Name.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Name"),
                    (Symbol.is_null(), OL_ERRC_INVALID_NULL_POINTER, "NULL == Symbol"),
                ],
            )?;
            let p = handle::program(ctx, raw_handle(Program))?;
            let kind = match Kind {
                OL_SYMBOL_KIND_KERNEL => SymbolKind::Kernel,
                OL_SYMBOL_KIND_GLOBAL_VARIABLE => SymbolKind::Global,
                other => {
                    return Err(OlError::invalid_enum(format!("getSymbol kind enum '{}' is invalid", other.0 as i32)));
                }
            };
            // SAFETY: Name is a valid C string (caller contract); copied before return.
            let name = unsafe { CStr::from_ptr(Name) }.to_string_lossy().into_owned();
            let s = objects::get_symbol(p, &name, kind)?;
            // SAFETY: checked non-NULL; writable per the caller contract.
            unsafe { write_out(Symbol, s as usize as ol_symbol_handle_t, "Symbol") }?;
            Ok(())
        },
        || {
            format!(
                ".Program = {}, .Name = {}, .Kind = {}, .Symbol = {}",
                trace::ptr(Program),
                // SAFETY: Name is NULL or a valid C string (caller contract).
                unsafe { trace::cstr(Name) },
                kind_name(Kind),
                // SAFETY: the out-parameter is NULL or valid (caller contract).
                unsafe { trace::out_ptr(Symbol) }
            )
        },
    )
}

fn symbol_info(s: &Symbol, name: ol_symbol_info_t) -> OlResult<InfoValue<'static>> {
    let need_global = |what: ol_symbol_info_t| -> OlResult<crate::plugin::GlobalInfo> {
        s.global.ok_or_else(|| {
            OlError::new(
                OL_ERRC_SYMBOL_KIND,
                format!(
                    "{}: Expected a symbol of Kind OL_SYMBOL_KIND_GLOBAL_VARIABLE but given a symbol of Kind {}",
                    info_name(what),
                    kind_name(s.kind.raw())
                ),
            )
        })
    };
    Ok(match name {
        OL_SYMBOL_INFO_KIND => InfoValue::Enum(s.kind.raw().0, |k| kind_name(ol_symbol_kind_t(k))),
        OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS => InfoValue::Ptr(need_global(name)?.addr as u64),
        OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE => InfoValue::U64(need_global(name)?.size as u64),
        other => return Err(OlError::invalid_enum(format!("olGetSymbolInfo enum '{}' is invalid", other.0 as i32))),
    })
}

/// `olGetSymbolInfo` / `olGetSymbolInfoSize`.
pub(crate) enum SymbolQuery {}

impl InfoQuery for SymbolQuery {
    type Name = ol_symbol_info_t;
    const FUNCTION: &'static str = "olGetSymbolInfo";
    const SIZE_FUNCTION: &'static str = "olGetSymbolInfoSize";
    const ARG: &'static str = "Symbol";
    const NULL_CHECK: &'static str = "NULL == Symbol";
    fn name(name: ol_symbol_info_t) -> &'static str {
        info_name(name)
    }
    #[inline(always)]
    fn value(ctx: &Context, obj: u64, name: ol_symbol_info_t) -> OlResult<InfoValue<'_>> {
        symbol_info(handle::symbol(ctx, obj)?, name)
    }
}

/// Query a symbol property (KIND; GLOBAL_VARIABLE_ADDRESS/SIZE for globals only).
///
/// Errors, in order: `INVALID_SIZE` (PropSize == 0), `INVALID_NULL_HANDLE`, `INVALID_NULL_POINTER`
/// (PropValue), `INVALID_ARGUMENT` (destroyed or wrong-kind handle), `INVALID_ENUMERATION`,
/// `SYMBOL_KIND` (a global property of a kernel), `INVALID_SIZE` (too small).
///
/// # Safety
/// `PropValue` must be NULL or valid for `PropSize` writable bytes.
#[unsafe(export_name = "olGetSymbolInfo")]
pub unsafe extern "C" fn ol_get_symbol_info(
    Symbol: ol_symbol_handle_t,
    PropName: ol_symbol_info_t,
    PropSize: usize,
    PropValue: *mut c_void,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query::<SymbolQuery>(Symbol as usize as u64, PropName, PropSize, PropValue) }
}

/// Query the byte size of a symbol property.
///
/// Errors, in order: `INVALID_NULL_HANDLE`, `INVALID_NULL_POINTER` (PropSizeRet), `INVALID_ARGUMENT`,
/// `INVALID_ENUMERATION`, `SYMBOL_KIND`.
///
/// # Safety
/// `PropSizeRet` must be NULL or valid for writing a `size_t`.
#[unsafe(export_name = "olGetSymbolInfoSize")]
pub unsafe extern "C" fn ol_get_symbol_info_size(
    Symbol: ol_symbol_handle_t,
    PropName: ol_symbol_info_t,
    PropSizeRet: *mut usize,
) -> ol_result_t {
    // SAFETY: forwarded unchanged; the caller upholds this function's contract.
    unsafe { info::query_size::<SymbolQuery>(Symbol as usize as u64, PropName, PropSizeRet) }
}
