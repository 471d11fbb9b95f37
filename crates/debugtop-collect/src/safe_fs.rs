//! Files named by other processes (a log path in a server's argv, a script's `package.json`),
//! opened without letting them steer debugtop — which may run as root while the file's folder
//! belongs to anyone. [`open_as`] checks before it opens: the path is absolute and has no `..`
//! (not walked), every folder on the way is looked up without following a symbolic link, the
//! last component is looked at without being opened for reading (`O_PATH`, then `fstat`: a
//! device another user names is never opened, so nothing a driver does on open happens), and
//! only a regular file of the right owner is then opened — through the very descriptor that was
//! checked, so nothing can be swapped in between. Non-blocking (a FIFO cannot hang the sampler),
//! reads capped. Everything that opens such a path goes through here.

use std::fs::File;
#[cfg(unix)]
use std::path::Component;
use std::path::Path;

#[cfg(unix)]
use rustix::fs::{Mode, OFlags, CWD};
#[cfg(unix)]
use rustix::io::Errno;
#[cfg(target_os = "linux")]
use std::os::unix::ffi::OsStrExt;

#[cfg(windows)]
pub use windows::open_untrusted;

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

/// Whose file a path from another process may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Exactly this user's (a server's logs: its user writes them).
    Is(u32),
    /// What this user could read itself: its own file, or one of root's that everyone may read
    /// on a path everyone may walk (a package or a script installed by root) — never a file
    /// the user could not open, whoever debugtop runs as.
    ReadableBy(u32),
    /// Not known (the process's user could not be read): only what debugtop's own user may
    /// read, and nothing when debugtop runs elevated.
    Unknown,
}

impl Owner {
    /// `Is` the user when known.
    pub fn is(uid: Option<u32>) -> Self {
        uid.map_or(Self::Unknown, Self::Is)
    }

    /// `ReadableBy` the user when known.
    pub fn readable_by(uid: Option<u32>) -> Self {
        uid.map_or(Self::Unknown, Self::ReadableBy)
    }

    /// The user whose files these are (unknown: debugtop's own).
    fn user(self) -> u32 {
        match self {
            Self::Is(u) | Self::ReadableBy(u) => u,
            Self::Unknown => crate::os::my_uid().unwrap_or(u32::MAX),
        }
    }

    /// Refused before anything is looked up: an unknown owner while debugtop runs elevated.
    fn refused_outright(self) -> Option<Refused> {
        (self == Self::Unknown && crate::os::privileged()).then(|| {
            Refused::Io(std::io::Error::other(
                "whose process named it cannot be told and debugtop runs elevated: not read",
            ))
        })
    }
}

/// Why a path from another process was not opened.
#[derive(Debug)]
pub enum Refused {
    /// It does not exist (yet).
    Missing,
    /// A symbolic link on the way or at its end: not followed.
    Link,
    /// A `..` in it (not walked), or not absolute.
    NotPlain,
    /// Not a regular file: a device, a FIFO, a socket or a folder — never opened for reading.
    NotRegular(&'static str),
    /// Another user's file than the one it had to be.
    Owner {
        /// Whose it is.
        got: u32,
        /// Whose it had to be.
        want: u32,
    },
    /// The user it is read for could not read it (a folder on the way, or the file itself,
    /// is closed to them).
    ClosedTo(u32),
    /// The system said no.
    Io(std::io::Error),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => write!(f, "it does not exist"),
            Self::Link => write!(f, "a symbolic link in its path: not followed"),
            Self::NotPlain => write!(f, "not a plain absolute path (a `..` is not walked)"),
            Self::NotRegular(what) => write!(f, "not a regular file ({what}): not opened"),
            Self::Owner { got, want } => write!(
                f,
                "owned by uid {got}, not by uid {want} whose process named it: not read (a \
                 process can point debugtop only at its own user's files)"
            ),
            Self::ClosedTo(u) => write!(
                f,
                "uid {u}, whose process named it, could not read it itself: not read"
            ),
            Self::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<std::io::Error> for Refused {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => Self::Missing,
            _ if is_link_refusal(&e) => Self::Link,
            _ => Self::Io(e),
        }
    }
}

