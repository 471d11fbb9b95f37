//! Desktop notifications: which new critical findings are worth interrupting someone for, and
//! what each notification says. The app shows them; the policy is here so that it is one, and
//! tested without a window.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::model::{group_findings, Finding, FindingId, Severity, Snapshot, Target};

/// How long a group of several findings stays quiet after it was notified.
const GROUP_QUIET: Duration = Duration::seconds(60);

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Its title: the kind, or the group's title, and the target when it is not this machine.
    pub title: String,
    /// Its body: the first finding's first evidence.
    pub body: String,
}

/// What one feed (this machine or a target) has notified: last update's findings, as they
/// came (none before the first update), and when each group of several was last notified.
#[derive(Debug, Default)]
pub struct Notices {
    last: Option<Vec<Arc<Finding>>>,
    groups: HashMap<String, DateTime<Utc>>,
}

impl Notices {
    /// The notifications `snap` calls for when `enabled`: each critical finding that was not
    /// critical at the last update (none at the first: what was there when someone started
    /// looking is on the screen, not news), one per group, and a group at most once a minute —
    /// a thousand orphans of one dead server appearing over a few ticks are one notification.
    /// `on` names a remote target.
    pub fn next(&mut self, snap: &Snapshot, enabled: bool, on: Option<&Target>) -> Vec<Notice> {
        // The very findings of last update (the engine keeps what did not change): nothing is
        // news, and no id is gathered to say so.
        let same = |last: &Vec<Arc<Finding>>| {
            last.len() == snap.findings.len()
                && last
                    .iter()
                    .zip(&snap.findings)
                    .all(|(a, b)| Arc::ptr_eq(a, b))
        };
        if self.last.as_ref().is_some_and(same) {
            return Vec::new();
        }
        let Some(last) = self.last.replace(snap.findings.clone()) else {
            return Vec::new();
        };
        if !enabled {
            return Vec::new();
        }
        let before: HashSet<&FindingId> = last
            .iter()
            .filter(|f| f.severity == Severity::Critical)
            .map(|f| &f.id)
            .collect();
        let new: Vec<&Finding> = snap
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Critical && !before.contains(&f.id))
            .map(|f| &**f)
            .collect();
        let mut out = Vec::new();
        for g in group_findings(&new) {
            let quiet = self
                .groups
                .get(&g.key)
                .is_some_and(|at| snap.taken_at - *at < GROUP_QUIET);
            let first = new.iter().find(|f| g.findings.first() == Some(&f.id));
            let Some(first) = first.filter(|_| !quiet) else {
                continue;
            };
            let several = g.findings.len() > 1;
            if several {
                self.groups.insert(g.key.clone(), snap.taken_at);
            }
            out.push(notice(
                first,
                several.then_some((&g.title, g.findings.len())),
                on,
            ));
        }
        out
    }
}

/// The notification about `first`, alone or (`group`: its title and size) for its group.
fn notice(first: &Finding, group: Option<(&String, usize)>, on: Option<&Target>) -> Notice {
    let what = group.map_or_else(|| first.kind.to_string(), |(title, _)| title.clone());
    let title = match on {
        Some(t) => format!("debugtop: {what} on {t}"),
        None => format!("debugtop: {what}"),
    };
    let mut body = first.evidence.first().cloned().unwrap_or_default();
    if let Some((_, n)) = group {
        body.push_str(&format!(" (and {} more like it)", n - 1));
    }
    Notice { title, body }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::FindingKind;
    use crate::testing::{at, sample_snapshot};

    fn orphan(pid: u32) -> Arc<Finding> {
        let mut f = Finding {
            id: FindingId::of_proc(
                FindingKind::OrphanedWorker,
                crate::model::ProcId::new(pid, 1),
            ),
            kind: FindingKind::OrphanedWorker,
            severity: Severity::Critical,
            pids: vec![pid],
            session_id: None,
            server_pid: Some(999),
            evidence: vec![format!("worker {pid} names its owner 999")],
            since: at(0),
            confirmed_at: None,
            suggested_action: String::new(),
            plan: None,
        };
        f.evidence
            .push("no mcp-debugger server with pid 999 is running".into());
        Arc::new(f)
    }

    fn snap(t: i64, pids: &[u32]) -> Snapshot {
        let mut s = sample_snapshot();
        s.taken_at = at(t);
        s.findings = pids.iter().map(|p| orphan(*p)).collect();
        s
    }

    #[test]
    fn only_news_is_notified_one_per_group_and_a_group_once_a_minute() {
        let mut n = Notices::default();
        assert!(
            n.next(&snap(0, &[300]), true, None).is_empty(),
            "the first look is not news"
        );
        let one = n.next(&snap(1, &[300, 301]), true, None);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].title, "debugtop: orphaned-worker");
        assert_eq!(one[0].body, "worker 301 names its owner 999");
        let many = n.next(&snap(2, &[300, 301, 302, 303, 304]), true, None);
        assert_eq!(many.len(), 1, "{many:?}");
        assert!(many[0].body.ends_with("(and 2 more like it)"), "{many:?}");
        // The same group again within a minute: quiet; after it: notified.
        assert!(n
            .next(&snap(30, &[300, 301, 302, 303, 304, 305, 306]), true, None)
            .is_empty());
        let later = n.next(&snap(90, &(300..310).collect::<Vec<_>>()), true, None);
        assert_eq!(later.len(), 1);
    }

    #[test]
    fn nothing_when_disabled_and_a_target_is_named() {
        let mut n = Notices::default();
        let _ = n.next(&snap(0, &[]), true, None);
        assert!(n.next(&snap(1, &[300]), false, None).is_empty());
        // Disabled did not lose what was seen: 300 is not news when it is enabled again.
        assert!(n.next(&snap(2, &[300]), true, None).is_empty());
        let t: Target = "ssh:dev@box".parse().unwrap_or(Target::Local);
        let on = n.next(&snap(3, &[300, 301]), true, Some(&t));
        assert_eq!(on.len(), 1);
        assert!(on[0].title.ends_with(" on ssh:dev@box"), "{on:?}");
    }

    #[test]
    fn the_same_findings_again_are_no_news_and_a_first_empty_look_still_counts() {
        let mut n = Notices::default();
        // The first look has no findings, and the next is the very same list: the first look
        // is still what later ones are news against.
        let empty = snap(0, &[]);
        assert!(n.next(&empty, true, None).is_empty());
        assert!(n.next(&empty, true, None).is_empty());
        let one = snap(1, &[300]);
        assert_eq!(n.next(&one, true, None).len(), 1, "300 is news");
        // The very same findings (the engine shares what did not change), and equal ones
        // built again: no news either way.
        assert!(n.next(&one, true, None).is_empty());
        assert!(n.next(&snap(2, &[300]), true, None).is_empty());
        // As many findings, another one among them: news (the list is compared by its very
        // allocations, not by its length).
        assert_eq!(n.next(&snap(3, &[301]), true, None).len(), 1, "301 is news");
        // A finding that went and came back is news again, as before.
        assert!(n.next(&snap(4, &[]), true, None).is_empty());
        assert_eq!(n.next(&snap(5, &[300]), true, None).len(), 1);
    }
}
