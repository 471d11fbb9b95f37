//! Another local user — `nobody` — against root's debugtop. debugtop is often run with sudo on
//! machines others use; these helpers make an unprivileged user's files and processes the way
//! that user would (files it owns, processes started through `setpriv` with its uid, gid and
//! no supplementary groups), so the tests can show that nothing of theirs steers what root's
//! debugtop kills, reads, writes or prints.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::procs::Spawned;

/// `nobody`'s uid (and `nogroup`'s gid) on Debian.
pub const NOBODY: u32 = 65534;

/// Fails (never skips) unless the test runs as root: it needs a second user to drop to.
pub fn require_root(test: &str) {
    assert!(
        rustix::process::getuid().is_root(),
        "{test} plays an unprivileged user against root's debugtop, so it must run as root \
         (as CI does): run `make test` as root, or `cargo test -- --skip {test}`"
    );
}

/// A folder of `nobody`'s, with what it puts there and the processes it starts.
#[derive(Debug)]
pub struct Nobody {
    dir: tempfile::TempDir,
}

impl Nobody {
    /// A new folder owned by `nobody` (mode 0755).
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        hand_over(dir.path());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        Self { dir }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` under the folder.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A file of `nobody`'s at `rel` (its folders too), as an unprivileged write leaves it.
    pub fn write(&self, rel: &str, body: &[u8]) -> PathBuf {
        let path = self.path(rel);
        let mut made = Vec::new();
        let mut at = path.parent();
        while let Some(d) = at.filter(|d| !d.exists()) {
            made.push(d.to_path_buf());
            at = d.parent();
        }
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        for d in made {
            hand_over(&d);
        }
        std::fs::write(&path, body).expect("write");
        hand_over(&path);
        path
    }

    /// A symbolic link of `nobody`'s at `rel`, pointing at `to`.
    pub fn symlink(&self, rel: &str, to: &Path) -> PathBuf {
        let path = self.path(rel);
        std::os::unix::fs::symlink(to, &path).expect("symlink");
        rustix::fs::chownat(
            rustix::fs::CWD,
            &path,
            Some(rustix::process::Uid::from_raw(NOBODY)),
            Some(rustix::process::Gid::from_raw(NOBODY)),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .expect("chown the link");
        path
    }

    /// Starts `program args…` as `nobody` (the pid is the program's: `setpriv` execs it).
    pub fn spawn(&self, program: &str, args: &[&str]) -> Spawned {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid",
            &NOBODY.to_string(),
            "--regid",
            &NOBODY.to_string(),
            "--clear-groups",
            "--",
            program,
        ])
        .args(args)
        .current_dir(self.dir());
        let p = Spawned::spawn(&mut cmd);
        // Wait for the exec, so the identity recorded is the program's.
        crate::procs::wait_for(std::time::Duration::from_secs(10), || {
            let exe = std::fs::read_link(format!("/proc/{}/exe", p.pid)).ok()?;
            (!exe.ends_with("setpriv")).then_some(())
        })
        .expect("setpriv never exec'd");
        p
    }
}

/// `nobody`'s look-alike of an mcp-debugger server and of one of its workers: an idle node
/// script at `…/@debugmcp/mcp-debugger/dist/cli.mjs` with its own `--log-file`, and an idle
/// `proxy-bootstrap.js` naming it as owner for session `sid`. The server's log (nobody's)
/// creates the session and starts it; the worker's log (nobody's) says it spawned `adapter` —
/// any pid at all — and is trying to connect to it. The review's first attack, with `adapter`
/// root's real server.
#[derive(Debug)]
pub struct LookAlike {
    /// The look-alike server.
    pub server: Spawned,
    /// The look-alike worker.
    pub worker: Spawned,
    /// The server's `--log-file`.
    pub log: PathBuf,
    /// The session.
    pub sid: String,
}

impl Nobody {
    /// Starts the look-alike server and worker and writes their logs (dated now, after the
    /// server started, as a real server's would be).
    pub fn look_alike(&self, sid: &str, adapter: u32) -> LookAlike {
        let idle = b"setInterval(() => {}, 1 << 30);\n";
        let cli = self.write("node_modules/@debugmcp/mcp-debugger/dist/cli.mjs", idle);
        let bootstrap = self.write(
            "node_modules/@debugmcp/mcp-debugger/dist/proxy/proxy-bootstrap.js",
            idle,
        );
        let log = self.path("logs/server.log");
        let port = crate::mcp::free_port().to_string();
        let server = self.spawn(
            "node",
            &[
                &cli.to_string_lossy(),
                "http",
                "-p",
                &port,
                "--log-file",
                &log.to_string_lossy(),
            ],
        );
        let owner = format!("--mcp-owner-pid={}", server.pid);
        let session = format!("--mcp-session-id={sid}");
        let worker = self.spawn("node", &[&bootstrap.to_string_lossy(), &owner, &session]);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let line = |message: String| {
            let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            serde_json::json!({"level": "info", "message": message, "namespace": format!("dap-proxy:{sid}"), "timestamp": at}).to_string() + "\n"
        };
        let server_log = line(format!(
            "[SessionManager] Created new session: evil (ID: {sid}), state: created"
        )) + &line(format!(
            "[SM _updateSessionState {sid}] State change: created -> initializing"
        ));
        self.write("logs/server.log", server_log.as_bytes());
        let proxy_log = line(format!(
            "[SM _updateSessionState {sid}] State change: created -> initializing"
        )) + &line(format!(
            "[AdapterManager] Spawned adapter process PID: {adapter} (python)"
        )) + &line(
            "[ConnectionManager] Attempting DAP client connect (attempt 1/60) to 127.0.0.1:9"
                .into(),
        );
        self.write(
            &format!("logs/sessions/{sid}/run-1/proxy-{sid}.log"),
            proxy_log.as_bytes(),
        );
        LookAlike {
            server,
            worker,
            log,
            sid: sid.to_owned(),
        }
    }
}

impl Nobody {
    /// Starts `program args…` as `nobody` with its `argv[0]` set to `argv0` (as `exec -a` sets
    /// it: a process's command line says what its user wants it to).
    pub fn spawn_as(&self, argv0: &str, program: &str, args: &[&str]) -> Spawned {
        let mut all = vec!["-c", "exec -a \"$0\" \"$@\"", argv0, program];
        all.extend_from_slice(args);
        let p = self.spawn("bash", &all);
        crate::procs::wait_for(std::time::Duration::from_secs(10), || {
            let exe = std::fs::read_link(format!("/proc/{}/exe", p.pid)).ok()?;
            (!exe.ends_with("bash")).then_some(())
        })
        .expect("bash never exec'd");
        p
    }

    /// A look-alike mcp-debugger server of `nobody`'s (`node …/dist/cli.mjs http -p PORT
    /// --log-file LOG`) running `script` (its own JavaScript), with `log` its `--log-file`.
    pub fn fake_server(&self, script: &str, port: u16, log: &Path) -> Spawned {
        let cli = self.write(
            "node_modules/@debugmcp/mcp-debugger/dist/cli.mjs",
            script.as_bytes(),
        );
        self.spawn(
            "node",
            &[
                &cli.to_string_lossy(),
                "http",
                "-p",
                &port.to_string(),
                "--log-file",
                &log.to_string_lossy(),
            ],
        )
    }