/// Opens, for reading, a file a process of `owner`'s user named (see the module doc): checked
/// before it is opened, opened through the descriptor that was checked.
#[cfg(target_os = "linux")]
pub fn open_as(path: &Path, owner: Owner) -> Result<File, Refused> {
    use rustix::fs::FileType;
    if let Some(r) = owner.refused_outright() {
        return Err(r);
    }
    let checks = PathChecks::for_reader(owner.user());
    let (leaf, st, walked_open) = look_up(path, checks)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => return Err(Refused::Link),
        other => return Err(Refused::NotRegular(file_type_words(other))),
    }
    let readable_by_all = st.st_mode & 0o004 != 0 && walked_open;
    let ok = match owner {
        Owner::Is(u) => st.st_uid == u,
        Owner::ReadableBy(u) => {
            (st.st_uid == u && st.st_mode & 0o400 != 0) || (st.st_uid == 0 && readable_by_all)
        }
        Owner::Unknown => true,
    };
    if !ok {
        return Err(match owner {
            Owner::ReadableBy(u) if st.st_uid == u || st.st_uid == 0 => Refused::ClosedTo(u),
            _ => Refused::Owner {
                got: st.st_uid,
                want: owner.user(),
            },
        });
    }
    reopen(&leaf, &st)
}

/// Which checks a walk makes on the way: none beyond the kernel's own when the file is read for
/// debugtop's own user (or root); for another user, whether each folder lets them through.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
struct PathChecks {
    /// The other user the file is read for (`None`: for debugtop's own user, or root).
    for_user: Option<u32>,
}

#[cfg(target_os = "linux")]
impl PathChecks {
    fn for_reader(u: u32) -> Self {
        let mine = crate::os::my_uid() == Some(u);
        Self {
            for_user: (!mine && u != 0).then_some(u),
        }
    }
}

/// Looks `path` up one component at a time (`O_PATH`, never following a link, never walking
/// `..`), checking each folder lets the reader through; returns the last component's
/// descriptor (not open for reading), its `fstat`, and whether every folder on the way is open
/// to everyone.
#[cfg(target_os = "linux")]
fn look_up(
    path: &Path,
    checks: PathChecks,
) -> Result<(rustix::fd::OwnedFd, rustix::fs::Stat, bool), Refused> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut parts = path.components();
    if parts.next() != Some(Component::RootDir) {
        return Err(Refused::NotPlain);
    }
    let names: Vec<&std::ffi::OsStr> = parts
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(Refused::NotPlain),
        })
        .collect::<Result<_, _>>()?;
    let mut at = rustix::fs::open("/", flags | OFlags::DIRECTORY, Mode::empty())
        .map_err(std::io::Error::from)?;
    let mut open_to_all = true;
    for (i, name) in names.iter().enumerate() {
        let st = rustix::fs::fstat(&at).map_err(std::io::Error::from)?;
        open_to_all &= st.st_mode & 0o001 != 0;
        if let Some(u) = checks.for_user {
            let own_search = st.st_uid == u && st.st_mode & 0o100 != 0;
            if !own_search && st.st_mode & 0o001 == 0 {
                return Err(Refused::ClosedTo(u));
            }
        }
        let last = i + 1 == names.len();
        let next =
            rustix::fs::openat(&at, *name, flags, Mode::empty()).map_err(std::io::Error::from)?;
        if !last {
            let st = rustix::fs::fstat(&next).map_err(std::io::Error::from)?;
            if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
                return Err(
                    if rustix::fs::FileType::from_raw_mode(st.st_mode)
                        == rustix::fs::FileType::Symlink
                    {
                        Refused::Link
                    } else {
                        Refused::Missing
                    },
                );
            }
        }
        at = next;
    }
    if names.is_empty() {
        return Err(Refused::NotRegular("a folder"));
    }
    let st = rustix::fs::fstat(&at).map_err(std::io::Error::from)?;
    Ok((at, st, open_to_all))
}

