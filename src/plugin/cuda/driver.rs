//! Layers 1 and 2 of the CUDA plugin (cudarc-style):
//!
//! 1. [`Driver`]: the raw table of driver entry points, resolved with `libloading` from
//!    `libcuda.so.1` (then `libcuda.so`). Versioned names (`cuMemAlloc_v2`, ...) are resolved
//!    explicitly, because the unversioned exports keep the pre-v2 ABI (32-bit sizes).
//!    Entry points that only newer drivers have are `Option`s.
//! 2. [`Driver::check`]: turns a `CUresult` into `PluginResult`, with the driver's own texts:
//!    `error in cuXxx: CUDA_ERROR_NAME: description`.
//!
//! Nothing here panics when the library or a symbol is missing: [`Driver::load`] returns `Err`.

#![allow(non_snake_case, non_camel_case_types)] // driver names are kept as in cuda.h

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use crate::plugin::PluginError;

pub(crate) type CUresult = c_uint;
pub(crate) type CUdevice = c_int;
pub(crate) type CUdeviceptr = u64;
pub(crate) type CUcontext = *mut c_void;
pub(crate) type CUmodule = *mut c_void;
pub(crate) type CUfunction = *mut c_void;
pub(crate) type CUstream = *mut c_void;
pub(crate) type CUevent = *mut c_void;
pub(crate) type CUhostFn = unsafe extern "C" fn(*mut c_void);
pub(crate) type CUoccupancyB2DSize = Option<unsafe extern "C" fn(c_int) -> usize>;

pub(crate) const CUDA_SUCCESS: CUresult = 0;
pub(crate) const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
pub(crate) const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
#[cfg_attr(not(test), allow(dead_code))] // the test stub table returns it
pub(crate) const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
pub(crate) const CUDA_ERROR_NO_DEVICE: CUresult = 100;
pub(crate) const CUDA_ERROR_INVALID_IMAGE: CUresult = 200;
pub(crate) const CUDA_ERROR_NO_BINARY_FOR_GPU: CUresult = 209;
pub(crate) const CUDA_ERROR_INVALID_PTX: CUresult = 218;
pub(crate) const CUDA_ERROR_JIT_COMPILER_NOT_FOUND: CUresult = 221;
pub(crate) const CUDA_ERROR_UNSUPPORTED_PTX_VERSION: CUresult = 222;
pub(crate) const CUDA_ERROR_JIT_COMPILATION_DISABLED: CUresult = 223;
pub(crate) const CUDA_ERROR_NOT_FOUND: CUresult = 500;
pub(crate) const CUDA_ERROR_NOT_READY: CUresult = 600;
pub(crate) const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: CUresult = 712;

// CUdevice_attribute
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 1;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: c_int = 2;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: c_int = 3;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: c_int = 4;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: c_int = 5;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: c_int = 6;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: c_int = 7;
pub(crate) const CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
pub(crate) const CU_DEVICE_ATTRIBUTE_CLOCK_RATE: c_int = 13;
pub(crate) const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
pub(crate) const CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: c_int = 36;
pub(crate) const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub(crate) const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;

// CUfunction_attribute
pub(crate) const CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: c_int = 1;
pub(crate) const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

// CUjit_option
pub(crate) const CU_JIT_INFO_LOG_BUFFER: c_uint = 3;
pub(crate) const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: c_uint = 4;
pub(crate) const CU_JIT_ERROR_LOG_BUFFER: c_uint = 5;
pub(crate) const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_uint = 6;

pub(crate) const CU_STREAM_NON_BLOCKING: c_uint = 1;
pub(crate) const CU_EVENT_DISABLE_TIMING: c_uint = 2;
pub(crate) const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 1;
pub(crate) const CU_MEM_ATTACH_GLOBAL: c_uint = 1;
pub(crate) const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
pub(crate) const CU_MEMORYTYPE_HOST: c_uint = 1;

/// `CU_LAUNCH_PARAM_*` markers of `cuLaunchKernel`'s `extra` array.
pub(crate) const CU_LAUNCH_PARAM_END: *mut c_void = std::ptr::null_mut();
#[allow(clippy::manual_dangling_ptr)] // marker values of cuda.h, never dereferenced
pub(crate) const CU_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = 1 as *mut c_void;
pub(crate) const CU_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = 2 as *mut c_void;

