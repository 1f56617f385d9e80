//! LLVM 23.1's API: everything that differs from 22.1, in one place.
//!
//! One crate builds both libraries. The entry points 23.1 changed (`olInit`, `olCreateEvent`,
//! `olLaunchKernel`, `olMemRegister`, `olMemUnregister`) and the six it added are written here with the
//! export name `offload_rs_v23_<name>` (and their `WithCodeLoc` twins in [`codeloc`]); every other entry
//! point is shared. `make lib` links the staticlib twice:
//!
//! * `build/lib/libLLVMOffload.so.22.1` as it is: the `offload_rs_v23_*` symbols do not match the
//!   version script's `ol[A-Z]*` and stay local;
//! * `build/lib23/libLLVMOffload.so.23.1` from a copy of the archive in which `objcopy --redefine-syms`
//!   renames each `offload_rs_v23_olX` to `olX` and the 22 `olX` it replaces to `offload_rs_v22_olX`
//!   (scripts/abi23-syms.sh derives the list from the archive).
//!
//! Below the entry points the releases share everything; the few behaviours that differ read
//! [`crate::runtime::Context::abi`], set by the `olInit` that created the context: the device infos 23
//! appended (29-32) exist only for a 23 client. Not done: 23's host platform (four "Host Offload Device"
//! devices from the host plugin); both libraries report 22's virtual host device.

pub mod codeloc;
pub mod device;
pub mod event;
pub mod init;
pub mod kernel;
pub mod memory;
pub mod platform;
pub mod queue;

/// OFFLOAD_TRACE helpers for the 23.1 parameters, printed as 23's generated `OffloadPrint.hpp` does.
pub(crate) mod print {
    use crate::ffi::*;

    /// `0xADDR (VALUE)` for a pointer to a value shown by `show`, `nullptr` for NULL.
    ///
    /// # Safety
    /// `p` must be NULL or valid for reading a `T`.
    pub unsafe fn pointee<T: Copy>(p: *const T, show: impl FnOnce(T) -> String) -> String {
        if p.is_null() {
            return "nullptr".into();
        }
        // SAFETY: non-NULL and readable per the caller contract.
        format!("{p:p} ({})", show(unsafe { p.read_unaligned() }))
    }

    /// A float as LLVM's `raw_ostream` prints a double: `%e` (`1.500000e+00`).
    pub fn float(v: f32) -> String {
        let s = format!("{:.6e}", v as f64);
        match s.split_once('e') {
            Some((m, e)) => {
                let n: i32 = e.parse().unwrap_or(0);
                format!("{m}e{}{:02}", if n < 0 { '-' } else { '+' }, n.abs())
            }
            None => s,
        }
    }

    /// `(struct ol_init_args_t){.Size = .., .NumPlatforms = .., .Platforms = ..}`
    pub fn init_args(a: ol_init_args_t) -> String {
        format!(
            "(struct ol_init_args_t){{.Size = {}, .NumPlatforms = {}, .Platforms = {}}}",
            a.Size,
            a.NumPlatforms,
            crate::trace::ptr(a.Platforms)
        )
    }

    /// The first entry of a launch properties list.
    pub fn launch_prop(p: ol_kernel_launch_prop_t) -> String {
        let t = match p.r#type {
            OL_KERNEL_LAUNCH_PROP_TYPE_NONE => "OL_KERNEL_LAUNCH_PROP_TYPE_NONE".to_string(),
            OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE => "OL_KERNEL_LAUNCH_PROP_TYPE_IS_COOPERATIVE".to_string(),
            t => t.0.to_string(),
        };
        format!("(struct ol_kernel_launch_prop_t){{.type = {t}, .data = {}}}", crate::trace::ptr(p.data))
    }

    /// `(struct ol_kernel_launch_size_args_t){...}`
    pub fn launch_size(a: ol_kernel_launch_size_args_t) -> String {
        format!(
            "(struct ol_kernel_launch_size_args_t){{.Dimensions = {}, .NumGroups = (struct ol_dimensions_t){{.x = {}, .y = {}, .z = {}}}, .GroupSize = (struct ol_dimensions_t){{.x = {}, .y = {}, .z = {}}}, .DynSharedMemory = {}}}",
            a.Dimensions,
            a.NumGroups.x,
            a.NumGroups.y,
            a.NumGroups.z,
            a.GroupSize.x,
            a.GroupSize.y,
            a.GroupSize.z,
            a.DynSharedMemory
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn floats_print_as_llvm_raw_ostream_does() {
        assert_eq!(super::print::float(1.5), "1.500000e+00");
        assert_eq!(super::print::float(0.0), "0.000000e+00");
        assert_eq!(super::print::float(0.00125), "1.250000e-03");
        assert_eq!(super::print::float(12345.0), "1.234500e+04");
    }
}
