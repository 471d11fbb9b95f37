//! Kill, done right: plan → execute → report.
//!
//! A plan names every process to end (a finding's processes, optionally their descendants, and
//! the members of the process groups and sessions that adapters, debuggees and watchdogs lead),
//! leaves first and workers last, each with its identity (pid + start ticks). Execution opens a
//! pidfd per target and checks the identity through it, so a pid reused between plan and
//! execution is refused, never signalled; sends SIGTERM (and SIGCONT to stopped targets, or the
//! TERM would wait); waits for the real exit on the pidfds (a zombie counts as exited —
//! `kill(pid, 0)` is not a liveness test); escalates to SIGKILL after the grace; verifies; and
//! reports one outcome per pid, with errno in words.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::collect::{read_stat, ProcessTable};
use crate::model::{Proc, Role};
use crate::snapshot::redact::redact_argv;

/// Default time between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(3000);
/// How long to wait for the kernel after SIGKILL before reporting a failure.
const KILL_WAIT: Duration = Duration::from_millis(2000);

/// Why a process is in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum Via {
    /// Named directly (the pid, or a finding's process).
    Target,
    /// A descendant of a target (`--tree`).
    Descendant,
    /// A member of a target's process group.
    Group,
    /// A member of a target's session (js-debug's watchdog lives in its own).
    Session,
    /// A watchdog that names a target debuggee.
    Watchdog,
}

/// One process of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillTarget {
    /// Its pid.
    pub pid: u32,
    /// Its start ticks: the identity checked at execution.
    #[ts(type = "number")]
    pub start_ticks: u64,
    /// Its role.
    pub role: Role,
    /// Group and session, for the record.
    pub pgid: u32,
    /// Session id.
    pub sid: u32,
    /// Redacted command line.
    pub argv: Vec<String>,
    /// Why it is included.
    pub via: Via,
}

/// A process the plan will not touch, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Refusal {
    /// The pid asked for.
    pub pid: u32,
    /// Why, in words.
    pub why: String,
}

/// What a kill will do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillPlan {
    /// Targets in signalling order: leaves first, workers and servers last.
    pub targets: Vec<KillTarget>,
    /// Asked-for pids that will not be touched.
    pub refused: Vec<Refusal>,
    /// Milliseconds between SIGTERM and SIGKILL.
    #[ts(type = "number")]
    pub grace_ms: u64,
}

impl KillPlan {
    /// The plan in words, one line per step (for a preview).
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.targets {
            out.push(format!(
                "{} {} (pid {}, group {}, session {}, {:?}): {}",
                "SIGTERM",
                t.role.as_str(),
                t.pid,
                t.pgid,
                t.sid,
                t.via,
                t.argv.join(" ")
            ));
        }
        if !self.targets.is_empty() {
            out.push(format!(
                "wait up to {} ms for each to exit, then SIGKILL what is left, then verify",
                self.grace_ms
            ));
        }
        for r in &self.refused {
            out.push(format!("refuse {}: {}", r.pid, r.why));
        }
        out
    }
}

/// Options for planning.
#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    /// Include every descendant of the targets.
    pub tree: bool,
    /// Allow pids outside the monitored trees.
    pub force: bool,
    /// SIGTERM → SIGKILL grace.
    pub grace: Duration,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            tree: true,
            force: false,
            grace: DEFAULT_GRACE,
        }
    }
}

