//! Kill planning, pure over a [`LiveTable`]: which processes, in which order, and what is
//! refused. A plan names every process to end (the asked-for processes, optionally their
//! descendants, and the members of the process groups and sessions that adapters, debuggees and
//! watchdogs lead), leaves first and workers last, each with its identity (pid + start ticks).
//! Execution (in `actions::kill`) re-applies every refusal against the live table.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::model::{KillPlan, KillTarget, LiveTable, Proc, ProcId, Refusal, Role, Via};
use crate::redact::redact_argv;

/// Default time between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(3000);
/// The longest grace anyone may ask for (a plan waits at most this long per signal).
pub const MAX_GRACE: Duration = Duration::from_secs(60);
/// The grace for processes that ignore SIGTERM in practice (spinning orphans, §4.3 of the
/// server's failure shapes): SIGKILL follows after one second.
pub const SHORT_GRACE: Duration = Duration::from_millis(1000);

/// Options for planning.
#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    /// Include every descendant of the targets.
    pub tree: bool,
    /// SIGTERM → SIGKILL grace (bounded by [`MAX_GRACE`]).
    pub grace: Duration,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            tree: true,
            grace: DEFAULT_GRACE,
        }
    }
}

/// Why a pid may never be signalled by this process, whatever the plan says.
pub fn refusal(live: &LiveTable, pid: u32) -> Option<String> {
    refusal_of(live, live.get(pid), pid)
}

/// [`refusal`] with the process already looked up (`None`: not in the live table).
fn refusal_of(live: &LiveTable, p: Option<&Proc>, pid: u32) -> Option<String> {
    if pid <= 1 {
        return Some("pid 0 and 1 are never signalled".to_owned());
    }
    if pid == live.me.pid {
        return Some("that is debugtop itself".to_owned());
    }
    if live.me.ancestors.contains(&pid) {
        return Some("that is an ancestor of debugtop (its shell or launcher)".to_owned());
    }
    let Some(p) = p else {
        return Some(
            "not part of any debug server's tree (use --force to kill it anyway)".to_owned(),
        );
    };
    match (live.me.uid, p.uid) {
        (Some(me), Some(them)) if me != 0 && me != them => Some(format!(
            "it belongs to another user (uid {them}); only root may end other users' processes"
        )),
        _ => None,
    }
}

/// The live table looked up by pid and by each relation a plan follows, built once per plan:
/// planning a thousand orphans is linear, not cubic.
struct Index<'a> {
    by_pid: HashMap<u32, &'a Proc>,
    children: HashMap<u32, Vec<&'a Proc>>,
    group: HashMap<u32, Vec<&'a Proc>>,
    session: HashMap<u32, Vec<&'a Proc>>,
    watchdogs: HashMap<u32, Vec<&'a Proc>>,
}

impl<'a> Index<'a> {
    fn new(live: &'a LiveTable) -> Self {
        let mut me = Self {
            by_pid: HashMap::with_capacity(live.procs.len()),
            children: HashMap::new(),
            group: HashMap::new(),
            session: HashMap::new(),
            watchdogs: HashMap::new(),
        };
        for p in &live.procs {
            me.by_pid.entry(p.pid).or_insert(p);
            me.children.entry(p.ppid).or_default().push(p);
            me.group.entry(p.pgid).or_default().push(p);
            me.session.entry(p.sid).or_default().push(p);
            if let Some(i) = p.markers.inspector_pid.filter(|_| p.role == Role::Watchdog) {
                me.watchdogs.entry(i).or_default().push(p);
            }
        }
        me
    }

    /// Processes related to `p` as a plan follows them, strongest relation first.
    fn related(&self, p: &Proc, tree: bool) -> Vec<(&'a Proc, Via)> {
        let pid = p.pid;
        let of = |m: &HashMap<u32, Vec<&'a Proc>>, via: Via| {
            m.get(&pid)
                .into_iter()
                .flatten()
                .map(move |q| (*q, via))
                .collect::<Vec<_>>()
        };
        let mut out = Vec::new();
        if tree {
            out.extend(of(&self.children, Via::Descendant));
        }
        if p.pgid == pid {
            out.extend(of(&self.group, Via::Group));
        }
        if p.sid == pid {
            out.extend(of(&self.session, Via::Session));
        }
        out.extend(of(&self.watchdogs, Via::Watchdog));
        out
    }
}

/// Plans the end of `pids` against the live table.
pub fn plan(live: &LiveTable, pids: &[u32], opts: PlanOptions) -> KillPlan {
    Planner::new(live, None).plan(pids, opts)
}

/// The redacted command lines of the processes planned at the last ticks, by identity: a plan
/// shows each target's command line redacted, and at incident scale the rules plan thousands
/// of kills a tick whose command lines never change.
#[derive(Debug, Default)]
pub struct ArgvMemo(RefCell<HashMap<ProcId, RawAndRedacted>>);

