//! Verdicts: the rules that tell a leaked or orphaned process from a healthy one, each finding
//! with the evidence that supports it (mcp-debugger.md §4–5).
//!
//! Liveness is zombie-aware everywhere (a Z process is not alive; `kill(pid, 0)` is never the
//! test), and an owner is "the same process" only if it is an mcp-debugger server that started
//! no later than the worker. Grace periods keep a normal teardown (worker exits ≈ 0.9 s after
//! its session closes; the server force-kills at 5 s) from ever raising a finding.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::kill::{self, KillPlan, PlanOptions};
use crate::model::{Proc, ProcState, Role, ServerInfo};
use crate::reconcile::{DebugSession, World};
use crate::sources::health::HealthError;

/// The stable finding kinds (the CLI's JSON and the GUI use the same strings).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum FindingKind {
    /// Owner alive and the same, session over, worker still alive past the grace.
    LeakedWorker,
    /// The worker's owner is dead or is not the same process any more.
    OrphanedWorker,
    /// An adapter whose parent is no longer a live worker.
    LeakedAdapter,
    /// Infrastructure process burning CPU over two samples.
    Spinning,
    /// Exited but not reaped.
    Zombie,
    /// Stopped by a signal.
    Stopped,
    /// The server lists a session whose worker is gone.
    SessionWithoutWorker,
    /// `/health` does not answer.
    ServerUnresponsive,
}

impl FindingKind {
    /// The stable string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LeakedWorker => "leaked-worker",
            Self::OrphanedWorker => "orphaned-worker",
            Self::LeakedAdapter => "leaked-adapter",
            Self::Spinning => "spinning",
            Self::Zombie => "zombie",
            Self::Stopped => "stopped",
            Self::SessionWithoutWorker => "session-without-worker",
            Self::ServerUnresponsive => "server-unresponsive",
        }
    }
}

/// How bad.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Probably wrong.
    Warning,
    /// Leaking resources now.
    Critical,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Finding {
    /// Stable id: the kind and the identities (pid.start-ticks) or session it concerns, so a
    /// later `debugtop-cli kill <id>` finds the same finding.
    pub id: String,
    /// What kind.
    pub kind: FindingKind,
    /// How bad.
    pub severity: Severity,
    /// The processes concerned.
    pub pids: Vec<u32>,
    /// The debug session concerned.
    pub session_id: Option<String>,
    /// The server concerned.
    pub server_pid: Option<u32>,
    /// Plain sentences with the facts and their sources.
    pub evidence: Vec<String>,
    /// Since when it holds (as far as the evidence shows).
    pub since: DateTime<Utc>,
    /// What to do, in words.
    pub suggested_action: String,
    /// The kill plan that would fix it, when killing is the fix.
    pub plan: Option<KillPlan>,
}

/// How findings are confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A live monitor: a condition must hold for the grace before it is raised.
    Live,
    /// An audit: a condition must hold in two consecutive samples (and, where a log gives
    /// its time, the grace must have passed since).
    Audit,
}

/// Verdict settings.
#[derive(Debug, Clone, Copy)]
pub struct VerdictConfig {
    /// Minimum time a condition holds before it is a finding (default 6 s: the server's own
    /// force-kill fires at 5 s).
    pub grace: Duration,
    /// CPU percent (of one core) that counts as spinning, in two consecutive samples.
    pub spin_cpu: f32,
    /// Confirmation mode.
    pub mode: Mode,
}

impl Default for VerdictConfig {
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(6),
            spin_cpu: 25.0,
            mode: Mode::Live,
        }
    }
}

/// Evaluates the rules tick after tick, remembering since when each condition holds.
#[derive(Debug, Default)]
pub struct Evaluator {
    config: VerdictConfig,
    first_seen: BTreeMap<String, DateTime<Utc>>,
}

struct Candidate {
    finding: Finding,
    /// Time the evidence itself gives (a log line), if any.
    evidence_at: Option<DateTime<Utc>>,
    /// Needs two consecutive samples whatever the mode (spinning).
    two_samples: bool,
}

impl Evaluator {
    /// A new evaluator.
    pub fn new(config: VerdictConfig) -> Self {
        Self {
            config,
            first_seen: BTreeMap::new(),
        }
    }

