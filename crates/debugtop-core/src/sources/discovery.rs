//! Discovery: for each server found in the process table, where to ask and what to read — the
//! ports it really listens on (its own listening sockets, as `collect::listening` reads them;
//! not argv alone), remembered while those sockets stay open, and every log file that belongs
//! to it (docs/server-behaviour.md, "The server's log").

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

/// Where a server listens, given the ports found ([`PortMemo::endpoints`]). With no listening
/// socket found, the port its argv names is asked only when the server is debugtop's own user's:
/// another user's argv could otherwise make debugtop — perhaps root — send a request to any
/// port on loopback.
fn endpoints_on(server: &ServerInfo, listening: Vec<u16>, own: bool) -> Endpoints {
    let port_confirmed = server.port.is_some_and(|p| listening.contains(&p));
    let port = if port_confirmed {
        server.port
    } else {
        server
            .port
            .filter(|_| listening.is_empty() && own)
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
        not_asked: None,
        said_port: None,
    }
}

/// What the server's own `/health` said it bound, taken when one of its listening sockets has
/// that port (a `/health` answer is the server's word, the sockets are the kernel's: both must
/// agree before the port is taken as said).
fn take_said_port(e: &mut Endpoints, server: &ServerInfo, said: Option<u16>) {
    let Some(port) = said.filter(|p| e.listening.contains(p)) else {
        return;
    };
    e.said_port = Some(port);
    if server.mode == ServerMode::Http {
        e.base_url = Some(format!("http://127.0.0.1:{port}"));
    }
}

/// Why `/health` of the server `pid` cannot be asked from here: it listens in another network
/// namespace than debugtop's (a container's, a pod's; debugtop in a pod, the host's).
#[cfg(target_os = "linux")]
pub fn elsewhere(pid: u32) -> Option<String> {
    let (theirs, ours) = crate::collect::listening::network_namespaces(pid)?;
    (theirs != ours).then(|| {
        format!(
            "it listens in another network namespace ({theirs}) than debugtop ({ours}): its \
             loopback is not debugtop's, so /health is not asked and verdicts rest on the \
             process table and the logs"
        )
    })
}

/// Other systems: one network namespace.
#[cfg(not(target_os = "linux"))]
pub fn elsewhere(_pid: u32) -> Option<String> {
    None
}

/// Whether a process of `uid` is debugtop's own user's (an unknown user counts only when
/// debugtop does not run elevated).
pub fn own_user(uid: Option<u32>) -> bool {
    match (uid, crate::os::my_uid()) {
        (Some(u), Some(me)) => u == me,
        _ => !crate::os::privileged(),
    }
}

