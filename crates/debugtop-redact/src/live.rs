//! Redaction of a live snapshot, tick after tick, without paying for the whole world each time.
//!
//! A whole-snapshot redaction walks every string through the serialised form: at 5,000
//! orphaned workers that is most of a tick (about three quarters, measured). Between two ticks
//! almost nothing a process, a tree row or a finding says changes — a process's command line is
//! fixed for its identity — so each of them is redacted once and the redacted copy reused while
//! its raw form stays equal (numbers that cannot carry a secret — CPU, memory, scheduler
//! state — are carried over); so is each HTTP and debug session. What the step shares between
//! ticks (`state::reuse::share`) is recognised by pointer: an element that is last tick's allocation at
//! its old place is reused without a comparison, a subtree of the tree without a walk. The rest
//! of the snapshot (servers, groups, sources) is small and goes through [`redact_snapshot`] as
//! before. The result is the same, string for string, as redacting the whole snapshot
//! (property-tested).

use std::collections::HashMap;
use std::sync::Arc;

use tracing::trace_span;

use super::{redact_serde, redact_snapshot};
use debugtop_model::{
    DebugSession, Finding, HttpSession, LogEvent, Proc, Snapshot, TimelineEvent, TreeNode,
};

/// One element as it came and as it leaves.
#[derive(Debug)]
struct Pair<T> {
    raw: T,
    redacted: T,
    /// Redaction found nothing to hide: `redacted` is `raw`.
    as_it_came: bool,
}

impl<T: Clone + PartialEq + serde::Serialize + serde::de::DeserializeOwned> Pair<T> {
    /// Redacts a new or changed element; `None` (dropped, logged) if redaction broke its shape.
    /// An element with nothing to redact leaves as it came (for a shared one, the same
    /// allocation: at 5,000 orphans a second copy of every process, finding, session and event
    /// was a quarter of what the app held, measured).
    fn redact(raw: T, home: Option<&str>) -> Option<Self> {
        let mut redacted = raw.clone();
        if redact_serde(&mut redacted, home) {
            let as_it_came = redacted == raw;
            if as_it_came {
                redacted = raw.clone();
            }
            Some(Self {
                raw,
                redacted,
                as_it_came,
            })
        } else {
            tracing::error!("redaction broke an element's shape; it is not shown");
            None
        }
    }
}

/// Last tick's redacted elements of one list, in last tick's order (most lists keep their
/// order from tick to tick: an element at its old place is checked without hashing its key),
/// with an index by key built only when some element moved or changed.
#[derive(Debug)]
struct Memo<T> {
    last: Vec<Option<Pair<T>>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self { last: Vec::new() }
    }
}

impl<T> Memo<T>
where
    T: Clone + PartialEq + serde::Serialize + serde::de::DeserializeOwned,
{
    /// Redacts `raw`, reusing an element's last redaction where it is the one at the same
    /// place last tick (`at_place`: cheap, for shared elements the same allocation), or where
    /// `same(last raw, now)` holds for the last element with its key (which may bring the last
    /// raw and redacted forms up to date); forgets what is gone.
    fn apply<K: std::hash::Hash + Eq>(
        &mut self,
        raw: Vec<T>,
        home: Option<&str>,
        key: impl Fn(&T) -> K,
        at_place: impl Fn(&T, &T) -> bool,
        same: impl Fn(&mut Pair<T>, &T) -> bool,
    ) -> Vec<T> {
        let mut last = std::mem::take(&mut self.last);
        let mut index: Option<HashMap<K, usize>> = None;
        let mut next = Vec::with_capacity(raw.len());
        let out = raw
            .into_iter()
            .enumerate()
            .filter_map(|(i, x)| {
                let placed = last
                    .get_mut(i)
                    .filter(|p| p.as_ref().is_some_and(|p| at_place(&p.raw, &x)))
                    .and_then(Option::take);
                let pair = match placed {
                    Some(pair) => pair,
                    None => {
                        let index = index.get_or_insert_with(|| by_key(&last, &key));
                        let reused = index
                            .get(&key(&x))
                            .and_then(|&j| last.get_mut(j))
                            .and_then(Option::take)
                            .and_then(|mut pair| same(&mut pair, &x).then_some(pair));
                        match reused {
                            Some(pair) => pair,
                            None => Pair::redact(x, home)?,
                        }
                    }
                };
                let shown = pair.redacted.clone();
                next.push(Some(pair));
                Some(shown)
            })
            .collect();
        self.last = next;
        out
    }
}

