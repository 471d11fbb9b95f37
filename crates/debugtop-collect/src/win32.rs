//! The Win32 calls debugtop makes on Windows (the collector, the exit watch, the kill, the
//! job a `run` keeps its command in, the facts about debugtop itself), each behind a safe
//! function. This is the only module of
//! debugtop with `unsafe`: foreign calls whose buffers and handles it owns.
//! Every pointer handed to Windows points into a buffer of the size passed with it; every
//! handle is closed exactly once, by [`Handle`]'s drop.
#![allow(unsafe_code)]

use std::ffi::c_void;

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, LocalFree, FILETIME, HANDLE, INVALID_HANDLE_VALUE, WAIT_OBJECT_0,
    WAIT_TIMEOUT,
};
use windows_sys::Win32::Security::{
    GetSidSubAuthority, GetSidSubAuthorityCount, GetTokenInformation, TokenElevation, TokenUser,
    TOKEN_ELEVATION, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::System::Diagnostics::Debug::ReadProcessMemory;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetProcessIoCounters, GetProcessTimes, OpenProcess, OpenProcessToken,
    RegisterWaitForSingleObject, TerminateProcess, UnregisterWaitEx, WaitForSingleObject, INFINITE,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE, PROCESS_VM_READ,
    WT_EXECUTEONLYONCE,
};
use windows_sys::Win32::UI::Shell::CommandLineToArgvW;

/// What opening a process asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Times, memory, owner, the PEB (command line, environment) and its standard handles'
    /// types.
    Read,
    /// As `Read` without its standard handles' types (a process that grants reading its
    /// memory but not duplicating its handles).
    Peb,
    /// Times, memory and owner only: what a normal user gets for many processes.
    Query,
    /// Times, wait and terminate: what a kill needs.
    Terminate,
    /// Times and wait: what the exit watcher needs.
    Wait,
    /// What putting a process into a job needs (set quota and terminate).
    Assign,
}

/// One row of the Toolhelp32 process snapshot.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Process id.
    pub pid: u32,
    /// Parent pid as Windows recorded it at creation (never updated: the parent may be gone
    /// and its pid reused).
    pub ppid: u32,
    /// The executable's file name.
    pub exe: String,
}

/// An open process handle, closed on drop. Like a pidfd, it pins the process object: the pid
/// may be reused once the process is gone, the handle keeps naming the process it opened.
#[derive(Debug)]
pub struct Handle(HANDLE);

// SAFETY: a process handle may be used and closed from any thread; `Handle` owns it alone.
unsafe impl Send for Handle {}
// SAFETY: the calls made through `&Handle` (times, waits, reads) are safe from several
// threads at once.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was returned open by OpenProcess/OpenProcessToken and is closed
        // only here.
        unsafe {
            CloseHandle(self.0);
        }
    }
}

/// The last Win32 error as an `io::Error`.
fn last_error() -> std::io::Error {
    // SAFETY: no arguments; reads the calling thread's last-error value.
    let code = unsafe { GetLastError() };
    std::io::Error::from_raw_os_error(i32::try_from(code).unwrap_or(i32::MAX))
}

/// Every process, with its parent and executable name.
pub fn snapshot() -> std::io::Result<Vec<Entry>> {
    // SAFETY: plain call; the result is checked against INVALID_HANDLE_VALUE.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(last_error());
    }
    let snap = Handle(snap);
    let mut out = Vec::new();
    let mut e = PROCESSENTRY32W {
        dwSize: u32::try_from(std::mem::size_of::<PROCESSENTRY32W>()).unwrap_or(0),
        ..Default::default()
    };
    // SAFETY: `e` is a PROCESSENTRY32W with dwSize set, as the API requires.
    let mut ok = unsafe { Process32FirstW(snap.0, &mut e) } != 0;
    while ok {
        let len = e.szExeFile.iter().position(|c| *c == 0).unwrap_or(260);
        out.push(Entry {
            pid: e.th32ProcessID,
            ppid: e.th32ParentProcessID,
            exe: String::from_utf16_lossy(&e.szExeFile[..len]),
        });
        // SAFETY: as above.
        ok = unsafe { Process32NextW(snap.0, &mut e) } != 0;
    }
    Ok(out)
}