/// Where a server's logs are (from its argv and package directory, made absolute against its
/// working directory).
pub fn files(server: &ServerInfo) -> ServerFiles {
    // `<pkgdir>/../logs`, as the parent of a plain path: a `..` in the package's path (another
    // user's argv can name anything) is never walked, nor resolved on paper.
    let cli_log = server
        .pkg_dir
        .as_deref()
        .map(Path::new)
        .filter(|d| plain(d))
        .and_then(Path::parent)
        .map(|d| {
            d.join("logs")
                .join(format!("debug-mcp-server-{}.log", server.pid))
        });
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

/// The most entries of one session's folder looked at (`run-*` folders): a folder is the
/// server's user's, and a million entries in it must not cost every listing.
pub const MAX_RUN_DIRS_LISTED: usize = 4096;

impl ServerFiles {
    /// The log files to tail for the server itself: the CLI log, `--log-file`, and winston's
    /// rotated siblings of each (`server1.log`, `server2.log`, …) that are there now for the
    /// server's user (`owner`; looked up without following a link).
    pub fn server_logs(&self, owner: Option<u32>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for f in self.cli_log.iter().chain(self.log_file.iter()) {
            if !out.contains(f) {
                out.push(f.clone());
            }
            out.extend(
                rotated_siblings(f, owner)
                    .into_iter()
                    .filter(|s| !out.contains(s))
                    .collect::<Vec<_>>(),
            );
        }
        out
    }

    /// The proxy logs of one debug session (`sessions/<id>/run-*/proxy-<id>.log`), oldest
    /// run first, at most the newest [`MAX_RUNS_PER_SESSION`]; and how many runs were left.
    /// The session's folder must be the server's user's (`owner`), reached without a link on
    /// the way; only names are listed (at most [`MAX_RUN_DIRS_LISTED`]), and only the runs
    /// kept are looked at.
    pub fn proxy_logs(&self, session_id: &str, owner: Option<u32>) -> (Vec<PathBuf>, u32) {
        use crate::model::MAX_RUNS_PER_SESSION;
        let dir = self.sessions_dir.join(session_id);
        let listed = crate::safe_fs::list_dir_as(
            &dir,
            crate::safe_fs::Owner::is(owner),
            MAX_RUN_DIRS_LISTED,
        );
        let Ok((names, more)) = listed else {
            return (Vec::new(), 0);
        };
        let mut runs: Vec<(u64, std::ffi::OsString)> = names
            .into_iter()
            .filter_map(|n| {
                let ms = n.to_str()?.strip_prefix("run-")?;
                Some((ms.parse().unwrap_or(0), n))
            })
            .collect();
        runs.sort();
        let left = runs.len().saturating_sub(MAX_RUNS_PER_SESSION);
        let out = runs
            .split_off(left)
            .into_iter()
            .map(|(_, n)| dir.join(n).join(format!("proxy-{session_id}.log")))
            .filter(|p| there(p, owner))
            .collect();
        let left = u32::try_from(left).unwrap_or(u32::MAX);
        (out, if more { left.saturating_add(1) } else { left })
    }
}

/// Whether a regular file of `owner`'s is at `p`.
fn there(p: &Path, owner: Option<u32>) -> bool {
    crate::safe_fs::exists_as(p, crate::safe_fs::Owner::is(owner))
}

/// winston's size rotation writes `name1.ext`, `name2.ext`, … next to `name.ext`: those of
/// them that are there for `owner`.
fn rotated_siblings(f: &Path, owner: Option<u32>) -> Vec<PathBuf> {
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
        .filter(|p| there(p, owner))
        .collect()
}

/// A path from a server's argv, made absolute against the server's cwd (which the kernel
/// gives as a real path: no link, no `..`). Leading `..`s climb that real path; a `..` anywhere
/// else is kept, and the path is then refused when opened — it is never walked.
fn absolute_for(pid: u32, f: &str) -> PathBuf {
    let p = Path::new(f);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match crate::collect::detail::cwd(pid) {
        Some(cwd) => relative_to(&cwd, p),
        None => p.to_path_buf(),
    }
}

/// `rel` against the real folder `cwd`: its leading `.` and `..` taken lexically (the parent of
/// a real path is real), the rest appended as it is.
fn relative_to(cwd: &Path, rel: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = cwd.to_path_buf();
    let mut parts = rel.components().peekable();
    while let Some(c) = parts.peek() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            _ => break,
        }
        parts.next();
    }
    out.extend(parts);
    out
}

