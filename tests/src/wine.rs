//! Windows, for real, on this Linux machine: Wine runs the cross-built `debugtop-cli.exe` and
//! npm's Windows `node.exe`, which runs the real mcp-debugger 0.24.2. Each [`Wine`] is a copy
//! of the prefix `scripts/deps.sh test` made, with its own wineserver: ending it
//! (`wineserver -k` with that prefix) ends exactly the Windows processes this test started,
//! and no other. Nothing here skips: a missing piece fails with what to run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::mcp::{free_port, health_at, package_dir};
use crate::procs::{wait_for, Spawned};

/// Wine's loader for 64-bit programs (Debian's `wine64`; not on PATH).
pub const WINE: &str = "/usr/lib/wine/wine64";
const WINESERVER: &str = "/usr/lib/wine/wineserver64";
/// The pinned Windows node (scripts/deps.sh).
const NODE_VERSION: &str = "22.23.3";

/// What `scripts/deps.sh test` puts in place.
fn kit() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".wine")
}

/// Where the workspace's debug cross-build for Windows puts its programs.
pub fn windows_build() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/x86_64-pc-windows-gnu/debug")
}

/// The Windows CLI: `DEBUGTOP_WINDOWS_CLI`, else the workspace's debug cross-build.
pub fn windows_cli() -> PathBuf {
    std::env::var_os("DEBUGTOP_WINDOWS_CLI")
        .map_or_else(|| windows_build().join("debugtop-cli.exe"), PathBuf::from)
}

fn require(path: &Path, what: &str, fix: &str) {
    assert!(
        path.exists(),
        "{what} is missing at {}: {fix}",
        path.display()
    );
}

/// The pinned Windows node.exe.
pub fn windows_node() -> PathBuf {
    kit().join(format!("node-{NODE_VERSION}/node.exe"))
}

/// A path as a Windows program under Wine names it (`/tmp/x` → `Z:\tmp\x`).
pub fn win(path: &Path) -> String {
    format!("Z:{}", path.to_string_lossy().replace('/', "\\"))
}

/// One Wine prefix of this test's own.
#[derive(Debug)]
pub struct Wine {
    /// Holds the prefix and the programs.
    pub dir: tempfile::TempDir,
    prefix: PathBuf,
    cli: PathBuf,
    node: PathBuf,
}

impl Wine {
    /// A fresh copy of the prepared prefix, with the CLI and its ProcessPrng stand-in beside
    /// each other.
    pub fn prepare() -> Self {
        let deps = "run `make test` (scripts/deps.sh test installs wine64, mingw-w64, the Rust \
                    target and Windows node, and makes the prefix)";
        require(Path::new(WINE), "Wine (Debian's wine64)", deps);
        let kit = kit();
        require(&kit.join("prefix/.debugtop-win10"), "the Wine prefix", deps);
        let node = windows_node();
        require(&node, "Windows node", deps);
        require(
            &kit.join("bin/bcryptprimitives.dll"),
            "the ProcessPrng stand-in",
            deps,
        );
        require(
            &windows_cli(),
            "the Windows debugtop-cli",
            "run `cargo build -p debugtop-cli --target x86_64-pc-windows-gnu` (make test does)",
        );
        // A plain `cargo test` builds the Linux side only, and would test yesterday's `.exe`;
        // a program named by `DEBUGTOP_WINDOWS_CLI` is taken as it is.
        if std::env::var_os("DEBUGTOP_WINDOWS_CLI").is_none() {
            crate::builds::assert_fresh(
                &windows_cli(),
                "run `cargo build -p debugtop-cli --target x86_64-pc-windows-gnu` (make test does)",
            );
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let prefix = dir.path().join("prefix");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(kit.join("prefix"))
            .arg(&prefix)
            .status()
            .expect("cp");
        assert!(ok.success(), "copying the Wine prefix failed");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        let cli = bin.join("debugtop-cli.exe");
        std::fs::copy(windows_cli(), &cli).expect("copy the CLI");
        std::fs::copy(
            kit.join("bin/bcryptprimitives.dll"),
            bin.join("bcryptprimitives.dll"),
        )
        .expect("copy the stand-in");
        Self {
            dir,
            prefix,
            cli,
            node,
        }
    }

    /// `wine64 <program>` in this prefix.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(WINE);
        c.arg(program)
            .env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all");
        c
    }

    /// Starts Windows node with `args`; its output goes to `out` (node.exe cannot write to a
    /// pipe under Wine).
    pub fn node(&self, args: &[String], out: &Path) -> Spawned {
        Spawned::spawn_to_file(self.command(&self.node).args(args), out)
    }

    /// Runs the Windows CLI to its end: exit code, stdout, stderr.
    pub fn cli(&self, args: &[&str]) -> (i32, String, String) {
        self.run(&self.cli, args)
    }

    /// Runs another program of this build for Windows (copied beside the CLI, where the
    /// ProcessPrng stand-in is) to its end: exit code, stdout, stderr.
    pub fn run_built(&self, exe: &Path, args: &[&str]) -> (i32, String, String) {
        let copy = self.place_built(exe);
        self.run(&copy, args)
    }

