//! Kill, done right: plan → execute → report. Planning is `state::plan` (pure); this module
//! turns what a user asked for into a plan, and executes plans: it opens a pidfd per target and
//! checks the identity through it, so a pid reused between plan and execution is refused, never
//! signalled; sends SIGTERM (and SIGCONT to stopped targets, or the TERM would wait); waits for
//! the real exit on the pidfds (a zombie counts as exited — `kill(pid, 0)` is not a liveness
//! test); escalates to SIGKILL after the grace; verifies; and reports one outcome per pid, with
//! errno in words.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::collect;
use crate::error::{Error, Result};
use crate::model::{
    Finding, FindingId, FindingKind, KillPlan, KillReport, LiveTable, Outcome, PidOutcome, Proc,
    ProcFacts, ProcSample, Progress, Role,
};
use crate::state::plan::{self, PlanOptions, MAX_GRACE};

/// What to kill.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum KillRequest {
    /// A process (and, with `tree`, its descendants).
    Pid {
        /// The pid.
        pid: u32,
        /// Include descendants.
        tree: bool,
    },
    /// What a finding names (always with what it started).
    Finding {
        /// The finding id.
        id: FindingId,
    },
    /// What several findings name, in one plan (a group's bulk kill, or several ids given).
    Findings {
        /// The finding ids; each must be current and fixed by killing.
        ids: Vec<FindingId>,
    },
    /// Every current finding of one kind that killing fixes (of one server, when given).
    Kind {
        /// The kind.
        kind: FindingKind,
        /// Only findings about this server (the gone owner, for orphaned workers).
        server: Option<u32>,
    },
}

/// A target given on a command line: a pid, or a finding id — parsed, never guessed.
pub fn parse_target(s: &str) -> Result<KillRequest> {
    if let Ok(pid) = s.parse::<u32>() {
        return Ok(KillRequest::Pid { pid, tree: false });
    }
    s.parse::<FindingId>()
        .map(|id| KillRequest::Finding { id })
        .map_err(|_| Error::NotAnId {
            what: "a pid or a finding id (e.g. 4242, or leaked-adapter:4242.881733)",
            text: s.chars().take(80).collect(),
        })
}

/// How a plan is made beyond the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct KillOptions {
    /// Grace between SIGTERM and SIGKILL; `None`: the finding's suggested grace, or the default.
    pub grace: Option<Duration>,
    /// Allow pids outside every monitored tree (they are read from `/proc` now; with `tree`, so
    /// are their descendants).
    pub force: bool,
}

/// Plans what `request` asks for against the live table and the current findings: the one
/// planning path of the CLI and the app. The plan leaves the core here, to be shown before it
/// is carried out: its targets' command lines are redacted (the executor reads only pids and
/// start times).
pub fn plan_for<F: AsRef<Finding>>(
    request: &KillRequest,
    findings: &[F],
    live: &LiveTable,
    opts: KillOptions,
) -> Result<KillPlan> {
    let mut plan = planned(request, findings, live, opts)?;
    for t in &mut plan.targets {
        t.argv = crate::redact::redact_argv(&t.argv);
    }
    Ok(plan)
}

fn planned<F: AsRef<Finding>>(
    request: &KillRequest,
    findings: &[F],
    live: &LiveTable,
    opts: KillOptions,
) -> Result<KillPlan> {
    let grace = |suggested: Option<u64>| {
        opts.grace
            .or(suggested.map(Duration::from_millis))
            .unwrap_or(plan::DEFAULT_GRACE)
            .min(MAX_GRACE)
    };
    match request {
        KillRequest::Pid { pid, tree } => {
            let table = if opts.force {
                with_forced(live, *pid, *tree)
            } else {
                live.clone()
            };
            Ok(plan::plan(
                &table,
                &[*pid],
                PlanOptions {
                    tree: *tree,
                    grace: grace(None),
                },
            ))
        }
        KillRequest::Finding { id } => {
            let f = find(findings, id)?;
            let suggested = fixed_by_killing(f)?;
            let mut p = plan::plan(
                live,
                &asked(f),
                PlanOptions {
                    tree: true,
                    grace: grace(Some(suggested)),
                },
            );
            p.container = f.plan.as_ref().and_then(|p| p.container.clone());
            Ok(p)
        }
        KillRequest::Findings { ids } => {
            let chosen = ids
                .iter()
                .map(|id| find(findings, id))
                .collect::<Result<Vec<_>>>()?;
            bulk(live, &chosen, grace)
        }
        KillRequest::Kind { kind, server } => {
            bulk(live, &of_kind(findings, *kind, *server)?, grace)
        }
    }
}