/// Opens for reading the file `leaf` (an `O_PATH` descriptor) is, through `/proc/self/fd` —
/// the same inode, whatever happened to its name since it was checked; the identity is checked
/// again after.
#[cfg(target_os = "linux")]
fn reopen(leaf: &rustix::fd::OwnedFd, checked: &rustix::fs::Stat) -> Result<File, Refused> {
    use rustix::fd::AsRawFd;
    let fd = rustix::fs::open(
        format!("/proc/self/fd/{}", leaf.as_raw_fd()),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(std::io::Error::from)?;
    let st = rustix::fs::fstat(&fd).map_err(std::io::Error::from)?;
    if (st.st_dev, st.st_ino) != (checked.st_dev, checked.st_ino) {
        return Err(Refused::Io(std::io::Error::other(
            "it changed while it was opened: not read",
        )));
    }
    Ok(File::from(fd))
}

/// Whether a regular file a process of `owner`'s user named is there for it ([`open_as`]'s
/// checks, without reading it).
pub fn exists_as(path: &Path, owner: Owner) -> bool {
    open_as(path, owner).is_ok()
}

/// The names in a folder a process of `owner`'s user named (at most `max`, and whether there
/// were more): the folder looked up as [`open_as`] looks a file up, and of that user
/// (`Owner::Is`) or open to them (`Owner::ReadableBy`).
#[cfg(target_os = "linux")]
pub fn list_dir_as(
    path: &Path,
    owner: Owner,
    max: usize,
) -> Result<(Vec<std::ffi::OsString>, bool), Refused> {
    use rustix::fs::FileType;
    if let Some(r) = owner.refused_outright() {
        return Err(r);
    }
    let (dir, st, _) = look_up(path, PathChecks::for_reader(owner.user()))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {}
        FileType::Symlink => return Err(Refused::Link),
        other => return Err(Refused::NotRegular(file_type_words(other))),
    }
    let ok = match owner {
        Owner::Is(u) => st.st_uid == u,
        Owner::ReadableBy(u) => {
            (st.st_uid == u && st.st_mode & 0o500 == 0o500) || st.st_mode & 0o005 == 0o005
        }
        Owner::Unknown => true,
    };
    if !ok {
        return Err(Refused::Owner {
            got: st.st_uid,
            want: owner.user(),
        });
    }
    let fd = rustix::fs::openat(
        &dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(std::io::Error::from)?;
    let mut entries = rustix::fs::Dir::read_from(&fd).map_err(std::io::Error::from)?;
    let mut names = Vec::new();
    for entry in entries.by_ref() {
        let entry = entry.map_err(std::io::Error::from)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if names.len() == max {
            return Ok((names, true));
        }
        names.push(std::ffi::OsStr::from_bytes(name).to_owned());
    }
    Ok((names, false))
}

/// Other systems: the folder read as it is, bounded.
#[cfg(not(target_os = "linux"))]
pub fn list_dir_as(
    path: &Path,
    _owner: Owner,
    max: usize,
) -> Result<(Vec<std::ffi::OsString>, bool), Refused> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(path)? {
        if names.len() == max {
            return Ok((names, true));
        }
        names.push(e?.file_name());
    }
    Ok((names, false))
}

/// A file type in words.
#[cfg(target_os = "linux")]
fn file_type_words(t: rustix::fs::FileType) -> &'static str {
    use rustix::fs::FileType;
    match t {
        FileType::Directory => "a folder",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        _ => "not a file",
    }
}

/// Other systems: the old open, then the checks ([`open_owned`]).
#[cfg(not(target_os = "linux"))]
pub fn open_as(path: &Path, owner: Owner) -> Result<File, Refused> {
    if path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(Refused::NotPlain);
    }
    if let Some(r) = owner.refused_outright() {
        return Err(r);
    }
    let f = open_untrusted(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(Refused::NotRegular("not a regular file"));
    }
    match crate::os::file_owner(&f, &meta) {
        Some(got) if got != owner.user() && matches!(owner, Owner::Is(_)) => Err(Refused::Owner {
            got,
            want: owner.user(),
        }),
        // The OS keeps owners out of metadata (Windows): its access checks stand in, unless
        // debugtop may read every user's files.
        None if crate::os::privileged() => Err(Refused::Io(std::io::Error::other(
            "its owner cannot be told here and debugtop runs elevated",
        ))),
        _ => Ok(f),
    }
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

