use super::*;
use crate::model::{TimelineKind, Update};
use crate::testing::{host_snapshot, sample_snapshot};

fn update(seq: u64, snapshot: Snapshot) -> Arc<Update> {
    Arc::new(Update {
        seq,
        snapshot,
        events: Vec::new(),
    })
}

fn changes(m: Option<ViewMessage>) -> SnapshotChanges {
    match m {
        Some(ViewMessage::Changes(c)) => c,
        _ => panic!("no changes where changes were expected"),
    }
}

/// Changes from `a` to `b`, applied back to `a`, must give `b` exactly.
fn round_trip(a: &Snapshot, b: &Snapshot) -> SnapshotChanges {
    let mut f = Follower::default();
    let _ = f.next(&update(1, a.clone()));
    let c = changes(f.next(&update(2, b.clone())));
    let json = serde_json::to_string(&c).unwrap_or_default();
    let back: SnapshotChanges = serde_json::from_str(&json).unwrap_or_default();
    assert_eq!(back, c, "changes survive JSON");
    assert_eq!(&apply(a, &c), b);
    c
}

#[test]
fn the_tree_survives_rows_and_back() {
    for s in [sample_snapshot(), host_snapshot()] {
        assert_eq!(forest(&rows(&s.tree)), s.tree);
    }
}

#[test]
fn an_idle_tick_is_a_few_dozen_bytes() {
    let a = sample_snapshot();
    let mut b = a.clone();
    b.taken_at += chrono::Duration::seconds(1);
    let c = round_trip(&a, &b);
    let bytes = serde_json::to_vec(&ViewMessage::Changes(c)).unwrap_or_default();
    let full = serde_json::to_vec(&a).unwrap_or_default();
    assert!(bytes.len() < 120, "{}", String::from_utf8_lossy(&bytes));
    assert!(
        full.len() > 20 * bytes.len(),
        "{} vs {}",
        full.len(),
        bytes.len()
    );
}

#[test]
fn a_new_event_sends_only_itself_and_old_ones_fall_off_the_front() {
    let a = sample_snapshot();
    assert!(a.timeline.len() >= 2);
    let mut b = a.clone();
    b.timeline.remove(0);
    let mut e = b.timeline[0].clone();
    Arc::make_mut(&mut e).text = "a new one".into();
    Arc::make_mut(&mut e).kind = TimelineKind::Log;
    b.timeline.push(e.clone());
    let c = round_trip(&a, &b);
    let t = c.timeline.unwrap_or_default();
    assert!(!t.reset);
    assert_eq!((t.drop_front, t.append), (1, vec![e]));
    assert!(c.processes.is_none() && c.tree.is_none() && c.findings.is_none());
}

#[test]
fn a_timeline_that_does_not_continue_is_sent_whole() {
    let a = sample_snapshot();
    let mut b = a.clone();
    Arc::make_mut(&mut b.timeline[0]).text = "rewritten history".into();
    let c = round_trip(&a, &b);
    assert!(c.timeline.is_some_and(|t| t.reset));
    let mut b = a.clone();
    b.timeline.clear();
    round_trip(&a, &b);
}

#[test]
fn one_changed_process_is_the_only_one_sent() {
    let a = sample_snapshot();
    let mut b = a.clone();
    Arc::make_mut(&mut b.processes[0]).sample.cpu_percent = Some(99.0);
    let c = round_trip(&a, &b);
    let p = c.processes.unwrap_or_default();
    assert_eq!(p.upsert.len(), 1);
    assert!(p.remove.is_empty() && p.order.is_none());
}

#[test]
fn repeated_keys_are_sent_whole() {
    let a = sample_snapshot();
    let mut b = a.clone();
    b.processes.push(b.processes[0].clone());
    let mut f = Follower::default();
    let _ = f.next(&update(1, a));
    assert!(matches!(
        f.next(&update(2, b)),
        Some(ViewMessage::Full { .. })
    ));
}

#[test]
fn first_resync_older_and_other_host_are_whole() {
    let a = sample_snapshot();
    let mut f = Follower::default();
    let whole = |m: Option<ViewMessage>| matches!(m, Some(ViewMessage::Full { .. }));
    let first = update(5, a.clone());
    assert!(whole(f.next(&first)));
    assert_eq!(f.next(&first), None, "the same update is not sent twice");
    assert!(matches!(
        f.next(&update(6, a.clone())),
        Some(ViewMessage::Changes(_))
    ));
    f.resync();
    assert!(whole(f.next(&update(7, a.clone()))));
    assert!(whole(f.next(&update(3, a.clone()))));
    let mut other = a;
    other.host = "elsewhere".into();
    assert!(whole(f.next(&update(8, other))));
}

