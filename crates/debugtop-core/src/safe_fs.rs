//! Files named by other processes (a log path in a server's argv, a script's `package.json`),
//! opened without letting them steer debugtop: no symbolic link followed at the last component,
//! non-blocking (a FIFO named as a log cannot hang the sampler), only regular files read, and
//! reads capped. Everything that opens such a path goes through here.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Opens a path that came from another process. The caller checks that what opened is a
/// regular file before reading ([`read_small`] does).
pub fn open_untrusted(path: &Path) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// A regular file's text, at most `cap` bytes, opened as untrusted.
pub fn read_small(path: &Path, cap: u64) -> Option<String> {
    let f = open_untrusted(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.take(cap).read_to_string(&mut text).ok()?;
    Some(text)
}