/// A command line as read and as shown.
type RawAndRedacted = (Vec<String>, Vec<String>);

impl ArgvMemo {
    /// `p`'s command line, redacted.
    fn redacted(&self, p: &Proc) -> Vec<String> {
        let mut m = self.0.borrow_mut();
        match m.get(&p.id()) {
            Some((raw, red)) if *raw == p.argv => red.clone(),
            _ => {
                let red = redact_argv(&p.argv);
                m.insert(p.id(), (p.argv.clone(), red.clone()));
                red
            }
        }
    }

    /// Forgets the processes no longer live.
    pub fn retain_live(&mut self, live: &LiveTable) {
        let ids: std::collections::HashSet<ProcId> = live.procs.iter().map(|p| p.id()).collect();
        self.0.get_mut().retain(|id, _| ids.contains(id));
    }
}

/// Plans against one live table, its index built once: the rules plan one kill per finding,
/// a thousand of them at incident scale.
pub struct Planner<'a> {
    live: &'a LiveTable,
    idx: Index<'a>,
    argv: Option<&'a ArgvMemo>,
}

impl std::fmt::Debug for Planner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Planner({} processes)", self.idx.by_pid.len())
    }
}

impl<'a> Planner<'a> {
    /// Indexes `live`; redacts command lines through `argv` when given.
    pub fn new(live: &'a LiveTable, argv: Option<&'a ArgvMemo>) -> Self {
        Self {
            live,
            idx: Index::new(live),
            argv,
        }
    }

