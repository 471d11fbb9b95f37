//! One process read now, outside a scan — a kill's forced pid, an identity checked before a
//! signal, debugtop's own ancestry — and every parent link of the machine.

use debugtop_model::ProcState;

use super::parse;
#[cfg(windows)]
use super::windows;

/// The stat fields of one process, read now from `/proc/<pid>/stat` (`None` if it is gone or
/// there is no `/proc`). For one-off reads outside a scan (kill planning, identity checks).
pub fn read_stat(pid: u32) -> Option<parse::StatFields> {
    parse::parse_stat(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// One process read now, outside a scan: what `kill --force` adds to a plan as a process of no
/// role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glance {
    /// Parent pid.
    pub ppid: u32,
    /// Process group (0 where there are none).
    pub pgid: u32,
    /// Session (0 where there are none).
    pub sid: u32,
    /// Scheduler state.
    pub state: ProcState,
    /// The identity's start ticks (Windows: creation time).
    pub start_ticks: u64,
    /// Command line.
    pub argv: Vec<String>,
    /// Owner.
    pub uid: Option<u32>,
}

/// `pid` read now, if it runs and can be read.
pub fn glance(pid: u32) -> Option<Glance> {
    #[cfg(target_os = "linux")]
    {
        let st = read_stat(pid)?;
        let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| parse::parse_cmdline(&b))
            .unwrap_or_default();
        let uid = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|v| v.split_whitespace().next()?.parse().ok())
            });
        Some(Glance {
            ppid: st.ppid,
            pgid: st.pgrp,
            sid: st.session,
            state: ProcState::from_letter(st.state),
            start_ticks: st.starttime,
            argv,
            uid,
        })
    }
    #[cfg(windows)]
    {
        windows::glance(pid)
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        let _ = pid;
        None
    }
}

/// Every running pid with its parent pid, now.
pub fn parent_links() -> Vec<(u32, u32)> {
    #[cfg(windows)]
    {
        windows::parent_links()
    }
    #[cfg(not(windows))]
    {
        std::fs::read_dir("/proc")
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter_map(|pid| Some((pid, read_stat(pid)?.ppid)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The parent pid of a running process, read now (kill planning, debugtop's own ancestry).
pub fn parent_pid(pid: u32) -> Option<u32> {
    #[cfg(windows)]
    {
        windows::parent_of(pid)
    }
    #[cfg(not(windows))]
    {
        read_stat(pid).map(|s| s.ppid)
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    #[test]
    fn a_glance_at_this_process_is_its_identity_parent_and_command_line() {
        let me = std::process::id();
        let g = glance(me).expect("this process");
        assert_eq!(
            g.start_ticks,
            read_stat(me).expect("its stat").starttime,
            "the same identity"
        );
        assert_eq!(parent_pid(me), Some(g.ppid));
        assert_eq!(
            g.ppid,
            rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32)
        );
        assert!(!g.argv.is_empty());
        assert!(parent_links().contains(&(me, g.ppid)));
        // Near miss: a pid no process has.
        assert!(glance(4_194_000).is_none());
    }
}