/// Declares the table once: the struct, the loader and (for tests) a stub table whose every entry
/// returns `CUDA_ERROR_NOT_INITIALIZED`. Every driver entry point returns `CUresult`.
macro_rules! driver_table {
    (
        required { $($name:ident = $sym:literal ($($arg:ty),*);)* }
        optional { $($oname:ident = $osym:literal ($($oarg:ty),*);)* }
    ) => {
        /// The raw driver entry points. Calling any of them is `unsafe`: the caller upholds the
        /// CUDA driver API contract of that function (valid handles, live pointers, sizes).
        pub struct Driver {
            /// Keeps the library mapped for as long as the fn pointers live (None for test stubs).
            pub(crate) _lib: Option<libloading::Library>,
            $(pub $name: unsafe extern "C" fn($($arg),*) -> CUresult,)*
            $(pub $oname: Option<unsafe extern "C" fn($($oarg),*) -> CUresult>,)*
        }

        impl Driver {
            fn from_library(lib: libloading::Library) -> Result<Self, String> {
                $(
                    // SAFETY: the symbol is a function of the driver API with exactly this
                    // prototype (cuda.h); the library stays loaded inside the returned table.
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) -> CUresult>(concat!($sym, "\0").as_bytes())
                            .map_err(|e| format!("missing driver symbol {}: {e}", $sym))?
                    };
                )*
                $(
                    // SAFETY: as above; absence is allowed.
                    let $oname = unsafe {
                        lib.get::<unsafe extern "C" fn($($oarg),*) -> CUresult>(concat!($osym, "\0").as_bytes())
                            .ok()
                            .map(|s| *s)
                    };
                )*
                Ok(Driver { _lib: Some(lib), $($name,)* $($oname,)* })
            }

            /// A table whose entries all fail with `CUDA_ERROR_NOT_INITIALIZED` and whose optional
            /// entries are absent; tests replace the entries they exercise.
            #[cfg(test)]
            pub fn stub() -> Self {
                Driver {
                    _lib: None,
                    $($name: {
                        unsafe extern "C" fn stub($(_: $arg),*) -> CUresult { CUDA_ERROR_NOT_INITIALIZED }
                        stub
                    },)*
                    $($oname: None,)*
                }
            }
        }
    };
}