    /// Copies another program of this build for Windows beside the CLI (where the ProcessPrng
    /// stand-in is): its path there.
    pub fn place_built(&self, exe: &Path) -> PathBuf {
        require(
            exe,
            "a Windows program of this build",
            "run `make test` (it cross-builds the CLI, `replaced_pid` and `breakaway`: `cargo \
             build -p debugtop-core --features debugtop-core/windows-test-drivers --target \
             x86_64-pc-windows-gnu`)",
        );
        let name = exe.file_name().expect("a file name");
        let copy = self.cli.with_file_name(name);
        std::fs::copy(exe, &copy).expect("copy the program");
        copy
    }

    fn run(&self, program: &Path, args: &[&str]) -> (i32, String, String) {
        let out = self.dir.path().join("cli.out");
        let err = self.dir.path().join("cli.err");
        let mut child = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("out"))
            .stderr(std::fs::File::create(&err).expect("err"))
            .spawn()
            .expect("wine");
        let status = wait_for(Duration::from_secs(180), || child.try_wait().ok().flatten())
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("{} {args:?} did not finish in 180 s", program.display())
            });
        (
            status.code().unwrap_or(-1),
            std::fs::read_to_string(&out).unwrap_or_default(),
            std::fs::read_to_string(&err).unwrap_or_default(),
        )
    }

    /// Starts the Windows CLI in the background (`watch`), its output going to `out`.
    pub fn cli_spawn(&self, args: &[&str], out: &Path) -> Spawned {
        Spawned::spawn_to_file(self.command(&self.cli).args(args), out)
    }

    /// The Windows CLI's `snapshot` document.
    pub fn snapshot(&self) -> Value {
        let (code, out, err) = self.cli(&["snapshot"]);
        assert_eq!(code, 0, "snapshot failed: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("snapshot is not JSON ({e}): {out}"))
    }

    /// The command a `cmd:` target runs to reach this prefix's CLI (debugtop's arguments are
    /// appended).
    pub fn target_argv(&self) -> Vec<String> {
        vec![
            "env".into(),
            format!("WINEPREFIX={}", self.prefix.display()),
            "WINEDEBUG=-all".into(),
            WINE.into(),
            self.cli.to_string_lossy().into_owned(),
        ]
    }
}

impl Drop for Wine {
    fn drop(&mut self) {
        // Ends every process of this prefix — all of them started by this test — and waits.
        for flag in ["-k", "-w"] {
            let _ = Command::new(WINESERVER)
                .arg(flag)
                .env("WINEPREFIX", &self.prefix)
                .status();
        }
    }
}

/// The real mcp-debugger on Windows node, HTTP mode, owned by the test.
#[derive(Debug)]
pub struct WinServer {
    /// The Linux process that is the server's node.exe (killing it is a crash, as Windows
    /// sees it).
    pub proc: Spawned,
    /// Its port.
    pub port: u16,
    /// Its Windows pid.
    pub pid: u32,
    /// Its log folder.
    pub dir: tempfile::TempDir,
}

impl WinServer {
    /// Starts it and waits for `/health` and for the Windows CLI to see it.
    pub fn start(wine: &Wine) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let args = vec![
            win(&package_dir().join("dist/cli.mjs")),
            "http".into(),
            "-p".into(),
            port.to_string(),
            "--log-file".into(),
            win(&dir.path().join("server.log")),
        ];
        let proc = wine.node(&args, &dir.path().join("server.out"));
        wait_for(Duration::from_secs(90), || health_at(port).ok())
            .expect("the server on Windows node never answered /health");
        let snap = wine.snapshot();
        let pid = snap["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["port"] == port)
            .and_then(|s| s["pid"].as_u64())
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or_else(|| {
                panic!("the Windows CLI does not see the server on {port}: {snap:#}")
            });
        Self {
            proc,
            port,
            pid,
            dir,
        }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// The seed bug's stand-in on Windows: the real `proxy-bootstrap.js` started by the harness
/// (Windows node) with `owner` as its owner and a session that server never created, outside
/// the server's job object. Returns the harness and the worker's Windows pid.
pub fn seed_bug_stand_in(wine: &Wine, owner: u32, dir: &Path) -> (Spawned, u32, String) {
    let session = uuid::Uuid::new_v4().to_string();
    let out = dir.join(format!("harness-{session}.out"));
    let args = vec![
        win(Path::new(&crate::fixture("seed-bug/harness.js"))),
        win(&package_dir()),
        owner.to_string(),
        session.clone(),
        win(&dir.join(format!("sessions/{session}/run-1"))),
        win(Path::new(&crate::fixture("mock/script.js"))),
    ];
    let h = wine.node(&args, &out);
    let worker = wait_for(Duration::from_secs(60), || {
        std::fs::read_to_string(&out)
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse::<u32>()
            .ok()
    })
    .expect("the harness printed no worker pid");
    (h, worker, session)
}
