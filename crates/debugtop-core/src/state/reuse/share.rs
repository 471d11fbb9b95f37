//! Sharing between steps: what did not change from one step to the next is the very same
//! allocation in both — the `Arc` kept from the last step — so putting it into the snapshot,
//! redacting it, diffing it for the window and dropping it are pointer operations. At 5,000
//! orphaned workers a step otherwise copies, compares and frees every process, tree row,
//! finding and session several times over (BENCHMARKS.md). Exact: an element is reused only
//! when it equals what was built now.

use rustc_hash::FxHashMap as HashMap;
use std::hash::Hash;
use std::sync::Arc;

use crate::model::{Counterparts, TreeNode};

/// Last step's elements of one list, by key, and the list as it was shared.
#[derive(Debug)]
pub struct Interned<K, T> {
    by_key: HashMap<K, Arc<T>>,
    /// Last step's list, as addresses: compared only, and alive while `by_key` holds them;
    /// `None` when it had a key twice (the map holds only the last of them).
    order: Option<Vec<usize>>,
}

impl<K, T> Default for Interned<K, T> {
    fn default() -> Self {
        Self {
            by_key: HashMap::default(),
            order: None,
        }
    }
}

impl<K: Hash + Eq, T: PartialEq> Interned<K, T> {
    /// `now`, each element the last step's allocation where it is equal; forgets the rest.
    /// An element equal to last step's is compared where it was built and dropped there: only
    /// a new or changed one is moved into an allocation of its own (at 5,000 orphans, boxing
    /// every process a tick to drop all but a few was half the memory a tick touched anew).
    pub fn share(&mut self, now: Vec<T>, key: impl Fn(&T) -> K) -> Vec<Arc<T>> {
        self.rebuild(now, key, |old, x| **old == *x, Arc::new)
    }

    /// As [`Interned::share`], for elements built this step already behind an `Arc`. A list
    /// of last step's keys in last step's places (memoised sessions and findings, a few of
    /// them built anew) is shared in place: a key made only for an element built anew, none
    /// when the list is last step's very allocations.
    pub fn share_built(&mut self, mut now: Vec<Arc<T>>, key: impl Fn(&T) -> K) -> Vec<Arc<T>> {
        if self.renew_in_place(&mut now, &key) {
            return now;
        }
        self.rebuild(
            now,
            |x: &Arc<T>| key(x.as_ref()),
            |old, x| Arc::ptr_eq(old, x) || **old == **x,
            |x| x,
        )
    }

    /// Whether `now` holds last step's keys in last step's places; if so, each allocation
    /// that is not last step's is made last step's where equal, else remembered in its place.
    /// A list where a few elements were built anew (a live server's two sessions beside a gone
    /// server's 5,000 memoised ones) is shared without a key made for the rest. `false`, and
    /// `now` as it was, when a key came, went or moved, or last step's list had a key twice.
    fn renew_in_place(&mut self, now: &mut [Arc<T>], key: &impl Fn(&T) -> K) -> bool {
        let Some(order) = self.order.as_mut().filter(|o| o.len() == now.len()) else {
            return false;
        };
        let renewed: Vec<(usize, K)> = (0..now.len())
            .filter(|&i| Arc::as_ptr(&now[i]) as usize != order[i])
            .map(|i| (i, key(&now[i])))
            .collect();
        // The same key in the same place: the map's element for the new one's key is the one
        // that stood there (each address is one key's: the list had no key twice).
        let in_place = |(i, k): &(usize, K)| {
            self.by_key
                .get(k)
                .is_some_and(|old| Arc::as_ptr(old) as usize == order[*i])
        };
        if !renewed.iter().all(in_place) {
            return false;
        }
        for (i, k) in renewed {
            match self.by_key.get(&k) {
                Some(old) if **old == *now[i] => now[i] = Arc::clone(old),
                _ => {
                    order[i] = Arc::as_ptr(&now[i]) as usize;
                    self.by_key.insert(k, Arc::clone(&now[i]));
                }
            }
        }
        true
    }

    /// `now` matched with last step's elements by key: last step's where `same` says so, else
    /// `boxed(x)`; kept for the next step.
    fn rebuild<X>(
        &mut self,
        now: Vec<X>,
        key: impl Fn(&X) -> K,
        same: impl Fn(&Arc<T>, &X) -> bool,
        boxed: impl Fn(X) -> Arc<T>,
    ) -> Vec<Arc<T>> {
        let mut next = HashMap::with_capacity_and_hasher(now.len(), Default::default());
        let out: Vec<Arc<T>> = now
            .into_iter()
            .map(|x| {
                let k = key(&x);
                let shared = match self.by_key.remove(&k) {
                    Some(old) if same(&old, &x) => old,
                    _ => boxed(x),
                };
                next.insert(k, Arc::clone(&shared));
                shared
            })
            .collect();
        self.by_key = next;
        // Two elements of one key: the map holds only the last, so the addresses would not
        // all stay alive — no list to compare with next step.
        self.order = (self.by_key.len() == out.len())
            .then(|| out.iter().map(|x| Arc::as_ptr(x) as usize).collect());
        out
    }
}

