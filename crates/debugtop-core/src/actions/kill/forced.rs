//! `--force`: a pid outside every monitored tree, read from the system now as a process of no
//! role (and, with `--tree`, its descendants), so a plan can name it and execution can check its
//! identity like any other.

use crate::collect;
use crate::model::{KillPlan, LiveTable, Proc, ProcFacts, ProcSample, Role};

/// The live table plus `pid` (and, with `tree`, its descendants) read from the system now, as
/// processes of no role: what `--force` lets a plan target. A descendant is a process whose
/// parent pid names one already taken and that started after it (on Windows a parent pid may
/// have been reused).
pub(super) fn with_forced(live: &LiveTable, pid: u32, tree: bool) -> LiveTable {
    let mut table = live.clone();
    let mut frontier = vec![pid];
    let links = if tree {
        collect::parent_links()
    } else {
        Vec::new()
    };
    while let Some(p) = frontier.pop() {
        if table.get(p).is_none() {
            let Some(proc) = read_forced(p) else { continue };
            table.procs.push(std::sync::Arc::new(proc));
        }
        let Some(born) = table.get(p).map(|q| q.start_ticks) else {
            continue;
        };
        frontier.extend(
            links
                .iter()
                .filter(|(q, parent)| *parent == p && *q != p && table.get(*q).is_none())
                .filter(|(q, _)| collect::glance(*q).is_some_and(|g| g.start_ticks >= born))
                .map(|(q, _)| *q),
        );
    }
    table
}

/// The live table plus every target of `plan` that is not in it, read from the system now:
/// what a plan made with `--force` is checked against before execution (identities included:
/// a forced pid reused since the plan is refused like any other).
pub fn with_forced_targets(live: &LiveTable, plan: &KillPlan) -> LiveTable {
    plan.targets
        .iter()
        .fold(live.clone(), |table, t| with_forced(&table, t.pid, false))
}

/// The live table plus each of `pids` that is not in it, read from the system now as a
/// process of no role: what `run` plans the end of its survivors against.
pub fn with_processes(live: &LiveTable, pids: &[u32]) -> LiveTable {
    pids.iter()
        .fold(live.clone(), |table, pid| with_forced(&table, *pid, false))
}

fn read_forced(pid: u32) -> Option<Proc> {
    let g = collect::glance(pid)?;
    let epoch = chrono::DateTime::UNIX_EPOCH;
    Some(Proc {
        facts: ProcFacts {
            ppid: g.ppid,
            pgid: g.pgid,
            sid: g.sid,
            uid: g.uid,
            ..ProcFacts::new(pid, g.start_ticks, epoch, Role::Other, g.argv)
        },
        sample: ProcSample {
            state: g.state,
            cpu_percent: None,
            rss_bytes: 0,
            stdio_quiet_since: None,
        },
    })
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    /// A child of this test, ended (by the test) when dropped.
    struct Child(std::process::Child);
    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A grandchild of this test (the shell's `sleep`, reparented when the shell is killed),
    /// killed when dropped while it is still the process it was. Without it the `sleep` outlived
    /// the test by a minute, holding its output (nextest's "leaky").
    struct Grandchild(u32, u64);
    impl Drop for Grandchild {
        fn drop(&mut self) {
            let same = collect::glance(self.0).is_some_and(|g| g.start_ticks == self.1);
            let pid = i32::try_from(self.0)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let (true, Some(pid)) = (same, pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }

    #[test]
    fn a_forced_pid_and_its_descendants_are_read_from_the_system_with_their_identities() {
        // sh, and a sleep it started: the test's own processes.
        let sh = Child(
            std::process::Command::new("sh")
                .args(["-c", "sleep 60 & wait"])
                .spawn()
                .expect("sh"),
        );
        let pid = sh.0.id();
        let child = (0..200).find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            collect::parent_links()
                .into_iter()
                .find(|(_, parent)| *parent == pid)
                .map(|(c, _)| c)
        });
        let child = child.expect("sh started its sleep");
        let _sleep = Grandchild(
            child,
            collect::glance(child).expect("the sleep").start_ticks,
        );
        let empty = LiveTable::new(&[], crate::sources::self_info());
        let alone = with_forced(&empty, pid, false);
        let p = alone.get(pid).expect("read from the system");
        assert_eq!(p.role, Role::Other);
        assert_eq!(p.start_ticks, collect::glance(pid).unwrap().start_ticks);
        assert!(
            alone.get(child).is_none(),
            "not its children without --tree"
        );
        let tree = with_forced(&empty, pid, true);
        assert!(tree.get(child).is_some(), "its child with --tree");
        // A plan's forced targets are read again for execution.
        let plan = crate::state::plan::plan(&tree, &[pid], Default::default());
        assert!(with_forced_targets(&empty, &plan).get(pid).is_some());
        // Near miss: a pid that is no process adds nothing.
        assert!(with_forced(&empty, 4_194_000, false).procs.is_empty());
    }
}
