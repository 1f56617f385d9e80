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
