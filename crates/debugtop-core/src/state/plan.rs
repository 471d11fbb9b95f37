//! Kill planning, pure over a [`LiveTable`]: which processes, in which order, and what is
//! refused. A plan names every process to end (the asked-for processes, optionally their
//! descendants, and the members of the process groups and sessions that adapters, debuggees and
//! watchdogs lead), leaves first and workers last, each with its identity (pid + start ticks).
//! Execution (in `actions::kill`) re-applies every refusal against the live table.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap as HashMap;

use crate::model::{KillPlan, KillTarget, LiveTable, Proc, Refusal, Role, SelfInfo, Via};

/// Default time between SIGTERM and SIGKILL.
pub const DEFAULT_TERM_WAIT: Duration = Duration::from_millis(3000);
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
            grace: DEFAULT_TERM_WAIT,
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
    by_pid: HashMap<u32, &'a Arc<Proc>>,
    children: HashMap<u32, Vec<&'a Arc<Proc>>>,
    group: HashMap<u32, Vec<&'a Arc<Proc>>>,
    session: HashMap<u32, Vec<&'a Arc<Proc>>>,
    watchdogs: HashMap<u32, Vec<&'a Arc<Proc>>>,
}

impl<'a> Index<'a> {
    fn new(live: &'a LiveTable) -> Self {
        let mut me = Self {
            by_pid: HashMap::with_capacity_and_hasher(live.procs.len(), Default::default()),
            children: HashMap::default(),
            group: HashMap::default(),
            session: HashMap::default(),
            watchdogs: HashMap::default(),
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
    fn related(&self, p: &Proc, tree: bool) -> impl Iterator<Item = (&'a Arc<Proc>, Via)> + '_ {
        let pid = p.pid;
        members(&self.children, pid, Via::Descendant, tree)
            .chain(members(&self.group, pid, Via::Group, p.pgid == pid))
            .chain(members(&self.session, pid, Via::Session, p.sid == pid))
            .chain(members(&self.watchdogs, pid, Via::Watchdog, true))
    }

    /// The live process with this pid.
    fn proc(&self, pid: u32) -> Option<&'a Proc> {
        self.by_pid.get(&pid).map(|p| &***p)
    }
}

/// The processes `m` lists under `pid`, each with `via` (none unless `follow`).
fn members<'m, 'a>(
    m: &'m HashMap<u32, Vec<&'a Arc<Proc>>>,
    pid: u32,
    via: Via,
    follow: bool,
) -> impl Iterator<Item = (&'a Arc<Proc>, Via)> + 'm {
    m.get(&pid)
        .filter(|_| follow)
        .into_iter()
        .flatten()
        .map(move |q| (*q, via))
}

/// What a plan was made from: every asked-for pid as it was looked up, and every process the
/// plan took with every process related to it (taken or not) — each the very allocation of the
/// live table it was planned against. A plan is the same plan against a later table exactly
/// when each of these is still the same allocation there and the planner is the same process
/// ([`Planner::holds`]): planning is a function of nothing else.
#[derive(Debug, Clone)]
pub struct PlanTrace {
    me: SelfInfo,
    tree: bool,
    asked: Vec<(u32, Option<Arc<Proc>>)>,
    walked: Vec<(Arc<Proc>, Related)>,
}

/// The processes related to one process, as a plan follows them.
type Related = Vec<(Arc<Proc>, Via)>;

/// Plans the end of `pids` against the live table.
pub fn plan(live: &LiveTable, pids: &[u32], opts: PlanOptions) -> KillPlan {
    Planner::new(live).plan(pids, opts)
}

/// Why the process table does not tie `q` to `subject` — the process a finding is about — if
/// it does not. A pid a rule asks to kill may come from text (a log line names an adapter), and
/// text is a claim: only the table confirms it. Tied means `subject` itself; a descendant of
/// it; a member of the process group it leads, or of a group whose leader is gone that it is
/// in; a member of the session it leads; or a watchdog naming it — and always of the same user
/// as `subject` (root sees everyone's processes, and still plans within the subject's user),
/// and never a server other than the subject.
fn untied(idx: &Index<'_>, subject: &Proc, q: &Proc) -> Option<String> {
    if q.uid != subject.uid {
        let uid = |u: Option<u32>| u.map_or_else(|| "unknown".to_owned(), |u| u.to_string());
        return Some(format!(
            "it belongs to uid {}, not to the user of {} {} (uid {})",
            uid(q.uid),
            subject.role,
            subject.pid,
            uid(subject.uid)
        ));
    }
    if q.id() == subject.id() {
        return None;
    }
    // A wrapper's own server is what the wrapper is for (npx → the server it started).
    let wrapped = subject.role == Role::Wrapper && subject.server_pid == Some(q.pid);
    if q.role == Role::Server && !wrapped {
        return Some(format!(
            "it is a server, and this finding is about {} {}",
            subject.role, subject.pid
        ));
    }
    let leads_or_orphaned = subject.pgid == subject.pid || idx.proc(subject.pgid).is_none();
    let tied = descends_from(idx, q, subject.pid)
        || (q.pgid == subject.pgid && leads_or_orphaned)
        || q.sid == subject.pid
        || (q.role == Role::Watchdog && q.markers.inspector_pid == Some(subject.pid));
    (!tied).then(|| {
        format!(
            "the process table does not tie it to {} {} (not under it, nor in a group or \
             session it leads)",
            subject.role, subject.pid
        )
    })
}

/// Whether `ancestor` is on `q`'s chain of parents in the table.
fn descends_from(idx: &Index<'_>, q: &Proc, ancestor: u32) -> bool {
    let mut cur = q.ppid;
    for _ in 0..64 {
        if cur == ancestor {
            return true;
        }
        match idx.proc(cur) {
            Some(p) if p.ppid != cur && cur > 1 => cur = p.ppid,
            _ => return false,
        }
    }
    false
}

/// Plans against one live table, its index built once: the rules plan one kill per finding,
/// a thousand of them at incident scale.
pub struct Planner<'a> {
    live: &'a LiveTable,
    idx: Index<'a>,
}

impl std::fmt::Debug for Planner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Planner({} processes)", self.idx.by_pid.len())
    }
}

