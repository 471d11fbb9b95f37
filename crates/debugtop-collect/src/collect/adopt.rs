//! Who took in a process whose parent died. On Linux an orphan is re-parented to init or to the
//! nearest subreaper (`systemd --user`, tini, dumb-init, docker-init, s6 …); either way the
//! process that started it — the host that holds its pipes — is gone. A subreaper not known by
//! name still shows: the sampler saw the child under another parent first, or the parent was
//! created after the child. A child of init still in init's own session and process group, or
//! leading a group of its own, may have been started by init (a service of a minimal init, a
//! sandbox's runner), not re-parented: an orphan keeps the session and the group of the host
//! that started it, so one in another group than init's (and not its own) was started by someone
//! else. Pure over the samples and the identity cache.

use rustc_hash::FxHashMap as HashMap;

use super::parse::basename;
use super::{IdentityCache, Sample};
use debugtop_model::Adopted;

/// Sets `adopted` on every sample whose parent did not start it.
pub fn mark_adopted(samples: &mut [Sample], cache: &IdentityCache) {
    let init = init_session();
    let by_pid: HashMap<u32, usize> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| (s.pid, i))
        .collect();
    let adopted: Vec<Option<Adopted>> = samples
        .iter()
        .map(|s| {
            let parent = by_pid.get(&s.ppid).map(|&j| &samples[j]);
            adoption(s, parent, cache, init)
        })
        .collect();
    for (s, a) in samples.iter_mut().zip(adopted) {
        s.adopted = a;
    }
}

/// Init's (pid 1's) session and process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InitGroup {
    sid: u32,
    pgid: u32,
}

/// Init's session and group, read once: they never change.
fn init_session() -> Option<InitGroup> {
    static INIT: std::sync::OnceLock<Option<InitGroup>> = std::sync::OnceLock::new();
    *INIT.get_or_init(|| {
        super::read_stat(1).map(|s| InitGroup {
            sid: s.session,
            pgid: s.pgrp,
        })
    })
}

/// Whether a child of init could not have been started by it: it is in another session than
/// init's, or in another process group than init's that it does not lead (a group a host or
/// the host's shell made, which init's own children never join).
fn not_inits_own(s: &Sample, init: Option<InitGroup>) -> bool {
    init.is_none_or(|i| s.sid != i.sid || (s.pgid != s.pid && s.pgid != i.pgid))
}

/// Who took `s` in, if its parent did not start it. `parent` is the parent as this scan read
/// it (an idle parent is not read every scan: then the cache's identity names it).
fn adoption(
    s: &Sample,
    parent: Option<&Sample>,
    cache: &IdentityCache,
    init: Option<InitGroup>,
) -> Option<Adopted> {
    if s.ppid == 0 || s.ppid == s.pid {
        return None;
    }
    let moved = cache
        .first_ppid(s.pid, s.start_ticks)
        .is_some_and(|first| first != s.ppid);
    if s.ppid == 1 {
        return (moved || not_inits_own(s, init)).then_some(Adopted::Init);
    }
    let parent_argv = match parent {
        Some(p) => &p.ident.argv[..],
        None => cache.current(s.ppid).map_or(&[][..], |i| &i.argv[..]),
    };
    if let Some(name) = subreaper(parent_argv) {
        return Some(Adopted::Subreaper { pid: s.ppid, name });
    }
    let younger = parent.is_some_and(|p| p.start_ticks > s.start_ticks);
    (younger || moved).then_some(Adopted::Adopter { pid: s.ppid })
}

/// The name of a known subreaper, from its command line.
pub fn subreaper(argv: &[String]) -> Option<String> {
    let first = argv.first()?;
    let b = basename(first);
    let known = matches!(
        b,
        "tini"
            | "tini-static"
            | "dumb-init"
            | "docker-init"
            | "catatonit"
            | "s6-svscan"
            | "s6-supervise"
    ) || (b == "systemd" && argv.iter().any(|a| a == "--user"));
    known.then(|| {
        if b == "systemd" {
            "systemd --user".to_owned()
        } else {
            b.to_owned()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::relate::tests::sample;
    use debugtop_model::EnvMarkers;

    #[test]
    fn a_child_of_init_in_inits_own_session_was_started_by_it_not_adopted() {
        let cache = IdentityCache::default();
        let init = Some(InitGroup { sid: 0, pgid: 0 });
        let child_of_init = |pid: u32, pgid: u32, sid: u32| {
            let mut s = sample(pid, 1, "node server.mjs", EnvMarkers::default());
            (s.pgid, s.sid) = (pgid, sid);
            s
        };
        // Re-parented: it kept the session of the host that started it.
        assert_eq!(
            adoption(&child_of_init(40, 30, 30), None, &cache, init),
            Some(Adopted::Init)
        );
        // Re-parented inside init's own session (nothing ever called setsid: a CI runner's
        // tree): it kept the group of the host (or the host's shell) that started it.
        assert_eq!(
            adoption(&child_of_init(42, 35, 0), None, &cache, init),
            Some(Adopted::Init)
        );
        // Near misses: init's own child in init's session and group, or leading its own group
        // (a sandbox's runner, a minimal init's service) — its pipes' other ends may be
        // outside this pid namespace.
        assert_eq!(adoption(&child_of_init(41, 0, 0), None, &cache, init), None);
        assert_eq!(
            adoption(&child_of_init(43, 43, 0), None, &cache, init),
            None
        );
        // A parent created after its child adopted it; one created before did not.
        let child = sample(50, 60, "python3 helper.py", EnvMarkers::default());
        let younger = sample(60, 1, "bash", EnvMarkers::default());
        assert_eq!(
            adoption(&child, Some(&younger), &cache, init),
            Some(Adopted::Adopter { pid: 60 })
        );
        let older = sample(45, 1, "bash", EnvMarkers::default());
        let child = sample(50, 45, "python3 helper.py", EnvMarkers::default());
        assert_eq!(adoption(&child, Some(&older), &cache, init), None);
        // A subreaper by name.
        let tini = sample(45, 1, "/sbin/tini -- node", EnvMarkers::default());
        assert_eq!(
            adoption(&child, Some(&tini), &cache, init),
            Some(Adopted::Subreaper {
                pid: 45,
                name: "tini".into()
            })
        );
    }

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn subreapers_are_known_by_name_and_a_system_manager_is_not_one() {
        assert_eq!(
            subreaper(&argv("/usr/lib/systemd/systemd --user")).as_deref(),
            Some("systemd --user")
        );
        assert_eq!(
            subreaper(&argv("/sbin/tini -- node")).as_deref(),
            Some("tini")
        );
        assert_eq!(
            subreaper(&argv("/sbin/docker-init -- sh")).as_deref(),
            Some("docker-init")
        );
        assert_eq!(
            subreaper(&argv("dumb-init node s.js")).as_deref(),
            Some("dumb-init")
        );
        // Near misses: the system's own systemd is init (pid 1, not a subreaper of the user's),
        // a shell is a parent like any other.
        assert_eq!(subreaper(&argv("/sbin/init splash")), None);
        assert_eq!(subreaper(&argv("/lib/systemd/systemd --system")), None);
        assert_eq!(subreaper(&argv("bash")), None);
    }
}
