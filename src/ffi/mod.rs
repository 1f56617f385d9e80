//! The C types of LLVM 22's `OffloadAPI.h`, and nothing else. This is the only module with C names.
//!
//! cbindgen turns this module into `include/offload/OffloadAPI.h`; `ffi-tests/abi_check.cpp` proves at
//! compile time that every value, size, offset and prototype matches LLVM's own header.
#![allow(non_camel_case_types, reason = "C type names of the liboffload ABI")]
#![allow(non_upper_case_globals, reason = "C constant names of the liboffload ABI")]
#![allow(non_snake_case, reason = "C field names of the liboffload ABI")]

use std::ffi::{c_char, c_void};

/// The types 23.1 added; not part of the 22 header.
///
/// cbindgen:ignore
pub mod v23;
pub use v23::*;

/// The enumerator name of a C enum value, as LLVM's tracer prints it (traces and error texts):
/// `enumerator_name!(v; A, B, ...)` is `match v { A => "A", B => "B", ..., _ => "unknown enumerator" }`.
/// Each name comes from its constant, so a gap or a reordering in the values cannot misname one (as an
/// array indexed by value could: `OL_DEVICE_INFO_LAST` was traced as `OL_DEVICE_INFO_FORCE_UINT32`).
macro_rules! enumerator_name {
    ($v:expr; $($c:ident),+ $(,)?) => {
        match $v {
            $($c => stringify!($c),)+
            _ => "unknown enumerator",
        }
    };
}
pub(crate) use enumerator_name;

/// Opaque target of `ol_platform_handle_t`. Never dereferenced: a handle is a key of the handle table.
pub struct ol_platform_impl_t {
    _opaque: [u8; 0],
}
/// Opaque target of `ol_device_handle_t`.
pub struct ol_device_impl_t {
    _opaque: [u8; 0],
}
/// Opaque target of `ol_queue_handle_t`.
pub struct ol_queue_impl_t {
    _opaque: [u8; 0],
}
/// Opaque target of `ol_event_handle_t`.
pub struct ol_event_impl_t {
    _opaque: [u8; 0],
}
/// Opaque target of `ol_program_handle_t`.
pub struct ol_program_impl_t {
    _opaque: [u8; 0],
}
/// Opaque target of `ol_symbol_handle_t`.
pub struct ol_symbol_impl_t {
    _opaque: [u8; 0],
}
/// Opaque target of `ol_context_handle_t` (declared by LLVM 22, used by no entry point).
pub struct ol_context_impl_t {
    _opaque: [u8; 0],
}

pub type ol_context_handle_t = *mut ol_context_impl_t;
pub type ol_device_handle_t = *mut ol_device_impl_t;
pub type ol_event_handle_t = *mut ol_event_impl_t;
pub type ol_platform_handle_t = *mut ol_platform_impl_t;
pub type ol_program_handle_t = *mut ol_program_impl_t;
pub type ol_queue_handle_t = *mut ol_queue_impl_t;
pub type ol_symbol_handle_t = *mut ol_symbol_impl_t;

/// C enum `ol_alloc_type_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_alloc_type_t(pub u32);

pub const OL_ALLOC_TYPE_HOST: ol_alloc_type_t = ol_alloc_type_t(0);
pub const OL_ALLOC_TYPE_DEVICE: ol_alloc_type_t = ol_alloc_type_t(1);
pub const OL_ALLOC_TYPE_MANAGED: ol_alloc_type_t = ol_alloc_type_t(2);
pub const OL_ALLOC_TYPE_LAST: ol_alloc_type_t = ol_alloc_type_t(3);
pub const OL_ALLOC_TYPE_FORCE_UINT32: ol_alloc_type_t = ol_alloc_type_t(0x7fffffff);

/// C enum `ol_device_fp_capability_flag_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_device_fp_capability_flag_t(pub u32);

pub const OL_DEVICE_FP_CAPABILITY_FLAG_CORRECTLY_ROUNDED_DIVIDE_SQRT: ol_device_fp_capability_flag_t =
    ol_device_fp_capability_flag_t(1);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST: ol_device_fp_capability_flag_t =
    ol_device_fp_capability_flag_t(2);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_ZERO: ol_device_fp_capability_flag_t =
    ol_device_fp_capability_flag_t(4);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_INF: ol_device_fp_capability_flag_t = ol_device_fp_capability_flag_t(8);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_INF_NAN: ol_device_fp_capability_flag_t = ol_device_fp_capability_flag_t(16);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_DENORM: ol_device_fp_capability_flag_t = ol_device_fp_capability_flag_t(32);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_FMA: ol_device_fp_capability_flag_t = ol_device_fp_capability_flag_t(64);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT: ol_device_fp_capability_flag_t = ol_device_fp_capability_flag_t(128);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_LAST: ol_device_fp_capability_flag_t = ol_device_fp_capability_flag_t(256);