impl<'a> Planner<'a> {
    /// Indexes `live`.
    pub fn new(live: &'a LiveTable) -> Self {
        Self {
            live,
            idx: Index::new(live),
        }
    }

    /// Why the table does not tie `pid` to `subject` as a plan for `subject`'s finding would
    /// need it (`None`: tied) — for a rule to tell a claim from a fact before it plans.
    pub fn untied(&self, subject: &Proc, pid: u32) -> Option<String> {
        match self.idx.proc(pid) {
            Some(q) => untied(&self.idx, subject, q),
            None => Some("it is not in the process table".to_owned()),
        }
    }

    /// Plans the end of `pids`, as a person asked for them.
    pub fn plan(&self, pids: &[u32], opts: PlanOptions) -> KillPlan {
        self.plan_traced(pids, None, opts, None)
    }

    /// Plans the end of `pids` for a finding about `subject`: a pid the table does not tie to
    /// `subject` ([`untied`]) is refused, and nothing of another user than the subject's is
    /// taken by following relations.
    pub fn plan_about(&self, subject: &Proc, pids: &[u32], opts: PlanOptions) -> KillPlan {
        self.plan_traced(pids, Some(subject), opts, None)
    }

    /// [`plan_about`](Self::plan_about) `subject` itself, and what the plan was made from (to
    /// tell, at a later tick, whether planning again would give the same plan without planning
    /// again).
    pub fn plan_with_trace(&self, subject: &Proc, opts: PlanOptions) -> (KillPlan, PlanTrace) {
        let mut trace = PlanTrace {
            me: self.live.me.clone(),
            tree: opts.tree,
            asked: Vec::new(),
            walked: Vec::new(),
        };
        let plan = self.plan_traced(&[subject.pid], Some(subject), opts, Some(&mut trace));
        (plan, trace)
    }

    /// Whether planning again against this table would give the plan `trace` was made with:
    /// every process it read is the same allocation here, nothing new is related to them, and
    /// the planner is the same process.
    pub fn holds(&self, trace: &PlanTrace) -> bool {
        let same = |pid: u32, was: Option<&Arc<Proc>>| match (self.idx.by_pid.get(&pid), was) {
            (Some(now), Some(was)) => Arc::ptr_eq(now, was),
            (None, None) => true,
            _ => false,
        };
        trace.me == self.live.me
            && trace
                .asked
                .iter()
                .all(|(pid, was)| same(*pid, was.as_ref()))
            && trace.walked.iter().all(|(p, related)| {
                let mut now = self.idx.related(p, trace.tree);
                same(p.pid, Some(p))
                    && related.iter().all(|(r, w)| {
                        now.next()
                            .is_some_and(|(q, v)| Arc::ptr_eq(q, r) && v == *w)
                    })
                    && now.next().is_none()
            })
    }

