//! Files named by other processes (a log path in a server's argv, a script's `package.json`),
//! opened without letting them steer debugtop — which may run as root while the file's folder
//! belongs to anyone: no symbolic link followed in any component of a log's path, non-blocking
//! (a FIFO named as a log cannot hang the sampler), only regular files read, of the user the
//! file should belong to, reads capped. Everything that opens such a path goes through here.

use std::fs::File;
#[cfg(unix)]
use std::io::Read;
#[cfg(unix)]
use std::path::Component;
use std::path::Path;

#[cfg(unix)]
use rustix::fs::{Mode, OFlags, CWD};
#[cfg(unix)]
use rustix::io::Errno;

#[cfg(windows)]
pub use windows::{open_untrusted, read_small};

#[cfg(unix)]
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);

/// Opens a path that came from another process, following no symbolic link in any of its
/// components (`openat2` with `RESOLVE_NO_SYMLINKS`; where the kernel or a seccomp filter
/// lacks it, and on other systems, the same by a walk of `O_NOFOLLOW` opens, one component at a
/// time). A folder swapped for a link to `/etc` between two reads is refused (`ELOOP`), not
/// followed. The caller checks that what opened is a regular file before reading
/// ([`open_owned`] does).
#[cfg(unix)]
pub fn open_untrusted(path: &Path) -> std::io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(CWD, path, READ_FLAGS, Mode::empty(), resolve) {
            Err(Errno::NOSYS | Errno::PERM) => walk(path),
            r => Ok(File::from(r?)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    walk(path)
}

/// How a folder on the way is opened: only to look up the next name.
#[cfg(target_os = "linux")]
pub(crate) const DIR_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// [`open_untrusted`] without `openat2`: each folder opened `O_NOFOLLOW` from the last, so no
/// component can be a link.
#[cfg(unix)]
fn walk(path: &Path) -> std::io::Result<File> {
    let dir_flags = DIR_FLAGS | OFlags::NOFOLLOW;
    let mut parts: Vec<Component<'_>> = path.components().collect();
    let Some(Component::Normal(last)) = parts.pop() else {
        return Err(Errno::INVAL.into());
    };
    let mut dir = rustix::fs::openat(CWD, ".", dir_flags, Mode::empty())?;
    for c in parts {
        let name = match c {
            Component::RootDir => Path::new("/").as_os_str(),
            Component::CurDir => continue,
            Component::ParentDir => "..".as_ref(),
            Component::Normal(n) => n,
            Component::Prefix(_) => return Err(Errno::INVAL.into()),
        };
        dir = rustix::fs::openat(&dir, name, dir_flags, Mode::empty())?;
    }
    Ok(File::from(rustix::fs::openat(
        &dir,
        last,
        READ_FLAGS,
        Mode::empty(),
    )?))
}

/// Opens a file another process named, as [`open_untrusted`], and only a regular file owned by
/// `owner` (when given): a server's files are read for the server's user, never a file of
/// another user it pointed at.
pub fn open_owned(path: &Path, owner: Option<u32>) -> Option<File> {
    let f = open_untrusted(path).ok()?;
    let meta = f.metadata().ok()?;
    let owned = match (owner, crate::os::file_owner(&f, &meta)) {
        (None, _) => true,
        (Some(want), Some(got)) => want == got,
        // The owner is not in the metadata here (Windows): the OS's access checks stand in,
        // unless debugtop may read every user's files.
        (Some(_), None) => !crate::os::privileged(),
    };
    (meta.is_file() && owned).then_some(f)
}

/// Whether an open failed because a symbolic link (or, on Windows, any reparse point) was on
/// the way.
pub fn is_link_refusal(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
    }
    #[cfg(windows)]
    {
        e.kind() == std::io::ErrorKind::Other && e.to_string().contains(windows::LINK_REFUSED)
    }
}

/// A regular file's text, at most `cap` bytes, never following a symbolic link at its last
/// component (a script's `package.json`, reached through the folders the script's own path
/// names).
#[cfg(unix)]
pub fn read_small(path: &Path, cap: u64) -> Option<String> {
    let fd = rustix::fs::open(path, READ_FLAGS, Mode::empty()).ok()?;
    let f = File::from(fd);
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.take(cap).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Windows: no `openat`; each component is checked not to be a reparse point (a symbolic
/// link or a junction) and the file is opened without following one at its last component.
/// The check of the folders and the open are two steps (a folder swapped in between is not
/// caught, unlike the Unix walk): written down in docs/platforms.md.
#[cfg(windows)]
mod windows {
    use std::fs::{File, OpenOptions};
    use std::io::Read;
    use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
    const SHARE_ALL: u32 = 0x1 | 0x2 | 0x4;
    pub(super) const LINK_REFUSED: &str = "a symbolic link or junction on the way: not followed";

    fn refused() -> std::io::Error {
        std::io::Error::other(LINK_REFUSED)
    }

    /// See the Unix [`super::open_untrusted`].
    pub fn open_untrusted(path: &Path) -> std::io::Result<File> {
        for folder in path.ancestors().skip(1) {
            if folder.as_os_str().is_empty() || folder.parent().is_none() {
                continue;
            }
            let meta = std::fs::symlink_metadata(folder)?;
            if meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
                return Err(refused());
            }
        }
        let f = OpenOptions::new()
            .read(true)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?;
        if f.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(refused());
        }
        Ok(f)
    }

    /// See the Unix [`super::read_small`].
    pub fn read_small(path: &Path, cap: u64) -> Option<String> {
        let f = OpenOptions::new()
            .read(true)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)
            .ok()?;
        let meta = f.metadata().ok()?;
        if !meta.is_file() || meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return None;
        }
        let mut text = String::new();
        f.take(cap).read_to_string(&mut text).ok()?;
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn regression_a_folder_swapped_for_a_link_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f.log"), "secret\n").unwrap();
        std::os::unix::fs::symlink(&real, d.path().join("link")).unwrap();
        let through = d.path().join("link/f.log");
        assert_eq!(
            open_untrusted(&through).unwrap_err().raw_os_error(),
            Some(Errno::LOOP.raw_os_error())
        );
        assert!(walk(&through).is_err(), "the walk refuses it too");
        // Near miss: the same file by its own path opens, both ways.
        assert!(open_untrusted(&real.join("f.log")).is_ok());
        assert!(walk(&real.join("f.log")).is_ok());
        // A link as the last component is refused as before.
        std::os::unix::fs::symlink(real.join("f.log"), d.path().join("l.log")).unwrap();
        assert!(open_untrusted(&d.path().join("l.log")).is_err());
        assert!(walk(&d.path().join("l.log")).is_err());
    }

    #[test]
    fn only_a_regular_file_of_the_expected_owner_opens() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f.log");
        std::fs::write(&f, "x\n").unwrap();
        let mine = std::fs::metadata(&f).unwrap().uid();
        assert!(open_owned(&f, Some(mine)).is_some());
        assert!(open_owned(&f, None).is_some());
        assert!(open_owned(&f, Some(mine + 1)).is_none());
        assert!(open_owned(d.path(), None).is_none(), "a folder");
        assert!(
            open_owned(Path::new("/dev/null"), None).is_none(),
            "a device"
        );
    }
}
