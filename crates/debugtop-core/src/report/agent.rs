//! The snapshot as an agent reads it through `debugtop-cli mcp`: an overview, the findings with
//! what each plan would end, one finding or one process in full. Sized for a model's context:
//! every list is cut with a count of what was left out and the offset that asks for more,
//! every string cut at a few hundred characters, and thousands of findings of one cause come
//! back as the groups the window shows. Built from a snapshot already redacted as an export is
//! (an agent's transcript is an export); pure, so the bounds are tested on fixtures.

use std::collections::BTreeMap;
use std::hash::Hasher;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use crate::model::{Finding, KillPlan, Proc, Snapshot};

/// Items a list holds unless asked for more.
pub const DEFAULT_LIMIT: usize = 10;
/// The most items a list holds whatever is asked.
pub const MAX_LIMIT: usize = 100;
/// Characters a string keeps (a command line, an evidence sentence).
pub const MAX_CHARS: usize = 300;
/// Evidence sentences a finding line keeps in an audit (all of them in an explanation).
const EVIDENCE_IN_AUDIT: usize = 3;
/// Targets a plan line names in an audit (every one in an explanation).
const TARGETS_IN_AUDIT: usize = 8;

/// Which slice of a list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// The first item.
    pub offset: usize,
    /// How many.
    pub limit: usize,
}

impl Page {
    /// A page from an agent's optional arguments, bounded.
    pub fn new(offset: Option<usize>, limit: Option<usize>) -> Self {
        Self {
            offset: offset.unwrap_or(0),
            limit: limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
        }
    }
}

/// What a cut list left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LeftOut {
    /// Items in the whole list.
    pub total: usize,
    /// Items returned.
    pub shown: usize,
    /// The offset that returns the next items, when there are more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

fn page_of<T: Clone>(all: &[T], page: Page) -> (Vec<T>, LeftOut) {
    let items: Vec<T> = all
        .iter()
        .skip(page.offset)
        .take(page.limit)
        .cloned()
        .collect();
    let end = page.offset.saturating_add(items.len());
    let left = LeftOut {
        total: all.len(),
        shown: items.len(),
        next_offset: (end < all.len()).then_some(end),
    };
    (items, left)
}

/// `s` cut at [`MAX_CHARS`] (with an ellipsis), on one line.
fn cut(s: &str) -> String {
    let line = crate::model::printable::one_line(s);
    if line.chars().count() <= MAX_CHARS {
        return line.into_owned();
    }
    line.chars().take(MAX_CHARS).collect::<String>() + "…"
}

/// One server, in a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ServerLine {
    /// Its pid.
    pub pid: u32,
    /// How it is reached (stdio, sse, …).
    pub mode: String,
    /// Its port, when it listens on one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Processes of its tree.
    pub processes: usize,
}

/// One HTTP or debug session, in a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SessionLine {
    /// Its id (HTTP session ids shortened, as on export).
    pub id: String,
    /// The server it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    /// Its state in words.
    pub state: String,
}

/// What an agent asks first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Overview {
    /// When the look was taken.
    pub taken_at: DateTime<Utc>,
    /// The machine.
    pub host: String,
    /// No finding.
    pub clean: bool,
    /// The servers found.
    pub servers: Vec<ServerLine>,
    /// What the server list left out.
    pub servers_left_out: LeftOut,
    /// HTTP sessions.
    pub http_sessions: Vec<SessionLine>,
    /// What the HTTP session list left out.
    pub http_sessions_left_out: LeftOut,
    /// Debug sessions.
    pub debug_sessions: Vec<SessionLine>,
    /// What the debug session list left out.
    pub debug_sessions_left_out: LeftOut,
    /// Processes by role.
    pub processes_by_role: BTreeMap<String, usize>,
    /// Findings by kind.
    pub findings_by_kind: BTreeMap<String, usize>,
}

