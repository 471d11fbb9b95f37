//! The run's scope on Linux, two ways: a cgroup v2 of the run's own, which every descendant
//! is born into and cannot leave without rights over the cgroup tree (orphans still go to
//! init, as without debugtop); or, where no cgroup can be made, debugtop as a child
//! subreaper, to which the command's orphans are re-parented (and which then reaps them).
//! What each member is, read from `/proc`.

use std::io;
use std::path::{Path, PathBuf};

use debugtop_model::ProcState;

use super::{env_of, test_env_of, Contained, Member, Reaped};
use crate::collect::parse;

/// A cgroup made for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    dir: PathBuf,
}

/// The cgroup v2 hierarchy's mount point: `/sys/fs/cgroup` on a unified machine, its
/// `unified` mount on a hybrid one (mountinfo's first `cgroup2` line).
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

/// This process's cgroup v2 path (`0::/path` in `/proc/self/cgroup`).
fn own_cgroup() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_owned)
}

impl Cgroup {
    /// Makes `name` under debugtop's own cgroup v2 (a delegated subtree is enough; root may
    /// make it anywhere). The error says why not, in words.
    pub fn create(name: &str) -> Result<Self, String> {
        let mount = cgroup2_mount().ok_or("no cgroup v2 hierarchy is mounted")?;
        let own = own_cgroup().ok_or("this process is in no cgroup v2")?;
        let parent = mount.join(own.trim_start_matches('/'));
        if name.contains('/') || name.starts_with('.') {
            return Err(format!("{name:?} is not a cgroup name"));
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot make the cgroup {}: {e}", dir.display()))?;
        Ok(Self { dir })
    }

    /// The cgroup at `dir`, as a child process names it to join.
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the calling process into it (what the run's command does, before it is the
    /// command: from then on everything it starts is born in the cgroup).
    pub fn join(&self) -> io::Result<()> {
        std::fs::write(
            self.dir.join("cgroup.procs"),
            std::process::id().to_string(),
        )
    }

    /// Every process in it and in cgroups made below it (a command may make its own).
    pub fn members(&self) -> io::Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut dirs = vec![self.dir.clone()];
        while let Some(d) = dirs.pop() {
            let procs = std::fs::read_to_string(d.join("cgroup.procs"));
            match procs {
                Ok(text) => out.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok())),
                // The top one must read; one below that vanished while listed is no loss.
                Err(e) if d == self.dir => return Err(e),
                Err(_) => continue,
            }
            if let Ok(entries) = std::fs::read_dir(&d) {
                dirs.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
        Ok(out)
    }

    /// Moves every process still in it (and in cgroups below it) back to the cgroup it was
    /// made in: what a run does with survivors it leaves running (kept, allowed), so that it
    /// can remove its own.
    pub fn hand_back(&self) -> io::Result<()> {
        let parent = self
            .dir
            .parent()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a cgroup at the root"))?;
        for pid in self.members()? {
            // One that exited meanwhile is no loss (ESRCH).
            match std::fs::write(parent.join("cgroup.procs"), pid.to_string()) {
                Err(e) if e.raw_os_error() != Some(3) => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Removes it (and cgroups made below it), once empty; the error says what holds it.
    pub fn remove(&self) -> io::Result<()> {
        fn below_first(d: &Path) -> io::Result<()> {
            for e in std::fs::read_dir(d)?.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    below_first(&e.path())?;
                }
            }
            std::fs::remove_dir(d)
        }
        below_first(&self.dir)
    }
}

/// Makes this process a child subreaper: orphans among its descendants are re-parented to it,
/// not to init.
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(io::Error::from)
}

/// Every descendant of `root` now, read from the kernel's children lists (what a subreaper
/// holds: its orphans are its children). Falls back to a scan of `/proc` where the lists are
/// not compiled in.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![root];
    let mut fell_back = false;
    while let Some(p) = frontier.pop() {
        match children_of(p) {
            Some(kids) => {
                out.extend(&kids);
                frontier.extend(kids);
            }
            None if p == root => {
                fell_back = true;
                break;
            }
            None => {}
        }
    }
    if fell_back {
        return descendants_by_scan(root);
    }
    out
}

