//! Whether the listing of `/proc` a scan made last still stands: `/proc/loadavg`'s pid counters
//! (the last pid given out, the number of tasks) move whenever a process is created or reaped,
//! so while they stand the last listing is reused — if they describe the `/proc` listed.

use std::path::Path;

/// Whether `/proc/loadavg`'s pid counters can tell that `root`'s listing stands: `root` is the
/// system's `/proc`, and [`describes_us`].
pub(super) fn counters_trusted(root: &Path) -> bool {
    root == Path::new("/proc") && describes_us(root)
}

/// Whether the procfs at `root` is of debugtop's own pid namespace (`self` names debugtop's
/// pid: not a parent namespace's `/proc` left mounted after `unshare --pid`, where what is
/// created there gives out no pid here) and its `loadavg` is procfs's own (not LXCFS's, which
/// rewrites it every few seconds and says the highest pid instead of the last one given out).
fn describes_us(root: &Path) -> bool {
    let ours = std::fs::read_link(root.join("self"))
        .ok()
        .and_then(|p| p.to_str()?.parse::<u32>().ok())
        == Some(std::process::id());
    ours && is_procfs(&root.join("loadavg"))
}

/// Whether `path` is on a procfs (by the file system's magic number, not its name).
fn is_procfs(path: &Path) -> bool {
    rustix::fs::statfs(path).is_ok_and(|s| s.f_type as u64 == rustix::fs::PROC_SUPER_MAGIC as u64)
}

/// What `/proc/loadavg` says of the process table: the last pid the kernel gave out in
/// debugtop's pid namespace, and how many tasks the machine has. The pids listed in `/proc`
/// change only when a task is created — a pid is given out here, also for a task of a nested
/// namespace, which has a pid in every namespace above it — or reaped (one task fewer; a
/// zombie is still listed): while both stand, the last listing is still the listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PidCounters {
    last_pid: u32,
    tasks: u32,
}

impl PidCounters {
    /// `/proc/loadavg`'s `0.00 0.01 0.05 1/234 5678`: tasks after the `/`, the last pid last.
    /// A zero in either is a file that says nothing (an emulated `/proc` that writes
    /// `0/0 0`): `None`, and every scan lists.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut f = text.split_whitespace().skip(3);
        let tasks = f.next()?.split_once('/')?.1.parse().ok()?;
        let last_pid = f.next()?.parse().ok()?;
        (tasks > 0 && last_pid > 0).then_some(Self { last_pid, tasks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_are_trusted_for_this_systems_proc_only() {
        assert!(
            counters_trusted(Path::new("/proc")),
            "procfs of our namespace"
        );
        // Near misses: another folder laid out like procfs, and the same /proc by another name.
        let d = tempfile::tempdir().expect("dir");
        std::fs::write(d.path().join("loadavg"), "0.00 0.01 0.05 1/234 5678\n").expect("write");
        std::os::unix::fs::symlink(std::process::id().to_string(), d.path().join("self"))
            .expect("link");
        assert!(!counters_trusted(d.path()), "not procfs");
        assert!(!counters_trusted(Path::new("/proc/self/root/proc")));
        // What each check decides on its own (the path alone decided both near misses above):
        // the folder's `self` names us, so only procfs's own `loadavg` tells it apart; the same
        // procfs by another name describes us.
        assert!(describes_us(Path::new("/proc")));
        assert!(
            !describes_us(d.path()),
            "self is ours, the file is not procfs's"
        );
        assert!(describes_us(Path::new("/proc/self/root/proc")));
    }

    /// The `self` check alone: another pid namespace's procfs (a child's own, reached through
    /// its root) is procfs, but `self` there names nobody for debugtop, so its counters would
    /// say nothing of our table.
    #[test]
    fn another_pid_namespaces_procfs_does_not_describe_us() {
        use std::os::unix::fs::MetadataExt;
        let mut child = std::process::Command::new("unshare")
            .args([
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "sleep",
                "60",
            ])
            .spawn()
            .expect("unshare (util-linux) runs");
        let inner = (0..200).find_map(|_| {
            let kids = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
                .unwrap_or_default();
            let pid = kids.split_whitespace().next().map(str::to_owned);
            // Ready once the child's /proc is another procfs than ours (until `--mount-proc`
            // is done it is still ours) and runs `sleep` as its first process.
            let theirs = pid.as_deref().map(|p| format!("/proc/{p}/root/proc"));
            let dev = |p: &str| std::fs::metadata(p).map(|m| m.dev()).ok();
            let ready = theirs.as_deref().is_some_and(|r| {
                dev(r).is_some_and(|d| Some(d) != dev("/proc"))
                    && std::fs::read_to_string(format!("{r}/1/comm"))
                        .is_ok_and(|c| c.trim() == "sleep")
            });
            if !ready {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            ready.then_some(theirs).flatten()
        });
        let verdict = inner.as_deref().map(|r| {
            let r = Path::new(r);
            (is_procfs(&r.join("loadavg")), describes_us(r))
        });
        let _ = child.kill();
        let _ = child.wait();
        let (procfs, ours) = verdict.expect(
            "a child in its own pid namespace with its own /proc: `unshare --pid --mount-proc` \
             needs root; run as root, or `cargo test -- --skip \
             another_pid_namespaces_procfs_does_not_describe_us`",
        );
        assert!(
            procfs,
            "the child's /proc is procfs: only `self` can tell it apart"
        );
        assert!(!ours, "another namespace's procfs describes us");
    }

    #[test]
    fn the_pid_counters_are_read_from_loadavg_and_anything_else_is_none() {
        assert_eq!(
            PidCounters::parse("0.00 0.01 0.05 1/234 5678\n"),
            Some(PidCounters {
                last_pid: 5678,
                tasks: 234
            })
        );
        for bad in [
            "",
            "0.00 0.01 0.05 1/234",
            "0.00 0.01 0.05 234 5678",
            "a b c 1/x 5",
            "0.00 0.00 0.00 0/0 0",
        ] {
            assert_eq!(PidCounters::parse(bad), None, "{bad:?}");
        }
    }
}