    /// Evaluates every rule against a world; returns the confirmed findings, sorted by
    /// severity then id.
    pub fn evaluate(&mut self, world: &World) -> Vec<Finding> {
        let now = world.table.taken_at;
        let candidates = candidates(world, self.config.spin_cpu, now);
        let grace = chrono::Duration::from_std(self.config.grace)
            .unwrap_or_else(|_| chrono::Duration::seconds(6));
        let mut seen = BTreeMap::new();
        let mut out = Vec::new();
        for c in candidates {
            let id = c.finding.id.clone();
            let first = self.first_seen.get(&id).copied();
            seen.insert(id, first.unwrap_or(now));
            let seen_before = first.is_some();
            let ripe = if c.two_samples {
                seen_before
            } else if let Some(at) = c.evidence_at {
                now - at >= grace && (self.config.mode == Mode::Live || seen_before)
            } else {
                match self.config.mode {
                    Mode::Live => first.is_some_and(|f| now - f >= grace),
                    Mode::Audit => seen_before,
                }
            };
            if ripe {
                let mut f = c.finding;
                f.since = c.evidence_at.unwrap_or(first.unwrap_or(now)).min(f.since);
                out.push(f);
            }
        }
        self.first_seen = seen;
        out.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.id.cmp(&b.id)));
        out
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn ident(p: &Proc) -> String {
    format!("{}.{}", p.pid, p.start_ticks)
}

fn secs(d: chrono::Duration) -> String {
    format!("{:.0} s", d.num_milliseconds() as f64 / 1000.0)
}

fn finding(kind: FindingKind, severity: Severity, id: String, now: DateTime<Utc>) -> Finding {
    Finding {
        id,
        kind,
        severity,
        pids: Vec::new(),
        session_id: None,
        server_pid: None,
        evidence: Vec::new(),
        since: now,
        suggested_action: String::new(),
        plan: None,
    }
}

fn kill_plan(world: &World, pids: &[u32], force_kill: bool) -> KillPlan {
    let mut opts = PlanOptions::default();
    if force_kill {
        // Spinning orphans ignore SIGTERM in practice (§4.3): a short grace.
        opts.grace = Duration::from_millis(1000);
    }
    kill::plan(&world.table, pids, opts)
}