/// Opens `pid` for `access`.
pub fn open(pid: u32, access: Access) -> std::io::Result<Handle> {
    let rights = match access {
        Access::Read => {
            PROCESS_QUERY_LIMITED_INFORMATION
                | PROCESS_VM_READ
                | windows_sys::Win32::System::Threading::PROCESS_DUP_HANDLE
        }
        Access::Peb => PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ,
        Access::Query => PROCESS_QUERY_LIMITED_INFORMATION,
        Access::Terminate => {
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_TERMINATE | PROCESS_SYNCHRONIZE
        }
        Access::Wait => PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
        Access::Assign => {
            PROCESS_QUERY_LIMITED_INFORMATION
                | windows_sys::Win32::System::Threading::PROCESS_SET_QUOTA
                | PROCESS_TERMINATE
        }
    };
    // SAFETY: plain call; a null result is an error.
    let h = unsafe { OpenProcess(rights, 0, pid) };
    if h.is_null() {
        Err(last_error())
    } else {
        Ok(Handle(h))
    }
}

fn filetime(t: FILETIME) -> u64 {
    (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)
}

impl Handle {
    /// Creation time (100 ns units since 1601, the process's identity with its pid) and CPU
    /// time used so far (kernel + user, 100 ns units).
    pub fn times(&self) -> Option<(u64, u64)> {
        let zero = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
        // SAFETY: four FILETIMEs owned here.
        let ok =
            unsafe { GetProcessTimes(self.0, &mut created, &mut exited, &mut kernel, &mut user) }
                != 0;
        ok.then(|| {
            (
                filetime(created),
                filetime(kernel).saturating_add(filetime(user)),
            )
        })
    }

    /// The working set (resident memory) in bytes.
    pub fn working_set(&self) -> Option<u64> {
        let mut c = PROCESS_MEMORY_COUNTERS {
            cb: u32::try_from(std::mem::size_of::<PROCESS_MEMORY_COUNTERS>()).unwrap_or(0),
            ..Default::default()
        };
        // SAFETY: `c` is the struct whose size is passed.
        let ok = unsafe { K32GetProcessMemoryInfo(self.0, &mut c, c.cb) } != 0;
        ok.then_some(c.WorkingSetSize as u64)
    }

    /// Bytes the process has read and written so far (every file, pipe and device), when
    /// Windows tells.
    pub fn io_bytes(&self) -> Option<u64> {
        let mut c = windows_sys::Win32::System::Threading::IO_COUNTERS::default();
        // SAFETY: `c` is the struct Windows fills.
        let ok = unsafe { GetProcessIoCounters(self.0, &mut c) } != 0;
        ok.then(|| c.ReadTransferCount.saturating_add(c.WriteTransferCount))
    }

    /// Whether the process has ended (its handle is signalled), waiting at most `ms`.
    pub fn wait_exit(&self, ms: u32) -> std::io::Result<bool> {
        // SAFETY: a valid handle opened with SYNCHRONIZE (Access::Terminate).
        match unsafe { WaitForSingleObject(self.0, ms) } {
            WAIT_OBJECT_0 => Ok(true),
            WAIT_TIMEOUT => Ok(false),
            _ => Err(last_error()),
        }
    }

    /// Ends the process (`TerminateProcess`); it ends with `code`.
    pub fn terminate(&self, code: u32) -> std::io::Result<()> {
        // SAFETY: a valid handle opened with PROCESS_TERMINATE.
        if unsafe { TerminateProcess(self.0, code) } != 0 {
            Ok(())
        } else {
            Err(last_error())
        }
    }

