//! debugtop's OS layer (`debugtop-collect`): what each operating system answers its own way,
//! behind one interface. The process table (`/proc` on Linux, Toolhelp32 and process handles on
//! Windows, `sysinfo` elsewhere) with each process's identity, role, markers, stdio and
//! relatives ([`collect`]); exits as they happen (pidfds); the few facts about debugtop's own
//! process and its files ([`os`]); files another process names, looked at before they are
//! opened, for that process's user, and files debugtop writes, atomically ([`safe_fs`]); and the
//! one module with `unsafe`, the Windows calls ([`win32`]). Above it, the engine reads only the
//! model's types it returns.

pub mod collect;
pub mod error;
pub mod os;
pub mod safe_fs;
#[cfg(windows)]
pub mod win32;

pub use error::{Error, Result};