/// `/proc/<pid>/task/*/children`: `None` when the file does not exist.
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut kids = Vec::new();
    let mut any = false;
    for t in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            any = true;
            kids.extend(
                text.split_whitespace()
                    .filter_map(|w| w.parse::<u32>().ok()),
            );
        }
    }
    any.then_some(kids)
}

fn descendants_by_scan(root: u32) -> Vec<u32> {
    let links = crate::collect::parent_links();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (c, parent) in &links {
            if *parent == p && *c != p && !out.contains(c) {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}

/// Reaps every child of this process that has ended, without waiting: its pid and how it
/// ended.
pub fn reap_children() -> Vec<(u32, Reaped)> {
    use rustix::process::{waitpid, WaitOptions};
    let mut out = Vec::new();
    while let Ok(Some((pid, status))) = waitpid(None, WaitOptions::NOHANG) {
        let pid = pid.as_raw_nonzero().get().unsigned_abs();
        let how = if let Some(sig) = status.terminating_signal() {
            Reaped::Signalled(sig)
        } else {
            Reaped::Exited(status.exit_status().unwrap_or(0))
        };
        out.push((pid, how));
    }
    out
}

/// `pid`'s stat, if it runs (or is a zombie) and can be read.
pub fn read_member(pid: u32) -> Option<Member> {
    let st = crate::collect::read_stat(pid)?;
    Some(Member {
        pid,
        ppid: st.ppid,
        state: ProcState::from_letter(st.state),
        start_ticks: st.starttime,
        cpu_ticks: st.utime + st.stime,
        rss_bytes: st.rss.saturating_mul(page_size()),
    })
}

/// `pid`'s command line (empty when it cannot be read).
pub fn read_argv(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| parse::parse_cmdline(&b))
        .unwrap_or_default()
}

/// The [`TEST_ENV`] variables in `pid`'s environment (as it was when it was executed).
pub fn read_test_env(pid: u32) -> Vec<(String, String)> {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return Vec::new();
    };
    test_env_of(&raw)
}

/// The variables `names` in `pid`'s environment (as it was when it was executed).
pub fn read_env(pid: u32, names: &[&str]) -> Vec<(String, String)> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|raw| env_of(&raw, names))
        .unwrap_or_default()
}

/// Every process in a container other than debugtop's own, found as the engine finds them (the
/// container id in its cgroup path): one cgroup read per process, the status read only for the
/// contained ones.
pub fn contained() -> Vec<Contained> {
    use crate::collect::ns;
    let ours = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| ns::container_of(&c));
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
            let container = ns::container_of(&cgroup).filter(|c| Some(c) != ours.as_ref())?;
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            Some(Contained {
                member: read_member(pid)?,
                container,
                main: ns::innermost_pid(&status) == Some(1),
            })
        })
        .collect()
}

/// Clock ticks per second (start times and CPU are counted in them).
pub fn ticks_per_second() -> u64 {
    procfs::ticks_per_second().max(1)
}

/// Bytes per page (resident memory is counted in pages).
fn page_size() -> u64 {
    procfs::page_size().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_process_of_this_machine_is_contained_unless_its_cgroup_names_a_container() {
        // This test runs on the host or inside a container; either way its own process is
        // never among the contained (debugtop's own container is not reported).
        let me = std::process::id();
        assert!(contained().iter().all(|c| c.member.pid != me));
    }

    #[test]
    fn a_descendant_is_found_by_the_children_lists() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        assert!(descendants(std::process::id()).contains(&pid));
        assert!(descendants_by_scan(std::process::id()).contains(&pid));
        let _ = child.kill();
        let _ = child.wait();
        assert!(!descendants(std::process::id()).contains(&pid), "reaped");
    }
}