pub const OL_DEVICE_FP_CAPABILITY_FLAG_FORCE_UINT32: ol_device_fp_capability_flag_t =
    ol_device_fp_capability_flag_t(0x7fffffff);

/// C enum `ol_device_info_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_device_info_t(pub u32);

pub const OL_DEVICE_INFO_TYPE: ol_device_info_t = ol_device_info_t(0);
pub const OL_DEVICE_INFO_PLATFORM: ol_device_info_t = ol_device_info_t(1);
pub const OL_DEVICE_INFO_NAME: ol_device_info_t = ol_device_info_t(2);
pub const OL_DEVICE_INFO_PRODUCT_NAME: ol_device_info_t = ol_device_info_t(3);
pub const OL_DEVICE_INFO_UID: ol_device_info_t = ol_device_info_t(4);
pub const OL_DEVICE_INFO_VENDOR: ol_device_info_t = ol_device_info_t(5);
pub const OL_DEVICE_INFO_DRIVER_VERSION: ol_device_info_t = ol_device_info_t(6);
pub const OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE: ol_device_info_t = ol_device_info_t(7);
pub const OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION: ol_device_info_t = ol_device_info_t(8);
pub const OL_DEVICE_INFO_MAX_WORK_SIZE: ol_device_info_t = ol_device_info_t(9);
pub const OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION: ol_device_info_t = ol_device_info_t(10);
pub const OL_DEVICE_INFO_VENDOR_ID: ol_device_info_t = ol_device_info_t(11);
pub const OL_DEVICE_INFO_NUM_COMPUTE_UNITS: ol_device_info_t = ol_device_info_t(12);
pub const OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY: ol_device_info_t = ol_device_info_t(13);
pub const OL_DEVICE_INFO_MEMORY_CLOCK_RATE: ol_device_info_t = ol_device_info_t(14);
pub const OL_DEVICE_INFO_ADDRESS_BITS: ol_device_info_t = ol_device_info_t(15);
pub const OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE: ol_device_info_t = ol_device_info_t(16);
pub const OL_DEVICE_INFO_GLOBAL_MEM_SIZE: ol_device_info_t = ol_device_info_t(17);
pub const OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE: ol_device_info_t = ol_device_info_t(18);
pub const OL_DEVICE_INFO_SINGLE_FP_CONFIG: ol_device_info_t = ol_device_info_t(19);
pub const OL_DEVICE_INFO_DOUBLE_FP_CONFIG: ol_device_info_t = ol_device_info_t(20);
pub const OL_DEVICE_INFO_HALF_FP_CONFIG: ol_device_info_t = ol_device_info_t(21);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR: ol_device_info_t = ol_device_info_t(22);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT: ol_device_info_t = ol_device_info_t(23);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT: ol_device_info_t = ol_device_info_t(24);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG: ol_device_info_t = ol_device_info_t(25);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT: ol_device_info_t = ol_device_info_t(26);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE: ol_device_info_t = ol_device_info_t(27);
pub const OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF: ol_device_info_t = ol_device_info_t(28);
pub const OL_DEVICE_INFO_LAST: ol_device_info_t = ol_device_info_t(29);
pub const OL_DEVICE_INFO_FORCE_UINT32: ol_device_info_t = ol_device_info_t(0x7fffffff);

/// C enum `ol_device_type_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_device_type_t(pub u32);

pub const OL_DEVICE_TYPE_DEFAULT: ol_device_type_t = ol_device_type_t(0);
pub const OL_DEVICE_TYPE_ALL: ol_device_type_t = ol_device_type_t(1);
pub const OL_DEVICE_TYPE_GPU: ol_device_type_t = ol_device_type_t(2);
pub const OL_DEVICE_TYPE_CPU: ol_device_type_t = ol_device_type_t(3);
pub const OL_DEVICE_TYPE_HOST: ol_device_type_t = ol_device_type_t(4);
pub const OL_DEVICE_TYPE_LAST: ol_device_type_t = ol_device_type_t(5);
pub const OL_DEVICE_TYPE_FORCE_UINT32: ol_device_type_t = ol_device_type_t(0x7fffffff);

/// C enum `ol_errc_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_errc_t(pub u32);

