//! What reading every server's logs may cost in one tick, whoever wrote them. A server's logs
//! are its user's files, and any user can start look-alike servers whose logs are hard links of
//! one big file (each "rotated sibling" too): read once per path, a 4 MB file became 120 MB of
//! reading and 665 MB of memory in one look. So a file is read once a tick whatever its names
//! (by device and inode, across servers and siblings: the first server by pid, its own logs
//! before its proxy logs, reads it), and each user's logs get at most [`PER_USER_BYTES`] a tick —
//! the rest is read at the next tick, and the logs' status says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use crate::model::LOG_BYTES_PER_USER as PER_USER_BYTES;

/// One tick's reading: which file each inode was read as, and what each user has left.
#[derive(Debug, Default)]
pub struct LogBudget {
    read_as: HashMap<(u64, u64), PathBuf>,
    spent: HashMap<Option<u32>, u64>,
}

/// Whether a file may be read now, and how much of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    /// Up to this many bytes.
    Bytes(u64),
    /// Its user's budget for this tick is spent: next tick.
    Spent,
    /// The same file was read this tick under another name (a hard link).
    ReadAs(PathBuf),
}

impl LogBudget {
    /// What `path` (the file `identity` is: device and inode) of `user`'s may read now; the
    /// first name a file is asked for claims it for the tick.
    pub fn allow(&mut self, path: &Path, identity: (u64, u64), user: Option<u32>) -> Allowance {
        match self.read_as.get(&identity) {
            Some(first) if first != path => return Allowance::ReadAs(first.clone()),
            Some(_) => {}
            None => {
                self.read_as.insert(identity, path.to_path_buf());
            }
        }
        let left = PER_USER_BYTES.saturating_sub(self.spent.get(&user).copied().unwrap_or(0));
        if left == 0 {
            Allowance::Spent
        } else {
            Allowance::Bytes(left)
        }
    }

    /// Records `n` bytes of `user`'s logs read.
    pub fn spend(&mut self, user: Option<u32>, n: u64) {
        *self.spent.entry(user).or_default() += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_once_a_tick_whatever_its_names_and_a_user_within_a_budget() {
        let mut b = LogBudget::default();
        let (a, link) = (Path::new("/l/a.log"), Path::new("/l/a1.log"));
        assert_eq!(
            b.allow(a, (1, 7), Some(65534)),
            Allowance::Bytes(PER_USER_BYTES)
        );
        assert_eq!(
            b.allow(link, (1, 7), Some(65534)),
            Allowance::ReadAs(a.into())
        );
        // The same name again (the next poll of the same tail) is not a duplicate.
        assert_eq!(
            b.allow(a, (1, 7), Some(65534)),
            Allowance::Bytes(PER_USER_BYTES)
        );
        b.spend(Some(65534), PER_USER_BYTES - 10);
        assert_eq!(
            b.allow(Path::new("/l/b.log"), (1, 8), Some(65534)),
            Allowance::Bytes(10)
        );
        b.spend(Some(65534), 10);
        assert_eq!(
            b.allow(Path::new("/l/c.log"), (1, 9), Some(65534)),
            Allowance::Spent
        );
        // Near miss: another user's logs have their own budget.
        assert_eq!(
            b.allow(Path::new("/r/s.log"), (1, 10), Some(0)),
            Allowance::Bytes(PER_USER_BYTES)
        );
    }
}