    /// The relative id of the process's user SID (its last sub-authority): 1000 and up for
    /// local users, 500 for the built-in Administrator, 18 for SYSTEM.
    pub fn user_rid(&self) -> Option<u32> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: `token` receives a new handle, closed by the Handle below.
        if unsafe { OpenProcessToken(self.0, TOKEN_QUERY, &mut token) } == 0 {
            return None;
        }
        let token = Handle(token);
        let mut buf = [0u64; 64];
        let mut len = 0u32;
        // SAFETY: `buf` is 512 bytes, 8-aligned; its size is passed.
        let ok = unsafe {
            GetTokenInformation(
                token.0,
                TokenUser,
                buf.as_mut_ptr().cast::<c_void>(),
                512,
                &mut len,
            )
        } != 0;
        if !ok {
            return None;
        }
        // SAFETY: on success the buffer starts with a TOKEN_USER whose SID points into it.
        unsafe {
            let user = &*buf.as_ptr().cast::<TOKEN_USER>();
            rid_of(user.User.Sid)
        }
    }

    /// Whether the token of this process is elevated.
    fn elevated(&self) -> bool {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: as in `user_rid`.
        if unsafe { OpenProcessToken(self.0, TOKEN_QUERY, &mut token) } == 0 {
            return false;
        }
        let token = Handle(token);
        let mut e = TOKEN_ELEVATION { TokenIsElevated: 0 };
        let mut len = 0u32;
        // SAFETY: `e` is the struct whose size is passed.
        let ok = unsafe {
            GetTokenInformation(
                token.0,
                TokenElevation,
                (&raw mut e).cast::<c_void>(),
                u32::try_from(std::mem::size_of::<TOKEN_ELEVATION>()).unwrap_or(0),
                &mut len,
            )
        } != 0;
        ok && e.TokenIsElevated != 0
    }

    /// Copies `len` bytes at `addr` of the process into a new buffer.
    fn read(&self, addr: usize, len: usize) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let mut got = 0usize;
        // SAFETY: `buf` has `len` bytes; Windows checks the remote range and fails cleanly.
        let ok = unsafe {
            ReadProcessMemory(
                self.0,
                addr as *const c_void,
                buf.as_mut_ptr().cast::<c_void>(),
                len,
                &mut got,
            )
        } != 0;
        (ok && got == len).then_some(buf)
    }

    fn read_u64(&self, addr: usize) -> Option<u64> {
        let b = self.read(addr, 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// The address of the process's `RTL_USER_PROCESS_PARAMETERS`, through its PEB.
    fn parameters(&self) -> Option<usize> {
        let peb = peb_address(self)?;
        usize::try_from(self.read_u64(peb + PEB_PARAMETERS)?)
            .ok()
            .filter(|a| *a != 0)
    }

    /// The command line as the process was started with it (from its PEB), at most `cap`
    /// UTF-16 units.
    pub fn command_line(&self, cap: usize) -> Option<String> {
        let params = self.parameters()?;
        let head = self.read(params + PARAMS_COMMAND_LINE, 16)?;
        let len = usize::from(u16::from_le_bytes([head[0], head[1]])) / 2;
        let ptr = usize::try_from(u64::from_le_bytes(head[8..16].try_into().ok()?)).ok()?;
        let units = self.read_utf16(ptr, len.min(cap))?;
        Some(String::from_utf16_lossy(&units))
    }

    /// The environment block (`NAME=value` strings, NUL-separated), at most `cap` UTF-16 units.
    pub fn environment(&self, cap: usize) -> Option<Vec<u16>> {
        let params = self.parameters()?;
        let ptr = usize::try_from(self.read_u64(params + PARAMS_ENVIRONMENT)?).ok()?;
        let size = self
            .read_u64(params + PARAMS_ENVIRONMENT_SIZE)
            .and_then(|s| usize::try_from(s).ok())
            .filter(|s| *s > 0)
            .map_or(cap, |s| (s / 2).min(cap));
        // Without a size (older layouts) read what is there, halving on a failed read.
        let mut want = size;
        while want >= 256 {
            if let Some(units) = self.read_utf16(ptr, want) {
                return Some(units);
            }
            want /= 2;
        }
        None
    }

    fn read_utf16(&self, addr: usize, units: usize) -> Option<Vec<u16>> {
        let bytes = self.read(addr, units * 2)?;
        Some(
            bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect(),
        )
    }
}

/// What one of a process's standard handles is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdKind {
    /// A pipe (anonymous or named: how hosts give a child its stdio).
    Pipe,
    /// A console or a character device (`NUL`).
    Char,
    /// A file.
    Disk,
    /// None, or what it is cannot be told.
    Unknown,
}