    /// Plans the end of `pids`.
    pub fn plan(&self, pids: &[u32], opts: PlanOptions) -> KillPlan {
        let (live, idx) = (self.live, &self.idx);
        let mut chosen: BTreeMap<u32, Via> = BTreeMap::new();
        let mut refused: BTreeMap<u32, Refusal> = BTreeMap::new();
        let mut order = Vec::new();
        for &pid in pids {
            if chosen.contains_key(&pid) || refused.contains_key(&pid) {
                continue;
            }
            match refusal_of(live, idx.by_pid.get(&pid).copied(), pid) {
                Some(why) => {
                    order.push(pid);
                    refused.insert(pid, Refusal { pid, why });
                }
                None => {
                    chosen.insert(pid, Via::Target);
                }
            }
        }
        expand(live, idx, &mut chosen, opts.tree);
        KillPlan {
            targets: ordered_targets(&idx.by_pid, &chosen, |p| match self.argv {
                Some(m) => m.redacted(p),
                None => redact_argv(&p.argv),
            }),
            refused: order.iter().filter_map(|p| refused.remove(p)).collect(),
            grace_ms: u64::try_from(opts.grace.min(MAX_GRACE).as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// The chosen processes as targets: leaves first; workers and servers after everything they
/// started.
fn ordered_targets(
    by_pid: &HashMap<u32, &Proc>,
    chosen: &BTreeMap<u32, Via>,
    argv: impl Fn(&Proc) -> Vec<String>,
) -> Vec<KillTarget> {
    let mut targets: Vec<KillTarget> = chosen
        .iter()
        .filter_map(|(&pid, &via)| by_pid.get(&pid).map(|p| target(p, via, argv(p))))
        .collect();
    let rank = |r: Role| match r {
        Role::Server => 2,
        Role::Worker => 1,
        _ => 0,
    };
    targets.sort_by_key(|t| {
        (
            rank(t.role),
            std::cmp::Reverse(depth(by_pid, chosen, t.pid)),
            t.pid,
        )
    });
    targets
}

/// Adds descendants (with `tree`), members of groups and sessions the chosen lead, and
/// watchdogs naming a chosen debuggee — never a server, never a refused pid. Level by level,
/// each level in pid order, so a process reached two ways gets the same relation every time.
fn expand(live: &LiveTable, idx: &Index<'_>, chosen: &mut BTreeMap<u32, Via>, tree: bool) {
    let mut frontier: Vec<u32> = chosen.keys().copied().collect();
    while !frontier.is_empty() {
        frontier.sort_unstable();
        let mut next = Vec::new();
        for pid in frontier {
            let Some(p) = idx.by_pid.get(&pid) else {
                continue;
            };
            for (q, via) in idx.related(p, tree) {
                if chosen.contains_key(&q.pid)
                    || q.role == Role::Server
                    || refusal_of(live, Some(q), q.pid).is_some()
                {
                    continue;
                }
                chosen.insert(q.pid, via);
                next.push(q.pid);
            }
        }
        frontier = next;
    }
}

/// How deep a chosen process sits under other chosen ones (a watchdog counts as its
/// debuggee's child, so it is signalled before it).
fn depth(by_pid: &HashMap<u32, &Proc>, chosen: &BTreeMap<u32, Via>, pid: u32) -> usize {
    let mut d = 0;
    let mut cur = pid;
    while let Some(p) = by_pid.get(&cur) {
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
}

fn target(p: &Proc, via: Via, argv: Vec<String>) -> KillTarget {
    KillTarget {
        pid: p.pid,
        start_ticks: p.start_ticks,
        role: p.role,
        pgid: p.pgid,
        sid: p.sid,
        argv,
        via,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SelfInfo;
    use crate::testing::ProcBuilder;

    fn live(procs: Vec<Proc>) -> LiveTable {
        LiveTable {
            procs: procs.into_iter().map(std::sync::Arc::new).collect(),
            me: SelfInfo {
                pid: 50,
                uid: Some(1000),
                ancestors: vec![40, 30],
            },
        }
    }

    #[test]
    fn a_remembered_command_line_is_redacted_and_follows_a_change() {
        let memo = ArgvMemo::default();
        let worker = |argv: &str| {
            ProcBuilder::new(4_000_001, Role::Worker)
                .ppid(1)
                .argv(argv)
                .build()
        };
        let argv_of = |t: &LiveTable| {
            Planner::new(t, Some(&memo))
                .plan(&[4_000_001], PlanOptions::default())
                .targets[0]
                .argv
                .join(" ")
        };
        let first = live(vec![worker("node w.js --token Zq1secret1")]);
        assert_eq!(
            argv_of(&first),
            format!("node w.js --token {}", crate::redact::REDACTED)
        );
        assert_eq!(argv_of(&first), argv_of(&first));
        let changed = live(vec![worker("node w.js --password Zq2secret2 --x")]);
        let shown = argv_of(&changed);
        assert!(
            shown.ends_with("--x") && !shown.contains("Zq2secret2"),
            "{shown}"
        );
        let mut memo = memo;
        memo.retain_live(&live(vec![]));
        assert!(memo.0.borrow().is_empty());
    }

    #[test]
    fn js_chain_plan_takes_group_session_and_watchdog_leaves_first() {
        let t = live(vec![
            ProcBuilder::new(100, Role::Server).ppid(1).build(),
            ProcBuilder::new(4_000_001, Role::Worker)
                .ppid(100)
                .group(100, 100)
                .build(),
            ProcBuilder::new(4_000_002, Role::Adapter).ppid(1).build(),
            ProcBuilder::new(4_000_003, Role::Debuggee)
                .ppid(4_000_002)
                .group(4_000_002, 4_000_002)
                .build(),
            ProcBuilder::new(4_000_004, Role::Watchdog)
                .ppid(1)
                .inspector(4_000_003)
                .build(),
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
        assert_eq!(
            pids,
            [4_000_004, 4_000_003, 4_000_002],
            "watchdog, debuggee, then the adapter; never the server or an unrelated worker"
        );
    }

    #[test]
    fn refuses_init_self_ancestors_strangers_and_other_users() {
        let t = live(vec![
            ProcBuilder::new(60, Role::Adapter).uid(1001).build(),
            ProcBuilder::new(61, Role::Adapter).build(),
        ]);
        let p = plan(
            &t,
            &[0, 1, 50, 40, 4_000_123, 60, 61, 61],
            PlanOptions::default(),
        );
        let whys: Vec<&str> = p.refused.iter().map(|r| r.why.as_str()).collect();
        assert!(whys[0].contains("never signalled") && whys[1].contains("never signalled"));
        assert!(whys[2].contains("debugtop itself"));
        assert!(whys[3].contains("ancestor"));
        assert!(whys[4].contains("not part of any debug server"));
        assert!(whys[5].contains("another user"), "{whys:?}");
        assert_eq!(
            p.targets.iter().map(|t| t.pid).collect::<Vec<_>>(),
            [61],
            "once"
        );
    }

    #[test]
    fn worker_with_tree_goes_last_and_grace_is_bounded() {
        let t = live(vec![
            ProcBuilder::new(4_000_001, Role::Worker)
                .ppid(100)
                .group(100, 100)
                .build(),
            ProcBuilder::new(4_000_002, Role::Adapter)
                .ppid(4_000_001)
                .build(),
            ProcBuilder::new(4_000_003, Role::Debuggee)
                .ppid(4_000_002)
                .group(4_000_002, 4_000_002)
                .build(),
        ]);
        let p = plan(
            &t,
            &[4_000_001],
            PlanOptions {
                tree: true,
                grace: Duration::from_secs(3600),
            },
        );
        let pids: Vec<u32> = p.targets.iter().map(|t| t.pid).collect();
        assert_eq!(pids, [4_000_003, 4_000_002, 4_000_001]);
        assert_eq!(p.grace_ms, 60_000);
        assert!(p.describe().iter().any(|l| l.contains("then SIGKILL")));
    }
}
