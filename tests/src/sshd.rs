//! A real OpenSSH server for the remote-target tests: Debian's `sshd`, started by the test on a
//! free loopback port with throwaway host and client keys and its own config (nothing of the
//! machine's ssh setup is read or changed), and a client config `ssh -F` uses. Stopping it
//! ends every connection it serves (their sshd processes are its descendants, killed by
//! identity).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::procs::{descendants, signal_if_same, wait_for, Spawned};

/// The server binary.
pub const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd and the files to reach it.
#[derive(Debug)]
pub struct Sshd {
    dir: tempfile::TempDir,
    /// Its port.
    pub port: u16,
    server: Option<Spawned>,
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "debugtop-test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen (openssh-client) is installed: scripts/deps.sh test");
    assert!(out.status.success(), "ssh-keygen: {out:?}");
}

impl Sshd {
    /// Starts sshd; fails with instructions where it cannot run.
    pub fn start() -> Self {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: the remote-target tests need Debian's openssh-server \
             (scripts/deps.sh test installs it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        keygen(&d.join("stranger_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let port = crate::mcp::free_port();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let mut host_pub = host_pub.split_whitespace();
        let (kind, key) = (host_pub.next().unwrap(), host_pub.next().unwrap());
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {kind} {key}\n"),
        )
        .unwrap();
        // Every command a client runs goes through a wrapper that records it first: a test
        // can then show that what it asked for was done on the far side, through ssh.
        let record = d.join("record.sh");
        std::fs::write(
            &record,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$SSH_ORIGINAL_COMMAND\" >> '{}'\nexec \"${{SHELL:-/bin/sh}}\" -c \"$SSH_ORIGINAL_COMMAND\"\n",
                d.join("commands.log").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&record, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // sshd's privilege separation directory (Debian's service creates it at boot).
        let _ = std::fs::create_dir_all("/run/sshd");
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {auth}\n\
                 PidFile {pid}\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nStrictModes no\nLogLevel ERROR\n\
                 ForceCommand {record}\n",
                record = record.display(),
                host = d.join("host_key").display(),
                auth = d.join("authorized_keys").display(),
                pid = d.join("sshd.pid").display(),
            ),
        )
        .unwrap();
        let mut me = Self {
            dir,
            port,
            server: None,
        };
        me.resume();
        me
    }

    /// (Re)starts the server on the same port.
    pub fn resume(&mut self) {
        let d = self.dir.path();
        let pid_file = d.join("sshd.pid");
        let _ = std::fs::remove_file(&pid_file);
        let server = Spawned::spawn(
            Command::new(SSHD)
                .args(["-D", "-e", "-f"])
                .arg(d.join("sshd_config")),
        );
        // sshd writes its pid file once it listens (a probe connection would make it log a
        // failed key exchange).
        let port = self.port;
        wait_for(Duration::from_secs(10), || pid_file.exists().then_some(()))
            .unwrap_or_else(|| panic!("sshd never listened on 127.0.0.1:{port}"));
        self.server = Some(server);
    }

    /// Stops the server and every connection it serves.
    pub fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            // The connections first (their sshd processes and what they run), then the
            // listener itself (killed and reaped when dropped).
            for (pid, ticks) in descendants(s.pid) {
                signal_if_same(pid, ticks, nix::sys::signal::Signal::SIGKILL);
            }
            drop(s);
        }
    }

    /// The client config: host `target` is this server, logged in as the test's user with the
    /// accepted key (`stranger` logs in with a key the server does not know).
    pub fn client_config(&self) -> PathBuf {
        let d = self.dir.path();
        let path = d.join("ssh_config");
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        let block = |host: &str, key: &str| {
            format!(
                "Host {host}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  \
                 LogLevel ERROR\n",
                port = self.port,
                key = d.join(key).display(),
                known = d.join("known_hosts").display(),
            )
        };
        std::fs::write(
            &path,
            block("target", "client_key") + &block("stranger", "stranger_key"),
        )
        .unwrap();
        path
    }

    /// Every command clients ran through this server, in order.
    pub fn commands(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("commands.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `DEBUGTOP_SSH_COMMAND` for this server.
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.client_config().display())
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}