driver_table! {
    required {
        cuInit = "cuInit" (c_uint);
        cuDriverGetVersion = "cuDriverGetVersion" (*mut c_int);
        cuGetErrorName = "cuGetErrorName" (CUresult, *mut *const c_char);
        cuGetErrorString = "cuGetErrorString" (CUresult, *mut *const c_char);
        cuDeviceGetCount = "cuDeviceGetCount" (*mut c_int);
        cuDeviceGet = "cuDeviceGet" (*mut CUdevice, c_int);
        cuDeviceGetName = "cuDeviceGetName" (*mut c_char, c_int, CUdevice);
        cuDeviceGetAttribute = "cuDeviceGetAttribute" (*mut c_int, c_int, CUdevice);
        cuDeviceTotalMem = "cuDeviceTotalMem_v2" (*mut usize, CUdevice);
        cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain" (*mut CUcontext, CUdevice);
        cuCtxSetCurrent = "cuCtxSetCurrent" (CUcontext);
        cuCtxGetCurrent = "cuCtxGetCurrent" (*mut CUcontext);
        cuCtxSynchronize = "cuCtxSynchronize" ();
        cuMemGetInfo = "cuMemGetInfo_v2" (*mut usize, *mut usize);
        cuMemAlloc = "cuMemAlloc_v2" (*mut CUdeviceptr, usize);
        cuMemFree = "cuMemFree_v2" (CUdeviceptr);
        cuMemAllocHost = "cuMemAllocHost_v2" (*mut *mut c_void, usize);
        cuMemFreeHost = "cuMemFreeHost" (*mut c_void);
        cuMemAllocManaged = "cuMemAllocManaged" (*mut CUdeviceptr, usize, c_uint);
        cuMemHostRegister = "cuMemHostRegister_v2" (*mut c_void, usize, c_uint);
        cuMemHostUnregister = "cuMemHostUnregister" (*mut c_void);
        cuMemcpy = "cuMemcpy" (CUdeviceptr, CUdeviceptr, usize);
        cuMemcpyAsync = "cuMemcpyAsync" (CUdeviceptr, CUdeviceptr, usize, CUstream);
        cuMemsetD8Async = "cuMemsetD8Async" (CUdeviceptr, u8, usize, CUstream);
        cuMemsetD16Async = "cuMemsetD16Async" (CUdeviceptr, u16, usize, CUstream);
        cuMemsetD32Async = "cuMemsetD32Async" (CUdeviceptr, u32, usize, CUstream);
        cuMemsetD2D8Async = "cuMemsetD2D8Async" (CUdeviceptr, usize, u8, usize, usize, CUstream);
        cuMemsetD2D16Async = "cuMemsetD2D16Async" (CUdeviceptr, usize, u16, usize, usize, CUstream);
        cuMemsetD2D32Async = "cuMemsetD2D32Async" (CUdeviceptr, usize, u32, usize, usize, CUstream);
        cuModuleLoadDataEx = "cuModuleLoadDataEx" (*mut CUmodule, *const c_void, c_uint, *mut c_uint, *mut *mut c_void);
        cuModuleUnload = "cuModuleUnload" (CUmodule);
        cuModuleGetFunction = "cuModuleGetFunction" (*mut CUfunction, CUmodule, *const c_char);
        cuModuleGetGlobal = "cuModuleGetGlobal_v2" (*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
        cuFuncGetAttribute = "cuFuncGetAttribute" (*mut c_int, c_int, CUfunction);
        cuFuncSetAttribute = "cuFuncSetAttribute" (CUfunction, c_int, c_int);
        cuLaunchKernel = "cuLaunchKernel" (CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void);
        cuOccupancyMaxPotentialBlockSize = "cuOccupancyMaxPotentialBlockSize" (*mut c_int, *mut c_int, CUfunction, CUoccupancyB2DSize, usize, c_int);
        cuStreamCreate = "cuStreamCreate" (*mut CUstream, c_uint);
        cuStreamDestroy = "cuStreamDestroy_v2" (CUstream);
        cuStreamSynchronize = "cuStreamSynchronize" (CUstream);
        cuStreamQuery = "cuStreamQuery" (CUstream);
        cuStreamWaitEvent = "cuStreamWaitEvent" (CUstream, CUevent, c_uint);
        cuLaunchHostFunc = "cuLaunchHostFunc" (CUstream, CUhostFn, *mut c_void);
        cuEventCreate = "cuEventCreate" (*mut CUevent, c_uint);
        cuEventRecord = "cuEventRecord" (CUevent, CUstream);
        cuEventQuery = "cuEventQuery" (CUevent);
        cuEventSynchronize = "cuEventSynchronize" (CUevent);
        cuEventDestroy = "cuEventDestroy_v2" (CUevent);
    }
    optional {
        // CUDA >= 12.4; without it arguments are passed as given (no size check, no repacking).
        cuFuncGetParamInfo = "cuFuncGetParamInfo" (CUfunction, usize, *mut usize, *mut usize);
        cuDeviceGetUuid_v2 = "cuDeviceGetUuid_v2" (*mut [u8; 16], CUdevice);
        cuDeviceGetUuid = "cuDeviceGetUuid" (*mut [u8; 16], CUdevice);
        // CUDA >= 11.0 (every driver the plugin supports has it; optional so that test tables may omit it).
        cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2" (CUdevice);
        // What memory a queued copy touches (context::DeviceInner::memory_at); without it copies go to the
        // driver as they are.
        cuPointerGetAttribute = "cuPointerGetAttribute" (*mut c_void, c_int, CUdeviceptr);
    }
}

// SAFETY: the table holds plain fn pointers into a library that is never unloaded while the
// table lives; the CUDA driver API is thread-safe.
unsafe impl Send for Driver {}
// SAFETY: as above; the table is immutable after loading.
unsafe impl Sync for Driver {}

impl Driver {
    /// Load the driver library and resolve the table. `Err` says why (for the debug line).
    pub fn load() -> Result<Self, String> {
        let mut why = Vec::new();
        for name in ["libcuda.so.1", "libcuda.so"] {
            // SAFETY: loading the NVIDIA driver library runs its initialisers, which have no
            // preconditions on our side.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::from_library(lib),
                Err(e) => why.push(format!("{name}: {e}")),
            }
        }
        Err(why.join("; "))
    }

    /// `CUDA_ERROR_XXX` name and description of a code, as the driver words them.
    pub fn error_texts(&self, code: CUresult) -> (String, String) {
        let mut name: *const c_char = std::ptr::null();
        let mut desc: *const c_char = std::ptr::null();
        // SAFETY: both functions write a pointer to a static NUL-terminated string or fail.
        let (rn, rd) = unsafe { ((self.cuGetErrorName)(code, &mut name), (self.cuGetErrorString)(code, &mut desc)) };
        let text = |r: CUresult, p: *const c_char| {
            if r == CUDA_SUCCESS && !p.is_null() {
                // SAFETY: non-null result of cuGetErrorName/String: a static C string.
                Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            } else {
                None
            }
        };
        (
            text(rn, name).unwrap_or_else(|| format!("CUDA_ERROR_{code}")),
            text(rd, desc).unwrap_or_else(|| "unrecognized error code".to_string()),
        )
    }

    /// `Ok(())` for `CUDA_SUCCESS`, else the mapped error `error in <what>: <NAME>: <text>`.
    #[inline]
    pub fn check(&self, code: CUresult, what: &str) -> Result<(), PluginError> {
        if code == CUDA_SUCCESS { Ok(()) } else { Err(self.error(code, what)) }
    }

    /// The error for a failed call (`code != CUDA_SUCCESS`).
    #[cold]
    pub fn error(&self, code: CUresult, what: &str) -> PluginError {
        let (name, desc) = self.error_texts(code);
        map_error(code, format!("error in {what}: {name}: {desc}"))
    }
}