/// Where each key sits in last tick's list (the first, if a key repeats).
fn by_key<K: std::hash::Hash + Eq, T>(
    last: &[Option<Pair<T>>],
    key: impl Fn(&T) -> K,
) -> HashMap<K, usize> {
    let mut index = HashMap::with_capacity(last.len());
    for (j, p) in last.iter().enumerate() {
        if let Some(p) = p {
            index.entry(key(&p.raw)).or_insert(j);
        }
    }
    index
}

/// Last tick's redacted processes, tree rows (without their children), findings and
/// sessions.
#[derive(Debug, Default)]
pub struct LiveRedaction {
    home: Option<String>,
    procs: Memo<Arc<Proc>>,
    tree: TreeMemo,
    findings: Memo<Arc<Finding>>,
    debug_sessions: Memo<Arc<DebugSession>>,
    http_sessions: Memo<HttpSession>,
    timeline: Memo<Arc<TimelineEvent>>,
}

impl LiveRedaction {
    /// Shows `home` as `~`.
    pub fn new(home: Option<String>) -> Self {
        Self {
            home,
            ..Self::default()
        }
    }

    /// Redacts `s` in place.
    pub fn apply(&mut self, s: &mut Snapshot) {
        let procs = std::mem::take(&mut s.processes);
        let tree = std::mem::take(&mut s.tree);
        let findings = std::mem::take(&mut s.findings);
        let debug_sessions = std::mem::take(&mut s.debug_sessions);
        let http_sessions = std::mem::take(&mut s.http_sessions);
        let timeline = std::mem::take(&mut s.timeline);
        let home = self.home.as_deref();
        trace_span!("redaction: the rest").in_scope(|| redact_snapshot(s, home));
        s.processes = trace_span!("redaction: processes")
            .in_scope(|| processes(&mut self.procs, procs, home));
        let findings_span = trace_span!("redaction: findings").entered();
        s.findings = self.findings.apply(
            findings,
            home,
            |f| f.id.clone(),
            Arc::ptr_eq,
            unchanged_shared,
        );
        drop(findings_span);
        let sessions = trace_span!("redaction: sessions").entered();
        s.debug_sessions = self.debug_sessions.apply(
            debug_sessions,
            home,
            |d| d.id.clone(),
            Arc::ptr_eq,
            unchanged_shared,
        );
        s.http_sessions = self.http_sessions.apply(
            http_sessions,
            home,
            |h| h.id.clone(),
            |a, b| a == b,
            unchanged,
        );
        drop(sessions);
        let timeline_span = trace_span!("redaction: timeline").entered();
        // An event never changes once recorded: the window moves over the same allocations,
        // each found at its old place or by its address (the memo holds it: not reused).
        s.timeline = self.timeline.apply(
            timeline,
            home,
            |e| Arc::as_ptr(e) as usize,
            Arc::ptr_eq,
            unchanged_shared,
        );
        drop(timeline_span);
        s.tree = trace_span!("redaction: tree").in_scope(|| self.tree(&tree));
    }

    /// Redacts log events as they leave the step (each is new: nothing to reuse); one whose
    /// redaction broke its shape is dropped.
    pub fn events(&self, events: &mut Vec<LogEvent>) {
        let home = self.home.as_deref();
        events.retain_mut(|e| super::redact_serde(e, home));
    }