/// `now` (a tree built this step), every subtree equal to last step's the same allocation as
/// last step's: a node is reused when its row is equal and its children are (after sharing)
/// the very same.
pub fn tree(last: &[Arc<TreeNode>], now: Vec<Arc<TreeNode>>) -> Vec<Arc<TreeNode>> {
    let mut old = Counterparts::new(last);
    now.into_iter()
        .enumerate()
        .map(|(i, n)| {
            let o = old.of(i, &n.id);
            node(o, n)
        })
        .collect()
}

fn node(old: Option<&Arc<TreeNode>>, mut n: Arc<TreeNode>) -> Arc<TreeNode> {
    if old.is_some_and(|o| Arc::ptr_eq(o, &n)) {
        return n;
    }
    // Its children last step's very allocations, in their places (a gone server's node built
    // anew over thousands of memoised sessions): nothing below it to share.
    if let Some(o) = old.filter(|o| same_allocations(&o.children, &n.children)) {
        return if o.same_row(&n) { Arc::clone(o) } else { n };
    }
    let last_children = old.map_or(&[][..], |o| &o.children[..]);
    // `n` may be held elsewhere too (a memo of last step's sessions): its children are shared
    // through a copy of their `Arc`s, and the node itself copied only when one of them changed.
    let shared = tree(last_children, n.children.clone());
    if let Some(o) = old {
        if same_allocations(&o.children, &shared) && o.same_row(&n) {
            return Arc::clone(o);
        }
    }
    if !same_allocations(&n.children, &shared) {
        Arc::make_mut(&mut n).children = shared;
    }
    n
}