impl Handle {
    /// The kinds of the process's standard input and output (their handles, from its process
    /// parameters, duplicated into debugtop to ask `GetFileType`).
    pub fn stdio_kinds(&self) -> Option<(StdKind, StdKind)> {
        let params = self.parameters()?;
        let stdin = self.read_u64(params + PARAMS_STDIN)?;
        let stdout = self.read_u64(params + PARAMS_STDOUT)?;
        Some((self.kind_of_remote(stdin), self.kind_of_remote(stdout)))
    }

    fn kind_of_remote(&self, remote: u64) -> StdKind {
        use windows_sys::Win32::Foundation::{DuplicateHandle, DUPLICATE_SAME_ACCESS};
        use windows_sys::Win32::Storage::FileSystem::{
            GetFileType, FILE_TYPE_CHAR, FILE_TYPE_DISK, FILE_TYPE_PIPE,
        };
        if remote == 0 {
            return StdKind::Unknown;
        }
        let mut local: HANDLE = std::ptr::null_mut();
        // SAFETY: duplicates a handle value of the other process into this one (Windows checks
        // it is a handle there); the copy is closed by the Handle below. The current-process
        // pseudo-handle needs no closing.
        let ok = unsafe {
            DuplicateHandle(
                self.0,
                remote as HANDLE,
                GetCurrentProcess(),
                &mut local,
                0,
                0,
                DUPLICATE_SAME_ACCESS,
            )
        } != 0;
        if !ok || local.is_null() {
            return StdKind::Unknown;
        }
        let local = Handle(local);
        // SAFETY: a valid handle of this process.
        match unsafe { GetFileType(local.0) } {
            FILE_TYPE_PIPE => StdKind::Pipe,
            FILE_TYPE_CHAR => StdKind::Char,
            FILE_TYPE_DISK => StdKind::Disk,
            _ => StdKind::Unknown,
        }
    }
}

/// Offsets in the 64-bit PEB and process parameters (stable since Windows XP x64; the same
/// under Wine).
const PEB_PARAMETERS: usize = 0x20;
const PARAMS_STDIN: usize = 0x20;
const PARAMS_STDOUT: usize = 0x28;
const PARAMS_COMMAND_LINE: usize = 0x70;
const PARAMS_ENVIRONMENT: usize = 0x80;
const PARAMS_ENVIRONMENT_SIZE: usize = 0x3F0;

/// `PROCESS_BASIC_INFORMATION`, as NtQueryInformationProcess fills it.
#[repr(C)]
struct BasicInformation {
    exit_status: i32,
    peb: usize,
    affinity: usize,
    base_priority: i32,
    pid: usize,
    parent: usize,
}

fn peb_address(h: &Handle) -> Option<usize> {
    use windows_sys::Wdk::System::Threading::{NtQueryInformationProcess, ProcessBasicInformation};
    let mut info = BasicInformation {
        exit_status: 0,
        peb: 0,
        affinity: 0,
        base_priority: 0,
        pid: 0,
        parent: 0,
    };
    let mut len = 0u32;
    // SAFETY: `info` is the documented layout of ProcessBasicInformation, its size passed.
    let status = unsafe {
        NtQueryInformationProcess(
            h.0,
            ProcessBasicInformation,
            (&raw mut info).cast::<c_void>(),
            u32::try_from(std::mem::size_of::<BasicInformation>()).unwrap_or(0),
            &mut len,
        )
    };
    (status >= 0 && info.peb != 0).then_some(info.peb)
}

