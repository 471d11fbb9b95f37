//! What each process left by a run is: the run's own memory (ancestry, test, when it started)
//! joined with what the engine's audit says of the same identity (role, finding), allowed or a
//! leak, and its command line redacted like an export's.

use std::sync::Arc;

#[cfg(any(target_os = "linux", windows))]
use crate::collect::scope::{self, Member};
#[cfg(any(target_os = "linux", windows))]
use crate::model::Survivor;
use crate::model::{Allowance, Finding, Proc, ProcId, Role};

use super::lineage::Lineage;

/// An expected survivor, as `--allow` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Any process of this role.
    Role(Role),
    /// Any process whose command line matches this pattern (`*` for any text; otherwise a
    /// part of the command line).
    Pattern(String),
}

impl std::str::FromStr for Allow {
    type Err = std::convert::Infallible;
    /// A role's name is a role (`worker`, `server`, …); anything else a pattern.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(s.parse::<Role>()
            .map_or_else(|_| Self::Pattern(s.to_owned()), Self::Role))
    }
}

impl Allow {
    /// Why a process of this role and command line is allowed, if this allows it.
    pub fn allows(&self, role: Option<Role>, argv: &[String]) -> Option<Allowance> {
        match self {
            Self::Role(r) => (role == Some(*r)).then_some(Allowance::Role { role: *r }),
            Self::Pattern(p) => {
                glob(p, &argv.join(" ")).then(|| Allowance::Pattern { pattern: p.clone() })
            }
        }
    }
}

/// Whether `text` matches `pattern`: with `*`, the whole text against the pattern (`*` any
/// run of characters); without, the pattern anywhere in the text.
fn glob(pattern: &str, text: &str) -> bool {
    if !pattern.contains('*') {
        return !pattern.is_empty() && text.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().unwrap_or((&"", &[]));
    let Some(mut tail) = text.strip_prefix(first) else {
        return false;
    };
    let (last, middle) = rest.split_last().unwrap_or((&"", &[]));
    for m in middle {
        match tail.find(m) {
            Some(i) => tail = &tail[i + m.len()..],
            None => return false,
        }
    }
    tail.ends_with(last)
}

/// What the engine said of the run's processes, if it was asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineView<'a> {
    /// The processes it knows.
    pub processes: &'a [Arc<Proc>],
    /// Its findings.
    pub findings: &'a [Arc<Finding>],
}

impl EngineView<'_> {
    /// The role the engine gives this identity.
    pub fn role_of(&self, id: ProcId) -> Option<Role> {
        self.processes
            .iter()
            .find(|p| p.pid == id.pid && p.start_ticks == id.start_ticks)
            .map(|p| p.role)
    }

    /// The finding about it: one whose subject it is, else one that names it.
    pub fn finding_of(&self, pid: u32) -> Option<crate::model::FindingId> {
        let subject = self.findings.iter().find(|f| f.pids.first() == Some(&pid));
        subject
            .or_else(|| self.findings.iter().find(|f| f.pids.contains(&pid)))
            .map(|f| f.id.clone())
    }
}

/// How to describe the survivors.
#[derive(Debug, Clone)]
pub struct Describe<'a> {
    /// The run's memory.
    pub lineage: &'a Lineage,
    /// Those that left the scope.
    pub left: &'a std::collections::HashSet<ProcId>,
    /// The processes of the containers the run started, with their container's id.
    pub containers: &'a std::collections::HashMap<ProcId, String>,
    /// The command's identity (start ticks: when the run's clock starts).
    pub command: ProcId,
    /// Milliseconds since the command ended.
    pub since_end_ms: u64,
    /// The engine's view.
    pub engine: EngineView<'a>,
    /// The `--allow`s.
    pub allow: &'a [Allow],
    /// Redact command lines.
    pub redact: bool,
}

/// Each alive member (with its CPU) as a survivor.
#[cfg(any(target_os = "linux", windows))]
pub fn describe(alive: &[(Member, Option<f32>)], d: &Describe<'_>) -> Vec<Survivor> {
    let tps = scope::ticks_per_second();
    let redact = |argv: &[String]| {
        if d.redact {
            crate::redact::redact_argv(argv)
        } else {
            argv.to_vec()
        }
    };
    alive
        .iter()
        .map(|(m, cpu)| {
            let id = ProcId::new(m.pid, m.start_ticks);
            // Its command line now (a survivor has long run its `exec`), else as remembered.
            let now = scope::read_argv(m.pid);
            let argv = if now.is_empty() {
                d.lineage
                    .record(id)
                    .map(|r| r.argv.clone())
                    .unwrap_or_default()
            } else {
                now
            };
            let role = d.engine.role_of(id);
            let (mut ancestry, complete) = d.lineage.ancestry(id);
            for a in &mut ancestry {
                a.argv = redact(&a.argv);
            }
            let started = (m.start_ticks as i64 - d.command.start_ticks as i64) * 1000;
            Survivor {
                id,
                role,
                finding: d.engine.finding_of(m.pid),
                allowed: d.allow.iter().find_map(|a| a.allows(role, &argv)),
                argv: redact(&argv),
                state: m.state,
                ancestry,
                ancestry_complete: complete,
                started_after_ms: started / tps.max(1) as i64,
                outlived_ms: d.since_end_ms,
                rss_bytes: m.rss_bytes,
                cpu_percent: *cpu,
                test: d.lineage.test_of(id),
                broke_away: d.left.contains(&id),
                container: d.containers.get(&id).cloned(),
                ended: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allow_is_a_role_by_its_name_and_a_pattern_otherwise() {
        assert_eq!(
            "worker".parse::<Allow>().unwrap(),
            Allow::Role(Role::Worker)
        );
        assert_eq!(
            "sccache".parse::<Allow>().unwrap(),
            Allow::Pattern("sccache".into())
        );
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let sccache = argv("/usr/bin/sccache --start-server");
        assert!(Allow::Pattern("sccache".into())
            .allows(None, &sccache)
            .is_some());
        assert!(Allow::Pattern("*sccache --start*".into())
            .allows(None, &sccache)
            .is_some());
        assert!(Allow::Pattern("/usr/*/sccache*".into())
            .allows(None, &sccache)
            .is_some());
        // Near misses: a pattern anchored elsewhere; a role the process does not have.
        assert!(Allow::Pattern("sccache*".into())
            .allows(None, &sccache)
            .is_none());
        assert!(Allow::Pattern("gradle".into())
            .allows(None, &sccache)
            .is_none());
        assert!(Allow::Role(Role::Worker)
            .allows(Some(Role::Adapter), &sccache)
            .is_none());
        assert!(Allow::Role(Role::Worker).allows(None, &sccache).is_none());
        assert!(Allow::Pattern(String::new())
            .allows(None, &sccache)
            .is_none());
    }
}