/// The same allocations in the same places.
fn same_allocations<T>(a: &[Arc<T>], b: &[Arc<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    fn leaf(id: &str, label: &str) -> Arc<TreeNode> {
        Arc::new(TreeNode::new(id.into(), NodeKind::Process, label.into()))
    }

    fn parent(id: &str, children: Vec<Arc<TreeNode>>) -> Arc<TreeNode> {
        let mut n = TreeNode::new(id.into(), NodeKind::GoneServer, id.into());
        n.children = children;
        Arc::new(n)
    }

    fn build(label_of_b: &str) -> Vec<Arc<TreeNode>> {
        vec![
            parent("gone:1", vec![leaf("a", "a"), leaf("b", label_of_b)]),
            parent("gone:2", vec![leaf("c", "c")]),
        ]
    }

    #[test]
    fn a_list_of_last_steps_allocations_comes_back_as_it_is_and_an_equal_copy_is_shared() {
        let mut i: Interned<u32, (u32, &str)> = Interned::default();
        let key = |x: &(u32, &str)| x.0;
        let first = i.share(vec![(1, "a"), (2, "b")], key);
        // Last step's very list: given back without a key made (the slow path would make one
        // per element and give back the same).
        let keys_made = std::cell::Cell::new(0);
        let counted = |x: &(u32, &str)| {
            keys_made.set(keys_made.get() + 1);
            x.0
        };
        let again = i.share_built(first.clone(), counted);
        assert!(first.iter().zip(&again).all(|(a, b)| Arc::ptr_eq(a, b)));
        assert_eq!(keys_made.get(), 0, "no key made for an unchanged list");
        // Equal copies are last step's allocations; a changed element is its own.
        let next = i.share(vec![(1, "a"), (2, "c")], key);
        assert!(Arc::ptr_eq(&next[0], &first[0]));
        assert_eq!(*next[1], (2, "c"));
        // Two elements of one key: shared by value, never compared by address next time.
        let twice = i.share(vec![(1, "a"), (1, "x")], key);
        assert!(i.order.is_none());
        let after = i.share_built(twice.clone(), counted);
        assert_eq!(
            keys_made.get(),
            2,
            "a list with a repeated key goes the slow way"
        );
        assert_eq!(after.len(), 2);
        assert_eq!((*after[0], *after[1]), ((1, "a"), (1, "x")));
    }

    #[test]
    fn an_unchanged_tree_is_last_steps_allocation_and_a_change_renews_only_its_path() {
        let first = tree(&[], build("b"));
        let same = tree(&first, build("b"));
        assert!(Arc::ptr_eq(&first[0], &same[0]) && Arc::ptr_eq(&first[1], &same[1]));
        let changed = tree(&same, build("b2"));
        assert_eq!(
            changed,
            build("b2"),
            "sharing never changes what the tree says"
        );
        assert!(
            !Arc::ptr_eq(&same[0], &changed[0]),
            "the changed path is new"
        );
        assert!(Arc::ptr_eq(&same[0].children[0], &changed[0].children[0]));
        assert!(!Arc::ptr_eq(&same[0].children[1], &changed[0].children[1]));
        assert!(
            Arc::ptr_eq(&same[1], &changed[1]),
            "the other root is untouched"
        );
    }

    #[test]
    fn a_node_built_anew_over_last_steps_very_children_is_last_steps_unless_its_row_changed() {
        let first = tree(&[], build("b"));
        let over = |label: &str| {
            let mut n = TreeNode::new("gone:1".into(), NodeKind::GoneServer, label.into());
            n.children = first[0].children.clone();
            vec![Arc::new(n), Arc::clone(&first[1])]
        };
        let same = tree(&first, over("gone:1"));
        assert!(Arc::ptr_eq(&same[0], &first[0]));
        let relabelled = tree(&first, over("gone, relabelled"));
        assert!(!Arc::ptr_eq(&relabelled[0], &first[0]));
        assert_eq!(relabelled[0].label, "gone, relabelled");
        assert!(same_allocations(
            &relabelled[0].children,
            &first[0].children
        ));
    }

    #[test]
    fn reordered_and_moved_nodes_are_found_by_id_and_still_equal() {
        let first = tree(&[], build("b"));
        let reordered = vec![
            parent("gone:2", vec![leaf("c", "c")]),
            parent("gone:1", vec![leaf("b", "b"), leaf("a", "a")]),
        ];
        let now = tree(&first, reordered.clone());
        assert_eq!(now, reordered);
        assert!(Arc::ptr_eq(&now[0], &first[1]));
        assert!(Arc::ptr_eq(&now[1].children[0], &first[0].children[1]));
    }

    #[test]
    fn equal_elements_keep_their_allocation_and_the_gone_are_forgotten() {
        let mut i: Interned<u32, (u32, String)> = Interned::default();
        let a = i.share(vec![(1, "x".into()), (2, "y".into())], |x| x.0);
        let b = i.share(vec![(1, "x".into()), (2, "z".into())], |x| x.0);
        assert!(Arc::ptr_eq(&a[0], &b[0]));
        assert!(!Arc::ptr_eq(&a[1], &b[1]) && b[1].1 == "z");
        let c = i.share(vec![(2, "z".into())], |x| x.0);
        assert!(Arc::ptr_eq(&b[1], &c[0]));
        assert_eq!(i.by_key.len(), 1);
    }
}

/// The in-place way of [`Interned::share_built`] against the keyed one, over lists edited from
/// each one's own last answer: the same values, the same elements shared, the same remembered.
#[cfg(test)]
mod in_place_tests {
    use super::*;

    type Elem = (u8, u8);

    /// `op` applied to `last` at `at`: kept, copied equal, changed, dropped, a key added,
    /// repeated or put in another's place, two swapped.
    fn edit(list: &mut Vec<Arc<Elem>>, op: u8, at: usize) {
        let n = list.len();
        let i = if n == 0 { 0 } else { at % n };
        match (op, n) {
            (_, 0) | (5, _) => list.push(Arc::new(((at % 7) as u8 + 10, 0))),
            (1, _) => list[i] = Arc::new(*list[i]),
            (2, _) => list[i] = Arc::new((list[i].0, list[i].1.wrapping_add(1))),
            (3, _) => drop(list.remove(i)),
            (4, _) => list.swap(i, (at / 3) % n),
            (6, _) => list.push(Arc::new(*list[i])),
            (7, _) => list[i] = Arc::new(((at % 5) as u8 + 20, 0)),
            _ => {}
        }
    }

    /// What the map remembers: each key, and whether its allocation is the one in `out`.
    fn remembered(i: &Interned<u8, Elem>, out: &[Arc<Elem>]) -> Vec<(u8, bool)> {
        let mut v: Vec<(u8, bool)> = i
            .by_key
            .iter()
            .map(|(k, x)| (*k, out.iter().any(|o| Arc::ptr_eq(o, x))))
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_list_with_one_element_built_anew_makes_one_key() {
        let mut i: Interned<u8, Elem> = Interned::default();
        let first = i.share_built((0..5).map(|k| Arc::new((k, 0))).collect(), |x| x.0);
        let mut now = first.clone();
        now[2] = Arc::new((2, 0));
        let keys_made = std::cell::Cell::new(0);
        let out = i.share_built(now, |x| {
            keys_made.set(keys_made.get() + 1);
            x.0
        });
        assert_eq!(keys_made.get(), 1, "only the element built anew is keyed");
        assert!(out.iter().zip(&first).all(|(a, b)| Arc::ptr_eq(a, b)));
    }

    /// For each element: whether it is the allocation `last` had for its key.
    fn kept(last: &[Arc<Elem>], now: &[Arc<Elem>]) -> Vec<bool> {
        now.iter()
            .map(|x| last.iter().any(|l| l.0 == x.0 && Arc::ptr_eq(l, x)))
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn sharing_in_place_is_sharing_by_key(
            steps in proptest::collection::vec(proptest::collection::vec((0u8..9, 0usize..64), 0..6), 1..8),
            start in proptest::collection::vec((0u8..6, 0u8..3), 0..8),
        ) {
            let key = |x: &Elem| x.0;
            let (mut fast, mut keyed) = (Interned::default(), Interned::default());
            let first: Vec<Arc<Elem>> = start.into_iter().map(Arc::new).collect();
            let mut a = fast.share_built(first.clone(), key);
            let mut b = keyed.rebuild(first, |x: &Arc<Elem>| x.0, |o, x| Arc::ptr_eq(o, x) || **o == **x, |x| x);
            for ops in steps {
                let (mut na, mut nb) = (a.clone(), b.clone());
                for &(op, at) in &ops {
                    edit(&mut na, op, at);
                    edit(&mut nb, op, at);
                }
                let a2 = fast.share_built(na, key);
                let b2 = keyed.rebuild(nb, |x: &Arc<Elem>| x.0, |o, x| Arc::ptr_eq(o, x) || **o == **x, |x| x);
                proptest::prop_assert_eq!(&a2, &b2);
                proptest::prop_assert_eq!(kept(&a, &a2), kept(&b, &b2));
                proptest::prop_assert_eq!(remembered(&fast, &a2), remembered(&keyed, &b2));
                proptest::prop_assert_eq!(fast.order.is_some(), keyed.order.is_some());
                (a, b) = (a2, b2);
            }
        }
    }
}

/// Through the whole step: what did not change is the same allocation in the next snapshot,
/// redacted or not.
#[cfg(test)]
mod step_tests {
    use std::sync::Arc;

    use crate::model::{Role, Snapshot};
    use crate::state::{State, StateConfig};
    use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

    /// Orphaned workers of a gone server 999 (findings, a tree), one of them at `cpu` %.
    fn obs(t: i64, cpu: f32) -> crate::model::Observation {
        let mut o = Obs::at(t);
        for i in 0..5u32 {
            let p = P::new(300 + i, Role::Worker)
                .ppid(1)
                .owner(999)
                .session(&format!("s-{i}"))
                .argv("node proxy-bootstrap.js --mcp-owner-pid=999 --token=Zq1secretvalue");
            o = o.proc(if i == 0 { p.cpu(cpu) } else { p }.build());
        }
        o.build()
    }

    fn same<T>(x: &[Arc<T>], y: &[Arc<T>]) -> bool {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| Arc::ptr_eq(p, q))
    }

    fn same_allocations(a: &Snapshot, b: &Snapshot) -> bool {
        same(&a.processes, &b.processes)
            && same(&a.tree, &b.tree)
            && same(&a.findings, &b.findings)
            && same(&a.debug_sessions, &b.debug_sessions)
    }

    #[test]
    fn an_unchanged_world_is_last_steps_allocations_redacted_or_not() {
        for redact in [false, true] {
            let mut s = State::new(StateConfig {
                redact,
                ..StateConfig::default()
            });
            // Past the grace: the findings are raised from the third step on.
            let steps: Vec<Snapshot> = (0..4).map(|t| s.step(obs(t * 4, 0.0)).snapshot).collect();
            assert!(!steps[3].findings.is_empty(), "orphans are findings");
            assert!(
                same_allocations(&steps[2], &steps[3]),
                "redact {redact}: an unchanged step is shared"
            );
            if redact {
                let argv = steps[3].processes[0].argv.join(" ");
                assert!(!argv.contains("Zq1secretvalue"), "{argv}");
            }
        }
    }

    /// A process whose samples changed once kept a private copy in the redaction memo and was
    /// redacted anew at every step after (found by the incident benchmark).
    #[test]
    fn a_process_whose_samples_changed_is_shared_again_the_step_after() {
        let mut s = State::new(StateConfig::default());
        for t in 0..3 {
            let _ = s.step(obs(t * 4, 0.0));
        }
        // Below any spinning threshold: only the sample changes.
        let changed = s.step(obs(12, 5.0)).snapshot;
        let after = s.step(obs(16, 5.0)).snapshot;
        let of = |s: &Snapshot| s.processes.iter().find(|p| p.pid == 300).cloned();
        let (a, b) = (of(&changed), of(&after));
        assert_eq!(a.as_ref().and_then(|p| p.sample.cpu_percent), Some(5.0));
        assert!(
            a.zip(b).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b)),
            "the redacted process is reused once its samples are steady again"
        );
        assert!(same_allocations(&changed, &after));
    }
}