    fn plan_traced(
        &self,
        pids: &[u32],
        subject: Option<&Proc>,
        opts: PlanOptions,
        mut trace: Option<&mut PlanTrace>,
    ) -> KillPlan {
        let (live, idx) = (self.live, &self.idx);
        let mut chosen: BTreeMap<u32, Via> = BTreeMap::new();
        let mut refused: BTreeMap<u32, Refusal> = BTreeMap::new();
        let mut order = Vec::new();
        for &pid in pids {
            if let Some(t) = trace.as_deref_mut() {
                t.asked
                    .push((pid, idx.by_pid.get(&pid).map(|p| Arc::clone(p))));
            }
            if chosen.contains_key(&pid) || refused.contains_key(&pid) {
                continue;
            }
            let q = idx.proc(pid);
            let why = refusal_of(live, q, pid).or_else(|| {
                let (s, q) = (subject?, q?);
                untied(idx, s, q)
            });
            match why {
                Some(why) => {
                    order.push(pid);
                    refused.insert(pid, Refusal { pid, why });
                }
                None => {
                    chosen.insert(pid, Via::Target);
                }
            }
        }
        let uid = subject.map(|s| s.uid);
        expand(live, idx, &mut chosen, opts.tree, uid, trace);
        KillPlan {
            targets: ordered_targets(&idx.by_pid, &chosen),
            refused: order.iter().filter_map(|p| refused.remove(p)).collect(),
            grace_ms: u64::try_from(opts.grace.min(MAX_GRACE).as_millis()).unwrap_or(u64::MAX),
            method: crate::model::KillMethod::default(),
            container: None,
        }
    }
}