pub const OL_ERRC_SUCCESS: ol_errc_t = ol_errc_t(0);
pub const OL_ERRC_UNKNOWN: ol_errc_t = ol_errc_t(1);
pub const OL_ERRC_HOST_IO: ol_errc_t = ol_errc_t(2);
pub const OL_ERRC_INVALID_BINARY: ol_errc_t = ol_errc_t(3);
pub const OL_ERRC_INVALID_NULL_POINTER: ol_errc_t = ol_errc_t(4);
pub const OL_ERRC_INVALID_ARGUMENT: ol_errc_t = ol_errc_t(5);
pub const OL_ERRC_NOT_FOUND: ol_errc_t = ol_errc_t(6);
pub const OL_ERRC_OUT_OF_RESOURCES: ol_errc_t = ol_errc_t(7);
pub const OL_ERRC_INVALID_SIZE: ol_errc_t = ol_errc_t(8);
pub const OL_ERRC_INVALID_ENUMERATION: ol_errc_t = ol_errc_t(9);
pub const OL_ERRC_HOST_TOOL_NOT_FOUND: ol_errc_t = ol_errc_t(10);
pub const OL_ERRC_INVALID_VALUE: ol_errc_t = ol_errc_t(11);
pub const OL_ERRC_UNIMPLEMENTED: ol_errc_t = ol_errc_t(12);
pub const OL_ERRC_UNSUPPORTED: ol_errc_t = ol_errc_t(13);
pub const OL_ERRC_ASSEMBLE_FAILURE: ol_errc_t = ol_errc_t(14);
pub const OL_ERRC_COMPILE_FAILURE: ol_errc_t = ol_errc_t(15);
pub const OL_ERRC_LINK_FAILURE: ol_errc_t = ol_errc_t(16);
pub const OL_ERRC_BACKEND_FAILURE: ol_errc_t = ol_errc_t(17);
pub const OL_ERRC_UNINITIALIZED: ol_errc_t = ol_errc_t(18);
pub const OL_ERRC_INVALID_NULL_HANDLE: ol_errc_t = ol_errc_t(19);
pub const OL_ERRC_INVALID_PLATFORM: ol_errc_t = ol_errc_t(20);
pub const OL_ERRC_INVALID_DEVICE: ol_errc_t = ol_errc_t(21);
pub const OL_ERRC_INVALID_QUEUE: ol_errc_t = ol_errc_t(22);
pub const OL_ERRC_INVALID_EVENT: ol_errc_t = ol_errc_t(23);
pub const OL_ERRC_SYMBOL_KIND: ol_errc_t = ol_errc_t(24);
pub const OL_ERRC_LAST: ol_errc_t = ol_errc_t(25);
pub const OL_ERRC_FORCE_UINT32: ol_errc_t = ol_errc_t(0x7fffffff);

/// C enum `ol_event_info_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_event_info_t(pub u32);

pub const OL_EVENT_INFO_QUEUE: ol_event_info_t = ol_event_info_t(0);
pub const OL_EVENT_INFO_IS_COMPLETE: ol_event_info_t = ol_event_info_t(1);
pub const OL_EVENT_INFO_LAST: ol_event_info_t = ol_event_info_t(2);
pub const OL_EVENT_INFO_FORCE_UINT32: ol_event_info_t = ol_event_info_t(0x7fffffff);

/// C enum `ol_mem_info_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_mem_info_t(pub u32);

pub const OL_MEM_INFO_DEVICE: ol_mem_info_t = ol_mem_info_t(0);
pub const OL_MEM_INFO_BASE: ol_mem_info_t = ol_mem_info_t(1);
pub const OL_MEM_INFO_SIZE: ol_mem_info_t = ol_mem_info_t(2);
pub const OL_MEM_INFO_TYPE: ol_mem_info_t = ol_mem_info_t(3);
pub const OL_MEM_INFO_LAST: ol_mem_info_t = ol_mem_info_t(4);
pub const OL_MEM_INFO_FORCE_UINT32: ol_mem_info_t = ol_mem_info_t(0x7fffffff);

/// C enum `ol_platform_backend_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_platform_backend_t(pub u32);

pub const OL_PLATFORM_BACKEND_UNKNOWN: ol_platform_backend_t = ol_platform_backend_t(0);
pub const OL_PLATFORM_BACKEND_CUDA: ol_platform_backend_t = ol_platform_backend_t(1);
pub const OL_PLATFORM_BACKEND_AMDGPU: ol_platform_backend_t = ol_platform_backend_t(2);
pub const OL_PLATFORM_BACKEND_LEVEL_ZERO: ol_platform_backend_t = ol_platform_backend_t(3);
pub const OL_PLATFORM_BACKEND_HOST: ol_platform_backend_t = ol_platform_backend_t(4);
pub const OL_PLATFORM_BACKEND_LAST: ol_platform_backend_t = ol_platform_backend_t(5);
pub const OL_PLATFORM_BACKEND_FORCE_UINT32: ol_platform_backend_t = ol_platform_backend_t(0x7fffffff);

/// C enum `ol_platform_info_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_platform_info_t(pub u32);