/// Every condition that holds now, unconfirmed.
fn candidates(world: &World, spin_cpu: f32, now: DateTime<Utc>) -> Vec<Candidate> {
    let procs = &world.table.procs;
    let by_pid: BTreeMap<u32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
    let servers: BTreeMap<u32, &ServerInfo> =
        world.table.servers.iter().map(|s| (s.pid, s)).collect();
    let sessions: BTreeMap<(&str, Option<u32>), &DebugSession> = world
        .debug_sessions
        .iter()
        .map(|d| ((d.id.as_str(), d.server_pid), d))
        .collect();
    let mut out = Vec::new();
    let plain = |finding: Finding| Candidate {
        finding,
        evidence_at: None,
        two_samples: false,
    };

    for p in procs {
        let alive = p.state.is_alive();
        let sid = p.session_id.as_deref();
        let sid_text = sid
            .map(|s| format!(" of session {}", short(s)))
            .unwrap_or_default();

        if p.role == Role::Worker && alive {
            let owner = p.owner_pid.unwrap_or(0);
            let same = servers.get(&owner).filter(|s| s.start_time <= p.start_time);
            match same {
                None => {
                    let mut f = finding(
                        FindingKind::OrphanedWorker,
                        Severity::Critical,
                        format!("orphaned-worker:{}", ident(p)),
                        now,
                    );
                    f.pids = vec![p.pid];
                    f.session_id = p.session_id.clone();
                    f.server_pid = Some(owner);
                    f.evidence.push(format!("worker {}{sid_text} names its owner with --mcp-owner-pid={owner} (process table)", p.pid));
                    match servers.get(&owner) {
                        Some(s) => f.evidence.push(format!(
                            "pid {owner} is an mcp-debugger server started at {}, after the worker (started {}): not its owner",
                            s.start_time.to_rfc3339(),
                            p.start_time.to_rfc3339()
                        )),
                        None => f.evidence.push(format!("no mcp-debugger server with pid {owner} is running")),
                    }
                    if p.ppid != owner {
                        let was = p
                            .remembered_ppid
                            .map(|r| format!(" (was {r})"))
                            .unwrap_or_default();
                        f.evidence
                            .push(format!("its parent is now pid {}{was}", p.ppid));
                    }
                    f.suggested_action = format!("kill worker {} and everything under it", p.pid);
                    f.plan = Some(kill_plan(world, &[p.pid], true));
                    out.push(plain(f));
                }
                Some(server) => {
                    let dbg = sid.and_then(|s| sessions.get(&(s, Some(server.pid))));
                    let ended = dbg.filter(|d| d.ended);
                    if let Some(d) = ended {
                        let at = d.ended_at.unwrap_or(now);
                        let mut f = finding(
                            FindingKind::LeakedWorker,
                            Severity::Critical,
                            format!("leaked-worker:{}", ident(p)),
                            now,
                        );
                        f.pids = vec![p.pid];
                        f.session_id = p.session_id.clone();
                        f.server_pid = Some(server.pid);
                        let cite = d
                            .ended_by
                            .as_ref()
                            .map(|fact| format!("{} at {}", fact.text, fact.source))
                            .unwrap_or_else(|| "its end in the server's log".into());
                        f.evidence.push(format!(
                            "worker {}{sid_text} is still alive {} after {cite}",
                            p.pid,
                            secs(now - at)
                        ));
                        f.evidence.push(format!("its owner {} is alive and is the same server (started before the worker)", server.pid));
                        f.suggested_action =
                            format!("kill worker {} and everything under it", p.pid);
                        f.plan = Some(kill_plan(world, &[p.pid], false));
                        out.push(Candidate {
                            finding: f,
                            evidence_at: Some(at),
                            two_samples: false,
                        });
                    } else if dbg.is_none_or(|d| !d.in_log)
                        && world.logs_read.get(&server.pid).copied().unwrap_or(0) > 0
                    {
                        // The server's logs (read from their start) never created this session.
                        let mut f = finding(
                            FindingKind::LeakedWorker,
                            Severity::Critical,
                            format!("leaked-worker:{}", ident(p)),
                            now,
                        );
                        f.pids = vec![p.pid];
                        f.session_id = p.session_id.clone();
                        f.server_pid = Some(server.pid);
                        f.evidence.push(format!(
                            "worker {}{sid_text} claims server {} as its owner, but that server's logs never created session {}",
                            p.pid,
                            server.pid,
                            sid.unwrap_or("(none)")
                        ));
                        if p.ppid != server.pid {
                            f.evidence.push(format!(
                                "its parent is pid {}, not the server {} that spawns every worker",
                                p.ppid, server.pid
                            ));
                        }
                        f.suggested_action =
                            format!("kill worker {} and everything under it", p.pid);
                        f.plan = Some(kill_plan(world, &[p.pid], false));
                        out.push(plain(f));
                    }
                }
            }
        }

        if p.role == Role::Adapter && alive {
            let parent = by_pid.get(&p.ppid);
            let parent_is_live_worker =
                parent.is_some_and(|q| q.role == Role::Worker && q.state.is_alive());
            if !parent_is_live_worker {
                let mut f = finding(
                    FindingKind::LeakedAdapter,
                    Severity::Critical,
                    format!("leaked-adapter:{}", ident(p)),
                    now,
                );
                f.pids = vec![p.pid];
                f.session_id = p.session_id.clone();
                f.server_pid = p.server_pid;
                let lang = p
                    .language
                    .map(|l| format!("{l:?}").to_lowercase())
                    .unwrap_or_else(|| "unknown".into());
                let parent_text = match parent {
                    Some(q) if q.state == ProcState::Zombie => {
                        format!("pid {} ({}, a zombie)", q.pid, q.role.as_str())
                    }
                    Some(q) => format!("pid {} ({})", q.pid, q.role.as_str()),
                    None if p.ppid == 1 => "pid 1 (reparented to init)".into(),
                    None => format!("pid {} (not a worker)", p.ppid),
                };
                f.evidence.push(format!(
                    "{lang} adapter {}{sid_text}: its parent is {parent_text}, not a live worker",
                    p.pid
                ));
                if let Some(old) = p.remembered_ppid {
                    f.evidence.push(format!("it was started under pid {old}"));
                }
                if let Some(m) = p.markers.main_pid {
                    let state = if servers.contains_key(&m) {
                        "a live server"
                    } else {
                        "no live server"
                    };
                    f.evidence.push(format!(
                        "it still carries MCP_DEBUGGER_MAIN_PID={m} ({state})"
                    ));
                }
                let chain: Vec<String> = procs
                    .iter()
                    .filter(|q| {
                        q.pid != p.pid
                            && (q.pgid == p.pid
                                || (q.role == Role::Watchdog
                                    && q.session_id == p.session_id
                                    && p.session_id.is_some()))
                    })
                    .map(|q| format!("{} {}", q.role.as_str(), q.pid))
                    .collect();
                if !chain.is_empty() {
                    f.evidence
                        .push(format!("still running with it: {}", chain.join(", ")));
                }
                f.suggested_action =
                    format!("kill adapter {}, its group and what it started", p.pid);
                f.plan = Some(kill_plan(world, &[p.pid], false));
                out.push(plain(f));
            }
        }

        if alive
            && matches!(
                p.role,
                Role::Worker | Role::Adapter | Role::Watchdog | Role::Launcher | Role::Server
            )
        {
            if let Some(cpu) = p.cpu_percent.filter(|c| *c >= spin_cpu) {
                let mut f = finding(
                    FindingKind::Spinning,
                    Severity::Warning,
                    format!("spinning:{}", ident(p)),
                    now,
                );
                f.pids = vec![p.pid];
                f.session_id = p.session_id.clone();
                f.server_pid = p.server_pid;
                f.evidence.push(format!(
                    "{} {}{sid_text} used {cpu:.0} % of a core over the last sample (state {})",
                    p.role.as_str(),
                    p.pid,
                    p.state.letter()
                ));
                if p.role == Role::Server {
                    f.suggested_action =
                        "look at what the server is doing (it is not killed automatically)".into();
                } else {
                    f.suggested_action = format!(
                        "kill {} {}: spinning workers ignore SIGTERM, SIGKILL follows after 1 s",
                        p.role.as_str(),
                        p.pid
                    );
                    f.plan = Some(kill_plan(world, &[p.pid], true));
                }
                out.push(Candidate {
                    finding: f,
                    evidence_at: None,
                    two_samples: true,
                });
            }
        }

        // A zombie whose parent is init is being reaped by it: transient, not a finding.
        if p.state == ProcState::Zombie && p.ppid != 1 {
            let mut f = finding(
                FindingKind::Zombie,
                Severity::Warning,
                format!("zombie:{}", ident(p)),
                now,
            );
            f.pids = vec![p.pid];
            f.session_id = p.session_id.clone();
            f.server_pid = p.server_pid;
            let parent = by_pid.get(&p.ppid);
            let pstate = parent
                .map(|q| format!(", which is {}", state_words(q.state)))
                .unwrap_or_default();
            f.evidence.push(format!(
                "{} {}{sid_text} has exited but was not reaped by its parent {}{pstate}",
                p.role.as_str(),
                p.pid,
                p.ppid
            ));
            f.evidence
                .push("a zombie still answers kill(pid, 0): it only looks alive".into());
            f.suggested_action = format!(
                "its parent {} must reap it: resume it (SIGCONT) if stopped, or end it",
                p.ppid
            );
            out.push(plain(f));
        }

        if matches!(p.state, ProcState::Stopped | ProcState::TracingStop) {
            let sev = if p.role == Role::Server {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut f = finding(
                FindingKind::Stopped,
                sev,
                format!("stopped:{}", ident(p)),
                now,
            );
            f.pids = vec![p.pid];
            f.session_id = p.session_id.clone();
            f.server_pid = p.server_pid;
            let how = if p.state == ProcState::TracingStop {
                "stopped by a tracer"
            } else {
                "stopped by a signal (SIGSTOP/SIGTSTP)"
            };
            f.evidence
                .push(format!("{} {}{sid_text} is {how}", p.role.as_str(), p.pid));
            f.suggested_action =
                format!("resume it with SIGCONT (kill -CONT {}), or kill it", p.pid);
            out.push(plain(f));
        }
    }

    // Sessions the server still lists whose worker is gone.
    let live_workers: BTreeSet<(&str, u32)> = procs
        .iter()
        .filter(|p| p.role == Role::Worker && p.state.is_alive())
        .filter_map(|p| Some((p.session_id.as_deref()?, p.server_pid?)))
        .collect();
    for d in &world.debug_sessions {
        let Some(server) = d.server_pid.filter(|s| servers.contains_key(s)) else {
            continue;
        };
        let state = d.state.as_deref().unwrap_or("created");
        if d.ended
            || matches!(state, "created" | "initializing")
            || live_workers.contains(&(d.id.as_str(), server))
        {
            continue;
        }
        let mut f = finding(
            FindingKind::SessionWithoutWorker,
            Severity::Warning,
            format!("session-without-worker:{}", d.id),
            now,
        );
        f.session_id = Some(d.id.clone());
        f.server_pid = Some(server);
        let name = d
            .name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let state_src = d
            .facts
            .iter()
            .rev()
            .find(|x| x.text.starts_with("state "))
            .map(|x| format!(" per {}", x.source))
            .unwrap_or_default();
        f.evidence.push(format!("server {server} still lists session {}{name} in state {state}{state_src}, but no worker process serves it", d.id));
        if let Some(exit) = d
            .facts
            .iter()
            .rev()
            .find(|x| x.text.starts_with("worker exited"))
        {
            f.evidence.push(format!("{} ({})", exit.text, exit.source));
        }
        f.suggested_action = format!(
            "close the session (close_debug_session {}) or restart the server",
            d.id
        );
        out.push(plain(f));
    }

    // Servers whose /health does not answer.
    for (pid, h) in &world.health {
        let Err(e) = h else { continue };
        let Some(p) = by_pid.get(pid) else { continue };
        let mut f = finding(
            FindingKind::ServerUnresponsive,
            Severity::Critical,
            format!("server-unresponsive:{}", ident(p)),
            now,
        );
        f.pids = vec![*pid];
        f.server_pid = Some(*pid);
        f.evidence.push(format!("/health of server {pid}: {e}"));
        if matches!(p.state, ProcState::Stopped | ProcState::TracingStop) {
            f.evidence.push(format!(
                "server {pid} is stopped (state {})",
                p.state.letter()
            ));
        }
        f.suggested_action = match e {
            HealthError::TimedOut { .. } if p.state == ProcState::Stopped => {
                format!("resume it (kill -CONT {pid})")
            }
            _ => "restart the server".into(),
        };
        out.push(plain(f));
    }
    out
}

fn state_words(s: ProcState) -> &'static str {
    match s {
        ProcState::Stopped => "stopped",
        ProcState::TracingStop => "stopped by a tracer",
        ProcState::Zombie => "a zombie itself",
        ProcState::Running => "running",
        ProcState::Sleeping | ProcState::Idle => "sleeping",
        _ => "alive",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{ProcessTable, ScanStats};
    use crate::model::{EnvMarkers, ServerMode};
    use crate::reconcile::{Fact, FactSource};

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    fn proc(pid: u32, ppid: u32, role: Role, session: Option<&str>) -> Proc {
        Proc {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: ProcState::Sleeping,
            start_time: t(0),
            start_ticks: u64::from(pid),
            uid: Some(0),
            role,
            argv: vec!["node".into()],
            markers: EnvMarkers::default(),
            cpu_percent: Some(0.0),
            rss_bytes: 0,
            server_pid: Some(100),
            session_id: session.map(str::to_owned),
            language: None,
            owner_pid: (role == Role::Worker).then_some(100),
            remembered_ppid: None,
            exited_at: None,
        }
    }

    fn world(now: DateTime<Utc>, procs: Vec<Proc>, sessions: Vec<DebugSession>) -> World {
        let server = ServerInfo {
            pid: 100,
            start_time: t(-10),
            mode: ServerMode::Http,
            port: Some(1),
            log_file: None,
            pkg_dir: None,
        };
        World {
            table: ProcessTable {
                taken_at: now,
                procs,
                servers: vec![server],
                stats: ScanStats::default(),
            },
            tree: Vec::new(),
            http_sessions: Vec::new(),
            debug_sessions: sessions,
            sources: Vec::new(),
            new_events: Vec::new(),
            health: BTreeMap::new(),
            logs_read: [(100, 10)].into(),
        }
    }

    fn ended_session(at: DateTime<Utc>) -> DebugSession {
        DebugSession {
            id: "s-1".into(),
            server_pid: Some(100),
            name: None,
            language: None,
            state: Some("stopped".into()),
            in_log: true,
            ended: true,
            ended_at: Some(at),
            ended_by: Some(Fact {
                text: "`Session s-1 marked as STOPPED/TERMINATED.`".into(),
                source: FactSource::Log {
                    file: "/l/server.log".into(),
                    line: 212,
                },
                at: Some(at),
            }),
            worker_pid: None,
            adapter_pid: None,
            http_session: None,
            facts: Vec::new(),
        }
    }

    fn kinds(f: &[Finding]) -> Vec<FindingKind> {
        f.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn a_normal_teardown_within_the_grace_raises_nothing() {
        let mut e = Evaluator::new(VerdictConfig::default());
        // Session ended at t=10; the worker is still there at 10.9 s and 15 s (server force-kill
        // at 5 s): no finding. Gone at 16 s.
        for now in [t(10) + chrono::Duration::milliseconds(900), t(15)] {
            let w = world(
                now,
                vec![proc(200, 100, Role::Worker, Some("s-1"))],
                vec![ended_session(t(10))],
            );
            assert!(e.evaluate(&w).is_empty(), "at {now}");
        }
    }

    #[test]
    fn a_worker_alive_past_the_grace_after_its_session_ended_is_leaked_with_cited_evidence() {
        let mut e = Evaluator::new(VerdictConfig::default());
        let w = world(
            t(24),
            vec![proc(200, 100, Role::Worker, Some("s-1"))],
            vec![ended_session(t(10))],
        );
        let f = e.evaluate(&w);
        assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
        assert_eq!(f[0].id, "leaked-worker:200.200");
        assert_eq!(f[0].since, t(10));
        assert!(f[0].evidence[0].contains("still alive 14 s after `Session s-1 marked as STOPPED/TERMINATED.` at server.log:212"), "{:?}", f[0].evidence);
        assert!(f[0]
            .plan
            .as_ref()
            .is_some_and(|p| p.targets.iter().any(|t| t.pid == 200)));
    }

    #[test]
    fn live_mode_waits_the_grace_audit_mode_two_samples() {
        let orphan = || {
            let mut p = proc(200, 1, Role::Worker, Some("s-1"));
            p.owner_pid = Some(999);
            p
        };
        let mut live = Evaluator::new(VerdictConfig::default());
        assert!(live
            .evaluate(&world(t(0), vec![orphan()], vec![]))
            .is_empty());
        assert!(live
            .evaluate(&world(t(5), vec![orphan()], vec![]))
            .is_empty());
        assert_eq!(
            kinds(&live.evaluate(&world(t(6), vec![orphan()], vec![]))),
            [FindingKind::OrphanedWorker]
        );

        let mut audit = Evaluator::new(VerdictConfig {
            mode: Mode::Audit,
            ..VerdictConfig::default()
        });
        assert!(audit
            .evaluate(&world(t(0), vec![orphan()], vec![]))
            .is_empty());
        let f = audit.evaluate(&world(
            t(0) + chrono::Duration::milliseconds(250),
            vec![orphan()],
            vec![],
        ));
        assert_eq!(kinds(&f), [FindingKind::OrphanedWorker]);
        // A condition that clears resets its clock.
        assert!(audit.evaluate(&world(t(1), vec![], vec![])).is_empty());
        assert!(audit
            .evaluate(&world(t(2), vec![orphan()], vec![]))
            .is_empty());
    }

    #[test]
    fn spinning_needs_two_hot_samples_and_ignores_debuggees() {
        let hot = |role: Role, pid: u32| {
            let mut p = proc(pid, 100, role, Some("s-1"));
            p.state = ProcState::Running;
            p.cpu_percent = Some(55.0);
            p
        };
        let mut e = Evaluator::new(VerdictConfig::default());
        let w = |now| {
            world(
                now,
                vec![
                    proc(150, 100, Role::Worker, Some("s-1")),
                    hot(Role::Adapter, 300),
                    hot(Role::Debuggee, 301),
                ],
                vec![],
            )
        };
        let mut first = w(t(0));
        first.table.procs[1].ppid = 150;
        first.table.procs[0].cpu_percent = Some(1.0);
        assert!(e
            .evaluate(&first)
            .iter()
            .all(|f| f.kind != FindingKind::Spinning));
        let mut second = w(t(1));
        second.table.procs[1].ppid = 150;
        let f = e.evaluate(&second);
        let spin: Vec<&Finding> = f
            .iter()
            .filter(|f| f.kind == FindingKind::Spinning)
            .collect();
        assert_eq!(spin.len(), 1, "{f:#?}");
        assert_eq!(spin[0].pids, [300]);
    }

    #[test]
    fn zombie_is_not_alive_and_not_killed() {
        let mut z = proc(200, 100, Role::Worker, Some("s-1"));
        z.state = ProcState::Zombie;
        let mut e = Evaluator::new(VerdictConfig {
            grace: Duration::ZERO,
            ..VerdictConfig::default()
        });
        let _ = e.evaluate(&world(t(0), vec![z.clone()], vec![]));
        let f = e.evaluate(&world(t(1), vec![z], vec![]));
        assert_eq!(
            kinds(&f),
            [FindingKind::Zombie],
            "a zombie worker is neither leaked nor orphaned: it is dead"
        );
        assert!(f[0].plan.is_none());
    }
}
