//! The window's incremental updates: what changed between the update a window was sent last
//! and the next one ([`diff`]), and the same rule applied back ([`apply`]; the UI mirrors it in
//! TypeScript, and the tests prove `apply(a, diff(a, b)) == b`). Exact, never approximate: a
//! list whose keys repeat, or a timeline that cannot be continued, is sent whole.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::model::{
    EnvironmentChange, Key, Keyed, Snapshot, SnapshotChanges, SnapshotHead, TimelineChanges,
    TimelineEvent, TreeNode, TreeRow, Update, ViewMessage,
};

/// The tree as rows in depth-first order, each without its children.
pub fn rows(tree: &[Arc<TreeNode>]) -> Vec<TreeRow> {
    row_refs(tree).iter().map(RowRef::wire).collect()
}

/// The tree back from rows in depth-first order (a row whose parent is not an open ancestor
/// becomes a root).
pub fn forest(rows: &[TreeRow]) -> Vec<Arc<TreeNode>> {
    let mut roots: Vec<Arc<TreeNode>> = Vec::new();
    let mut open: Vec<TreeNode> = Vec::new();
    let close = |open: &mut Vec<TreeNode>, roots: &mut Vec<Arc<TreeNode>>| {
        if let Some(done) = open.pop() {
            let done = Arc::new(done);
            match open.last_mut() {
                Some(parent) => parent.children.push(done),
                None => roots.push(done),
            }
        }
    };
    for r in rows {
        let parent = r.parent.as_deref();
        if parent.is_some_and(|p| open.iter().any(|o| o.id == p)) {
            while open.last().is_some_and(|o| Some(o.id.as_str()) != parent) {
                close(&mut open, &mut roots);
            }
        } else {
            while !open.is_empty() {
                close(&mut open, &mut roots);
            }
        }
        open.push(r.node.clone());
    }
    while !open.is_empty() {
        close(&mut open, &mut roots);
    }
    roots
}

/// Changes from `a` to `b` of a keyed list; `Err(())` when keys repeat (not expressible).
#[allow(clippy::result_unit_err)]
pub fn keyed<T: Key + PartialEq + Clone>(a: &[T], b: &[T]) -> Result<Option<Keyed<T>>, ()> {
    keyed_by(a, b, Key::key, |x, y| x == y, Clone::clone)
}

/// Changes from `a` to `b` of a shared list: an element that is the same allocation in both is
/// unchanged without comparing it, and a list whose elements all are is unchanged without
/// hashing a key.
#[allow(clippy::result_unit_err)]
pub fn keyed_shared<T: Key + PartialEq>(
    a: &[Arc<T>],
    b: &[Arc<T>],
) -> Result<Option<Keyed<Arc<T>>>, ()> {
    keyed_by(
        a,
        b,
        |x| x.key(),
        |x, y| Arc::ptr_eq(x, y) || x == y,
        Arc::clone,
    )
}

/// The keyed diff, over any element: its key, when two are the same, and what is sent.
fn keyed_by<T, K, W>(
    a: &[T],
    b: &[T],
    key: impl Fn(&T) -> K,
    same: impl Fn(&T, &T) -> bool,
    wire: impl Fn(&T) -> W,
) -> Result<Option<Keyed<W>>, ()>
where
    K: std::hash::Hash + Eq + Into<String> + Clone,
{
    // Unchanged, in order: nothing to say (whatever the keys; no key is hashed).
    if a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)) {
        return Ok(None);
    }
    let old: HashMap<K, &T> = a.iter().map(|x| (key(x), x)).collect();
    let new_keys: Vec<K> = b.iter().map(&key).collect();
    let new_set: HashSet<&K> = new_keys.iter().collect();
    if old.len() != a.len() || new_set.len() != b.len() {
        return Err(());
    }
    let mut k = Keyed::default();
    let mut expected = Vec::with_capacity(b.len());
    for x in a {
        let kx = key(x);
        if new_set.contains(&kx) {
            expected.push(kx);
        } else {
            k.remove.push(kx.into());
        }
    }
    for (x, kx) in b.iter().zip(&new_keys) {
        match old.get(kx) {
            Some(was) if same(was, x) => {}
            Some(_) => k.upsert.push(wire(x)),
            None => {
                k.upsert.push(wire(x));
                expected.push(kx.clone());
            }
        }
    }
    if expected != new_keys {
        k.order = Some(new_keys.into_iter().map(Into::into).collect());
    }
    Ok((!k.upsert.is_empty() || !k.remove.is_empty() || k.order.is_some()).then_some(k))
}

