//! The few facts about debugtop's own process and its files that each OS answers its own way:
//! who it runs as, whether it may act for every user, who owns a file, how many handles it may
//! hold. Everything above asks here instead of calling the OS.

/// The user debugtop runs as: the uid on Unix; on Windows the relative id (last sub-authority)
/// of its token's user SID, the same number the Windows collector gives a process's owner.
pub fn my_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        Some(rustix::process::getuid().as_raw())
    }
    #[cfg(windows)]
    {
        crate::win32::own_user()
    }
}

/// Whether debugtop can act for every user: root (effective uid 0) on Unix, an elevated token
/// on Windows. Checks that protect other users' files apply with the most care then.
pub fn privileged() -> bool {
    #[cfg(unix)]
    {
        rustix::process::geteuid().is_root()
    }
    #[cfg(windows)]
    {
        crate::win32::own_token_elevated()
    }
}

/// Who owns an open file: its uid on Unix; on Windows the RID of the owner SID in its
/// security descriptor (`None` when it cannot be read).
pub fn file_owner(file: &std::fs::File, meta: &std::fs::Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = file;
        Some(meta.uid())
    }
    #[cfg(windows)]
    {
        let _ = meta;
        crate::win32::file_owner(file)
    }
}

/// Who owns the file at `path` (not following a link), without opening it: Unix only (for
/// saying whose a file that cannot be opened is).
pub fn path_owner(path: &std::path::Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).ok().map(|m| m.uid())
    }
    #[cfg(windows)]
    {
        let _ = path;
        None
    }
}

/// How many file descriptors this process may hold, when the OS has such a limit.
pub fn fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(windows)]
    {
        None
    }
}

/// The system's release in words: the kernel release on Linux (`6.1.0-…`), `windows` on
/// Windows (`windows (Wine)` under Wine, whose files would otherwise show the Linux host's).
pub fn release() -> Option<String> {
    #[cfg(windows)]
    {
        Some(if crate::win32::is_wine() {
            "windows (Wine)".to_owned()
        } else {
            "windows".to_owned()
        })
    }
    #[cfg(not(windows))]
    {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|k| k.trim().to_owned())
    }
}