/// The code mapping of LLVM 22's CUDA plugin, plus out-of-memory -> OUT_OF_RESOURCES.
pub fn map_error(code: CUresult, msg: String) -> PluginError {
    match code {
        CUDA_ERROR_NOT_FOUND => PluginError::NotFound(msg),
        CUDA_ERROR_OUT_OF_MEMORY => PluginError::OutOfResources(msg),
        _ => PluginError::Driver(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake driver code with its cuGetErrorName and cuGetErrorString texts.
    type FakeRow = (CUresult, &'static CStr, &'static CStr);
    const FAKE_TEXTS: [FakeRow; 3] = [
        (CUDA_ERROR_NOT_FOUND, c"CUDA_ERROR_NOT_FOUND", c"named symbol not found"),
        (CUDA_ERROR_OUT_OF_MEMORY, c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory"),
        (CUDA_ERROR_INVALID_VALUE, c"CUDA_ERROR_INVALID_VALUE", c"invalid argument"),
    ];

    /// Writes `code`'s text (`pick` of its FAKE_TEXTS row) to `*out`, as the driver's two lookups do.
    ///
    /// # Safety
    /// `out` must be valid for writing a pointer.
    unsafe fn fake_text(code: CUresult, out: *mut *const c_char, pick: fn(&FakeRow) -> &'static CStr) -> CUresult {
        let Some(row) = FAKE_TEXTS.iter().find(|t| t.0 == code) else {
            return CUDA_ERROR_INVALID_VALUE;
        };
        // SAFETY: test fake; `out` is a valid out-pointer from error_texts (the caller's contract).
        unsafe { *out = pick(row).as_ptr() };
        CUDA_SUCCESS
    }
    unsafe extern "C" fn fake_name(code: CUresult, out: *mut *const c_char) -> CUresult {
        // SAFETY: forwarded from error_texts' out-pointer.
        unsafe { fake_text(code, out, |t| t.1) }
    }
    unsafe extern "C" fn fake_string(code: CUresult, out: *mut *const c_char) -> CUresult {
        // SAFETY: as above.
        unsafe { fake_text(code, out, |t| t.2) }
    }

    fn fake() -> Driver {
        Driver { cuGetErrorName: fake_name, cuGetErrorString: fake_string, ..Driver::stub() }
    }

    #[test]
    fn check_maps_codes_and_words_errors() {
        let d = fake();
        assert!(d.check(CUDA_SUCCESS, "cuInit").is_ok());
        match d.check(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction('k')") {
            Err(PluginError::NotFound(m)) => {
                assert_eq!(m, "error in cuModuleGetFunction('k'): CUDA_ERROR_NOT_FOUND: named symbol not found")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(d.check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), Err(PluginError::OutOfResources(_))));
        match d.check(CUDA_ERROR_INVALID_VALUE, "cuMemcpy") {
            Err(PluginError::Driver(m)) => {
                assert_eq!(m, "error in cuMemcpy: CUDA_ERROR_INVALID_VALUE: invalid argument")
            }
            other => panic!("{other:?}"),
        }
        // unknown code: the driver has no text, we still say something useful
        match d.check(4242, "cuX") {
            Err(PluginError::Driver(m)) => {
                assert_eq!(m, "error in cuX: CUDA_ERROR_4242: unrecognized error code")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stub_table_fails_cleanly() {
        let d = Driver::stub();
        let mut v = 0;
        // SAFETY: stub fn ignores its arguments.
        let r = unsafe { (d.cuDriverGetVersion)(&mut v) };
        assert_eq!(r, CUDA_ERROR_NOT_INITIALIZED);
        assert!(d.cuFuncGetParamInfo.is_none());
        // error texts of a failing cuGetErrorName still produce a message
        let (n, s) = d.error_texts(CUDA_ERROR_NOT_FOUND);
        assert_eq!(n, "CUDA_ERROR_500");
        assert!(!s.is_empty());
    }
}