/// `a` with keyed changes applied.
pub fn apply_keyed<T: Key + Clone>(a: &[T], k: &Keyed<T>) -> Vec<T> {
    let gone: HashSet<&str> = k.remove.iter().map(String::as_str).collect();
    let mut out: Vec<T> = a
        .iter()
        .filter(|x| !gone.contains(x.key().as_str()))
        .cloned()
        .collect();
    let mut at: HashMap<String, usize> =
        out.iter().enumerate().map(|(i, x)| (x.key(), i)).collect();
    for x in &k.upsert {
        match at.get(&x.key()) {
            Some(&i) => out[i] = x.clone(),
            None => {
                at.insert(x.key(), out.len());
                out.push(x.clone());
            }
        }
    }
    if let Some(order) = &k.order {
        let mut by: HashMap<String, T> = out.into_iter().map(|x| (x.key(), x)).collect();
        out = order.iter().filter_map(|key| by.remove(key)).collect();
    }
    out
}

/// The timeline's change from `a` to `b`: events are appended at the end and fall off the
/// front, so `b` continues `a` from some index; otherwise it is sent whole.
pub fn timeline(a: &[Arc<TimelineEvent>], b: &[Arc<TimelineEvent>]) -> Option<TimelineChanges> {
    // Events are shared from the step's timeline: the same event is mostly the same allocation.
    let same = |x: &Arc<TimelineEvent>, y: &Arc<TimelineEvent>| Arc::ptr_eq(x, y) || x == y;
    let all_same = |x: &[Arc<TimelineEvent>], y: &[Arc<TimelineEvent>]| {
        x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
    };
    if all_same(a, b) {
        return None;
    }
    let continues = |drop: usize| {
        let kept = a.len() - drop;
        b.len() >= kept && all_same(&a[drop..], &b[..kept])
    };
    let drop = match b.first() {
        None => None,
        Some(first) => (0..a.len()).find(|&i| same(&a[i], first) && continues(i)),
    }
    .or_else(|| b.is_empty().then_some(a.len()));
    Some(match drop {
        Some(d) => TimelineChanges {
            reset: false,
            drop_front: u32::try_from(d).unwrap_or(u32::MAX),
            append: b[a.len() - d..].to_vec(),
        },
        None => TimelineChanges {
            reset: true,
            drop_front: 0,
            append: b.to_vec(),
        },
    })
}

fn whole<T: PartialEq + Clone>(a: &[T], b: &[T]) -> Option<Vec<T>> {
    (a != b).then(|| b.to_vec())
}

/// [`whole`] for a shared list: the same allocations are equal without a comparison.
fn whole_shared<T: PartialEq>(a: &[Arc<T>], b: &[Arc<T>]) -> Option<Vec<Arc<T>>> {
    let same = a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y) || x == y);
    (!same).then(|| b.to_vec())
}

/// A row of the tree as the diff compares it: where it hangs, and the node (whose children the
/// comparison ignores). Borrowed: rows are copied only when they are sent.
#[derive(Debug, Clone, Copy)]
struct RowRef<'a> {
    parent: Option<&'a str>,
    node: &'a TreeNode,
}

impl RowRef<'_> {
    fn same(&self, other: &Self) -> bool {
        // The same node may hang elsewhere now (a moved subtree): the parent is always compared.
        self.parent == other.parent
            && (std::ptr::eq(self.node, other.node) || self.node.same_row(other.node))
    }

    fn wire(&self) -> TreeRow {
        TreeRow {
            parent: self.parent.map(str::to_owned),
            node: self.node.without_children(),
        }
    }
}

fn row_refs(tree: &[Arc<TreeNode>]) -> Vec<RowRef<'_>> {
    fn walk<'a>(n: &'a TreeNode, parent: Option<&'a str>, out: &mut Vec<RowRef<'a>>) {
        out.push(RowRef { parent, node: n });
        for c in &n.children {
            walk(c, Some(&n.id), out);
        }
    }
    let mut out = Vec::new();
    for n in tree {
        walk(n, None, &mut out);
    }
    out
}

/// The tree's changes as rows: none, without walking it, when every root is the same
/// allocation (nothing in it changed).
fn tree_changes(a: &[Arc<TreeNode>], b: &[Arc<TreeNode>]) -> Result<Option<Keyed<TreeRow>>, ()> {
    if a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y)) {
        return Ok(None);
    }
    let (ra, rb) = (row_refs(a), row_refs(b));
    keyed_by(&ra, &rb, |r| r.node.id.as_str(), RowRef::same, RowRef::wire)
}

