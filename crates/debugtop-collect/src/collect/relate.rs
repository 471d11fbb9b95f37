//! Ancestry: from what each process says about itself to what it is in the server's tree.
//!
//! A process without a signature is a debuggee if it runs under an adapter or a launcher, an
//! adapter if it runs directly under a worker; server and session links flow down the tree; and
//! what was concluded is remembered per identity, so a process reparented to PID 1 keeps its
//! owner. Then MCP hosts: a process whose child talks to it over stdin/stdout pipes and is an
//! MCP server (by argv, package, or as mcp-debugger) is a host, every other piped child of a
//! host is one of its stdio servers, and each server (and what it started) remembers its host.
//! Pure over the samples and the cache's memory: no I/O.

use rustc_hash::FxHashMap as HashMap;

use super::classify::Signature;
use super::parse::session_from_run_dir;
use super::{Belonging, IdentityCache, Sample};
use debugtop_model::{wrapper_name as wrapper, HostKind, HostRef, McpEvidence, Role};

/// What relate concluded for one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Role, server, session, language, host, and the parent while in the tree.
    pub memory: Belonging,
    /// Set when the process has left the parent it had in the tree.
    pub remembered_ppid: Option<u32>,
    /// Why it counts as an MCP server, for a stdio server that is not mcp-debugger.
    pub mcp: Option<McpEvidence>,
}

/// The deepest process tree we follow (guards against a corrupt or hostile table).
const MAX_DEPTH: usize = 256;

type Memo = Vec<Option<Option<Resolved>>>;

/// Resolves every server-related sample. Returns (index into `samples`, resolution).
pub fn relate(samples: &[Sample], cache: &IdentityCache) -> Vec<(usize, Resolved)> {
    let by_pid: HashMap<u32, usize> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| (s.pid, i))
        .collect();
    let mut memo: Memo = vec![None; samples.len()];
    for i in 0..samples.len() {
        resolve(i, samples, &by_pid, cache, &mut memo, 0);
    }
    tie_watchdogs(samples, &by_pid, &mut memo);
    hosts(samples, &by_pid, cache, &mut memo);
    // Sized once (at most one per sample): grown by doubling, 5,000 resolved samples were
    // copied a dozen times a scan.
    let mut out = Vec::with_capacity(memo.len());
    out.extend(
        memo.into_iter()
            .enumerate()
            .filter_map(|(i, r)| r.flatten().map(|r| (i, r))),
    );
    out
}