    /// A look-alike proxy worker of `nobody`'s (idle), its owner a process that is no server
    /// (`owner`): an orphaned worker whose command line carries `extra`.
    pub fn orphaned_worker(&self, owner: u32, sid: &str, extra: &[&str]) -> Spawned {
        let bootstrap = self.write(
            "worker/dist/proxy/proxy-bootstrap.js",
            b"setInterval(() => {}, 1 << 30);\n",
        );
        let owner = format!("--mcp-owner-pid={owner}");
        let session = format!("--mcp-session-id={sid}");
        let bootstrap = bootstrap.to_string_lossy().into_owned();
        let mut args: Vec<&str> = vec![&bootstrap, &owner, &session];
        args.extend_from_slice(extra);
        self.spawn("node", &args)
    }
}

/// A JSON log line as mcp-debugger writes it, dated now.
pub fn log_line(message: &str) -> String {
    let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    serde_json::json!({"level": "info", "message": message, "timestamp": at}).to_string() + "\n"
}

impl Default for Nobody {
    fn default() -> Self {
        Self::new()
    }
}

/// Gives `path` to `nobody` (not following a link).
fn hand_over(path: &Path) {
    rustix::fs::chownat(
        rustix::fs::CWD,
        path,
        Some(rustix::process::Uid::from_raw(NOBODY)),
        Some(rustix::process::Gid::from_raw(NOBODY)),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap_or_else(|e| panic!("cannot give {} to nobody: {e}", path.display()));
}
