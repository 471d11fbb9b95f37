//! Where a process listens: the socket inodes among its descriptors, the LISTEN sockets among
//! them (from the kernel's `sock_diag` when it shares debugtop's network namespace, else from
//! the TCP tables of its own namespace), and which network namespace it lives in. Callers keep
//! their own memory of what they found: every read here is a read now.

use std::collections::HashSet;

/// The socket inodes among `pid`'s descriptors (`/proc/<pid>/fd/*` → `socket:[N]`); none
/// where they cannot be read.
#[cfg(target_os = "linux")]
pub fn socket_inodes(pid: u32) -> HashSet<u64> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    rd.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// Elsewhere descriptors are not read.
#[cfg(not(target_os = "linux"))]
pub fn socket_inodes(_pid: u32) -> HashSet<u64> {
    HashSet::new()
}

/// The (port, inode) of each LISTEN socket among `inodes`, `pid`'s: asked of the kernel's
/// `sock_diag` when `pid` shares debugtop's network namespace (the listening sockets only),
/// else from the TCP tables of `pid`'s own namespace (reading one walks the kernel's whole
/// established-socket hash: 4.4 ms a table on a 24 GiB machine).
#[cfg(target_os = "linux")]
pub fn listeners(pid: u32, inodes: &HashSet<u64>) -> Vec<(u16, u64)> {
    if inodes.is_empty() {
        return Vec::new();
    }
    let here = network_namespaces(pid).is_some_and(|(theirs, ours)| theirs == ours);
    if let Some(all) = here.then(super::inet_diag::listeners).flatten() {
        return all
            .into_iter()
            .filter(|(_, i)| inodes.contains(i))
            .collect();
    }
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
        .flat_map(|text| listening_rows(&text, inodes))
        .collect()
}

/// Elsewhere no socket is tied to an inode.
#[cfg(not(target_os = "linux"))]
pub fn listeners(_pid: u32, _inodes: &HashSet<u64>) -> Vec<(u16, u64)> {
    Vec::new()
}

/// The TCP ports `pid` listens on, sorted, each once: its sockets' listeners on Linux, the
/// TCP table's owning pids on Windows.
pub fn ports(pid: u32) -> Vec<u16> {
    #[cfg(windows)]
    let mut out: Vec<u16> = super::windows::listening_ports()
        .into_iter()
        .filter(|(_, owner)| *owner == pid)
        .map(|(port, _)| port)
        .collect();
    #[cfg(not(windows))]
    let mut out: Vec<u16> = listeners(pid, &socket_inodes(pid))
        .into_iter()
        .map(|(port, _)| port)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `pid`'s network namespace and debugtop's (`/proc/<pid>/ns/net`'s link, `net:[inode]`),
/// when both can be read (another user's needs root).
#[cfg(target_os = "linux")]
pub fn network_namespaces(pid: u32) -> Option<(String, String)> {
    let of = |who: &str| {
        std::fs::read_link(format!("/proc/{who}/ns/net"))
            .ok()
            .map(|l| l.to_string_lossy().into_owned())
    };
    Some((of(&pid.to_string())?, of("self")?))
}

/// Elsewhere there is one network namespace.
#[cfg(not(target_os = "linux"))]
pub fn network_namespaces(_pid: u32) -> Option<(String, String)> {
    None
}

/// The (port, inode) of the LISTEN (`0A`) rows of a `/proc/net/tcp` table whose inode is in
/// `inodes`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn listening_rows(table: &str, inodes: &HashSet<u64>) -> Vec<(u16, u64)> {
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            let f: Vec<&str> = row.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (local, st, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            let inode: u64 = inode.parse().ok()?;
            if *st != "0A" || !inodes.contains(&inode) {
                return None;
            }
            Some((
                u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?,
                inode,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_rows_are_matched_by_inode() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000:0F9F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:0BB9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0\n\
   2: 0100007F:A2B4 0100007F:0F9F 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n\
   garbage row\n";
        let inodes: HashSet<u64> = [4242].into();
        assert_eq!(listening_rows(table, &inodes), [(3999, 4242)]);
    }
}
