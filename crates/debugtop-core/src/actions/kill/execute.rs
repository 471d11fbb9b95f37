//! Carrying a plan out: a pidfd per target (on Windows a handle) opened and its identity checked
//! through it, so a pid reused between plan and execution is refused, never signalled; SIGTERM
//! (and SIGCONT to stopped targets, or the TERM would wait); the real exit awaited on the
//! pidfds (a zombie counts as exited — `kill(pid, 0)` is not a liveness test); SIGKILL after
//! the grace; one outcome per pid, with errno in words.

use std::time::Duration;

use crate::model::{KillPlan, KillReport, Outcome, PidOutcome, Progress, Role};
#[cfg(target_os = "linux")]
use crate::state::plan::MAX_GRACE;

/// How long to wait for the kernel after SIGKILL before reporting a failure.
const KILL_WAIT: Duration = Duration::from_millis(2000);

/// Collects outcomes and tells the progress callback as they come.
struct Reporter<'a> {
    outcomes: Vec<PidOutcome>,
    progress: &'a mut dyn FnMut(Progress),
}

impl<'a> Reporter<'a> {
    fn done(&mut self, pid: u32, role: Role, outcome: Outcome) {
        (self.progress)(Progress::Done {
            pid,
            outcome: outcome.clone(),
        });
        self.outcomes.push(PidOutcome { pid, role, outcome });
    }

    /// A reporter whose first outcomes are the plan's refusals.
    #[cfg(any(target_os = "linux", windows))]
    fn with_refusals(plan: &KillPlan, progress: &'a mut dyn FnMut(Progress)) -> Self {
        let outcomes = plan.refused.iter().map(PidOutcome::refused).collect();
        Self { outcomes, progress }
    }

    fn signalled(&mut self, pid: u32, signal: crate::model::KillSignal) {
        (self.progress)(Progress::Signalled { pid, signal });
    }
}

/// How long a container's processes may take to end after the engine killed it.
#[cfg(target_os = "linux")]
const CONTAINER_WAIT: Duration = Duration::from_secs(10);

/// Executes a plan. Blocking (waits up to grace + 2 s, and for a container up to its engine's
/// answer and [`CONTAINER_WAIT`]); call from a blocking context.
#[cfg(target_os = "linux")]
pub fn execute(plan: &KillPlan, mut progress: impl FnMut(Progress)) -> KillReport {
    use crate::model::KillSignal;
    let mut r = Reporter::with_refusals(plan, &mut progress);
    let live = linux::open_all(plan, &mut r);
    let live = match &plan.container {
        Some(c) => through_engine(c, live, &mut r),
        None => live,
    };
    let pending = linux::signal_all(live, KillSignal::Term, &mut r, Outcome::AlreadyGone);
    let grace = Duration::from_millis(plan.grace_ms).min(MAX_GRACE);
    let still = linux::wait_exits(pending, grace, |t| r.done(t.pid, t.role, Outcome::Exited));
    let killed = linux::signal_all(still, KillSignal::Kill, &mut r, Outcome::Exited);
    let stuck = linux::wait_exits(killed, KILL_WAIT, |t| {
        r.done(t.pid, t.role, Outcome::Killed)
    });
    for t in stuck {
        let why = "still running after SIGKILL (uninterruptible sleep?)".into();
        r.done(t.pid, t.role, Outcome::Failed { why });
    }
    KillReport {
        outcomes: r.outcomes,
    }
}

/// Ends a plan's container through its engine (see [`super::container`]) while the targets'
/// identities are pinned by their pidfds; returns the targets still running (all of them when
/// the engine would not, so the plan's signals do the work).
#[cfg(target_os = "linux")]
fn through_engine(
    c: &crate::model::ContainerStop,
    live: Vec<linux::Opened>,
    r: &mut Reporter<'_>,
) -> Vec<linux::Opened> {
    if !live.iter().any(|t| t.pid == c.main_pid) {
        return live;
    }
    match super::super::container::kill(c) {
        Ok(()) => linux::wait_exits(live, CONTAINER_WAIT, |t| {
            r.done(t.pid, t.role, Outcome::ContainerKilled);
        }),
        Err(why) => {
            tracing::warn!(container = %c.id, %why, "not ended through docker; signalling");
            live
        }
    }
}