/// The processes a finding's own plan asked for (a leaked chain's wrapper as well as its
/// server), else the ones it is about; what they started follows.
fn asked(f: &Finding) -> Vec<u32> {
    let named: Vec<u32> = f
        .plan
        .iter()
        .flat_map(|p| &p.targets)
        .filter(|t| t.via == crate::model::Via::Target)
        .map(|t| t.pid)
        .collect();
    if named.is_empty() {
        f.pids.clone()
    } else {
        named
    }
}

/// The current findings of `kind` (about `server`, when given) that killing fixes.
fn of_kind<F: AsRef<Finding>>(
    findings: &[F],
    kind: FindingKind,
    server: Option<u32>,
) -> Result<Vec<&Finding>> {
    let chosen: Vec<&Finding> = findings
        .iter()
        .map(AsRef::as_ref)
        .filter(|f| f.kind == kind && server.is_none_or(|s| f.server_pid == Some(s)))
        .filter(|f| fixed_by_killing(f).is_ok())
        .collect();
    if chosen.is_empty() {
        return Err(Error::NothingToKill(format!(
            "no current {kind} finding{} is fixed by killing",
            server.map_or(String::new(), |s| format!(" of server {s}"))
        )));
    }
    Ok(chosen)
}

fn find<'a, F: AsRef<Finding>>(findings: &'a [F], id: &FindingId) -> Result<&'a Finding> {
    let mut all = findings.iter().map(AsRef::as_ref);
    all.find(|f| &f.id == id).ok_or_else(|| {
        let known: Vec<String> = findings.iter().map(|f| f.as_ref().id.to_string()).collect();
        let why = if id.kind.needs_watching() {
            format!(
                "a {} is found only by a monitor that has watched for a while (watch, the app, audit --watch-for), \
                 not by this one-shot look: kill the process it names by pid, with --tree",
                id.kind.nouns().0
            )
        } else {
            "it may be resolved already".to_owned()
        };
        Error::NothingToKill(format!(
            "no current finding has the id {id} ({why}); current findings: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ))
    })
}

/// The grace a finding's own plan suggests, or why killing does not fix it.
fn fixed_by_killing(f: &Finding) -> Result<u64> {
    f.plan
        .as_ref()
        .filter(|p| !p.targets.is_empty())
        .map(|p| p.grace_ms)
        .ok_or_else(|| {
            Error::NothingToKill(format!(
                "finding {} is not fixed by killing: {}",
                f.id, f.suggested_action
            ))
        })
}

/// One plan for every process the findings name (and what they started), with the longest
/// grace any of them suggests; every finding must be fixed by killing.
fn bulk(
    live: &LiveTable,
    chosen: &[&Finding],
    grace: impl Fn(Option<u64>) -> Duration,
) -> Result<KillPlan> {
    let mut longest = 0;
    let mut pids = Vec::new();
    for f in chosen {
        longest = longest.max(fixed_by_killing(f)?);
        for p in &f.pids {
            if !pids.contains(p) {
                pids.push(*p);
            }
        }
    }
    if pids.is_empty() {
        return Err(Error::NothingToKill("no finding was given".to_owned()));
    }
    Ok(plan::plan(
        live,
        &pids,
        PlanOptions {
            tree: true,
            grace: grace(Some(longest)),
        },
    ))
}

/// The live table plus `pid` (and, with `tree`, its descendants) read from the system now, as
/// processes of no role: what `--force` lets a plan target. A descendant is a process whose
/// parent pid names one already taken and that started after it (on Windows a parent pid may
/// have been reused).
fn with_forced(live: &LiveTable, pid: u32, tree: bool) -> LiveTable {
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

/// Re-applies every refusal of planning to a plan, against the live table at execution time,
/// whoever built the plan: a target that is refused now, that is not in the live table with the
/// same identity, or that is listed twice, is moved to `refused` and never signalled. The one
/// gate before [`execute`].
pub fn recheck(plan: &KillPlan, live: &LiveTable) -> KillPlan {
    let mut out = KillPlan {
        targets: Vec::new(),
        refused: plan.refused.clone(),
        grace_ms: plan
            .grace_ms
            .min(u64::try_from(MAX_GRACE.as_millis()).unwrap_or(u64::MAX)),
        // How processes end is this machine's, whatever the plan said.
        method: crate::model::KillMethod::native(),
        container: None,
    };
    for t in &plan.targets {
        let why = if out
            .targets
            .iter()
            .any(|k: &crate::model::KillTarget| k.pid == t.pid)
            || out.refused.iter().any(|r| r.pid == t.pid)
        {
            Some("listed more than once in the plan".to_owned())
        } else if let Some(why) = plan::refusal(live, t.pid) {
            Some(why)
        } else if live
            .get(t.pid)
            .is_some_and(|p| p.start_ticks != t.start_ticks)
        {
            Some("identity changed since the plan (the pid now belongs to another process)".into())
        } else {
            None
        };
        match why {
            Some(why) if !out.refused.iter().any(|r| r.pid == t.pid) => {
                out.refused.push(crate::model::Refusal { pid: t.pid, why })
            }
            Some(_) => {}
            None => out.targets.push(t.clone()),
        }
    }
    out.container = plan
        .container
        .clone()
        .filter(|c| super::container::still_holds(c, live, &out.targets));
    out
}

/// A plan held by the backend, to be executed once by id: the webview (or any caller) names a
/// plan, it never supplies one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HeldPlan {
    /// The id to execute it by.
    #[ts(type = "number")]
    pub id: u64,
    /// What it will do.
    pub plan: KillPlan,
}

/// Where a held plan is carried out.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedOn {
    /// This machine: executed here against the latest live table.
    Here,
    /// A target: made there, executed there (`fleet::execute_remote`), what was asked kept so
    /// the far side can plan it again.
    Target {
        /// Where.
        target: crate::model::Target,
        /// What was asked.
        request: KillRequest,
    },
}

/// Plans waiting to be executed, each at most once, local and remote alike; the oldest are
/// forgotten past a cap.
#[derive(Debug, Default)]
pub struct PlanRegistry {
    next: u64,
    plans: std::collections::BTreeMap<u64, (KillPlan, PlannedOn)>,
}

impl PlanRegistry {
    /// The most plans held at once.
    pub const CAP: usize = 64;

    /// Holds a plan to be carried out `on`; returns it with its id.
    pub fn hold(&mut self, plan: KillPlan, on: PlannedOn) -> HeldPlan {
        self.next += 1;
        self.plans.insert(self.next, (plan.clone(), on));
        while self.plans.len() > Self::CAP {
            self.plans.pop_first();
        }
        HeldPlan {
            id: self.next,
            plan,
        }
    }

    /// Takes the plan with this id and where it is carried out (it cannot be executed twice).
    pub fn take(&mut self, id: u64) -> Result<(KillPlan, PlannedOn)> {
        self.plans.remove(&id).ok_or(Error::NoSuchPlan(id))
    }
}

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
    match super::container::kill(c) {
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