/// The overview of `s`.
pub fn overview(s: &Snapshot, page: Page) -> Overview {
    let servers: Vec<ServerLine> = s
        .servers
        .iter()
        .map(|v| ServerLine {
            pid: v.pid,
            mode: v.mode.to_string(),
            port: v.port,
            processes: s
                .processes
                .iter()
                .filter(|p| p.server_pid == Some(v.pid) && p.exited_at.is_none())
                .count(),
        })
        .collect();
    let http: Vec<SessionLine> = s
        .http_sessions
        .iter()
        .map(|h| SessionLine {
            id: cut(&h.id),
            server_pid: h.server_pid,
            state: match (&h.ended, h.in_health) {
                (Some(end), _) => format!("ended ({})", cut(&end.to_string())),
                (None, true) => "open (in /health)".to_owned(),
                (None, false) => "open (from the log)".to_owned(),
            },
        })
        .collect();
    let debug: Vec<SessionLine> = s
        .debug_sessions
        .iter()
        .map(|d| SessionLine {
            id: cut(&d.id),
            server_pid: d.server_pid,
            state: match (d.ended, d.state) {
                (true, _) => "ended".to_owned(),
                (false, Some(st)) => st.to_string(),
                (false, None) => "open".to_owned(),
            },
        })
        .collect();
    let (servers, servers_left_out) = page_of(&servers, page);
    let (http_sessions, http_sessions_left_out) = page_of(&http, page);
    let (debug_sessions, debug_sessions_left_out) = page_of(&debug, page);
    Overview {
        taken_at: s.taken_at,
        host: s.host.clone(),
        clean: s.findings.is_empty(),
        servers,
        servers_left_out,
        http_sessions,
        http_sessions_left_out,
        debug_sessions,
        debug_sessions_left_out,
        processes_by_role: count_by(s.processes.iter().map(|p| p.role.to_string())),
        findings_by_kind: count_by(s.findings.iter().map(|f| f.kind.to_string())),
    }
}

fn count_by(words: impl Iterator<Item = String>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for w in words {
        *out.entry(w).or_insert(0) += 1;
    }
    out
}

/// One plan, as an agent is shown it before a kill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PlanLine {
    /// What names exactly this plan (its targets' identities and container): the kill takes
    /// it back, and refuses when the plan is no longer this one.
    pub digest: String,
    /// Processes it would end.
    pub targets: usize,
    /// Those it names (`role pid`), the first few in an audit.
    pub ends: Vec<String>,
    /// The container it would end through its engine, when it would.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Pids it refuses to signal, with why.
    pub refused: Vec<String>,
}

/// A plan's digest: its targets' identities (pid and start, sorted) and its container.
pub fn digest(plan: &KillPlan) -> String {
    let mut ids: Vec<(u32, u64)> = plan
        .targets
        .iter()
        .map(|t| (t.pid, t.start_ticks))
        .collect();
    ids.sort_unstable();
    let mut h = rustc_hash::FxHasher::default();
    for (pid, ticks) in ids {
        h.write_u32(pid);
        h.write_u64(ticks);
    }
    if let Some(c) = &plan.container {
        h.write(c.id.as_bytes());
        h.write_u32(c.main_pid);
        h.write_u64(c.main_start_ticks);
    }
    format!("{:016x}", h.finish())
}

fn plan_line(plan: &KillPlan, all: bool) -> PlanLine {
    let limit = if all { usize::MAX } else { TARGETS_IN_AUDIT };
    PlanLine {
        digest: digest(plan),
        targets: plan.targets.len(),
        ends: plan
            .targets
            .iter()
            .take(limit)
            .map(|t| match all {
                true => cut(&format!("{} {}: {}", t.role, t.pid, t.argv.join(" "))),
                false => format!("{} {}", t.role, t.pid),
            })
            .collect(),
        container: plan.container.as_ref().map(|c| c.id.clone()),
        refused: plan
            .refused
            .iter()
            .take(limit)
            .map(|r| cut(&format!("{}: {}", r.pid, r.why)))
            .collect(),
    }
}

/// One finding, as an audit lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FindingLine {
    /// Its id (for `explain` and `kill`).
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// How bad.
    pub severity: String,
    /// The processes it concerns.
    pub pids: Vec<u32>,
    /// The facts, the first few sentences (all of them in `explain`).
    pub evidence: Vec<String>,
    /// Sentences left out of the evidence.
    pub evidence_left_out: usize,
    /// Since when it holds.
    pub since: DateTime<Utc>,
    /// When it was confirmed (held for its grace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<DateTime<Utc>>,
    /// What to do, in words.
    pub suggested_action: String,
    /// What its plan would end, when killing is the fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanLine>,
}

