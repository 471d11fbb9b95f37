//! Who took in a process whose parent died. On Linux an orphan is re-parented to init or to the
//! nearest subreaper (`systemd --user`, tini, dumb-init, docker-init, s6 …); either way the
//! process that started it — the host that holds its pipes — is gone. A subreaper not known by
//! name still shows: the sampler saw the child under another parent first, or the parent was
//! created after the child. A child of init still in init's own session was started by init
//! (a service of a minimal init, a sandbox's runner), not re-parented: an orphan keeps the
//! session of the host that started it. Pure over the samples and the identity cache.

use std::collections::HashMap;

use super::parse::basename;
use super::{IdentityCache, Sample};
use crate::model::Adopted;

/// Sets `adopted` on every sample whose parent did not start it.
pub fn mark_adopted(samples: &mut [Sample], cache: &IdentityCache) {
    let init_sid = init_session();
    let by_pid: HashMap<u32, usize> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| (s.pid, i))
        .collect();
    let adopted: Vec<Option<Adopted>> = samples
        .iter()
        .map(|s| {
            let parent = by_pid.get(&s.ppid).map(|&j| &samples[j]);
            adoption(s, parent, cache, init_sid)
        })
        .collect();
    for (s, a) in samples.iter_mut().zip(adopted) {
        s.adopted = a;
    }
}

/// The session of init (pid 1), read once: it never changes.
fn init_session() -> Option<u32> {
    static SID: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *SID.get_or_init(|| super::read_stat(1).map(|s| s.session))
}

/// Who took `s` in, if its parent did not start it. `parent` is the parent as this scan read
/// it (an idle parent is not read every scan: then the cache's identity names it).
fn adoption(
    s: &Sample,
    parent: Option<&Sample>,
    cache: &IdentityCache,
    init_sid: Option<u32>,
) -> Option<Adopted> {
    if s.ppid == 0 || s.ppid == s.pid {
        return None;
    }
    let moved = cache
        .first_ppid(s.pid, s.start_ticks)
        .is_some_and(|first| first != s.ppid);
    if s.ppid == 1 {
        return (moved || Some(s.sid) != init_sid).then_some(Adopted::Init);
    }
    let parent_argv = match parent {
        Some(p) => p.ident.argv.as_slice(),
        None => cache.current(s.ppid).map_or(&[][..], |i| i.argv.as_slice()),
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
    use crate::model::EnvMarkers;

    #[test]
    fn a_child_of_init_in_inits_own_session_was_started_by_it_not_adopted() {
        let cache = IdentityCache::default();
        let init_sid = Some(0);
        // Re-parented: it kept the session of the host that started it.
        let mut orphan = sample(40, 1, "node server.mjs", EnvMarkers::default());
        orphan.sid = 30;
        assert_eq!(
            adoption(&orphan, None, &cache, init_sid),
            Some(Adopted::Init)
        );
        // Near miss: init's own child, in init's session (a sandbox's runner, a minimal init's
        // service) — its pipes' other ends may be outside this pid namespace.
        let mut service = sample(41, 1, "runner --serve", EnvMarkers::default());
        service.sid = 0;
        assert_eq!(adoption(&service, None, &cache, init_sid), None);
        // A parent created after its child adopted it; one created before did not.
        let child = sample(50, 60, "python3 helper.py", EnvMarkers::default());
        let younger = sample(60, 1, "bash", EnvMarkers::default());
        assert_eq!(
            adoption(&child, Some(&younger), &cache, init_sid),
            Some(Adopted::Adopter { pid: 60 })
        );
        let older = sample(45, 1, "bash", EnvMarkers::default());
        let child = sample(50, 45, "python3 helper.py", EnvMarkers::default());
        assert_eq!(adoption(&child, Some(&older), &cache, init_sid), None);
        // A subreaper by name.
        let tini = sample(45, 1, "/sbin/tini -- node", EnvMarkers::default());
        assert_eq!(
            adoption(&child, Some(&tini), &cache, init_sid),
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