/// A Windows command line split into arguments the way the C runtime splits it
/// (`CommandLineToArgvW`).
pub fn split_command_line(line: &str) -> Vec<String> {
    if line.trim().is_empty() {
        return Vec::new();
    }
    let wide: Vec<u16> = line.encode_utf16().chain(std::iter::once(0)).collect();
    let mut n = 0i32;
    // SAFETY: `wide` is NUL-terminated; the result is freed with LocalFree below.
    let argv = unsafe { CommandLineToArgvW(wide.as_ptr(), &mut n) };
    if argv.is_null() {
        return vec![line.to_owned()];
    }
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    for i in 0..usize::try_from(n).unwrap_or(0) {
        // SAFETY: argv holds `n` NUL-terminated strings.
        unsafe {
            let p = *argv.add(i);
            let mut len = 0usize;
            while *p.add(len) != 0 {
                len += 1;
            }
            out.push(String::from_utf16_lossy(std::slice::from_raw_parts(p, len)));
        }
    }
    // SAFETY: the block CommandLineToArgvW allocated, freed once.
    unsafe {
        LocalFree(argv.cast::<c_void>());
    }
    out
}

/// The RID of the SID a SID pointer names (its last sub-authority).
///
/// # Safety
/// `sid` must point to a valid SID that outlives the call.
unsafe fn rid_of(sid: windows_sys::Win32::Security::PSID) -> Option<u32> {
    // SAFETY: the caller passes a valid SID.
    unsafe {
        let n = *GetSidSubAuthorityCount(sid);
        (n > 0).then(|| *GetSidSubAuthority(sid, u32::from(n) - 1))
    }
}

/// The RID of the owner of an open file (from its security descriptor).
pub fn file_owner(file: &std::fs::File) -> Option<u32> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_FILE_OBJECT};
    use windows_sys::Win32::Security::{OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID};
    let mut owner: PSID = std::ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: the file's handle is valid while `file` lives; `owner` points into `sd`, which
    // is freed once below.
    unsafe {
        let rc = GetSecurityInfo(
            file.as_raw_handle().cast(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut sd,
        );
        let rid = if rc == 0 && !owner.is_null() {
            rid_of(owner)
        } else {
            None
        };
        if !sd.is_null() {
            LocalFree(sd.cast());
        }
        rid
    }
}

/// Whether this Windows is Wine (its ntdll exports `wine_get_version`).
pub fn is_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    let name: Vec<u16> = "ntdll.dll"
        .encode_utf16()
        .chain(std::iter::once(0))
        .collect();
    // SAFETY: NUL-terminated names; ntdll is loaded in every process and never unloaded.
    unsafe {
        let ntdll = GetModuleHandleW(name.as_ptr());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

/// The user debugtop runs as (the RID of its token's SID).
pub fn own_user() -> Option<u32> {
    // SAFETY: the pseudo-handle of the current process needs no closing; it is wrapped only
    // for the duration of the call and forgotten, never closed.
    let me = std::mem::ManuallyDrop::new(Handle(unsafe { GetCurrentProcess() }));
    me.user_rid()
}

/// Whether debugtop's own token is elevated.
pub fn own_token_elevated() -> bool {
    // SAFETY: as in `own_user`.
    let me = std::mem::ManuallyDrop::new(Handle(unsafe { GetCurrentProcess() }));
    me.elevated()
}

/// The IPv4 and IPv6 listening-socket tables with their owning pids, raw, as
/// `GetExtendedTcpTable` fills them, each with where a row's port and pid are: `(bytes, row
/// size, port offset, pid offset)`. `MIB_TCPROW_OWNER_PID` is 24 bytes (port at 8, pid at
/// 20), `MIB_TCP6ROW_OWNER_PID` 56 (port at 20, pid at 52).
pub fn listening_tables() -> Vec<(Vec<u8>, usize, usize, usize)> {
    use windows_sys::Win32::NetworkManagement::IpHelper::{
        GetExtendedTcpTable, TCP_TABLE_OWNER_PID_LISTENER,
    };
    use windows_sys::Win32::Networking::WinSock::{AF_INET, AF_INET6};
    let mut out = Vec::new();
    for (family, row, port_at, pid_at) in
        [(AF_INET, 24usize, 8usize, 20usize), (AF_INET6, 56, 20, 52)]
    {
        let mut size = 0u32;
        // SAFETY: a null buffer with size 0 asks for the size needed.
        unsafe {
            GetExtendedTcpTable(
                std::ptr::null_mut(),
                &mut size,
                0,
                u32::from(family),
                TCP_TABLE_OWNER_PID_LISTENER,
                0,
            );
        }
        let mut buf = vec![0u32; (size as usize).div_ceil(4) + 64];
        let mut len = u32::try_from(buf.len() * 4).unwrap_or(u32::MAX);
        // SAFETY: `buf` has `len` bytes, 4-aligned as the table is.
        let rc = unsafe {
            GetExtendedTcpTable(
                buf.as_mut_ptr().cast::<c_void>(),
                &mut len,
                0,
                u32::from(family),
                TCP_TABLE_OWNER_PID_LISTENER,
                0,
            )
        };
        if rc == 0 {
            let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_le_bytes()).collect();
            out.push((bytes, row, port_at, pid_at));
        }
    }
    out
}