/// Plans the end of `pids` against a process table.
pub fn plan(table: &ProcessTable, pids: &[u32], opts: PlanOptions) -> KillPlan {
    let me = std::process::id();
    let ancestors = ancestors_of(me);
    let by_pid: BTreeMap<u32, &Proc> = table.procs.iter().map(|p| (p.pid, p)).collect();
    let mut chosen: BTreeMap<u32, Via> = BTreeMap::new();
    let mut refused = Vec::new();
    let refuse_reason = |pid: u32| -> Option<String> {
        if pid <= 1 {
            Some("pid 0 and 1 are never signalled".to_owned())
        } else if pid == me {
            Some("that is debugtop itself".to_owned())
        } else if ancestors.contains(&pid) {
            Some("that is an ancestor of debugtop (its shell or launcher)".to_owned())
        } else {
            None
        }
    };
    for &pid in pids {
        if let Some(why) = refuse_reason(pid) {
            refused.push(Refusal { pid, why });
            continue;
        }
        match by_pid.get(&pid) {
            Some(_) => {
                chosen.insert(pid, Via::Target);
            }
            None if opts.force => match forced_target(pid) {
                Some(_) => {
                    chosen.insert(pid, Via::Target);
                }
                None => refused.push(Refusal {
                    pid,
                    why: "no such process".to_owned(),
                }),
            },
            None => refused.push(Refusal {
                pid,
                why: "not part of any debug server's tree (use --force to kill it anyway)"
                    .to_owned(),
            }),
        }
    }
    // Expand: descendants, groups and sessions led by targets, watchdogs naming a target.
    let mut changed = true;
    while changed {
        changed = false;
        let current: Vec<u32> = chosen.keys().copied().collect();
        for pid in current {
            let Some(p) = by_pid.get(&pid) else { continue };
            for q in &table.procs {
                if chosen.contains_key(&q.pid)
                    || refuse_reason(q.pid).is_some()
                    || q.role == Role::Server
                {
                    continue;
                }
                let via = if opts.tree && q.ppid == pid {
                    Some(Via::Descendant)
                } else if p.pgid == pid && q.pgid == pid {
                    Some(Via::Group)
                } else if p.sid == pid && q.sid == pid {
                    Some(Via::Session)
                } else if q.role == Role::Watchdog && q.markers.inspector_pid == Some(pid) {
                    Some(Via::Watchdog)
                } else {
                    None
                };
                if let Some(v) = via {
                    chosen.insert(q.pid, v);
                    changed = true;
                }
            }
        }
    }
    let depth = |pid: u32| -> usize {
        let mut d = 0;
        let mut cur = pid;
        while let Some(p) = by_pid.get(&cur) {
            // A watchdog counts as its debuggee's child: it is signalled before it.
            let parent = match p.markers.inspector_pid {
                Some(i) if p.role == Role::Watchdog && chosen.contains_key(&i) => i,
                _ => p.ppid,
            };
            if !chosen.contains_key(&parent) || d > 64 {
                break;
            }
            cur = parent;
            d += 1;
        }
        d
    };
    let mut targets: Vec<KillTarget> = chosen
        .iter()
        .filter_map(|(&pid, &via)| {
            let t = match by_pid.get(&pid) {
                Some(p) => KillTarget {
                    pid,
                    start_ticks: p.start_ticks,
                    role: p.role,
                    pgid: p.pgid,
                    sid: p.sid,
                    argv: redact_argv(&p.argv),
                    via,
                },
                None => forced_target(pid)?,
            };
            Some(t)
        })
        .collect();
    // Leaves first; workers and servers after everything they started.
    let rank = |r: Role| match r {
        Role::Server => 2,
        Role::Worker => 1,
        _ => 0,
    };
    targets.sort_by_key(|t| (rank(t.role), std::cmp::Reverse(depth(t.pid)), t.pid));
    KillPlan {
        targets,
        refused,
        grace_ms: u64::try_from(opts.grace.as_millis()).unwrap_or(u64::MAX),
    }
}

/// A target outside the monitored trees, read directly (only with `force`).
fn forced_target(pid: u32) -> Option<KillTarget> {
    let st = read_stat(pid)?;
    let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| crate::collect::parse::parse_cmdline(&b))
        .unwrap_or_default();
    Some(KillTarget {
        pid,
        start_ticks: st.starttime,
        role: Role::Other,
        pgid: st.pgrp,
        sid: st.session,
        argv: redact_argv(&argv),
        via: Via::Target,
    })
}

fn state_letter(pid: u32) -> Option<char> {
    read_stat(pid).map(|s| s.state)
}

/// Every ancestor of `pid` up to init.
fn ancestors_of(pid: u32) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut cur = pid;
    for _ in 0..128 {
        let Some(ppid) = read_stat(cur).map(|s| s.ppid) else {
            break;
        };
        if ppid == 0 || !out.insert(ppid) {
            break;
        }
        cur = ppid;
    }
    out
}

/// What happened to one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
#[ts(export)]
pub enum Outcome {
    /// Exited after SIGTERM.
    Exited,
    /// Needed SIGKILL.
    Killed,
    /// Gone (or a zombie) before it was signalled.
    AlreadyGone,
    /// Not signalled.
    Refused {
        /// Why.
        why: String,
    },
    /// Signalling or waiting failed.
    Failed {
        /// The error, in words.
        why: String,
    },
}