fn finding_line(f: &Finding, all: bool) -> FindingLine {
    let keep = if all { usize::MAX } else { EVIDENCE_IN_AUDIT };
    FindingLine {
        id: f.id.to_string(),
        kind: f.kind.to_string(),
        severity: f.severity.to_string(),
        pids: f
            .pids
            .iter()
            .take(if all { usize::MAX } else { 20 })
            .copied()
            .collect(),
        evidence: f.evidence.iter().take(keep).map(|e| cut(e)).collect(),
        evidence_left_out: f.evidence.len().saturating_sub(keep),
        since: f.since,
        confirmed_at: f.confirmed_at,
        suggested_action: cut(&f.suggested_action),
        plan: f.plan.as_ref().map(|p| plan_line(p, all)),
    }
}

/// Findings of one kind and cause, as one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GroupLine {
    /// Its key (`orphaned-worker@24633`).
    pub key: String,
    /// In words, with the count.
    pub title: String,
    /// Findings in it.
    pub findings: usize,
    /// Distinct processes they name.
    pub pids: u32,
    /// The digest of the one plan that ends them all (`kill` with `kind`), when killing fixes
    /// them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
}

/// The audit's answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Audit {
    /// When the look was taken.
    pub taken_at: DateTime<Utc>,
    /// No finding.
    pub clean: bool,
    /// The findings by kind and cause: how an incident of thousands reads.
    pub groups: Vec<GroupLine>,
    /// What the group list left out.
    pub groups_left_out: LeftOut,
    /// The findings, worst first, one page of them.
    pub findings: Vec<FindingLine>,
    /// What the finding list left out (`next_offset` asks for more).
    pub findings_left_out: LeftOut,
}

/// The audit of `s`: its groups and one page of its findings.
pub fn audit(s: &Snapshot, page: Page) -> Audit {
    let groups: Vec<GroupLine> = s
        .groups
        .iter()
        .map(|g| GroupLine {
            key: cut(&g.key),
            title: cut(&g.title),
            findings: g.findings.len(),
            pids: g.pids,
            plan_digest: None,
        })
        .collect();
    let (groups, groups_left_out) = page_of(&groups, Page { offset: 0, ..page });
    let (page_findings, findings_left_out) = page_of(&s.findings, page);
    Audit {
        taken_at: s.taken_at,
        clean: s.findings.is_empty(),
        groups,
        groups_left_out,
        findings: page_findings
            .iter()
            .map(|f| finding_line(f, false))
            .collect(),
        findings_left_out,
    }
}

/// One finding in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Explained {
    /// The finding, every sentence and every target of its plan.
    pub finding: FindingLine,
    /// The timeline lines about it, its processes or its session, latest last.
    pub timeline: Vec<String>,
    /// What the timeline list left out.
    pub timeline_left_out: LeftOut,
}

/// Finding `id` of `s` in full, if `s` holds it.
pub fn explain(s: &Snapshot, id: &str, page: Page) -> Option<Explained> {
    let f = s.findings.iter().find(|f| f.id.to_string() == id)?;
    let about = |e: &crate::model::TimelineEvent| {
        e.finding_id.as_ref().is_some_and(|x| x.to_string() == id)
            || e.pid.is_some_and(|p| f.pids.contains(&p))
            || (e.session_id.is_some() && e.session_id == f.session_id)
    };
    let lines: Vec<String> = s
        .timeline
        .iter()
        .filter(|e| about(e))
        .map(|e| cut(&format!("{} {}", e.at.format("%H:%M:%S"), e.text)))
        .collect();
    // The latest page: an agent reads what happened last first.
    let skip = lines.len().saturating_sub(page.offset + page.limit);
    let (timeline, timeline_left_out) = page_of(&lines[skip..], Page { offset: 0, ..page });
    Some(Explained {
        finding: finding_line(f, true),
        timeline,
        timeline_left_out,
    })
}