/// What an exit wait calls.
type OnExit = Box<dyn Fn() + Send + Sync>;

/// A thread-pool wait on a process handle, calling its function once when the process ends.
/// Dropping it unregisters the wait — waiting for a running call to finish — then frees the
/// function and closes the handle.
#[derive(Debug)]
pub struct Registration {
    wait: HANDLE,
    on_exit: *mut OnExit,
    _handle: Handle,
}

// SAFETY: the wait handle and the function's box are owned by the registration alone; the
// thread pool only calls the function, which is Send + Sync.
unsafe impl Send for Registration {}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: `wait` came from RegisterWaitForSingleObject and is unregistered once;
        // INVALID_HANDLE_VALUE makes the call wait until no callback runs, so the box can be
        // freed after it.
        unsafe {
            UnregisterWaitEx(self.wait, INVALID_HANDLE_VALUE);
            drop(Box::from_raw(self.on_exit));
        }
    }
}

unsafe extern "system" fn on_exit(context: *mut c_void, _timed_out: bool) {
    // SAFETY: `context` is the registration's boxed function, alive until the wait is
    // unregistered (which waits for this call).
    let f = unsafe { &*(context as *const OnExit) };
    f();
}

/// Calls `f` once, from a thread-pool thread, when the process of `handle` ends (`None` when
/// the wait cannot be registered).
pub fn register_exit_wait(
    handle: Handle,
    f: impl Fn() + Send + Sync + 'static,
) -> Option<Registration> {
    let boxed: *mut OnExit = Box::into_raw(Box::new(Box::new(f)));
    let mut wait: HANDLE = std::ptr::null_mut();
    // SAFETY: the handle has SYNCHRONIZE; `boxed` stays valid until the registration drops.
    let ok = unsafe {
        RegisterWaitForSingleObject(
            &mut wait,
            handle.0,
            Some(on_exit),
            boxed.cast::<c_void>(),
            INFINITE,
            WT_EXECUTEONLYONCE,
        )
    } != 0;
    if ok {
        Some(Registration {
            wait,
            on_exit: boxed,
            _handle: handle,
        })
    } else {
        // SAFETY: never registered: the box is still ours alone.
        drop(unsafe { Box::from_raw(boxed) });
        None
    }
}

/// A job object (closed on drop; its processes go on running: it never kills on close).
#[derive(Debug)]
pub struct Job(Handle);