    fn tree(&mut self, raw: &[Arc<TreeNode>]) -> Vec<Arc<TreeNode>> {
        let mut rows = HashMap::with_capacity(self.tree.rows.len());
        let out = raw.iter().filter_map(|n| self.node(n, &mut rows)).collect();
        self.tree.rows = rows;
        // A subtree no tree holds any more (only this memo does, once — or twice when it left
        // as it came) is forgotten.
        self.tree.subtrees.retain(|_, (raw, shown)| {
            let held_here = 1 + usize::from(shown.as_ref().is_some_and(|s| Arc::ptr_eq(s, raw)));
            Arc::strong_count(raw) > held_here
        });
        out
    }

    /// A subtree: last tick's redaction when it is the same allocation (unchanged, see
    /// `state::reuse::share`); else its row (reused when equal to last tick's) and then its children.
    fn node(
        &mut self,
        n: &Arc<TreeNode>,
        rows: &mut HashMap<String, Pair<TreeNode>>,
    ) -> Option<Arc<TreeNode>> {
        let key = Arc::as_ptr(n) as usize;
        if let Some((_, shown)) = self.tree.subtrees.get(&key) {
            return shown.clone();
        }
        let pair = match self.tree.rows.remove(&n.id) {
            Some(pair) if pair.raw.same_row(n) => Some(pair),
            _ => Pair::redact(n.without_children(), self.home.as_deref()),
        };
        let shown = pair.map(|pair| {
            let children: Vec<Arc<TreeNode>> = n
                .children
                .iter()
                .filter_map(|c| self.node(c, rows))
                .collect();
            let same_children = children.len() == n.children.len()
                && children
                    .iter()
                    .zip(&n.children)
                    .all(|(a, b)| Arc::ptr_eq(a, b));
            let shown = if pair.as_it_came && same_children {
                // Nothing hidden in it or under it: the step's own node leaves.
                Arc::clone(n)
            } else {
                let mut shown = pair.redacted.clone();
                shown.children = children;
                Arc::new(shown)
            };
            rows.insert(n.id.clone(), pair);
            shown
        });
        self.tree
            .subtrees
            .insert(key, (Arc::clone(n), shown.clone()));
        shown
    }
}

/// Processes: a process whose samples alone changed keeps its redacted command line.
fn processes(
    memo: &mut Memo<Arc<Proc>>,
    procs: Vec<Arc<Proc>>,
    home: Option<&str>,
) -> Vec<Arc<Proc>> {
    memo.apply(
        procs,
        home,
        |p| p.id(),
        Arc::ptr_eq,
        |last, now| {
            if Arc::ptr_eq(&last.raw, now) {
                return true;
            }
            // Samples are numbers and fixed words: nothing to redact in them. The raw form
            // kept is the current allocation, so that the next tick finds it by pointer.
            let same = last.raw.same_but_samples(now);
            if same {
                last.raw = Arc::clone(now);
                if last.as_it_came {
                    // Nothing was redacted in it: it still leaves as it came.
                    last.redacted = Arc::clone(now);
                } else {
                    Arc::make_mut(&mut last.redacted).take_samples(now);
                }
            }
            same
        },
    )
}

/// The redacted tree of the last ticks: whole subtrees by their allocation (a subtree shared
/// between ticks is redacted once), and rows by id (a row on the path to a change is redacted
/// again only if it changed itself).
#[derive(Debug, Default)]
struct TreeMemo {
    subtrees: HashMap<usize, (Arc<TreeNode>, Option<Arc<TreeNode>>)>,
    rows: HashMap<String, Pair<TreeNode>>,
}

fn unchanged<T: PartialEq>(last: &mut Pair<T>, now: &T) -> bool {
    last.raw == *now
}

/// The same allocation (shared from the last step), or equal.
fn unchanged_shared<T: PartialEq>(last: &mut Pair<Arc<T>>, now: &Arc<T>) -> bool {
    Arc::ptr_eq(&last.raw, now) || *last.raw == **now
}
