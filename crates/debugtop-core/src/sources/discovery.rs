//! Discovery: for each server found in the process table, where to ask and what to read — the
//! ports it really listens on (from `/proc/net/tcp{,6}` matched against its socket fds, not argv
//! alone) and every log file that belongs to it (mcp-debugger.md §2).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::model::{Endpoints, ServerInfo, ServerMode};

/// Where a server's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFiles {
    /// The CLI per-pid log (`<pkgdir>/../logs/debug-mcp-server-<pid>.log`).
    pub cli_log: Option<PathBuf>,
    /// `--log-file` (absolute), where debug-session lines go; else the CLI log holds them too.
    pub log_file: Option<PathBuf>,
    /// The folder holding `sessions/<id>/run-*/` (next to `--log-file`, else under `$TMPDIR`).
    pub sessions_dir: PathBuf,
}

/// Where a server listens (its socket inodes matched against its TCP tables).
pub fn endpoints(server: &ServerInfo) -> Endpoints {
    let listening = listening_ports(server.pid);
    let port_confirmed = server.port.is_some_and(|p| listening.contains(&p));
    let port = if port_confirmed {
        server.port
    } else {
        server
            .port
            .filter(|_| listening.is_empty())
            .or(listening.first().copied())
    };
    let base_url = match server.mode {
        ServerMode::Http => port.map(|p| format!("http://127.0.0.1:{p}")),
        ServerMode::Sse | ServerMode::Stdio => None,
    };
    Endpoints {
        listening,
        base_url,
        port_confirmed,
    }
}

/// Where a server's logs are (from its argv and package directory, made absolute against its
/// working directory).
pub fn files(server: &ServerInfo) -> ServerFiles {
    let cli_log = server
        .pkg_dir
        .as_deref()
        .map(|d| {
            Path::new(d)
                .join("..")
                .join("logs")
                .join(format!("debug-mcp-server-{}.log", server.pid))
        })
        .map(|p| normalize(&p));
    let log_file = server
        .log_file
        .as_deref()
        .map(|f| absolute_for(server.pid, f));
    let sessions_dir = match &log_file {
        Some(f) => f
            .parent()
            .map(|d| d.join("sessions"))
            .unwrap_or_else(|| PathBuf::from("sessions")),
        None => std::env::temp_dir()
            .join("debug-mcp-server")
            .join("sessions"),
    };
    ServerFiles {
        cli_log,
        log_file,
        sessions_dir,
    }
}

impl ServerFiles {
    /// The log files to tail for the server itself: the CLI log, `--log-file`, and winston's
    /// rotated siblings of each (`server1.log`, `server2.log`, …) that exist now.
    pub fn server_logs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for f in self.cli_log.iter().chain(self.log_file.iter()) {
            if !out.contains(f) {
                out.push(f.clone());
            }
            out.extend(
                rotated_siblings(f)
                    .into_iter()
                    .filter(|s| !out.contains(s))
                    .collect::<Vec<_>>(),
            );
        }
        out
    }

    /// The proxy logs of one debug session (`sessions/<id>/run-*/proxy-<id>.log`).
    pub fn proxy_logs(&self, session_id: &str) -> Vec<PathBuf> {
        let dir = self.sessions_dir.join(session_id);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("run-"))
            .map(|e| e.path().join(format!("proxy-{session_id}.log")))
            .filter(|p| p.exists())
            .collect();
        out.sort();
        out
    }
}

/// winston's size rotation writes `name1.ext`, `name2.ext`, … next to `name.ext`.
fn rotated_siblings(f: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(stem), ext) = (
        f.parent(),
        f.file_stem().and_then(|s| s.to_str()),
        f.extension().and_then(|e| e.to_str()),
    ) else {
        return Vec::new();
    };
    (1..=9)
        .map(|n| match ext {
            Some(ext) => dir.join(format!("{stem}{n}.{ext}")),
            None => dir.join(format!("{stem}{n}")),
        })
        .filter(|p| p.exists())
        .collect()
}

/// A path from a server's argv, made absolute against the server's cwd.
fn absolute_for(pid: u32, f: &str) -> PathBuf {
    let p = Path::new(f);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match std::fs::read_link(format!("/proc/{pid}/cwd")) {
        Ok(cwd) => normalize(&cwd.join(p)),
        Err(_) => p.to_path_buf(),
    }
}

/// Removes `.` and `..` components without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The TCP ports `pid` listens on: its socket inodes (`/proc/<pid>/fd/*` → `socket:[N]`)
/// matched against LISTEN rows of `/proc/net/tcp` and `tcp6`.
#[cfg(target_os = "linux")]
pub fn listening_ports(pid: u32) -> Vec<u16> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let inodes: HashSet<u64> = rd
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut ports = Vec::new();
    // The server's own network namespace view.
    for table in ["tcp", "tcp6"] {
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) {
            ports.extend(listening_in(&text, &inodes));
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Non-Linux: not available from here.
#[cfg(not(target_os = "linux"))]
pub fn listening_ports(_pid: u32) -> Vec<u16> {
    Vec::new()
}

/// LISTEN (`0A`) rows of a `/proc/net/tcp` table whose inode is in `inodes`.
pub fn listening_in(table: &str, inodes: &HashSet<u64>) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            let f: Vec<&str> = row.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (local, st, inode) = (f.get(1)?, f.get(3)?, f.get(9)?);
            if *st != "0A" || !inodes.contains(&inode.parse().ok()?) {
                return None;
            }
            u16::from_str_radix(local.rsplit(':').next()?, 16).ok()
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
        assert_eq!(listening_in(table, &inodes), [3999]);
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(
            normalize(Path::new("/a/b/../logs/./x.log")),
            PathBuf::from("/a/logs/x.log")
        );
    }

    #[test]
    fn endpoints_of_a_server_from_argv_facts() {
        let s = ServerInfo {
            pid: 1,
            start_time: chrono::Utc::now(),
            mode: ServerMode::Http,
            port: Some(3901),
            log_file: Some("/l/server.log".into()),
            pkg_dir: Some("/n/node_modules/@debugmcp/mcp-debugger".into()),
        };
        let e = files(&s);
        assert_eq!(
            e.cli_log,
            Some(PathBuf::from(
                "/n/node_modules/@debugmcp/logs/debug-mcp-server-1.log"
            ))
        );
        assert_eq!(e.log_file, Some(PathBuf::from("/l/server.log")));
        assert_eq!(e.sessions_dir, PathBuf::from("/l/sessions"));
    }
}