impl Outcome {
    /// Whether the process is verified gone.
    pub fn is_gone(&self) -> bool {
        matches!(self, Self::Exited | Self::Killed | Self::AlreadyGone)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited => f.write_str("exited"),
            Self::Killed => f.write_str("killed"),
            Self::AlreadyGone => f.write_str("already-gone"),
            Self::Refused { why } => write!(f, "refused: {why}"),
            Self::Failed { why } => write!(f, "failed: {why}"),
        }
    }
}

/// One line of a kill report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct PidOutcome {
    /// The pid.
    pub pid: u32,
    /// Its role.
    pub role: Role,
    /// What happened.
    pub outcome: Outcome,
}

/// The report of an executed plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillReport {
    /// One outcome per target and per refusal.
    pub outcomes: Vec<PidOutcome>,
}

impl KillReport {
    /// Every target verified gone (and nothing refused).
    pub fn all_gone(&self) -> bool {
        self.outcomes.iter().all(|o| o.outcome.is_gone())
    }
}

/// Progress while executing (for a live view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "step", rename_all = "kebab-case")]
#[ts(export)]
pub enum Progress {
    /// A signal was sent.
    Signalled {
        /// The pid.
        pid: u32,
        /// `SIGTERM`, `SIGKILL`, `SIGCONT`.
        signal: String,
    },
    /// A pid has its outcome.
    Done {
        /// The pid.
        pid: u32,
        /// The outcome.
        outcome: Outcome,
    },
}

/// Executes a plan. Blocking (waits up to grace + 2 s); call from a blocking context.
#[cfg(target_os = "linux")]
pub fn execute(plan: &KillPlan, mut progress: impl FnMut(Progress)) -> KillReport {
    use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};

    let mut outcomes: Vec<PidOutcome> = plan
        .refused
        .iter()
        .map(|r| PidOutcome {
            pid: r.pid,
            role: Role::Other,
            outcome: Outcome::Refused { why: r.why.clone() },
        })
        .collect();
    struct Live {
        pid: u32,
        role: Role,
        fd: rustix::fd::OwnedFd,
    }
    let mut live = Vec::new();
    let done = |pid: u32,
                role: Role,
                outcome: Outcome,
                progress: &mut dyn FnMut(Progress),
                out: &mut Vec<PidOutcome>| {
        progress(Progress::Done {
            pid,
            outcome: outcome.clone(),
        });
        out.push(PidOutcome { pid, role, outcome });
    };
    // Open and check every identity before signalling anything.
    for t in &plan.targets {
        let Some(pid) = i32::try_from(t.pid).ok().and_then(Pid::from_raw) else {
            done(
                t.pid,
                t.role,
                Outcome::Refused {
                    why: "not a valid pid".into(),
                },
                &mut progress,
                &mut outcomes,
            );
            continue;
        };
        let fd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::SRCH) => {
                done(
                    t.pid,
                    t.role,
                    Outcome::AlreadyGone,
                    &mut progress,
                    &mut outcomes,
                );
                continue;
            }
            Err(e) => {
                done(
                    t.pid,
                    t.role,
                    Outcome::Failed {
                        why: errno_words(e),
                    },
                    &mut progress,
                    &mut outcomes,
                );
                continue;
            }
        };
        // The pidfd pins the process it was opened on; if that process is the one planned, the
        // pid still shows the planned start ticks now.
        match read_stat(t.pid) {
            Some(s) if s.starttime == t.start_ticks => {}
            Some(_) => {
                done(
                    t.pid,
                    t.role,
                    Outcome::Refused { why: "identity changed since the plan (the pid now belongs to another process)".into() },
                    &mut progress,
                    &mut outcomes,
                );
                continue;
            }
            None => {
                done(
                    t.pid,
                    t.role,
                    Outcome::AlreadyGone,
                    &mut progress,
                    &mut outcomes,
                );
                continue;
            }
        }
        if state_letter(t.pid) == Some('Z') || is_exited(&fd) {
            done(
                t.pid,
                t.role,
                Outcome::AlreadyGone,
                &mut progress,
                &mut outcomes,
            );
            continue;
        }
        live.push(Live {
            pid: t.pid,
            role: t.role,
            fd,
        });
    }
    // SIGTERM, in plan order (leaves first); stopped targets also get SIGCONT.
    let mut pending = Vec::new();
    for l in live {
        match pidfd_send_signal(&l.fd, Signal::TERM) {
            Ok(()) => {
                progress(Progress::Signalled {
                    pid: l.pid,
                    signal: "SIGTERM".into(),
                });
                if matches!(state_letter(l.pid), Some('T' | 't'))
                    && pidfd_send_signal(&l.fd, Signal::CONT).is_ok()
                {
                    progress(Progress::Signalled {
                        pid: l.pid,
                        signal: "SIGCONT".into(),
                    });
                }
                pending.push(l);
            }
            Err(rustix::io::Errno::SRCH) => done(
                l.pid,
                l.role,
                Outcome::AlreadyGone,
                &mut progress,
                &mut outcomes,
            ),
            Err(e) => done(
                l.pid,
                l.role,
                Outcome::Failed {
                    why: errno_words(e),
                },
                &mut progress,
                &mut outcomes,
            ),
        }
    }
    let grace = Duration::from_millis(plan.grace_ms);
    let still = wait_exits(
        pending,
        grace,
        |l: &Live| &l.fd,
        |l| done(l.pid, l.role, Outcome::Exited, &mut progress, &mut outcomes),
    );
    let mut killed = Vec::new();
    for l in still {
        match pidfd_send_signal(&l.fd, Signal::KILL) {
            Ok(()) => {
                progress(Progress::Signalled {
                    pid: l.pid,
                    signal: "SIGKILL".into(),
                });
                killed.push(l);
            }
            Err(rustix::io::Errno::SRCH) => {
                done(l.pid, l.role, Outcome::Exited, &mut progress, &mut outcomes)
            }
            Err(e) => done(
                l.pid,
                l.role,
                Outcome::Failed {
                    why: errno_words(e),
                },
                &mut progress,
                &mut outcomes,
            ),
        }
    }
    let stuck = wait_exits(
        killed,
        KILL_WAIT,
        |l: &Live| &l.fd,
        |l| done(l.pid, l.role, Outcome::Killed, &mut progress, &mut outcomes),
    );
    for l in stuck {
        done(
            l.pid,
            l.role,
            Outcome::Failed {
                why: "still running after SIGKILL (uninterruptible sleep?)".into(),
            },
            &mut progress,
            &mut outcomes,
        );
    }
    KillReport { outcomes }
}