/// Absolute, with no `.` or `..`: a path the kernel resolves as it reads (links aside, which
/// the opens refuse).
pub fn plain(p: &Path) -> bool {
    use std::path::Component;
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

fn ports_of(rows: &[(u16, u64)]) -> Vec<u16> {
    let mut ports: Vec<u16> = rows.iter().map(|(p, _)| *p).collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// How many ticks a remembered listener stands before the tables are read again anyway (a
/// second listener opened beside the first).
#[cfg_attr(windows, allow(dead_code))] // Windows reads owners from the TCP table instead
const RECHECK_EVERY: u32 = 30;

/// How many ticks "no listener" stands while the server's sockets stay the same (a socket
/// opened in one tick and listening only after the tables were read).
#[cfg_attr(windows, allow(dead_code))]
const RECHECK_NONE_EVERY: u32 = 5;

/// What a read of a server's listeners found.
#[derive(Debug)]
#[cfg_attr(windows, allow(dead_code))]
enum Found {
    /// Its listening sockets, as (port, inode): at least one.
    Listeners(Vec<(u16, u64)>),
    /// None, among these sockets of its.
    NoneAmong(HashSet<u64>),
}

/// One server's listening ports, remembered while the sockets they were found on are still
/// among its descriptors: a server's listener does not change from one tick to the next, and
/// a read is not free (`sock_diag`, or the TCP tables, each a walk of the kernel's whole
/// established-socket hash: 4.4 ms a table here). Read again when one of those sockets closes
/// and every [`RECHECK_EVERY`] ticks. No listener found (a stdio server with a debug session,
/// whose worker's IPC channel is a socket pair: both tables were read for it every tick, about
/// 1 % of a core) stands while the server's sockets are the same ones, for
/// [`RECHECK_NONE_EVERY`] ticks at most.
#[derive(Debug, Default)]
#[cfg_attr(windows, allow(dead_code))] // Windows reads owners from the TCP table instead
pub struct PortMemo {
    /// What the last read found; `None` before the first.
    found: Option<Found>,
    since_read: u32,
    said: Option<u16>,
}

impl PortMemo {
    /// Where `server` (run by `uid`) listens, from the memo while it stands; no `/health` to ask
    /// when it listens in another network namespace.
    pub fn endpoints(&mut self, server: &ServerInfo, uid: Option<u32>) -> Endpoints {
        let mut e = self.endpoints_here(server, uid);
        take_said_port(&mut e, server, self.said);
        if e.base_url.is_some() {
            if let Some(why) = elsewhere(server.pid) {
                e.base_url = None;
                e.not_asked = Some(why);
            }
        }
        e
    }

    /// Remembers the port the server's `/health` said it bound (`None`: it said none).
    pub fn said(&mut self, port: Option<u16>) {
        self.said = port;
    }

    fn endpoints_here(&mut self, server: &ServerInfo, uid: Option<u32>) -> Endpoints {
        let own = own_user(uid);
        #[cfg(windows)]
        {
            // Windows says which pid owns each listening socket (GetExtendedTcpTable).
            endpoints_on(server, crate::collect::listening::ports(server.pid), own)
        }
        #[cfg(not(windows))]
        self.endpoints_from_sockets(server, own)
    }

    /// Where `server` listens, from its socket descriptors and the TCP tables.
    #[cfg(not(windows))]
    fn endpoints_from_sockets(&mut self, server: &ServerInfo, own: bool) -> Endpoints {
        use crate::collect::listening::{listeners, socket_inodes};
        let inodes = socket_inodes(server.pid);
        endpoints_on(
            server,
            self.ports(&inodes, |i| listeners(server.pid, i)),
            own,
        )
    }

    /// The ports, read with `read` unless the remembered listeners are all still open.
    #[cfg_attr(windows, allow(dead_code))]
    fn ports(
        &mut self,
        inodes: &HashSet<u64>,
        read: impl FnOnce(&HashSet<u64>) -> Vec<(u16, u64)>,
    ) -> Vec<u16> {
        let stands = match &self.found {
            Some(Found::Listeners(l)) => {
                self.since_read < RECHECK_EVERY && l.iter().all(|(_, i)| inodes.contains(i))
            }
            Some(Found::NoneAmong(was)) => self.since_read < RECHECK_NONE_EVERY && was == inodes,
            None => false,
        };
        if stands {
            self.since_read += 1;
        } else {
            let l = read(inodes);
            self.found = Some(if l.is_empty() {
                Found::NoneAmong(inodes.clone())
            } else {
                Found::Listeners(l)
            });
            self.since_read = 0;
        }
        match &self.found {
            Some(Found::Listeners(l)) => ports_of(l),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_health_said_is_taken_only_where_a_socket_of_its_own_listens() {
        let s = ServerInfo {
            pid: 1,
            start_time: chrono::Utc::now(),
            mode: ServerMode::Http,
            port: None,
            log_file: None,
            pkg_dir: None,
        };
        // `-p 0`: two listening sockets, the first guessed until /health says which.
        let mut e = endpoints_on(&s, vec![3001, 41237], true);
        assert_eq!(e.base_url.as_deref(), Some("http://127.0.0.1:3001"));
        take_said_port(&mut e, &s, Some(41237));
        assert_eq!(e.said_port, Some(41237));
        assert_eq!(e.base_url.as_deref(), Some("http://127.0.0.1:41237"));
        // Near miss: a port none of its sockets has is the server's word alone: not taken.
        let mut e = endpoints_on(&s, vec![3001], true);
        take_said_port(&mut e, &s, Some(22));
        assert_eq!(e.said_port, None);
        assert_eq!(e.base_url.as_deref(), Some("http://127.0.0.1:3001"));
    }

    /// A read of the listeners that gives `rows` and counts itself in `reads`.
    fn counted(
        reads: &std::cell::Cell<u32>,
        rows: Vec<(u16, u64)>,
    ) -> impl FnOnce(&HashSet<u64>) -> Vec<(u16, u64)> + '_ {
        move |_| {
            reads.set(reads.get() + 1);
            rows
        }
    }

    #[test]
    fn remembered_ports_stand_while_their_sockets_are_open() {
        let mut memo = PortMemo::default();
        let reads = std::cell::Cell::new(0);
        let read = |rows| counted(&reads, rows);
        let open: HashSet<u64> = [7, 8, 9].into();
        assert_eq!(memo.ports(&open, read(vec![(3001, 7)])), [3001]);
        // A new connection (socket 10) and a closed one (8): the listener 7 stands.
        let next: HashSet<u64> = [7, 9, 10].into();
        assert_eq!(memo.ports(&next, read(vec![(9999, 1)])), [3001]);
        assert_eq!(reads.get(), 1, "not read again while the listener is open");
        // The listening socket closed: read again.
        let moved: HashSet<u64> = [9, 11].into();
        assert_eq!(memo.ports(&moved, read(vec![(3002, 11)])), [3002]);
        assert_eq!(reads.get(), 2);
        // Read again after RECHECK_EVERY ticks whatever happens (a second listener).
        for _ in 0..RECHECK_EVERY {
            memo.ports(&moved, read(vec![]));
        }
        assert_eq!(reads.get(), 2);
        assert_eq!(
            memo.ports(&moved, read(vec![(3002, 11), (4000, 12)])),
            [3002, 4000]
        );
        assert_eq!(reads.get(), 3);
    }

    /// A stdio server with a debug session (its worker's IPC channel is a socket pair) has
    /// sockets and never a listener: both tables were read at every tick for it.
    #[test]
    fn no_listener_stands_while_the_servers_sockets_are_the_same() {
        let mut memo = PortMemo::default();
        let reads = std::cell::Cell::new(0);
        let read = |rows| counted(&reads, rows);
        let pipes: HashSet<u64> = [5, 6].into();
        for _ in 0..=RECHECK_NONE_EVERY {
            assert!(memo.ports(&pipes, read(vec![])).is_empty());
        }
        assert_eq!(reads.get(), 1, "the same sockets: not read again");
        assert!(memo.ports(&pipes, read(vec![])).is_empty());
        assert_eq!(reads.get(), 2, "read again after a while whatever happens");
        // Near miss: a socket opened (it may be a listener now): read at once.
        let bound: HashSet<u64> = [5, 6, 7].into();
        assert_eq!(memo.ports(&bound, read(vec![(3001, 7)])), [3001]);
        assert_eq!(reads.get(), 3);
        // Found: the listener's rule again (stands while socket 7 is open).
        assert_eq!(memo.ports(&bound, read(vec![])), [3001]);
        assert_eq!(reads.get(), 3);
    }

    #[test]
    fn only_leading_dot_dots_of_a_relative_path_climb_the_real_cwd() {
        assert_eq!(
            relative_to(Path::new("/home/u/proj"), Path::new("../logs/./x.log")),
            PathBuf::from("/home/u/logs/./x.log")
        );
        assert_eq!(
            relative_to(Path::new("/home/u/proj"), Path::new("./a/../../x.log")),
            PathBuf::from("/home/u/proj/a/../../x.log")
        );
        assert!(plain(Path::new("/home/u/logs/x.log")));
        for not_plain in ["/a/../b", "rel/x.log", "/a/b/.."] {
            assert!(!plain(Path::new(not_plain)), "{not_plain}");
        }
    }

    #[test]
    fn a_package_path_with_dot_dots_names_no_cli_log() {
        let s = ServerInfo {
            pid: 1,
            start_time: chrono::Utc::now(),
            mode: ServerMode::Http,
            port: Some(3901),
            log_file: None,
            pkg_dir: Some("/tmp/x/mcp-debugger/../../../srv/app".into()),
        };
        assert_eq!(files(&s).cli_log, None);
    }

    #[test]
    fn argvs_port_is_asked_only_of_debugtops_own_users_server() {
        let s = ServerInfo {
            pid: 1,
            start_time: chrono::Utc::now(),
            mode: ServerMode::Http,
            port: Some(22),
            log_file: None,
            pkg_dir: None,
        };
        // Another user's server that listens nowhere debugtop can see: nothing is asked.
        assert_eq!(endpoints_on(&s, Vec::new(), false).base_url, None);
        // What it really listens on is asked, whoever it is.
        let e = endpoints_on(&s, vec![3901], false);
        assert_eq!(e.base_url.as_deref(), Some("http://127.0.0.1:3901"));
        // Near miss: debugtop's own user's server, its argv's port.
        let e = endpoints_on(&s, Vec::new(), true);
        assert_eq!(e.base_url.as_deref(), Some("http://127.0.0.1:22"));
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