/// Executes a plan on Windows: every target is opened first with its identity checked (the
/// handle's creation time is the planned one; a replaced pid is refused, never touched), then
/// each is ended with `TerminateProcess`, leaves first, and verified by its handle becoming
/// signalled. Windows has no SIGTERM for these processes, so there is no grace.
#[cfg(windows)]
pub fn execute(plan: &KillPlan, mut progress: impl FnMut(Progress)) -> KillReport {
    let mut r = Reporter::with_refusals(plan, &mut progress);
    let opened = windows::open_all(plan, &mut r);
    for (t, h) in opened {
        windows::terminate(&t, &h, &mut r);
    }
    KillReport {
        outcomes: r.outcomes,
    }
}

/// Neither Linux nor Windows: every target is refused in words.
#[cfg(not(any(target_os = "linux", windows)))]
pub fn execute(plan: &KillPlan, _progress: impl FnMut(Progress)) -> KillReport {
    KillReport {
        outcomes: plan
            .targets
            .iter()
            .map(|t| PidOutcome {
                pid: t.pid,
                role: t.role,
                outcome: Outcome::Refused {
                    why: "kill is implemented on Linux and Windows only".into(),
                },
            })
            .collect(),
    }
}

#[cfg(windows)]
mod windows {
    use super::{Reporter, KILL_WAIT};
    use crate::model::{KillPlan, KillSignal, KillTarget, Outcome};
    use crate::win32::{self as sys, Access, Handle};

    /// The exit code a terminated target gets (what Windows' own tools use for a forced end).
    const EXIT_CODE: u32 = 1;

    /// Opens and checks every identity before anything is terminated.
    pub(super) fn open_all(plan: &KillPlan, r: &mut Reporter<'_>) -> Vec<(KillTarget, Handle)> {
        let mut out = Vec::new();
        for t in &plan.targets {
            match open(t) {
                Ok(h) => out.push((t.clone(), h)),
                Err(outcome) => r.done(t.pid, t.role, outcome),
            }
        }
        out
    }

    /// A handle on the planned identity, or why not. The handle pins the process it opened;
    /// its creation time tells whether that is the planned one.
    fn open(t: &KillTarget) -> Result<Handle, Outcome> {
        let h = sys::open(t.pid, Access::Terminate).map_err(|e| match e.raw_os_error() {
            // ERROR_INVALID_PARAMETER: no process has this pid.
            Some(87) => Outcome::AlreadyGone,
            Some(5) => Outcome::Failed {
                why: "access denied: the process belongs to another user or is protected".into(),
            },
            _ => Outcome::Failed { why: e.to_string() },
        })?;
        match h.times() {
            Some((created, _)) if created == t.start_ticks => {
                if h.wait_exit(0).unwrap_or(false) {
                    Err(Outcome::AlreadyGone)
                } else {
                    Ok(h)
                }
            }
            Some(_) => Err(Outcome::Refused {
                why: "identity changed since the plan (the pid now belongs to another process)"
                    .into(),
            }),
            None => Err(Outcome::Failed {
                why: "its creation time cannot be read, so its identity cannot be checked".into(),
            }),
        }
    }

