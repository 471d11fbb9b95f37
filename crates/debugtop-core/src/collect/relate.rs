//! Ancestry: from what each process says about itself to what it is in the server's tree.
//!
//! A process without a signature is a debuggee if it runs under an adapter or a launcher, an
//! adapter if it runs directly under a worker; server and session links flow down the tree; and
//! what was concluded is remembered per identity, so a process reparented to PID 1 keeps its
//! owner. Pure over the samples and the cache's memory: no I/O.

use std::collections::HashMap;

use super::classify::Signature;
use super::parse::session_from_run_dir;
use super::{IdentityCache, Memory, Sample};
use crate::model::Role;

/// What relate concluded for one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Role, server, session, language, and the parent while in the tree.
    pub memory: Memory,
    /// Set when the process has left the parent it had in the tree.
    pub remembered_ppid: Option<u32>,
}

/// The deepest process tree we follow (guards against a corrupt or hostile table).
const MAX_DEPTH: usize = 256;

/// Resolves every server-related sample. Returns (index into `samples`, resolution).
pub fn relate(samples: &[Sample], cache: &IdentityCache) -> Vec<(usize, Resolved)> {
    let by_pid: HashMap<u32, usize> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| (s.pid, i))
        .collect();
    let mut memo: Vec<Option<Option<Resolved>>> = vec![None; samples.len()];
    for i in 0..samples.len() {
        resolve(i, samples, &by_pid, cache, &mut memo, 0);
    }
    // Watchdogs live in their own session: tie them to the debuggee they name.
    for i in 0..samples.len() {
        let Signature::Watchdog {
            debuggee_pid: Some(d),
        } = samples[i].ident.signature
        else {
            continue;
        };
        let Some(Some(Some(target))) = by_pid.get(&d).map(|&j| memo[j].clone()) else {
            continue;
        };
        if let Some(Some(r)) = memo[i].as_mut() {
            r.memory.server_pid = r.memory.server_pid.or(target.memory.server_pid);
            r.memory.session_id = r.memory.session_id.take().or(target.memory.session_id);
            r.memory.language = r.memory.language.or(target.memory.language);
        }
    }
    memo.into_iter()
        .enumerate()
        .filter_map(|(i, r)| r.flatten().map(|r| (i, r)))
        .collect()
}

fn resolve(
    i: usize,
    samples: &[Sample],
    by_pid: &HashMap<u32, usize>,
    cache: &IdentityCache,
    memo: &mut Vec<Option<Option<Resolved>>>,
    depth: usize,
) -> Option<Resolved> {
    if let Some(done) = &memo[i] {
        return done.clone();
    }
    let s = &samples[i];
    let parent = if depth < MAX_DEPTH && s.ppid != s.pid {
        by_pid
            .get(&s.ppid)
            .and_then(|&j| resolve(j, samples, by_pid, cache, memo, depth + 1))
    } else {
        None
    };
    let remembered = cache
        .memory(s.pid, s.start_ticks)
        .filter(|m| m.role.is_some());
    let own = own_facts(s);

    let result = if own.role.is_none() && parent.is_none() && s.ident.markers.main_pid.is_none() {
        // Not in any tree now; keep it if we knew it before (an orphan, or a zombie whose argv
        // was read while alive).
        remembered.map(|m| Resolved {
            memory: m.clone(),
            remembered_ppid: m.ppid.filter(|pp| *pp != s.ppid),
        })
    } else {
        Some(combine(
            s,
            own,
            parent.as_ref().map(|p| &p.memory),
            remembered,
        ))
    };
    memo[i] = Some(result.clone());
    result
}

/// A process in a tree: what it says of itself first, then what its parent passes down, then
/// what was remembered about it.
fn combine(s: &Sample, own: Memory, p: Option<&Memory>, remembered: Option<&Memory>) -> Resolved {
    let role = own
        .role
        .or_else(|| p.and_then(|p| p.role).map(child_role))
        .or_else(|| remembered.and_then(|m| m.role))
        .unwrap_or(Role::Other);
    let server_pid = own
        .server_pid
        .or_else(|| p.and_then(|p| p.server_pid))
        .or(s.ident.markers.main_pid)
        .or_else(|| remembered.and_then(|m| m.server_pid));
    let session_id = own
        .session_id
        .or_else(|| p.and_then(|p| p.session_id.clone()))
        .or_else(|| remembered.and_then(|m| m.session_id.clone()));
    let language = own
        .language
        .or_else(|| p.and_then(|p| p.language))
        .or_else(|| remembered.and_then(|m| m.language));
    let in_tree_parent = p.is_some().then_some(s.ppid);
    let old_parent = remembered.and_then(|m| m.ppid);
    Resolved {
        memory: Memory {
            role: Some(role),
            server_pid,
            session_id,
            language,
            ppid: in_tree_parent.or(old_parent),
        },
        remembered_ppid: if in_tree_parent.is_none() {
            old_parent.filter(|pp| *pp != s.ppid)
        } else {
            None
        },
    }
}

/// The role of an unrecognised child, from its parent's role.
fn child_role(parent: Role) -> Role {
    match parent {
        // The worker's direct child is the adapter it spawned, whatever it is.
        Role::Worker => Role::Adapter,
        Role::Adapter | Role::Launcher | Role::Debuggee => Role::Debuggee,
        Role::Server | Role::Watchdog | Role::Other => Role::Other,
    }
}