/// A process in a line (parents and children).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ProcLine {
    /// Its pid.
    pub pid: u32,
    /// Its role.
    pub role: String,
    /// Its program (the first word of its command line).
    pub program: String,
}

/// One process in full.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProcessDetail {
    /// Its pid.
    pub pid: u32,
    /// Its start, the identity with the pid (`pid.ticks`).
    pub id: String,
    /// Its role as the engine names it.
    pub role: String,
    /// Its command line, redacted.
    pub argv: Vec<String>,
    /// Its scheduler state.
    pub state: String,
    /// Its CPU, percent of a core, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f32>,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// Its working directory, redacted (when it can be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// TCP ports it listens on.
    pub ports: Vec<u16>,
    /// The server it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    /// Its debug session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Its parents, nearest first, as far as the table knows them.
    pub parents: Vec<ProcLine>,
    /// Its children.
    pub children: Vec<ProcLine>,
    /// What the children list left out.
    pub children_left_out: LeftOut,
    /// The findings that name it.
    pub findings: Vec<String>,
}

fn proc_line(p: &Proc) -> ProcLine {
    ProcLine {
        pid: p.pid,
        role: p.role.to_string(),
        program: cut(p.argv.first().map_or("", String::as_str)),
    }
}

/// Process `pid` of `s` in full (`cwd` and `ports` as the collector read them), if `s` holds
/// it.
pub fn process(
    s: &Snapshot,
    pid: u32,
    cwd: Option<String>,
    ports: Vec<u16>,
    page: Page,
) -> Option<ProcessDetail> {
    let p = s
        .processes
        .iter()
        .find(|p| p.pid == pid && p.exited_at.is_none())?;
    let by_pid = |q: u32| {
        s.processes
            .iter()
            .find(|x| x.pid == q && x.exited_at.is_none())
    };
    let mut parents = Vec::new();
    let mut cur = p.remembered_ppid.unwrap_or(p.ppid);
    while let Some(q) = by_pid(cur).filter(|_| parents.len() < 32) {
        parents.push(proc_line(q));
        cur = q.remembered_ppid.unwrap_or(q.ppid);
    }
    let kids: Vec<ProcLine> = s
        .processes
        .iter()
        .filter(|c| c.ppid == pid && c.pid != pid && c.exited_at.is_none())
        .map(|c| proc_line(c))
        .collect();
    let (children, children_left_out) = page_of(&kids, page);
    Some(ProcessDetail {
        pid,
        id: format!("{}.{}", p.pid, p.start_ticks),
        role: p.role.to_string(),
        argv: p.argv.iter().take(64).map(|a| cut(a)).collect(),
        state: p.sample.state.word().to_owned(),
        cpu_percent: p.sample.cpu_percent,
        rss_bytes: p.sample.rss_bytes,
        cwd: cwd.map(|c| cut(&c)),
        ports,
        server_pid: p.server_pid,
        session_id: p.session_id.clone(),
        parents,
        children,
        children_left_out,
        findings: s
            .findings
            .iter()
            .filter(|f| f.pids.contains(&pid))
            .take(MAX_LIMIT)
            .map(|f| f.id.to_string())
            .collect(),
    })
}

