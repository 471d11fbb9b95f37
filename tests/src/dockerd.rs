//! A real Docker daemon for the container-target tests: Debian's `dockerd` (docker.io), started
//! by the test with its own data root, exec root and socket (nothing of the machine's Docker set
//! up is read or changed; no bridge, no iptables), and an image made here from an empty root
//! file system whose `/usr` and the project folder are bind-mounted read-only — no registry is
//! needed. Containers it starts are removed on drop, then the daemon is stopped by identity.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::procs::{descendants, signal_if_same, start_ticks, wait_for, Spawned};

/// The daemon binary (Debian's docker.io).
pub const DOCKERD: &str = "/usr/sbin/dockerd";

/// The image every test container runs: an empty root with `/usr` merged in from the host.
pub const IMAGE: &str = "debugtop-test:usr";

/// A running daemon.
#[derive(Debug)]
pub struct Dockerd {
    dir: tempfile::TempDir,
    daemon: Option<Spawned>,
    containers: Vec<String>,
}

impl Dockerd {
    /// Starts the daemon and imports the test image; fails with instructions where it cannot.
    pub fn start() -> Self {
        assert!(
            Path::new(DOCKERD).exists(),
            "{DOCKERD} is missing: the container-target tests need Debian's docker.io \
             (scripts/deps.sh test installs it)"
        );
        assert!(
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0,
            "the container-target tests start their own dockerd, which needs root"
        );
        let dir = tempfile::Builder::new()
            .prefix("dtd")
            .tempdir_in("/tmp")
            .unwrap();
        let d = dir.path();
        let daemon = Spawned::spawn(
            Command::new(DOCKERD)
                .arg("--data-root")
                .arg(d.join("data"))
                .arg("--exec-root")
                .arg(d.join("exec"))
                .arg("--pidfile")
                .arg(d.join("dockerd.pid"))
                .arg("-H")
                .arg(format!("unix://{}", d.join("sock").display()))
                .args([
                    "--iptables=false",
                    "--ip6tables=false",
                    "--bridge=none",
                    "--storage-driver=vfs",
                    "--log-level=error",
                ])
                .stderr(std::process::Stdio::null()),
        );
        let me = Self {
            dir,
            daemon: Some(daemon),
            containers: Vec::new(),
        };
        wait_for(Duration::from_secs(30), || {
            me.docker(&["info", "--format", "{{.ServerVersion}}"])
                .status
                .success()
                .then_some(())
        })
        .unwrap_or_else(|| {
            panic!("dockerd never answered on its socket (it needs root, cgroups and overlay-free vfs storage)")
        });
        me.import_image();
        me
    }

    /// The engine command: `docker -H unix://…` (`DEBUGTOP_DOCKER_COMMAND` for this daemon).
    pub fn command(&self) -> Vec<String> {
        vec![
            "docker".into(),
            "-H".into(),
            format!("unix://{}", self.dir.path().join("sock").display()),
        ]
    }

    /// Runs the docker client against this daemon.
    pub fn docker(&self, args: &[&str]) -> Output {
        let words = self.command();
        Command::new(&words[0])
            .args(&words[1..])
            .args(args)
            .output()
            .expect("the docker client (docker.io) is installed")
    }

    /// A docker client command against this daemon, to spawn.
    pub fn client(&self, args: &[&str]) -> Command {
        let words = self.command();
        let mut c = Command::new(&words[0]);
        c.args(&words[1..]).args(args);
        c
    }

    /// Makes [`IMAGE`]: `bin`, `lib`, `lib64` and `sbin` link into `/usr` (Debian's merged
    /// layout), the rest are empty mount points.
    fn import_image(&self) {
        let root = self.dir.path().join("rootfs");
        for d in ["proc", "sys", "dev", "etc", "tmp", "usr", "work", "root"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for l in ["bin", "lib", "lib64", "sbin"] {
            std::os::unix::fs::symlink(format!("usr/{l}"), root.join(l)).unwrap();
        }
        let tar = self.dir.path().join("rootfs.tar");
        let out = Command::new("tar")
            .arg("-C")
            .arg(&root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .output()
            .unwrap();
        assert!(out.status.success(), "tar: {out:?}");
        let out = self.docker(&["import", tar.to_str().unwrap(), IMAGE]);
        assert!(out.status.success(), "docker import: {out:?}");
    }

    /// Starts a container `name` (hostname `name`, the host's network, its own pid namespace,
    /// `/usr` and each of `shared` read-only at the same path) running `argv`; removed when the
    /// daemon is dropped.
    pub fn run(&mut self, name: &str, shared: &[&Path], argv: &[&str]) {
        let mut args: Vec<String> = [
            "run",
            "-d",
            "--name",
            name,
            "--hostname",
            name,
            "--network",
            "host",
            "-v",
            "/usr:/usr:ro",
            "-e",
            "PATH=/usr/local/bin:/usr/bin:/bin",
        ]
        .map(String::from)
        .into();
        for p in shared {
            args.extend(["-v".to_owned(), format!("{0}:{0}:ro", p.display())]);
        }
        args.push(IMAGE.to_owned());
        args.extend(argv.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.docker(&args);
        assert!(out.status.success(), "docker run: {out:?}");
        self.containers.push(name.to_owned());
    }

    /// Also removes container `name` on drop (one a test's own client started).
    pub fn owns(&mut self, name: &str) {
        self.containers.push(name.to_owned());
    }

    /// Start ticks of `pid` as the container sees it (`None` once it is gone).
    pub fn start_ticks_in(&self, name: &str, pid: u32) -> Option<u64> {
        let out = self.docker(&["exec", name, "cat", &format!("/proc/{pid}/stat")]);
        if !out.status.success() {
            return None;
        }
        let stat = String::from_utf8_lossy(&out.stdout).into_owned();
        let after = &stat[stat.rfind(')')? + 2..];
        let state = after.chars().next()?;
        if state == 'Z' {
            return None;
        }
        after.split(' ').nth(19)?.parse().ok()
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = self.docker(&["rm", "-f", c]);
        }
        if let Some(mut daemon) = self.daemon.take() {
            // containerd and its shims are the daemon's descendants (by identity, as now).
            let family = descendants(daemon.pid);
            let ticks = start_ticks(daemon.pid).unwrap_or(0);
            signal_if_same(daemon.pid, ticks, nix::sys::signal::Signal::SIGTERM);
            let _ = wait_for(Duration::from_secs(15), || {
                daemon.child.try_wait().ok().flatten()
            });
            for (pid, ticks) in family {
                signal_if_same(pid, ticks, nix::sys::signal::Signal::SIGKILL);
            }
            daemon.reap();
        }
        // dockerd leaves its default network namespace mounted in the exec root.
        let _ = Command::new("umount")
            .arg(self.dir.path().join("exec/netns/default"))
            .output();
    }
}
