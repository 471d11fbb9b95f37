//! Pid namespaces (containers on this machine): which namespace a process is in, its pid
//! there, and the container its cgroup names. Markers written inside a container
//! (`--mcp-owner-pid=`, `MCP_DEBUGGER_MAIN_PID`, `NODE_INSPECTOR_INFO`) hold pids of *that*
//! namespace; [`NsMap`] translates them to the pids debugtop sees, within one namespace only.

use std::collections::HashMap;

use debugtop_model::PidNs;

/// The pid namespace inode of `pid` (`/proc/<pid>/ns/pid` → `pid:[inode]`).
pub fn pid_ns_inode(pid: &str) -> Option<u64> {
    let l = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    l.to_string_lossy()
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The last `NSpid:` entry of a status file: the pid in the innermost namespace.
pub fn innermost_pid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

/// `TracerPid:` of a status file (0, or absent: not traced).
pub fn tracer_pid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))?
        .trim()
        .parse()
        .ok()
        .filter(|p| *p != 0)
}

/// A container id from a cgroup file: the 12+ hex characters docker, containerd, podman and
/// kubepods put in the path (`/docker/<id>`, `docker-<id>.scope`, `cri-containerd-<id>.scope`,
/// `libpod-<id>.scope`), shortened to 12.
pub fn container_of(cgroup: &str) -> Option<String> {
    for line in cgroup.lines() {
        let path = line.rsplit(':').next().unwrap_or("");
        for part in path.split('/').rev() {
            let id = part
                .trim_end_matches(".scope")
                .rsplit(['-', ':'])
                .next()
                .unwrap_or("");
            if id.len() >= 12 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Some(id[..12].to_owned());
            }
        }
    }
    None
}

/// What is read once per identity of a process in another namespace (`ours`: debugtop's own
/// pid namespace and container; a container id equal to debugtop's own is not reported).
pub fn read(
    pid: &str,
    ours: Option<u64>,
    our_container: Option<&str>,
    status: &str,
) -> Option<PidNs> {
    let inode = pid_ns_inode(pid)?;
    if Some(inode) == ours {
        return None;
    }
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    Some(PidNs {
        inode,
        pid: innermost_pid(status)?,
        container: container_of(&cgroup).filter(|c| Some(c.as_str()) != our_container),
    })
}

/// Inner pid → the pid debugtop sees, per namespace.
#[derive(Debug, Default)]
pub struct NsMap(HashMap<(u64, u32), u32>);

impl NsMap {
    /// From (namespace, inner pid, outer pid) triples.
    pub fn new(entries: impl IntoIterator<Item = (u64, u32, u32)>) -> Self {
        Self(
            entries
                .into_iter()
                .map(|(ns, inner, outer)| ((ns, inner), outer))
                .collect(),
        )
    }

    /// A pid a process in namespace `ns` wrote (`None` for debugtop's own namespace: no
    /// translation). An inner pid with no process known in that namespace stays unknown
    /// (`Some(None)`): it is never joined with a process of another namespace.
    pub fn outer(&self, ns: Option<u64>, inner: u32) -> Option<u32> {
        match ns {
            None => Some(inner),
            Some(ns) => self.0.get(&(ns, inner)).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        let s = "Name:\tnode\nTracerPid:\t0\nNSpid:\t81234\t56\n";
        assert_eq!(innermost_pid(s), Some(56));
        assert_eq!(tracer_pid(s), None);
        assert_eq!(tracer_pid("TracerPid:\t4242\n"), Some(4242));
        assert_eq!(innermost_pid("NSpid:\t812\n"), Some(812));
    }

    #[test]
    fn container_ids_from_cgroup_paths() {
        for (cg, id) in [
            ("0::/system.slice/docker-3f2a9c0e1b7d4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f.scope", "3f2a9c0e1b7d"),
            ("12:memory:/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "0123456789ab"),
            ("0::/kubepods/besteffort/pod1/cri-containerd-aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899.scope", "aabbccddeeff"),
            ("0::/machine.slice/libpod-deadbeefcafe0011223344556677.scope", "deadbeefcafe"),
        ] {
            assert_eq!(container_of(cg).as_deref(), Some(id), "{cg}");
        }
        assert_eq!(
            container_of("0::/user.slice/user-0.slice/session-1.scope"),
            None
        );
    }

    #[test]
    fn translation_stays_within_a_namespace() {
        let m = NsMap::new([(7, 56, 81234)]);
        assert_eq!(m.outer(None, 56), Some(56), "our own namespace: as written");
        assert_eq!(m.outer(Some(7), 56), Some(81234));
        assert_eq!(
            m.outer(Some(8), 56),
            None,
            "another namespace's 56 is not this one"
        );
    }
}