/// One edit of a snapshot, chosen by `op`, at position `at`.
fn edit(s: &mut Snapshot, op: u8, at: usize) {
    let pick = |len: usize| if len == 0 { 0 } else { at % len };
    match op % 9 {
        0 if !s.processes.is_empty() => {
            let i = pick(s.processes.len());
            s.processes.remove(i);
        }
        1 if !s.processes.is_empty() => {
            let i = pick(s.processes.len());
            let mut p = s.processes[i].clone();
            Arc::make_mut(&mut p).pid = 100_000 + u32::try_from(at % 1000).unwrap_or(0);
            s.processes.insert(pick(s.processes.len() + 1), p);
        }
        2 if !s.processes.is_empty() => {
            let i = pick(s.processes.len());
            Arc::make_mut(&mut s.processes[i]).sample.rss_bytes += 4096;
        }
        3 if !s.tree.is_empty() => {
            let i = pick(s.tree.len());
            s.tree.remove(i);
        }
        4 if s.tree.len() > 1 => s.tree.rotate_left(1),
        5 => {
            // A subtree moves under another root (a re-parented process).
            if s.tree.len() > 1 {
                let moved = s.tree.remove(pick(s.tree.len()));
                let to = pick(s.tree.len());
                Arc::make_mut(&mut s.tree[to]).children.insert(0, moved);
            }
        }
        6 if !s.findings.is_empty() => s.findings.reverse(),
        7 => {
            if let Some(e) = s.timeline.last().cloned() {
                let mut e = e;
                Arc::make_mut(&mut e).text = format!("event {at}");
                s.timeline.push(e);
                if at % 3 == 0 {
                    s.timeline.remove(0);
                }
            }
        }
        _ => {
            if let Some(n) = s.tree.first_mut() {
                Arc::make_mut(n).label = format!("relabelled {at}");
            }
        }
    }
}

proptest::proptest! {
    #[test]
    fn changes_applied_give_the_next_snapshot(ops in proptest::collection::vec((0u8..9, 0usize..10_000), 0..12), host in proptest::bool::ANY) {
        let a = if host { host_snapshot() } else { sample_snapshot() };
        let mut b = a.clone();
        for (op, at) in ops {
            edit(&mut b, op, at);
        }
        let mut f = Follower::default();
        let _ = f.next(&update(1, a.clone()));
        match f.next(&update(2, b.clone())) {
            Some(ViewMessage::Changes(c)) => proptest::prop_assert_eq!(apply(&a, &c), b),
            Some(ViewMessage::Full { snapshot, .. }) => proptest::prop_assert_eq!(snapshot, b),
            None => proptest::prop_assert!(false, "nothing sent"),
        }
    }
}

/// Sequences of messages the backend sends, as `Follower` makes them from snapshots edited step
/// by step (the same edits as the property test, picked by a fixed xorshift so the file is
/// reproducible), each with the snapshot the view must hold after it: the UI's `delta.ts`
/// replays them (`ui/tests/delta.test.mjs`), so the window's rule is held to Rust's.
fn delta_cases() -> serde_json::Value {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut sequences = Vec::new();
    for base in [sample_snapshot(), host_snapshot()] {
        let mut f = Follower::default();
        let (mut messages, mut expected) = (Vec::new(), Vec::new());
        let mut s = base;
        for seq in 1..=10u64 {
            if seq > 1 {
                for _ in 0..=next() % 3 {
                    edit(&mut s, (next() % 9) as u8, (next() % 10_000) as usize);
                }
                s.taken_at += chrono::Duration::seconds(1);
            }
            if seq == 6 {
                f.resync(); // a dropped message: the view gets the whole snapshot again
            }
            if let Some(m) = f.next(&update(seq, s.clone())) {
                messages.push(m);
                expected.push(s.clone());
            }
        }
        sequences.push(serde_json::json!({ "messages": messages, "expected": expected }));
    }
    sequences.push(changed_after_added());
    serde_json::json!({ "sequences": sequences })
}

/// A process appears, then changes twice, then another appears: an upsert of a key the
/// previous message added (the view's index must know it by then).
fn changed_after_added() -> serde_json::Value {
    let mut f = Follower::default();
    let mut s = sample_snapshot();
    let (mut messages, mut expected) = (Vec::new(), Vec::new());
    for seq in 1..=5u64 {
        match seq {
            2 | 5 => {
                let mut p = s.processes[0].clone();
                Arc::make_mut(&mut p).pid = 100_000 + u32::try_from(seq).unwrap_or(0);
                s.processes.push(p);
            }
            3 | 4 => {
                if let Some(p) = s.processes.last_mut() {
                    Arc::make_mut(p).sample.rss_bytes += 4096;
                }
            }
            _ => {}
        }
        s.taken_at += chrono::Duration::seconds(1);
        if let Some(m) = f.next(&update(seq, s.clone())) {
            messages.push(m);
            expected.push(s.clone());
        }
    }
    serde_json::json!({ "messages": messages, "expected": expected })
}

#[test]
fn ui_delta_fixture_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ui/tests/fixtures/delta-cases.json");
    let now = serde_json::to_string(&delta_cases()).unwrap_or_default() + "\n";
    if std::env::var_os("DEBUGTOP_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &now).unwrap_or_default();
    }
    assert!(
        std::fs::read_to_string(&path).unwrap_or_default() == now,
        "ui/tests/fixtures/delta-cases.json is stale: run `DEBUGTOP_WRITE_SCHEMA=1 cargo test -p debugtop-core fixture`"
    );
}
