//! What a look at one process in full adds to the table: its working directory and the TCP
//! ports it listens on, read when asked (an agent's or a user's question about one process),
//! never at every tick.

/// One process's working directory (`None` where it cannot be read) and its listening TCP
/// ports, sorted.
pub fn cwd_and_ports(pid: u32) -> (Option<String>, Vec<u16>) {
    (cwd(pid), ports(pid))
}

#[cfg(target_os = "linux")]
fn cwd(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/cwd"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

#[cfg(target_os = "linux")]
fn ports(pid: u32) -> Vec<u16> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let inodes: std::collections::HashSet<u64> = fds
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            l.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect();
    let mut out: Vec<u16> = super::inet_diag::listeners()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, inode)| inodes.contains(inode))
        .map(|(port, _)| port)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(windows)]
fn cwd(_pid: u32) -> Option<String> {
    // Another process's working directory is in its PEB; not read here.
    None
}

#[cfg(windows)]
fn ports(pid: u32) -> Vec<u16> {
    let mut out: Vec<u16> = super::windows::listening_ports()
        .into_iter()
        .filter(|(_, owner)| *owner == pid)
        .map(|(port, _)| port)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(not(any(target_os = "linux", windows)))]
fn cwd(_pid: u32) -> Option<String> {
    None
}

#[cfg(not(any(target_os = "linux", windows)))]
fn ports(_pid: u32) -> Vec<u16> {
    Vec::new()
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    #[test]
    fn a_listening_process_has_its_port_and_its_directory() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let (cwd, ports) = cwd_and_ports(std::process::id());
        assert!(ports.contains(&port), "{ports:?}");
        let here = std::env::current_dir().expect("cwd");
        assert_eq!(cwd.as_deref(), here.to_str());
        // Near miss: a process that listens on nothing.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        assert!(cwd_and_ports(child.id()).1.is_empty());
        let _ = child.kill();
        let _ = child.wait();
    }
}