/// Watchdogs live in their own session: tie them to the debuggee they name.
fn tie_watchdogs(samples: &[Sample], by_pid: &HashMap<u32, usize>, memo: &mut Memo) {
    for i in 0..samples.len() {
        if !matches!(samples[i].ident.signature, Signature::Watchdog { .. }) {
            continue;
        }
        let Some(d) = samples[i].markers.inspector_pid else {
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
}

/// MCP hosts and their stdio servers (see the module doc). A host's stdio servers are those of
/// its children whose stdin its writes to; each server's descendants inherit the host.
fn hosts(samples: &[Sample], by_pid: &HashMap<u32, usize>, cache: &IdentityCache, memo: &mut Memo) {
    let says_mcp =
        |s: &Sample| s.ident.mcp.is_some() || matches!(s.ident.signature, Signature::Server { .. });
    let mut host_of: HashMap<u32, HostRef> = HashMap::default();
    for s in samples.iter().filter(|s| s.parent_writes_stdin) {
        let Some(&j) = by_pid.get(&s.ppid) else {
            continue;
        };
        let parent = &samples[j];
        let marked = parent.ident.host.is_some();
        let has_mcp_child = samples
            .iter()
            .any(|c| c.ppid == parent.pid && c.parent_writes_stdin && says_mcp(c));
        if marked || has_mcp_child {
            host_of
                .entry(parent.pid)
                .or_insert_with(|| host_ref(parent));
        }
    }
    for (&hpid, _) in host_of.iter() {
        let Some(&j) = by_pid.get(&hpid) else {
            continue;
        };
        let prev = memo[j].clone().flatten();
        memo[j] = Some(Some(Resolved {
            memory: Belonging {
                role: Some(Role::Host),
                ..prev.map(|p| p.memory).unwrap_or_default()
            },
            remembered_ppid: None,
            mcp: None,
        }));
    }
    for (i, s) in samples.iter().enumerate() {
        let live_host = (s.parent_writes_stdin && host_of.contains_key(&s.ppid))
            .then(|| host_of.get(&s.ppid).cloned())
            .flatten();
        if let Some(host) = live_host {
            mark_server(i, s, host, memo);
        }
    }
    inherit_hosts(samples, cache, memo);
    standalone_servers(samples, memo);
    leak_roots(samples, memo);
    server_descendants(samples, by_pid, memo);
}

/// A process that says it is an MCP server and has a channel, but runs under no host debugtop
/// sees (its host died before debugtop started, or something other than its parent holds the
/// other end): still a stdio server, so whether anyone can reach it is checked.
fn standalone_servers(samples: &[Sample], memo: &mut Memo) {
    for (i, s) in samples.iter().enumerate() {
        let (Some(evidence), Some(_)) = (&s.ident.mcp, s.channel) else {
            continue;
        };
        // Resolved already — unless only as part of a leaked chain's wrappers (remembered from
        // the last scan, its parent a wrapper): a server is a server.
        let in_chain = |r: &Resolved| {
            matches!(r.memory.role, Some(Role::Other | Role::Wrapper))
                && r.memory.session_id.is_none()
                && r.memory.host.is_none()
        };
        if memo[i]
            .as_ref()
            .is_some_and(|r| r.as_ref().is_some_and(|r| !in_chain(r)))
        {
            continue;
        }
        memo[i] = Some(Some(Resolved {
            memory: Belonging {
                role: Some(Role::Server),
                server_pid: Some(s.pid),
                ..Belonging::default()
            },
            remembered_ppid: None,
            mcp: Some(evidence.clone()),
        }));
    }
}

/// The root of a leaked stdio chain (an adopted process nobody can reach over its stdio: see
/// [`Sample::dead_end`]) that is no server itself: a wrapper (npx, uvx, `sh -c`) or a process
/// nothing names. It and the processes between it and the MCP server running under it (if one
/// does) belong to that server, as wrappers; else the root stands for itself.
fn leak_roots(samples: &[Sample], memo: &mut Memo) {
    let mut children: HashMap<u32, Vec<usize>> = HashMap::default();
    for (i, s) in samples.iter().enumerate() {
        children.entry(s.ppid).or_default().push(i);
    }
    for i in 0..samples.len() {
        if samples[i].dead_end.is_none() || memo[i].as_ref().is_some_and(|r| r.is_some()) {
            continue;
        }
        let path = path_to_server(i, samples, &children, memo);
        let server = path.last().map(|&j| samples[j].pid);
        let between = path.len().saturating_sub(1);
        for &k in std::iter::once(&i).chain(&path[..between]) {
            if k != i && memo[k].as_ref().is_some_and(|r| r.is_some()) {
                continue;
            }
            let role = match wrapper(&samples[k].ident.argv) {
                Some(_) => Role::Wrapper,
                None => Role::Other,
            };
            memo[k] = Some(Some(Resolved {
                memory: Belonging {
                    role: Some(role),
                    server_pid: Some(server.unwrap_or(samples[i].pid)),
                    ppid: Some(samples[k].ppid),
                    ..Belonging::default()
                },
                remembered_ppid: None,
                mcp: None,
            }));
        }
    }
}

/// The processes from `root`'s child down to the first server under it (breadth first, a few
/// levels deep); empty when none runs under it.
fn path_to_server(
    root: usize,
    samples: &[Sample],
    children: &HashMap<u32, Vec<usize>>,
    memo: &Memo,
) -> Vec<usize> {
    let is_server = |j: usize| {
        memo[j]
            .as_ref()
            .and_then(|r| r.as_ref())
            .is_some_and(|r| r.memory.role == Some(Role::Server))
    };
    let mut came_from: HashMap<usize, usize> = HashMap::default();
    let mut level = vec![root];
    for _ in 0..8 {
        let mut next = Vec::new();
        for &p in &level {
            for &c in children.get(&samples[p].pid).into_iter().flatten() {
                if c == root || came_from.contains_key(&c) {
                    continue;
                }
                came_from.insert(c, p);
                if is_server(c) {
                    let mut path = vec![c];
                    let mut cur = c;
                    while let Some(&up) = came_from.get(&cur).filter(|&&up| up != root) {
                        path.push(up);
                        cur = up;
                    }
                    path.reverse();
                    return path;
                }
                next.push(c);
            }
        }
        level = next;
    }
    Vec::new()
}

fn host_ref(s: &Sample) -> HostRef {
    HostRef {
        pid: s.pid,
        start_ticks: s.start_ticks,
        kind: s.ident.host.unwrap_or(HostKind::Unlabelled),
        argv: s.ident.argv.to_vec(),
    }
}

/// A host's stdio server: mcp-debugger keeps its server role and links; any other becomes a
/// server of its own (its own `server_pid`), with the evidence that makes it one.
fn mark_server(i: usize, s: &Sample, host: HostRef, memo: &mut Memo) {
    let prev = memo[i].clone().flatten();
    let mcp = match &s.ident.signature {
        Signature::Server { .. } => None,
        _ => Some(s.ident.mcp.clone().unwrap_or(McpEvidence::HostChild)),
    };
    let mut memory = prev.map(|p| p.memory).unwrap_or_default();
    if mcp.is_some() {
        memory.role = Some(Role::Server);
        memory.server_pid = Some(s.pid);
    }
    memory.host = Some(host);
    memory.ppid = Some(s.ppid);
    memo[i] = Some(Some(Resolved {
        memory,
        remembered_ppid: None,
        mcp,
    }));
}

/// A server whose host is gone keeps it (from memory, by identity), and so does what it
/// started.
fn inherit_hosts(samples: &[Sample], cache: &IdentityCache, memo: &mut Memo) {
    // Remembered stdio servers (their host died: they are reparented).
    for (i, s) in samples.iter().enumerate() {
        let Some(m) = cache
            .memory(s.pid, s.start_ticks)
            .filter(|m| m.host.is_some())
        else {
            continue;
        };
        if memo[i]
            .as_ref()
            .is_some_and(|r| r.as_ref().is_some_and(|r| r.memory.host.is_some()))
        {
            continue;
        }
        let mcp = (m.role == Some(Role::Server)
            && !matches!(s.ident.signature, Signature::Server { .. }))
        .then(|| s.ident.mcp.clone().unwrap_or(McpEvidence::HostChild));
        memo[i] = Some(Some(Resolved {
            memory: m.clone(),
            remembered_ppid: m.ppid.filter(|pp| *pp != s.ppid),
            mcp,
        }));
    }
}

/// What a stdio server started (a helper, an npx wrapper's real server) belongs to it: its
/// server, and its host if it has one.
fn server_descendants(samples: &[Sample], by_pid: &HashMap<u32, usize>, memo: &mut Memo) {
    // A host's server, an MCP server, or a leaked chain's root (a wrapper or a process that
    // stands for itself).
    let is_stdio_root = |r: &Resolved| {
        r.memory.role != Some(Role::Host)
            && (r.memory.host.is_some()
                || r.mcp.is_some()
                || matches!(r.memory.role, Some(Role::Wrapper | Role::Other))
                    && r.memory.server_pid.is_some())
    };
    for i in 0..samples.len() {
        if memo[i].as_ref().is_some_and(|r| r.is_some()) {
            continue;
        }
        let mut cur = i;
        let mut root = None;
        for _ in 0..MAX_DEPTH {
            let Some(&p) = by_pid.get(&samples[cur].ppid) else {
                break;
            };
            if p == cur {
                break;
            }
            if let Some(Some(r)) = &memo[p] {
                if is_stdio_root(r) {
                    root = Some((r.memory.host.clone(), r.memory.server_pid));
                }
                break;
            }
            cur = p;
        }
        let Some((host, server)) = root else { continue };
        memo[i] = Some(Some(Resolved {
            memory: Belonging {
                role: Some(Role::Other),
                server_pid: server,
                host,
                ppid: Some(samples[i].ppid),
                ..Belonging::default()
            },
            remembered_ppid: None,
            mcp: None,
        }));
    }
}

/// Resolves sample `i` (and first its ancestors) into `memo`; each answer is read from there
/// by reference, so a session id is copied once per process, not once more per caller.
fn resolve(
    i: usize,
    samples: &[Sample],
    by_pid: &HashMap<u32, usize>,
    cache: &IdentityCache,
    memo: &mut Memo,
    depth: usize,
) {
    if memo[i].is_some() {
        return;
    }
    let s = &samples[i];
    let parent_at = if depth < MAX_DEPTH && s.ppid != s.pid {
        by_pid.get(&s.ppid).copied()
    } else {
        None
    };
    if let Some(j) = parent_at {
        resolve(j, samples, by_pid, cache, memo, depth + 1);
    }
    let parent = parent_at
        .and_then(|j| memo[j].as_ref())
        .and_then(Option::as_ref);
    let remembered = cache
        .memory(s.pid, s.start_ticks)
        // Host-ness is what a process does now (its children's pipes), never remembered; what
        // ran under a host is restored with its host by `inherit_hosts`.
        .filter(|m| m.role.is_some() && m.role != Some(Role::Host) && m.host.is_none());
    let own = own_facts(s);
    let result = if own.role.is_none() && parent.is_none() && s.markers.main_pid.is_none() {
        // Not in any tree now; keep it if we knew it before (an orphan, or a zombie whose argv
        // was read while alive).
        remembered.map(|m| Resolved {
            memory: m.clone(),
            remembered_ppid: m.ppid.filter(|pp| *pp != s.ppid),
            mcp: None,
        })
    } else {
        Some(combine(s, own, parent.map(|p| &p.memory), remembered))
    };
    memo[i] = Some(result);
}

/// A process in a tree: what it says of itself first, then what its parent passes down, then
/// what was remembered about it.
fn combine(
    s: &Sample,
    own: Belonging,
    p: Option<&Belonging>,
    remembered: Option<&Belonging>,
) -> Resolved {
    let role = own
        .role
        .or_else(|| p.and_then(|p| p.role).map(child_role))
        .or_else(|| remembered.and_then(|m| m.role))
        .unwrap_or(Role::Other);
    let server_pid = own
        .server_pid
        .or_else(|| p.and_then(|p| p.server_pid))
        .or(s.markers.main_pid)
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
        memory: Belonging {
            role: Some(role),
            server_pid,
            session_id,
            language,
            ppid: in_tree_parent.or(old_parent),
            host: None,
        },
        remembered_ppid: if in_tree_parent.is_none() {
            old_parent.filter(|pp| *pp != s.ppid)
        } else {
            None
        },
        mcp: None,
    }
}

/// The role of an unrecognised child, from its parent's role.
fn child_role(parent: Role) -> Role {
    match parent {
        // The worker's direct child is the adapter it spawned, whatever it is.
        Role::Worker => Role::Adapter,
        Role::Adapter | Role::Launcher | Role::Debuggee => Role::Debuggee,
        Role::Server | Role::Watchdog | Role::Host | Role::Wrapper | Role::Other => Role::Other,
    }
}

/// What the sample's own signature and markers say (pids already translated to this
/// namespace's: `s.owner_pid`, `s.markers`).
fn own_facts(s: &Sample) -> Belonging {
    let env_session = || {
        s.ident
            .markers
            .debugpy_log_dir
            .as_deref()
            .and_then(session_from_run_dir)
    };
    let (role, server_pid, session_id, language) = match &s.ident.signature {
        Signature::Server { .. } => (Some(Role::Server), Some(s.pid), None, None),
        Signature::Worker { session_id, .. } => {
            (Some(Role::Worker), s.owner_pid, session_id.clone(), None)
        }
        Signature::Adapter {
            language,
            session_id,
            ..
        } => (
            Some(Role::Adapter),
            s.owner_pid,
            session_id.clone(),
            Some(*language),
        ),
        Signature::Launcher { session_id } => (
            Some(Role::Launcher),
            None,
            session_id.clone(),
            Some(debugtop_model::Language::Python),
        ),
        Signature::Debuggee {
            language,
            session_id,
            ..
        } => (
            Some(Role::Debuggee),
            s.owner_pid,
            session_id.clone(),
            Some(*language),
        ),
        Signature::Watchdog { .. } => (
            Some(Role::Watchdog),
            None,
            None,
            Some(debugtop_model::Language::Javascript),
        ),
        Signature::None => (None, None, env_session(), None),
    };
    Belonging {
        role,
        server_pid,
        session_id,
        language,
        ppid: None,
        host: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::collect::classify::classify;
    use crate::collect::Ident;
    use debugtop_model::{EnvMarkers, Language, ProcState};
    use std::sync::Arc;

    pub(crate) fn sample(pid: u32, ppid: u32, argv: &str, markers: EnvMarkers) -> Sample {
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
            markers: markers.clone(),
            owner_pid: match &signature {
                Signature::Worker { owner_pid, .. } => Some(*owner_pid),
                _ => None,
            },
            stdio: None,
            channel: None,
            parent_writes_stdin: false,
            adopted: None,
            dead_end: None,
            ident: Arc::new(Ident {
                markers,
                signature,
                ..Ident::of_argv(argv)
            }),
        }
    }

    fn role_of(out: &[(usize, Resolved)], samples: &[Sample], pid: u32) -> Option<Belonging> {
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

    fn with_ns(mut s: Sample, ns: u64, inner: u32) -> Sample {
        let mut ident = (*s.ident).clone();
        ident.ns = Some(debugtop_model::PidNs {
            inode: ns,
            pid: inner,
            container: Some("3f2a9c0e1b7d".into()),
        });
        s.ident = Arc::new(ident);
        s
    }

    /// A healthy server in a container (its pid there is 56) with its worker, seen from the
    /// host, where pid 56 is an unrelated process: the worker joins its own server, never the
    /// host's 56.
    #[test]
    fn markers_written_in_a_container_join_within_its_namespace_only() {
        let main = EnvMarkers {
            main_pid: Some(56),
            ..Default::default()
        };
        let mut samples = vec![
            sample(56, 1, "sleep 600", EnvMarkers::default()),
            with_ns(
                sample(
                    81234,
                    81200,
                    "node /p/mcp-debugger/dist/cli.mjs http",
                    EnvMarkers::default(),
                ),
                7,
                56,
            ),
            with_ns(
                sample(
                    81300,
                    81234,
                    "node /p/proxy-bootstrap.js --mcp-owner-pid=56 --mcp-session-id=s1",
                    main,
                ),
                7,
                61,
            ),
        ];
        crate::collect::translate(&mut samples);
        let cache = IdentityCache::default();
        let out = relate(&samples, &cache);
        let w = role_of(&out, &samples, 81300).expect("worker");
        assert_eq!(w.role, Some(Role::Worker));
        assert_eq!(
            w.server_pid,
            Some(81234),
            "its owner is the server of its namespace"
        );
        assert!(
            role_of(&out, &samples, 56).is_none(),
            "the host's pid 56 is not a server"
        );
        assert_eq!(samples[2].owner_pid, Some(81234));
        // The same worker whose owner is gone from its namespace names nobody.
        let mut gone = vec![samples[0].clone(), samples[2].clone()];
        gone[1].owner_pid = crate::collect::raw_owner(&gone[1].ident.signature);
        crate::collect::translate(&mut gone);
        assert_eq!(gone[1].owner_pid, None, "not the host's 56");
    }

    /// A plain host (no markers) with a server that says MCP, one that says nothing, and a
    /// child it does not talk to.
    #[test]
    fn a_host_is_whoever_talks_to_an_mcp_server_over_its_stdio() {
        let mut samples = vec![
            sample(500, 1, "node /work/host.js", EnvMarkers::default()),
            sample(
                501,
                500,
                "node /n/@modelcontextprotocol/server-memory/dist/index.js",
                EnvMarkers::default(),
            ),
            sample(
                502,
                500,
                "node /work/quiet-server.js",
                EnvMarkers::default(),
            ),
            sample(503, 500, "node /work/helper.js", EnvMarkers::default()),
            sample(504, 502, "sleep 600", EnvMarkers::default()),
        ];
        let mut mcp = (*samples[1].ident).clone();
        mcp.mcp = Some(McpEvidence::Argv {
            arg: "/n/@modelcontextprotocol/server-memory/dist/index.js".into(),
        });
        samples[1].ident = Arc::new(mcp);
        samples[1].parent_writes_stdin = true;
        samples[2].parent_writes_stdin = true;
        let out = relate(&samples, &IdentityCache::default());
        assert_eq!(
            role_of(&out, &samples, 500).and_then(|m| m.role),
            Some(Role::Host)
        );
        for pid in [501, 502] {
            let m = role_of(&out, &samples, pid).expect("server");
            assert_eq!(m.role, Some(Role::Server), "{pid}");
            assert_eq!(m.host.as_ref().map(|h| h.pid), Some(500));
        }
        let quiet = out
            .iter()
            .find(|(i, _)| samples[*i].pid == 502)
            .map(|(_, r)| r.mcp.clone());
        assert_eq!(
            quiet,
            Some(Some(McpEvidence::HostChild)),
            "name-free: what it does"
        );
        assert!(
            role_of(&out, &samples, 503).is_none(),
            "a child it does not talk to is not a server"
        );
        let kid = role_of(&out, &samples, 504).expect("the quiet server's child");
        assert_eq!((kid.role, kid.server_pid), (Some(Role::Other), Some(502)));
        assert_eq!(kid.host.map(|h| h.pid), Some(500));
    }

    #[test]
    fn a_parent_created_after_its_child_is_a_reused_pid_not_a_parent() {
        // Windows never re-parents: 340's parent pid 32 now belongs to a process created after
        // it (the server crashed and 32 was reused). Its sibling's parent is older: kept.
        let mut reused = sample(32, 0, "node other.js", EnvMarkers::default());
        reused.start_ticks = 900;
        let mut orphan = sample(340, 32, "node a.js", EnvMarkers::default());
        orphan.start_ticks = 500;
        let mut child = sample(344, 32, "node b.js", EnvMarkers::default());
        child.start_ticks = 950;
        let mut unknown = sample(348, 32, "node c.js", EnvMarkers::default());
        unknown.start_ticks = 0;
        let mut samples = vec![reused, orphan, child, unknown];
        crate::collect::unlink_reused_parents(&mut samples);
        let ppids: Vec<u32> = samples.iter().map(|s| s.ppid).collect();
        assert_eq!(
            ppids,
            [0, 0, 32, 32],
            "only the child older than its 'parent' is cut off"
        );
    }
}
