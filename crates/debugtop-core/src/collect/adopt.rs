//! Who took in a process whose parent died. On Linux an orphan is re-parented to init or to the
//! nearest subreaper (`systemd --user`, tini, dumb-init, docker-init, s6 …); either way the
//! process that started it — the host that holds its pipes — is gone. A subreaper not known by
//! name still shows: the sampler saw the child under another parent first, or the parent was
//! created after the child. Pure over the samples and the identity cache.

use std::collections::HashMap;

use super::parse::basename;
use super::{IdentityCache, Sample};
use crate::model::Adopted;

/// Sets `adopted` on every sample whose parent did not start it.
pub fn mark_adopted(samples: &mut [Sample], cache: &IdentityCache) {
    let parents: HashMap<u32, (u64, Vec<String>)> = samples
        .iter()
        .map(|s| (s.pid, (s.start_ticks, s.ident.argv.clone())))
        .collect();
    for s in samples.iter_mut() {
        s.adopted = adoption(s, &parents, cache);
    }
}

fn adoption(
    s: &Sample,
    parents: &HashMap<u32, (u64, Vec<String>)>,
    cache: &IdentityCache,
) -> Option<Adopted> {
    if s.ppid == 0 || s.ppid == s.pid {
        return None;
    }
    if s.ppid == 1 {
        return Some(Adopted::Init);
    }
    // The parent as this scan read it, or as the cache knows it (an idle parent is not read
    // every scan).
    let (parent_ticks, parent_argv) = match parents.get(&s.ppid) {
        Some((t, a)) => (Some(*t), a.as_slice()),
        None => (
            None,
            cache.current(s.ppid).map_or(&[][..], |i| i.argv.as_slice()),
        ),
    };
    if let Some(name) = subreaper(parent_argv) {
        return Some(Adopted::Subreaper { pid: s.ppid, name });
    }
    let younger = parent_ticks.is_some_and(|t| t > s.start_ticks);
    let moved = cache
        .first_ppid(s.pid, s.start_ticks)
        .is_some_and(|first| first != s.ppid);
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