/// Windows: no `openat`; each component is checked not to be a reparse point (a symbolic
/// link or a junction) and the file is opened without following one at its last component.
/// The check of the folders and the open are two steps (a folder swapped in between is not
/// caught, unlike the Unix walk): written down in docs/platforms.md.
#[cfg(windows)]
mod windows {
    use std::fs::{File, OpenOptions};
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
}

/// Who may read a file debugtop writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Its user alone (0600): an export, settings — what may name processes and paths.
    Private,
    /// Everyone (0644): metrics for node_exporter's textfile collector, which runs as its own
    /// user; they hold counts of fixed names, nothing of the machine's processes or paths.
    Readable,
}

impl Visibility {
    #[cfg(unix)]
    fn mode(self) -> u32 {
        match self {
            Self::Private => 0o600,
            Self::Readable => 0o644,
        }
    }
}

/// Writes `contents` to `path` atomically: a new temporary file in the same folder, then a
/// rename, so a reader never sees half a snapshot (or a scrape half a textfile). Safe in a folder others can write to (root
/// exporting into `/tmp`): the temporary file is created `O_EXCL | O_NOFOLLOW`, mode 0600, so
/// a planted link or file under its name is never followed or reused (another name is tried);
/// its mode is `visibility`'s, set at creation (nothing can open it in between);
/// a symbolic link at `path` is replaced, never followed; and a device, FIFO or socket at
/// `path` is refused, never replaced (`--out /dev/null` must not turn the machine's
/// `/dev/null` into a file).
#[cfg(unix)]
pub fn write_atomic(path: &Path, contents: &[u8], visibility: Visibility) -> std::io::Result<()> {
    write_atomic_named(path, contents, visibility, temporary_name)
}

/// [`write_atomic`] with the temporary file's names from `names` (a test plants a link at
/// exactly the name that will be tried).
#[cfg(unix)]
fn write_atomic_named(
    path: &Path,
    contents: &[u8],
    visibility: Visibility,
    names: impl Fn(&str, u32) -> String,
) -> std::io::Result<()> {
    let (dir, name) = folder_and_name(path)?;
    let dir = rustix::fs::open(dir, DIR_FLAGS, Mode::empty())?;
    refuse_special(&dir, name)?;
    let (tmp, file) = create_temporary(&dir, &name.to_string_lossy(), visibility, names)?;
    let result = (|| {
        let mut f = File::from(file);
        std::io::Write::write_all(&mut f, contents)?;
        f.sync_all()?;
        refuse_special(&dir, name)?;
        rustix::fs::renameat(&dir, &tmp, &dir, name)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(&dir, &tmp, rustix::fs::AtFlags::empty());
    }
    result
}

/// An error when `name` in `dir` is something other than a regular file or a symbolic link
/// (which a rename replaces without following).
#[cfg(unix)]
fn refuse_special(dir: &rustix::fd::OwnedFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, FileType};
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile | FileType::Symlink => Ok(()),
            FileType::Directory => Err(std::io::Error::other("it is a folder")),
            _ => Err(std::io::Error::other(
                "it is not a regular file (a device, FIFO or socket): not replaced — use \
                 --out - to write to standard output",
            )),
        },
        Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The temporary file's name for `name` at `attempt`: `.NAME.<pid>.<nanoseconds><attempt>.tmp`.
#[cfg(unix)]
fn temporary_name(name: &str, attempt: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(".{name}.{}.{nanos:x}{attempt}.tmp", std::process::id())
}

/// A new file in `dir` named by `names`, created exclusively (never an existing file or
/// link), with `visibility`'s mode.
#[cfg(unix)]
fn create_temporary(
    dir: &rustix::fd::OwnedFd,
    name: &str,
    visibility: Visibility,
    names: impl Fn(&str, u32) -> String,
) -> std::io::Result<(String, rustix::fd::OwnedFd)> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // The umask must not narrow a readable textfile: the mode is set on the open descriptor.
    let mut last = None;
    for attempt in 0..16u32 {
        let tmp = names(name, attempt);
        match rustix::fs::openat(dir, &tmp, flags, Mode::from_raw_mode(visibility.mode())) {
            Ok(fd) => {
                rustix::fs::fchmod(&fd, Mode::from_raw_mode(visibility.mode()))?;
                return Ok((tmp, fd));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or_else(|| std::io::Error::other("no temporary file"), Into::into))
}

/// The folder a file is written in (`.` for a bare name) and the file's name.
fn folder_and_name(path: &Path) -> std::io::Result<(&Path, &std::ffi::OsStr)> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path names no file"))?;
    Ok((dir, name))
}