/// Not available off Linux yet: every target is refused in words.
#[cfg(not(target_os = "linux"))]
pub fn execute(plan: &KillPlan, _progress: impl FnMut(Progress)) -> KillReport {
    KillReport {
        outcomes: plan
            .targets
            .iter()
            .map(|t| PidOutcome {
                pid: t.pid,
                role: t.role,
                outcome: Outcome::Refused {
                    why: "kill is only implemented on Linux".into(),
                },
            })
            .collect(),
    }
}

/// A pidfd is readable once its process has terminated (zombie included).
#[cfg(target_os = "linux")]
fn is_exited(fd: &rustix::fd::OwnedFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

/// Waits on pidfds until each has exited or `limit` passes; calls `on_exit` for each exit and
/// returns those still running.
#[cfg(target_os = "linux")]
fn wait_exits<T>(
    mut items: Vec<T>,
    limit: Duration,
    fd: impl Fn(&T) -> &rustix::fd::OwnedFd,
    mut on_exit: impl FnMut(T),
) -> Vec<T> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let end = Instant::now() + limit;
    while !items.is_empty() {
        let left = end.saturating_duration_since(Instant::now());
        let ts = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let ready: Vec<bool> = {
            let mut fds: Vec<PollFd<'_>> = items
                .iter()
                .map(|i| PollFd::new(fd(i), PollFlags::IN))
                .collect();
            match poll(&mut fds, Some(&ts)) {
                Ok(_) => fds.iter().map(|f| !f.revents().is_empty()).collect(),
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
        };
        let mut keep = Vec::new();
        for (item, r) in items.into_iter().zip(ready) {
            if r {
                on_exit(item);
            } else {
                keep.push(item);
            }
        }
        items = keep;
        if Instant::now() >= end {
            break;
        }
    }
    items
}

/// errno as a sentence a user understands.
#[cfg(target_os = "linux")]
fn errno_words(e: rustix::io::Errno) -> String {
    match e {
        rustix::io::Errno::PERM | rustix::io::Errno::ACCESS => {
            "permission denied: the process belongs to another user".to_owned()
        }
        rustix::io::Errno::SRCH => "the process does not exist".to_owned(),
        rustix::io::Errno::NOSYS => {
            "this kernel has no pidfd support (Linux 5.3 or newer is needed)".to_owned()
        }
        other => format!(
            "{} (errno {})",
            std::io::Error::from(other),
            other.raw_os_error()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::ScanStats;
    use crate::model::{EnvMarkers, ProcState};

    fn proc(pid: u32, ppid: u32, pgid: u32, sid: u32, role: Role) -> Proc {
        Proc {
            pid,
            ppid,
            pgid,
            sid,
            state: ProcState::Sleeping,
            start_time: chrono::Utc::now(),
            start_ticks: u64::from(pid) * 10,
            uid: Some(0),
            role,
            argv: vec![format!("p{pid}")],
            markers: EnvMarkers::default(),
            cpu_percent: None,
            rss_bytes: 0,
            server_pid: Some(100),
            session_id: None,
            language: None,
            owner_pid: None,
            remembered_ppid: None,
            exited_at: None,
        }
    }

    fn table(procs: Vec<Proc>) -> ProcessTable {
        ProcessTable {
            taken_at: chrono::Utc::now(),
            procs,
            servers: Vec::new(),
            stats: ScanStats::default(),
        }
    }

    #[test]
    fn js_chain_plan_takes_group_session_and_watchdog_leaves_first() {
        let mut wd = proc(4_000_004, 1, 4_000_004, 4_000_004, Role::Watchdog);
        wd.markers.inspector_pid = Some(4_000_003);
        let t = table(vec![
            proc(100, 1, 100, 100, Role::Server),
            proc(4_000_001, 100, 100, 100, Role::Worker),
            proc(4_000_002, 1, 4_000_002, 4_000_002, Role::Adapter),
            proc(4_000_003, 4_000_002, 4_000_002, 4_000_002, Role::Debuggee),
            wd,
        ]);
        let p = plan(
            &t,
            &[4_000_002],
            PlanOptions {
                tree: false,
                ..PlanOptions::default()
            },
        );
        let pids: Vec<u32> = p.targets.iter().map(|t| t.pid).collect();
        assert_eq!(pids.len(), 3, "{pids:?}");
        assert!(pids.contains(&4_000_003) && pids.contains(&4_000_004));
        assert_eq!(
            pids,
            [4_000_004, 4_000_003, 4_000_002],
            "watchdog, debuggee, then the adapter"
        );
        assert!(
            !pids.contains(&100) && !pids.contains(&4_000_001),
            "never the server or an unrelated worker"
        );
    }

    #[test]
    fn refuses_init_self_ancestors_and_strangers() {
        let t = table(vec![]);
        let me = std::process::id();
        let parent = read_stat(me).map_or(1, |f| f.ppid);
        let p = plan(&t, &[0, 1, me, parent, 4_000_123], PlanOptions::default());
        assert!(p.targets.is_empty());
        let whys: Vec<&str> = p.refused.iter().map(|r| r.why.as_str()).collect();
        assert!(whys[0].contains("never signalled"));
        assert!(whys[2].contains("debugtop itself"));
        assert!(whys.iter().any(|w| w.contains("ancestor")), "{whys:?}");
        assert!(whys[4].contains("not part of any debug server"));
    }

    #[test]
    fn worker_with_tree_goes_last() {
        let t = table(vec![
            proc(4_000_001, 100, 100, 100, Role::Worker),
            proc(4_000_002, 4_000_001, 4_000_002, 4_000_002, Role::Adapter),
            proc(4_000_003, 4_000_002, 4_000_002, 4_000_002, Role::Debuggee),
        ]);
        let p = plan(&t, &[4_000_001], PlanOptions::default());
        let pids: Vec<u32> = p.targets.iter().map(|t| t.pid).collect();
        assert_eq!(pids, [4_000_003, 4_000_002, 4_000_001]);
        assert!(p.describe().iter().any(|l| l.contains("then SIGKILL")));
    }
}