impl Job {
    /// A new, unnamed job whose processes may ask to leave it (`CREATE_BREAKAWAY_FROM_JOB`
    /// works as it would without the job, so a command that asks for it still starts; the
    /// caller finds who left by their parent).
    pub fn create() -> std::io::Result<Self> {
        use windows_sys::Win32::System::JobObjects::{
            CreateJobObjectW, JobObjectExtendedLimitInformation, SetInformationJobObject,
            JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_BREAKAWAY_OK,
        };
        // SAFETY: no attributes, no name; a null result is an error.
        let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if h.is_null() {
            return Err(last_error());
        }
        let job = Self(Handle(h));
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_BREAKAWAY_OK;
        let size =
            u32::try_from(std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>()).unwrap_or(0);
        // SAFETY: `limits` is the struct of the class passed, with its size.
        let ok = unsafe {
            SetInformationJobObject(
                (job.0).0,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast::<c_void>(),
                size,
            )
        } != 0;
        if ok {
            Ok(job)
        } else {
            Err(last_error())
        }
    }

    /// Puts the process of `h` (opened with [`Access::Assign`]) into the job.
    pub fn assign(&self, h: &Handle) -> std::io::Result<()> {
        use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
        // SAFETY: two valid handles owned by the caller.
        if unsafe { AssignProcessToJobObject((self.0).0, h.0) } != 0 {
            Ok(())
        } else {
            Err(last_error())
        }
    }

    /// The pids of the job's processes now (those of jobs nested in it among them).
    pub fn pids(&self) -> std::io::Result<Vec<u32>> {
        use windows_sys::Win32::Foundation::ERROR_MORE_DATA;
        use windows_sys::Win32::System::JobObjects::{
            JobObjectBasicProcessIdList, QueryInformationJobObject,
        };
        let mut room = 256usize;
        loop {
            // Two u32 counts (one usize), then the pids as usizes.
            let mut buf = vec![0usize; room + 1];
            let bytes = u32::try_from(buf.len() * std::mem::size_of::<usize>()).unwrap_or(0);
            // SAFETY: `buf` is `bytes` long and usize-aligned, as the list's struct is.
            let ok = unsafe {
                QueryInformationJobObject(
                    (self.0).0,
                    JobObjectBasicProcessIdList,
                    buf.as_mut_ptr().cast::<c_void>(),
                    bytes,
                    std::ptr::null_mut(),
                )
            } != 0;
            let err = (!ok).then(last_error);
            let assigned = usize::try_from(buf[0] as u64 & 0xffff_ffff).unwrap_or(0);
            let listed = usize::try_from(buf[0] as u64 >> 32).unwrap_or(0);
            match err {
                None => {
                    return Ok(buf
                        .iter()
                        .skip(1)
                        .take(listed.min(room))
                        .filter_map(|p| u32::try_from(*p).ok())
                        .collect())
                }
                Some(e) if e.raw_os_error() != i32::try_from(ERROR_MORE_DATA).ok() => {
                    return Err(e)
                }
                Some(_) if room >= 1 << 20 => {
                    return Err(std::io::Error::other(
                        "the job lists over a million processes",
                    ))
                }
                Some(_) => {}
            }
            room = (assigned + 64).max(room * 2);
        }
    }
}

/// Resumes every thread of `pid` (a process started suspended, to be put in a job before it
/// runs): how many were resumed.
pub fn resume_threads(pid: u32) -> std::io::Result<usize> {
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
    };
    use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};
    // SAFETY: plain call; the result is checked against INVALID_HANDLE_VALUE.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(last_error());
    }
    let snap = Handle(snap);
    let mut e = THREADENTRY32 {
        dwSize: u32::try_from(std::mem::size_of::<THREADENTRY32>()).unwrap_or(0),
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: `e` is a THREADENTRY32 with dwSize set, as the API requires.
    let mut ok = unsafe { Thread32First(snap.0, &mut e) } != 0;
    while ok {
        if e.th32OwnerProcessID == pid {
            // SAFETY: plain call; a null result is skipped.
            let t = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, e.th32ThreadID) };
            if !t.is_null() {
                let t = Handle(t);
                // SAFETY: a thread handle opened with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(t.0) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as above.
        ok = unsafe { Thread32Next(snap.0, &mut e) } != 0;
    }
    if resumed == 0 {
        Err(std::io::Error::other(format!(
            "no thread of process {pid} could be resumed"
        )))
    } else {
        Ok(resumed)
    }
}