    /// Terminates one target and waits for its handle to be signalled.
    pub(super) fn terminate(t: &KillTarget, h: &Handle, r: &mut Reporter<'_>) {
        if let Err(e) = h.terminate(EXIT_CODE) {
            // Already ending: access is denied to a process that is exiting.
            let outcome = if h.wait_exit(0).unwrap_or(false) {
                Outcome::AlreadyGone
            } else {
                Outcome::Failed {
                    why: format!("TerminateProcess failed: {e}"),
                }
            };
            r.done(t.pid, t.role, outcome);
            return;
        }
        r.signalled(t.pid, KillSignal::Terminate);
        let ms = u32::try_from(KILL_WAIT.as_millis()).unwrap_or(u32::MAX);
        let outcome = match h.wait_exit(ms) {
            Ok(true) => Outcome::Terminated,
            Ok(false) => Outcome::Failed {
                why: "still running after TerminateProcess".into(),
            },
            Err(e) => Outcome::Failed {
                why: format!("waiting for it to end failed: {e}"),
            },
        };
        r.done(t.pid, t.role, outcome);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::time::{Duration, Instant};

    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::fd::OwnedFd;
    use rustix::io::Errno;
    use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};

    use super::Reporter;
    use crate::collect::read_stat;
    use crate::model::{KillPlan, KillSignal, Outcome, Role};

    /// A target whose identity was confirmed through its pidfd.
    pub(super) struct Opened {
        pub pid: u32,
        pub role: Role,
        fd: OwnedFd,
    }

    /// Opens and checks every identity before anything is signalled.
    pub(super) fn open_all(plan: &KillPlan, r: &mut Reporter<'_>) -> Vec<Opened> {
        let mut out = Vec::new();
        for t in &plan.targets {
            match open(t.pid, t.start_ticks) {
                Ok(fd) => out.push(Opened {
                    pid: t.pid,
                    role: t.role,
                    fd,
                }),
                Err(outcome) => r.done(t.pid, t.role, outcome),
            }
        }
        out
    }

    /// A pidfd for the planned identity, or why not. The pidfd pins the process it was opened
    /// on; if that process is the one planned, the pid still shows the planned start ticks.
    fn open(pid: u32, ticks: u64) -> Result<OwnedFd, Outcome> {
        let raw = i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .ok_or(Outcome::Refused {
                why: "not a valid pid".into(),
            })?;
        let fd = match pidfd_open(raw, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(Errno::SRCH) => return Err(Outcome::AlreadyGone),
            Err(e) => {
                return Err(Outcome::Failed {
                    why: errno_words(e),
                })
            }
        };
        match read_stat(pid) {
            Some(s) if s.starttime == ticks && s.state != 'Z' && !is_exited(&fd) => Ok(fd),
            Some(s) if s.starttime == ticks => Err(Outcome::AlreadyGone),
            Some(_) => Err(Outcome::Refused {
                why: "identity changed since the plan (the pid now belongs to another process)"
                    .into(),
            }),
            None => Err(Outcome::AlreadyGone),
        }
    }

    /// Sends `sig` to each, in plan order (leaves first); returns those signalled. A SIGTERM to
    /// a stopped target is followed by SIGCONT, or it would wait. `gone` is the outcome of a
    /// target that vanished before the signal.
    pub(super) fn signal_all(
        targets: Vec<Opened>,
        sig: KillSignal,
        r: &mut Reporter<'_>,
        gone: Outcome,
    ) -> Vec<Opened> {
        let raw = match sig {
            KillSignal::Term => Signal::TERM,
            KillSignal::Kill => Signal::KILL,
            KillSignal::Cont => Signal::CONT,
            // Not a signal: Windows' TerminateProcess, never planned here.
            KillSignal::Terminate => Signal::KILL,
        };
        let mut out = Vec::new();
        for t in targets {
            match pidfd_send_signal(&t.fd, raw) {
                Ok(()) => {
                    r.signalled(t.pid, sig);
                    let stopped = matches!(read_stat(t.pid).map(|s| s.state), Some('T' | 't'));
                    if sig == KillSignal::Term
                        && stopped
                        && pidfd_send_signal(&t.fd, Signal::CONT).is_ok()
                    {
                        r.signalled(t.pid, KillSignal::Cont);
                    }
                    out.push(t);
                }
                Err(Errno::SRCH) => r.done(t.pid, t.role, gone.clone()),
                Err(e) => r.done(
                    t.pid,
                    t.role,
                    Outcome::Failed {
                        why: errno_words(e),
                    },
                ),
            }
        }
        out
    }