pub const OL_PLATFORM_INFO_NAME: ol_platform_info_t = ol_platform_info_t(0);
pub const OL_PLATFORM_INFO_VENDOR_NAME: ol_platform_info_t = ol_platform_info_t(1);
pub const OL_PLATFORM_INFO_VERSION: ol_platform_info_t = ol_platform_info_t(2);
pub const OL_PLATFORM_INFO_BACKEND: ol_platform_info_t = ol_platform_info_t(3);
pub const OL_PLATFORM_INFO_LAST: ol_platform_info_t = ol_platform_info_t(4);
pub const OL_PLATFORM_INFO_FORCE_UINT32: ol_platform_info_t = ol_platform_info_t(0x7fffffff);

/// C enum `ol_queue_info_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_queue_info_t(pub u32);

pub const OL_QUEUE_INFO_DEVICE: ol_queue_info_t = ol_queue_info_t(0);
pub const OL_QUEUE_INFO_EMPTY: ol_queue_info_t = ol_queue_info_t(1);
pub const OL_QUEUE_INFO_LAST: ol_queue_info_t = ol_queue_info_t(2);
pub const OL_QUEUE_INFO_FORCE_UINT32: ol_queue_info_t = ol_queue_info_t(0x7fffffff);

/// C enum `ol_symbol_info_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_symbol_info_t(pub u32);

pub const OL_SYMBOL_INFO_KIND: ol_symbol_info_t = ol_symbol_info_t(0);
pub const OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS: ol_symbol_info_t = ol_symbol_info_t(1);
pub const OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE: ol_symbol_info_t = ol_symbol_info_t(2);
pub const OL_SYMBOL_INFO_LAST: ol_symbol_info_t = ol_symbol_info_t(3);
pub const OL_SYMBOL_INFO_FORCE_UINT32: ol_symbol_info_t = ol_symbol_info_t(0x7fffffff);

/// C enum `ol_symbol_kind_t` (LLVM 22 `OffloadAPI.h`). Arrives from C as a raw `uint32_t`: unknown values are
/// representable and rejected with `OL_ERRC_INVALID_ENUMERATION`, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ol_symbol_kind_t(pub u32);

pub const OL_SYMBOL_KIND_KERNEL: ol_symbol_kind_t = ol_symbol_kind_t(0);
pub const OL_SYMBOL_KIND_GLOBAL_VARIABLE: ol_symbol_kind_t = ol_symbol_kind_t(1);
pub const OL_SYMBOL_KIND_LAST: ol_symbol_kind_t = ol_symbol_kind_t(2);
pub const OL_SYMBOL_KIND_FORCE_UINT32: ol_symbol_kind_t = ol_symbol_kind_t(0x7fffffff);
/// offload-rs extension: the backend of the CPU compute platform. Outside LLVM 22's range on purpose, so
/// that clients which skip `HOST` and `UNKNOWN` platforms (the UR adapter, LLVM's tests) use the CPU device.
pub const OL_PLATFORM_BACKEND_CPU: ol_platform_backend_t = ol_platform_backend_t(0x100);

pub type ol_device_fp_capability_flags_t = u32;
pub type ol_memory_register_flags_t = u32;

/// `{Code, Details}`; an `ol_result_t` is NULL (success) or points to one of these, interned for the life
/// of the process.
#[repr(C)]
pub struct ol_error_struct_t {
    /// The error code
    pub Code: ol_errc_t,
    /// String containing error details
    pub Details: *const c_char,
}

pub type ol_result_t = *const ol_error_struct_t;

pub type ol_device_iterate_cb_t =
    Option<unsafe extern "C" fn(Device: ol_device_handle_t, UserData: *mut c_void) -> bool>;
pub type ol_host_function_cb_t = Option<unsafe extern "C" fn(UserData: *mut c_void)>;

/// Code location passed to the `*WithCodeLoc` entry points (accepted, never read, as in LLVM 22).
#[repr(C)]
pub struct ol_code_location_t {
    /// Function name
    pub FunctionName: *const c_char,
    /// Source code file
    pub SourceFile: *const c_char,
    /// Source code line number
    pub LineNumber: u32,
    /// Source code column number
    pub ColumnNumber: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ol_dimensions_t {
    /// X
    pub x: u32,
    /// Y
    pub y: u32,
    /// Z
    pub z: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ol_kernel_launch_size_args_t {
    /// Number of work dimensions
    pub Dimensions: usize,
    /// Number of work groups in each dimension
    pub NumGroups: ol_dimensions_t,
    /// Size of a work group in each dimension
    pub GroupSize: ol_dimensions_t,
    /// Size of dynamic shared memory in bytes.
    pub DynSharedMemory: usize,
}