/// What the sample's own signature and markers say.
fn own_facts(s: &Sample) -> Memory {
    let env_session = || {
        s.ident
            .markers
            .debugpy_log_dir
            .as_deref()
            .and_then(session_from_run_dir)
    };
    let (role, server_pid, session_id, language) = match &s.ident.signature {
        Signature::Server { .. } => (Some(Role::Server), Some(s.pid), None, None),
        Signature::Worker {
            owner_pid,
            session_id,
        } => (
            Some(Role::Worker),
            Some(*owner_pid),
            session_id.clone(),
            None,
        ),
        Signature::Adapter {
            language,
            session_id,
        } => (
            Some(Role::Adapter),
            None,
            session_id.clone(),
            Some(*language),
        ),
        Signature::Launcher { session_id } => (
            Some(Role::Launcher),
            None,
            session_id.clone(),
            Some(crate::model::Language::Python),
        ),
        Signature::Debuggee {
            language,
            session_id,
        } => (
            Some(Role::Debuggee),
            None,
            session_id.clone(),
            Some(*language),
        ),
        Signature::Watchdog { .. } => (
            Some(Role::Watchdog),
            None,
            None,
            Some(crate::model::Language::Javascript),
        ),
        Signature::None => (None, None, env_session(), None),
    };
    Memory {
        role,
        server_pid,
        session_id,
        language,
        ppid: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::classify::classify;
    use crate::collect::Ident;
    use crate::model::{EnvMarkers, Language, ProcState};
    use std::sync::Arc;

    fn sample(pid: u32, ppid: u32, argv: &str, markers: EnvMarkers) -> Sample {
        let argv: Vec<String> = argv.split(' ').map(String::from).collect();
        let signature = classify(&argv, &markers);
        Sample {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: ProcState::Sleeping,
            start_ticks: u64::from(pid),
            start_time: chrono::Utc::now(),
            cpu_percent: None,
            rss_bytes: 0,
            ident: Arc::new(Ident {
                argv,
                markers,
                signature,
                uid: None,
                pkg_dir: None,
            }),
        }
    }

    fn role_of(out: &[(usize, Resolved)], samples: &[Sample], pid: u32) -> Option<Memory> {
        out.iter()
            .find(|(i, _)| samples[*i].pid == pid)
            .map(|(_, r)| r.memory.clone())
    }

    #[test]
    fn js_chain_resolves_down_the_tree() {
        let main = EnvMarkers {
            main_pid: Some(10),
            ..Default::default()
        };
        let samples = vec![
            sample(1, 0, "init", EnvMarkers::default()),
            sample(
                10,
                1,
                "node /p/mcp-debugger/dist/cli.mjs http",
                EnvMarkers::default(),
            ),
            sample(
                11,
                10,
                "node /p/proxy-bootstrap.js --mcp-owner-pid=10 --mcp-session-id=s1",
                main.clone(),
            ),
            sample(
                12,
                11,
                "node /p/js-debug/vsDebugServer.cjs 1 127.0.0.1",
                main.clone(),
            ),
            sample(
                13,
                12,
                "node ./script.js",
                EnvMarkers {
                    js_bootloader: true,
                    ..main.clone()
                },
            ),
            sample(14, 13, "sh -c true", EnvMarkers::default()),
            sample(
                15,
                1,
                "node /p/js-debug/watchdog.js",
                EnvMarkers {
                    inspector_pid: Some(13),
                    ..Default::default()
                },
            ),
            sample(20, 1, "bash", EnvMarkers::default()),
        ];
        let cache = IdentityCache::default();
        let out = relate(&samples, &cache);
        let m = |pid| role_of(&out, &samples, pid);
        assert_eq!(m(10).and_then(|m| m.role), Some(Role::Server));
        let w = m(11).expect("worker");
        assert_eq!(
            (w.role, w.server_pid, w.session_id.as_deref()),
            (Some(Role::Worker), Some(10), Some("s1"))
        );
        let a = m(12).expect("adapter");
        assert_eq!(
            (a.role, a.session_id.as_deref(), a.language),
            (Some(Role::Adapter), Some("s1"), Some(Language::Javascript))
        );
        let d = m(14).expect("grandchild debuggee");
        assert_eq!(
            (d.role, d.server_pid, d.session_id.as_deref()),
            (Some(Role::Debuggee), Some(10), Some("s1"))
        );
        let wd = m(15).expect("watchdog");
        assert_eq!(
            (wd.role, wd.server_pid, wd.session_id.as_deref()),
            (Some(Role::Watchdog), Some(10), Some("s1"))
        );
        assert!(
            m(1).is_none() && m(20).is_none(),
            "unrelated processes stay out"
        );
    }

    #[test]
    fn unknown_child_of_worker_is_an_adapter() {
        let samples = vec![
            sample(
                11,
                1,
                "node /p/proxy-bootstrap.js --mcp-owner-pid=10 --mcp-session-id=s1",
                EnvMarkers::default(),
            ),
            sample(12, 11, "/opt/weird-adapter --stdio", EnvMarkers::default()),
        ];
        let out = relate(&samples, &IdentityCache::default());
        assert_eq!(
            role_of(&out, &samples, 12).and_then(|m| m.role),
            Some(Role::Adapter)
        );
    }

    #[test]
    fn a_cycle_in_a_corrupt_table_does_not_hang() {
        let samples = vec![
            sample(5, 6, "a", EnvMarkers::default()),
            sample(6, 5, "b", EnvMarkers::default()),
        ];
        assert!(relate(&samples, &IdentityCache::default()).is_empty());
    }
}