/// The short text beside a structured answer: what a model reads first.
pub fn audit_text(a: &Audit) -> String {
    if a.clean {
        return "clean: no finding".to_owned();
    }
    let mut out = format!(
        "{} finding(s) in {} group(s)",
        a.findings_left_out.total, a.groups_left_out.total
    );
    for g in &a.groups {
        out.push_str(&format!("\n- {}", g.title));
    }
    for f in &a.findings {
        let plan = f.plan.as_ref().map_or(String::new(), |p| {
            format!(" — plan {} ends {}", p.digest, p.targets)
        });
        out.push_str(&format!("\n{} {} ({}){plan}", f.severity, f.id, f.kind));
    }
    if let Some(next) = a.findings_left_out.next_offset {
        out.push_str(&format!("\n… more with offset {next}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_bounded_and_says_what_it_left_out() {
        let all: Vec<u32> = (0..25).collect();
        let (items, left) = page_of(&all, Page::new(None, None));
        assert_eq!(items.len(), DEFAULT_LIMIT);
        assert_eq!(
            (left.total, left.shown, left.next_offset),
            (25, 10, Some(10))
        );
        let (items, left) = page_of(&all, Page::new(Some(20), Some(10)));
        assert_eq!((items.len(), left.next_offset), (5, None));
        assert_eq!(Page::new(None, Some(1_000_000)).limit, MAX_LIMIT);
        assert_eq!(Page::new(None, Some(0)).limit, 1);
        let (items, left) = page_of(&all, Page::new(Some(99), None));
        assert!(items.is_empty() && left.next_offset.is_none());
    }

    /// 5,000 orphaned workers of one gone owner, through the real state step.
    fn incident() -> Snapshot {
        use crate::model::Role;
        use crate::state::{State, StateConfig};
        use crate::testing::{ObservationBuilder, ProcBuilder};
        let mut config = StateConfig::default();
        config.verdicts.grace = std::time::Duration::ZERO;
        let mut state = State::new(config);
        let mut last = None;
        for t in 0..4 {
            let mut b = ObservationBuilder::at(t);
            for i in 0..5_000u32 {
                let session = format!("5a1d0000-0000-4000-8000-{i:012}");
                b = b.proc(
                    ProcBuilder::new(10_000 + i, Role::Worker)
                        .owner(7)
                        .session(&session)
                        .argv(&format!(
                            "node /x/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=7 --mcp-session-id={session}"
                        ))
                        .build(),
                );
            }
            last = Some(state.step(b.build()).snapshot);
        }
        last.expect("stepped")
    }

    #[test]
    fn an_incident_of_five_thousand_orphans_is_one_group_and_one_page() {
        let s = incident();
        assert!(s.findings.len() >= 5_000, "{}", s.findings.len());
        let a = audit(&s, Page::new(None, None));
        assert_eq!(a.groups.len(), 1, "{:?}", a.groups);
        assert!(a.groups[0].findings >= 5_000);
        assert_eq!(a.findings.len(), DEFAULT_LIMIT);
        assert_eq!(a.findings_left_out.next_offset, Some(DEFAULT_LIMIT));
        let json = serde_json::to_string(&a).unwrap_or_default();
        assert!(json.len() < 16 * 1024, "{} bytes", json.len());
        assert!(audit_text(&a).len() < 4 * 1024);
        let o = overview(&s, Page::new(None, None));
        assert!(serde_json::to_string(&o).unwrap_or_default().len() < 8 * 1024);
        // Asking for more is bounded too.
        let more = audit(&s, Page::new(Some(10), Some(100_000)));
        assert_eq!(more.findings.len(), MAX_LIMIT);
        // One of them in full: its plan, with every target, under its digest.
        let id = a.findings[0].id.clone();
        let e = explain(&s, &id, Page::new(None, None)).expect("explained");
        let plan = e.finding.plan.expect("a plan");
        assert_eq!(
            Some(plan.digest.clone()),
            a.findings[0].plan.as_ref().map(|p| p.digest.clone())
        );
        assert_eq!(plan.ends.len(), plan.targets);
        assert!(explain(&s, "leaked-worker:1.1", Page::new(None, None)).is_none());
    }

    #[test]
    fn a_plans_digest_is_its_targets_identities_in_any_order() {
        let s = incident();
        let plans: Vec<&KillPlan> = s
            .findings
            .iter()
            .filter_map(|f| f.plan.as_ref())
            .take(2)
            .collect();
        let (a, b) = (plans[0], plans[1]);
        assert_ne!(digest(a), digest(b));
        let mut reordered = a.clone();
        reordered.targets.reverse();
        reordered.grace_ms += 1;
        assert_eq!(digest(a), digest(&reordered));
        let mut other = a.clone();
        if let Some(t) = other.targets.first_mut() {
            t.start_ticks += 1;
        }
        assert_ne!(digest(a), digest(&other), "a reused pid is another plan");
    }

    #[test]
    fn a_long_string_is_cut_on_one_line() {
        let long = "x".repeat(1000) + "\nsecond";
        let c = cut(&long);
        assert!(
            c.chars().count() <= MAX_CHARS + 1 && !c.contains('\n'),
            "{c}"
        );
        assert_eq!(cut("short"), "short");
    }
}