fn head(s: &Snapshot) -> SnapshotHead {
    SnapshotHead {
        schema: s.schema.clone(),
        host: s.host.clone(),
        debugtop: s.debugtop.clone(),
        redacted: s.redacted,
    }
}

/// The changes from `a` (update `base`) to `b`; `None` when they cannot be said as changes
/// (repeated keys): send `b` whole.
pub fn diff(base: u64, a: &Snapshot, b: &Update) -> Option<SnapshotChanges> {
    let s = &b.snapshot;
    let h = head(s);
    Some(SnapshotChanges {
        seq: b.seq,
        base,
        taken_at: s.taken_at,
        events: b.events.clone(),
        head: (head(a) != h).then_some(h),
        servers: whole(&a.servers, &s.servers),
        http_sessions: whole(&a.http_sessions, &s.http_sessions),
        debug_sessions: whole_shared(&a.debug_sessions, &s.debug_sessions),
        processes: keyed_shared(&a.processes, &s.processes).ok()?,
        tree: tree_changes(&a.tree, &s.tree).ok()?,
        findings: keyed_shared(&a.findings, &s.findings).ok()?,
        groups: whole(&a.groups, &s.groups),
        timeline: timeline(&a.timeline, &s.timeline),
        log_excerpts: whole(&a.log_excerpts, &s.log_excerpts),
        sources: whole(&a.sources, &s.sources),
        environment: (a.environment != s.environment).then(|| EnvironmentChange {
            value: s.environment.clone(),
        }),
    })
}

/// `a` with changes applied.
pub fn apply(a: &Snapshot, c: &SnapshotChanges) -> Snapshot {
    let mut s = a.clone();
    s.taken_at = c.taken_at;
    if let Some(h) = &c.head {
        s.schema.clone_from(&h.schema);
        s.host.clone_from(&h.host);
        s.debugtop.clone_from(&h.debugtop);
        s.redacted = h.redacted;
    }
    replace(&mut s.servers, &c.servers);
    replace(&mut s.http_sessions, &c.http_sessions);
    replace(&mut s.debug_sessions, &c.debug_sessions);
    replace(&mut s.log_excerpts, &c.log_excerpts);
    replace(&mut s.sources, &c.sources);
    replace(&mut s.groups, &c.groups);
    if let Some(k) = &c.processes {
        s.processes = apply_keyed(&a.processes, k);
    }
    if let Some(k) = &c.tree {
        s.tree = forest(&apply_keyed(&rows(&a.tree), k));
    }
    if let Some(k) = &c.findings {
        s.findings = apply_keyed(&a.findings, k);
    }
    if let Some(t) = &c.timeline {
        if t.reset {
            s.timeline.clear();
        }
        let drop = usize::try_from(t.drop_front)
            .unwrap_or(usize::MAX)
            .min(s.timeline.len());
        s.timeline.drain(..drop);
        s.timeline.extend(t.append.iter().cloned());
    }
    if let Some(e) = &c.environment {
        s.environment.clone_from(&e.value);
    }
    s
}

fn replace<T: Clone>(to: &mut Vec<T>, from: &Option<Vec<T>>) {
    if let Some(v) = from {
        to.clone_from(v);
    }
}

/// One window's side of the stream: the update it was sent last, to say the next as changes.
#[derive(Debug, Default)]
pub struct Follower {
    last: Option<Arc<Update>>,
}

impl Follower {
    /// Forgets what was sent: the next message is whole (a resync).
    pub fn resync(&mut self) {
        self.last = None;
    }

    /// The message for `next`: none when it is the update sent last; whole the first time,
    /// after [`Follower::resync`], when the update is not newer than the last one sent
    /// (another world), or when changes cannot say it; otherwise only what changed.
    pub fn next(&mut self, next: &Arc<Update>) -> Option<ViewMessage> {
        if self.last.as_ref().is_some_and(|a| Arc::ptr_eq(a, next)) {
            return None;
        }
        let changes = self.last.as_ref().and_then(|a| {
            (next.seq > a.seq && next.snapshot.host == a.snapshot.host)
                .then(|| diff(a.seq, &a.snapshot, next))
                .flatten()
        });
        self.last = Some(Arc::clone(next));
        Some(match changes {
            Some(c) => ViewMessage::Changes(c),
            None => ViewMessage::Full {
                seq: next.seq,
                snapshot: next.snapshot.clone(),
                events: next.events.clone(),
            },
        })
    }
}

#[cfg(test)]
mod tests;