    /// A pidfd is readable once its process has terminated (zombie included).
    fn is_exited(fd: &OwnedFd) -> bool {
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
    }

    /// Waits on the pidfds until each has exited or `limit` passes; calls `on_exit` for each
    /// exit and returns those still running.
    pub(super) fn wait_exits(
        mut items: Vec<Opened>,
        limit: Duration,
        mut on_exit: impl FnMut(&Opened),
    ) -> Vec<Opened> {
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
                    .map(|i| PollFd::new(&i.fd, PollFlags::IN))
                    .collect();
                match poll(&mut fds, Some(&ts)) {
                    Ok(_) => fds.iter().map(|f| !f.revents().is_empty()).collect(),
                    Err(Errno::INTR) => continue,
                    Err(_) => break,
                }
            };
            let (done, keep): (Vec<_>, Vec<_>) =
                items.into_iter().zip(ready).partition(|(_, r)| *r);
            for (item, _) in &done {
                on_exit(item);
            }
            items = keep.into_iter().map(|(i, _)| i).collect();
            if Instant::now() >= end {
                break;
            }
        }
        items
    }

    /// errno as a sentence a user understands.
    fn errno_words(e: Errno) -> String {
        match e {
            Errno::PERM | Errno::ACCESS => {
                "permission denied: the process belongs to another user".to_owned()
            }
            Errno::SRCH => "the process does not exist".to_owned(),
            Errno::NOSYS => {
                "this kernel has no pidfd support (Linux 5.3 or newer is needed)".to_owned()
            }
            Errno::MFILE | Errno::NFILE => {
                "out of file descriptors (one pidfd per target is needed)".to_owned()
            }
            other => format!(
                "{} (errno {})",
                std::io::Error::from(other),
                other.raw_os_error()
            ),
        }
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;
    use crate::model::{KillMethod, KillTarget, Via};

    /// A `sleep` this test started, waited for (reaped) when dropped.
    struct Child(std::process::Child);
    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn sleeper() -> (Child, KillTarget) {
        let c = Child(
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("sleep"),
        );
        let pid = c.0.id();
        let ticks = crate::collect::read_stat(pid).expect("its stat").starttime;
        let t = KillTarget {
            pid,
            start_ticks: ticks,
            role: Role::Other,
            pgid: pid,
            sid: pid,
            argv: vec!["sleep".into(), "60".into()],
            via: Via::Target,
        };
        (c, t)
    }

    fn plan(targets: Vec<KillTarget>) -> KillPlan {
        KillPlan {
            targets,
            refused: Vec::new(),
            grace_ms: 2000,
            method: KillMethod::Signals,
            container: None,
        }
    }

    #[test]
    fn a_planned_identity_is_ended_and_a_replaced_one_is_refused_untouched() {
        let (_ours, t) = sleeper();
        let mut signals = Vec::new();
        let report = execute(&plan(vec![t.clone()]), |p| signals.push(p));
        assert_eq!(report.outcomes.len(), 1);
        assert!(
            matches!(
                report.outcomes[0].outcome,
                Outcome::Exited | Outcome::Killed
            ),
            "{report:?}"
        );
        assert!(report.all_gone());
        // The same pid with another start: refused, never signalled.
        let (mut other, t) = sleeper();
        let wrong = KillTarget {
            start_ticks: t.start_ticks + 1,
            ..t
        };
        let report = execute(&plan(vec![wrong]), |_| {});
        assert!(
            matches!(&report.outcomes[0].outcome, Outcome::Refused { why } if why.contains("identity changed")),
            "{report:?}"
        );
        assert!(other.0.try_wait().unwrap().is_none(), "still running");
    }
}