/// The chosen processes as targets: leaves first; workers and servers after everything they
/// started.
fn ordered_targets(
    by_pid: &HashMap<u32, &Arc<Proc>>,
    chosen: &BTreeMap<u32, Via>,
) -> Vec<KillTarget> {
    let mut targets: Vec<KillTarget> = chosen
        .iter()
        .filter_map(|(&pid, &via)| by_pid.get(&pid).map(|p| target(p, via)))
        .collect();
    // A server's workers before it, its wrappers (npx, `sh -c`) after it: leaves first.
    let rank = |r: Role| match r {
        Role::Wrapper => 3,
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
/// watchdogs naming a chosen debuggee — never a server, never a refused pid, and with `uid`
/// (a finding's subject's user) nothing of another user. Level by level, each level in pid
/// order, so a process reached two ways gets the same relation every time. With `trace`,
/// records each process taken with everything related to it.
fn expand(
    live: &LiveTable,
    idx: &Index<'_>,
    chosen: &mut BTreeMap<u32, Via>,
    tree: bool,
    uid: Option<Option<u32>>,
    mut trace: Option<&mut PlanTrace>,
) {
    let mut frontier: Vec<u32> = chosen.keys().copied().collect();
    while !frontier.is_empty() {
        frontier.sort_unstable();
        let mut next = Vec::new();
        for pid in frontier {
            let Some(p) = idx.by_pid.get(&pid) else {
                continue;
            };
            if let Some(t) = trace.as_deref_mut() {
                let related = idx.related(p, tree).map(|(q, v)| (Arc::clone(q), v));
                t.walked.push((Arc::clone(p), related.collect()));
            }
            for (q, via) in idx.related(p, tree) {
                if chosen.contains_key(&q.pid)
                    || q.role == Role::Server
                    || uid.is_some_and(|u| u != q.uid)
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
fn depth(by_pid: &HashMap<u32, &Arc<Proc>>, chosen: &BTreeMap<u32, Via>, pid: u32) -> usize {
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

/// A target as the table has it: its command line raw (a plan leaves the core redacted, with
/// what carries it).
fn target(p: &Proc, via: Via) -> KillTarget {
    KillTarget {
        pid: p.pid,
        start_ticks: p.start_ticks,
        role: p.role,
        pgid: p.pgid,
        sid: p.sid,
        argv: p.argv.to_vec(),
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

    #[test]
    fn a_trace_holds_until_a_process_it_read_changes_or_joins_or_the_planner_does() {
        let procs = || {
            vec![
                std::sync::Arc::new(
                    ProcBuilder::new(4_000_001, Role::Adapter)
                        .ppid(1)
                        .group(4_000_001, 4_000_001)
                        .build(),
                ),
                std::sync::Arc::new(
                    ProcBuilder::new(4_000_002, Role::Debuggee)
                        .ppid(4_000_001)
                        .build(),
                ),
                std::sync::Arc::new(ProcBuilder::new(4_000_009, Role::Adapter).ppid(1).build()),
            ]
        };
        let first = procs();
        let table = |procs: Vec<std::sync::Arc<Proc>>| LiveTable {
            procs,
            me: live(vec![]).me,
        };
        let t0 = table(first.clone());
        let (plan, trace) = Planner::new(&t0).plan_with_trace(&first[0], PlanOptions::default());
        assert_eq!(plan.targets.len(), 2);
        let holds = |t: &LiveTable| Planner::new(t).holds(&trace);
        assert!(holds(&t0));
        let mut unrelated = first.clone();
        unrelated[2] = std::sync::Arc::new(
            ProcBuilder::new(4_000_009, Role::Adapter)
                .ppid(1)
                .cpu(50.0)
                .build(),
        );
        assert!(
            holds(&table(unrelated)),
            "an unrelated process changing does not matter"
        );
        let mut target_changed = first.clone();
        target_changed[1] = std::sync::Arc::new(
            ProcBuilder::new(4_000_002, Role::Debuggee)
                .ppid(4_000_001)
                .argv("x --new")
                .build(),
        );
        assert!(!holds(&table(target_changed)), "a target re-read");
        let mut joined = first.clone();
        joined.push(std::sync::Arc::new(
            ProcBuilder::new(4_000_003, Role::Debuggee)
                .ppid(1)
                .group(4_000_001, 1)
                .build(),
        ));
        assert!(
            !holds(&table(joined)),
            "a new member of the group the adapter leads"
        );
        let mut watchdog = first.clone();
        watchdog.push(std::sync::Arc::new(
            ProcBuilder::new(4_000_004, Role::Watchdog)
                .ppid(1)
                .inspector(4_000_002)
                .build(),
        ));
        assert!(
            !holds(&table(watchdog)),
            "a relation after all those the plan read (a watchdog naming its debuggee)"
        );
        let mut gone = first.clone();
        gone.remove(1);
        assert!(!holds(&table(gone)), "a target gone");
        let mut other_me = table(first.clone());
        other_me.me.pid = 51;
        assert!(!holds(&other_me), "another planner (its own refusals)");
        let missing = ProcBuilder::new(4_000_005, Role::Worker).ppid(1).build();
        let asked_missing = Planner::new(&t0)
            .plan_with_trace(&missing, PlanOptions::default())
            .1;
        let mut appeared = first;
        appeared.push(std::sync::Arc::new(
            ProcBuilder::new(4_000_005, Role::Worker).ppid(1).build(),
        ));
        assert!(Planner::new(&t0).holds(&asked_missing));
        assert!(
            !Planner::new(&table(appeared)).holds(&asked_missing),
            "a refused pid now live"
        );
    }

    #[test]
    fn a_findings_plan_stays_within_its_subjects_user_and_what_the_table_ties_to_it() {
        // As root: root may end anyone's process, and still plans a finding within its user.
        let mut t = live(vec![
            ProcBuilder::new(100, Role::Server).ppid(1).build(),
            ProcBuilder::new(4_000_001, Role::Adapter).ppid(1).build(),
            ProcBuilder::new(4_000_002, Role::Debuggee)
                .ppid(4_000_001)
                .uid(0)
                .build(),
            ProcBuilder::new(4_000_003, Role::Debuggee)
                .ppid(4_000_001)
                .build(),
            ProcBuilder::new(4_000_004, Role::Adapter).ppid(1).build(),
        ]);
        t.me.uid = Some(0);
        let subject = ProcBuilder::new(4_000_001, Role::Adapter).ppid(1).build();
        let planner = Planner::new(&t);
        let pids = |p: &KillPlan| p.targets.iter().map(|t| t.pid).collect::<Vec<_>>();
        let about = planner.plan_about(&subject, &[4_000_001], PlanOptions::default());
        assert_eq!(pids(&about), [4_000_003, 4_000_001], "not root's child");
        let asked = planner.plan(&[4_000_001], PlanOptions::default());
        assert_eq!(
            pids(&asked),
            [4_000_002, 4_000_003, 4_000_001],
            "a person's plan"
        );
        // Asked pids the table does not tie to the subject: refused, in words.
        let claims = planner.plan_about(
            &subject,
            &[100, 4_000_004, 4_000_002],
            PlanOptions::default(),
        );
        assert!(claims.targets.is_empty(), "{claims:#?}");
        let whys: Vec<&str> = claims.refused.iter().map(|r| r.why.as_str()).collect();
        assert!(whys[0].starts_with("it is a server"), "{whys:?}");
        assert!(
            whys[1].starts_with("the process table does not tie it to adapter 4000001"),
            "{whys:?}"
        );
        assert!(
            whys[2]
                .starts_with("it belongs to uid 0, not to the user of adapter 4000001 (uid 1000)"),
            "{whys:?}"
        );
    }
}
