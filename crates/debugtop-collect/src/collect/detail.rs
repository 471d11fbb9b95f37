//! What a look at one process in full adds to the table: its working directory, its program
//! and the TCP ports it listens on, read when asked (an agent's or a user's question about one
//! process, a server's relative log path, an export's node version), never for every process
//! at every tick.

/// One process's working directory (`None` where it cannot be read) and its listening TCP
/// ports, sorted.
pub fn cwd_and_ports(pid: u32) -> (Option<String>, Vec<u16>) {
    (
        cwd(pid).map(|p| p.to_string_lossy().into_owned()),
        super::listening::ports(pid),
    )
}

/// One process's working directory, as the kernel gives it: a real path, no link, no `..`.
#[cfg(target_os = "linux")]
pub fn cwd(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Another process's working directory is in its PEB on Windows, and not read; elsewhere
/// unknown.
#[cfg(not(target_os = "linux"))]
pub fn cwd(_pid: u32) -> Option<std::path::PathBuf> {
    None
}

/// The program `pid` runs (`/proc/<pid>/exe`), where it can be read.
#[cfg(target_os = "linux")]
pub fn exe(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// Not read elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn exe(_pid: u32) -> Option<std::path::PathBuf> {
    None
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