/// Windows: the same steps with what Windows has — a temporary file created new (`CREATE_NEW`
/// never opens an existing file or link), written, flushed, then renamed over `path`
/// (`MoveFileEx` replaces a link at `path`, never its target); a folder at `path` is refused.
#[cfg(windows)]
pub fn write_atomic(path: &Path, contents: &[u8], _visibility: Visibility) -> std::io::Result<()> {
    let (dir, name) = folder_and_name(path)?;
    let name = name.to_string_lossy().into_owned();
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(std::io::Error::other("it is a folder"));
    }
    let mut last = None;
    for attempt in 0..16u32 {
        let tmp = dir.join(format!(".{name}.{}.{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(mut f) => {
                let result = std::io::Write::write_all(&mut f, contents)
                    .and_then(|()| f.sync_all())
                    .and_then(|()| {
                        drop(f);
                        std::fs::rename(&tmp, path)
                    });
                if result.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                return result;
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary file")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;

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
        assert!(open_as(&f, Owner::Is(mine)).is_ok());
        assert!(matches!(
            open_as(&f, Owner::Is(mine + 1)),
            Err(Refused::Owner { got, want }) if got == mine && want == mine + 1
        ));
        assert!(matches!(
            open_as(d.path(), Owner::Is(mine)),
            Err(Refused::NotRegular("a folder"))
        ));
        let owner_of_null = std::fs::metadata("/dev/null").unwrap().uid();
        assert!(matches!(
            open_as(Path::new("/dev/null"), Owner::Is(owner_of_null)),
            Err(Refused::NotRegular("a device"))
        ));
        assert!(matches!(
            open_as(&d.path().join("absent.log"), Owner::Is(mine)),
            Err(Refused::Missing)
        ));
    }

    #[test]
    fn a_link_or_a_dot_dot_anywhere_on_the_way_is_refused_before_anything_opens() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f.log"), "x\n").unwrap();
        let mine = std::fs::metadata(&real).unwrap().uid();
        std::os::unix::fs::symlink(&real, d.path().join("link")).unwrap();
        std::os::unix::fs::symlink(real.join("f.log"), d.path().join("l.log")).unwrap();
        for (path, why) in [
            (d.path().join("link/f.log"), "link"),
            (d.path().join("l.log"), "link"),
            (real.join("../real/f.log"), "plain"),
            (PathBuf::from("real/f.log"), "plain"),
        ] {
            let r = open_as(&path, Owner::Is(mine));
            let ok = match why {
                "link" => matches!(r, Err(Refused::Link)),
                _ => matches!(r, Err(Refused::NotPlain)),
            };
            assert!(ok, "{} gave {:?}", path.display(), r.map(|_| ()));
        }
        // Near miss: the file by its own plain path.
        assert!(open_as(&real.join("f.log"), Owner::Is(mine)).is_ok());
    }

    #[test]
    fn a_file_is_read_for_another_user_only_if_they_could_read_it_themselves() {
        assert!(
            rustix::process::getuid().is_root(),
            "this test gives files to another user (uid 65534), so it must run as root (as CI \
             does): run `make test` as root, or `cargo test -- --skip \
             a_file_is_read_for_another_user_only_if_they_could_read_it_themselves`"
        );
        use std::os::unix::fs::PermissionsExt;
        let other = 65534;
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        // Root's private folder with a file everyone could read, were the folder open.
        let private = d.path().join("private");
        std::fs::create_dir(&private).unwrap();
        mode(&private, 0o700);
        std::fs::write(private.join("package.json"), "{}").unwrap();
        mode(&private.join("package.json"), 0o644);
        assert!(matches!(
            open_as(&private.join("package.json"), Owner::ReadableBy(other)),
            Err(Refused::ClosedTo(65534))
        ));
        // The same folder open to everyone: root's public file is readable by them.
        mode(&private, 0o755);
        assert!(open_as(&private.join("package.json"), Owner::ReadableBy(other)).is_ok());
        // …but not a file only root may read.
        mode(&private.join("package.json"), 0o600);
        assert!(open_as(&private.join("package.json"), Owner::ReadableBy(other)).is_err());
        // Their own file, in a folder of theirs.
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("x.log"), "x").unwrap();
        for p in [&theirs, &theirs.join("x.log")] {
            rustix::fs::chown(
                p,
                Some(rustix::process::Uid::from_raw(other)),
                Some(rustix::process::Gid::from_raw(other)),
            )
            .unwrap();
        }
        mode(&theirs, 0o700);
        assert!(open_as(&theirs.join("x.log"), Owner::ReadableBy(other)).is_ok());
        assert!(open_as(&theirs.join("x.log"), Owner::Is(other)).is_ok());
        assert!(open_as(&theirs.join("x.log"), Owner::Is(0)).is_err());
    }

    #[test]
    fn a_folder_is_listed_only_if_it_is_the_owners_and_only_so_far() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::create_dir(d.path().join(format!("run-{i}"))).unwrap();
        }
        let mine = std::fs::metadata(d.path()).unwrap().uid();
        let (all, more) = list_dir_as(d.path(), Owner::Is(mine), 100).unwrap();
        assert_eq!((all.len(), more), (10, false));
        let (some, more) = list_dir_as(d.path(), Owner::Is(mine), 4).unwrap();
        assert_eq!((some.len(), more), (4, true));
        assert!(matches!(
            list_dir_as(d.path(), Owner::Is(mine + 1), 100),
            Err(Refused::Owner { .. })
        ));
        std::os::unix::fs::symlink(d.path(), d.path().join("run-link")).unwrap();
        assert!(matches!(
            list_dir_as(&d.path().join("run-link"), Owner::Is(mine), 100),
            Err(Refused::Link)
        ));
    }
    #[test]
    fn atomic_write_replaces_whole_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        write_atomic(&p, b"first", Visibility::Private).unwrap();
        write_atomic(&p, b"second", Visibility::Private).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["s.json"], "no temporary file left behind");
        assert!(write_atomic(
            Path::new("/nonexistent/dir/s.json"),
            b"x",
            Visibility::Private
        )
        .is_err());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "exports are the user's alone");
    }

    #[test]
    fn regression_a_planted_link_is_replaced_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        // A link at the target itself, and at exactly the name the first attempt will use:
        // the exclusive, no-follow create must refuse it and take the next name.
        let first = |name: &str, attempt: u32| format!(".{name}.planted{attempt}.tmp");
        std::os::unix::fs::symlink(&victim, dir.path().join(first("r.json", 0))).unwrap();
        let target = dir.path().join("r.json");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_atomic_named(&target, b"report", Visibility::Private, first).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let meta = std::fs::symlink_metadata(&target).unwrap();
        assert!(
            meta.file_type().is_file(),
            "the link was replaced by the file"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"report");
        // A plain file planted at the name is never reused either.
        std::fs::write(dir.path().join(first("s.json", 0)), b"theirs").unwrap();
        write_atomic_named(
            &dir.path().join("s.json"),
            b"mine",
            Visibility::Private,
            first,
        )
        .unwrap();
        assert_eq!(
            std::fs::read(dir.path().join(first("s.json", 0))).unwrap(),
            b"theirs"
        );
        assert_eq!(std::fs::read(dir.path().join("s.json")).unwrap(), b"mine");
    }

    #[test]
    fn a_textfile_is_readable_by_everyone_and_an_export_by_its_user_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let prom = dir.path().join("debugtop.prom");
        write_atomic(&prom, b"x 1\n", Visibility::Readable).unwrap();
        let mode = std::fs::metadata(&prom).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn regression_a_fifo_or_device_at_the_target_is_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = write_atomic(&fifo, b"x", Visibility::Private)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        // A socket too (a device node needs root to make: the CLI's test makes one).
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert!(write_atomic(&sock, b"x", Visibility::Private).is_err());
        assert!(std::fs::symlink_metadata(&sock)
            .unwrap()
            .file_type()
            .is_socket());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file left behind");
    }
}
