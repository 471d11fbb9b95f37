//! Real processes the tests own, and their clean-up.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Field 22 of `/proc/<pid>/stat` (start time in ticks): with the pid, a process's identity.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

/// Fields 14 and 15 of `/proc/<pid>/stat` (user and system CPU time, in ticks), summed.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut after = stat[stat.rfind(')')? + 2..].split(' ').skip(11);
    let user: u64 = after.next()?.parse().ok()?;
    let system: u64 = after.next()?.parse().ok()?;
    Some(user + system)
}

/// The state letter of `/proc/<pid>/stat`.
pub fn state_of(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}

/// Sends `sig` to `pid` only if it is still the process we recorded.
pub fn signal_if_same(pid: u32, ticks: u64, sig: Signal) -> bool {
    if start_ticks(pid) != Some(ticks) {
        return false;
    }
    kill(Pid::from_raw(pid as i32), sig).is_ok()
}

/// A process we started that is not our child (a grandchild, an orphan): killed on drop if it
/// is still the same identity.
#[derive(Debug)]
pub struct Owned {
    /// Its pid.
    pub pid: u32,
    /// Its start ticks.
    pub ticks: u64,
}

impl Owned {
    /// Records `pid` now. Panics if it is already gone: the test expected it alive.
    pub fn adopt(pid: u32) -> Self {
        let ticks = start_ticks(pid).unwrap_or_else(|| panic!("pid {pid} is gone"));
        Self { pid, ticks }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        signal_if_same(self.pid, self.ticks, Signal::SIGKILL);
    }
}

/// A child process; SIGKILLed and reaped on drop.
#[derive(Debug)]
pub struct Spawned {
    /// The child.
    pub child: Child,
    /// Its pid.
    pub pid: u32,
    ticks: u64,
}

impl Spawned {
    /// Spawns `cmd` (stdin null, stdout piped, stderr inherited).
    pub fn spawn(cmd: &mut Command) -> Self {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
        let pid = child.id();
        let ticks = start_ticks(pid).unwrap_or(0);
        Self { child, pid, ticks }
    }

    /// Spawns `cmd` with its stdout and stderr written to `out` (a program that cannot write
    /// to a pipe: Windows node under Wine).
    pub fn spawn_to_file(cmd: &mut Command, out: &std::path::Path) -> Self {
        let file = std::fs::File::create(out).expect("output file");
        let err = file.try_clone().expect("output file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
        let pid = child.id();
        let ticks = start_ticks(pid).unwrap_or(0);
        Self { child, pid, ticks }
    }

    /// Reads one line of the child's stdout (waiting up to `timeout`).
    pub fn read_line(&mut self, timeout: Duration) -> String {
        let out = self.child.stdout.take().expect("stdout already taken");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = tx.send((line, r));
        });
        let (line, r) = rx
            .recv_timeout(timeout)
            .expect("child printed nothing in time");
        self.child.stdout = Some(r.into_inner());
        line.trim().to_owned()
    }

    /// Sends a signal (only while it is still the same process).
    pub fn signal(&self, sig: Signal) {
        assert!(
            signal_if_same(self.pid, self.ticks, sig),
            "pid {} is no longer ours",
            self.pid
        );
    }

    /// Waits until the kernel shows it in `state` (a letter), up to `timeout`.
    pub fn wait_state(&self, state: char, timeout: Duration) {
        wait_for(timeout, || {
            (state_of(self.pid) == Some(state)).then_some(())
        })
        .unwrap_or_else(|| panic!("pid {} never reached state {state}", self.pid));
    }

    /// Reaps it (after it exited or was killed).
    pub fn reap(&mut self) {
        let _ = self.child.wait();
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            signal_if_same(self.pid, self.ticks, Signal::SIGCONT);
            signal_if_same(self.pid, self.ticks, Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Polls `f` every 20 ms until it returns `Some`, or `timeout`.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T>
where
    T: Sized,
{
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `body` to `dir/rel` (creating folders) and returns the path as a string.
pub fn write_file(dir: &std::path::Path, rel: &str, body: &str) -> String {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(&p, body).expect("write");
    p.to_string_lossy().into_owned()
}

/// This test process's pid.
pub fn my_pid() -> u32 {
    std::process::id()
}

/// A `Name:   N kB` field of one of `/proc/<pid>`'s files (`status`, `smaps_rollup`), in KiB.
pub fn kib_field(pid: u32, file: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Parent pid from `/proc/<pid>/stat`.
pub fn ppid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(1)?.parse().ok()
}

/// `root` and every live descendant of it now, by identity, added to `ours`: what a test
/// started, taken while the tree still hangs together (before a kill orphans part of it).
pub fn remember_tree(root: u32, ours: &mut Vec<(u32, u64)>) {
    let now = start_ticks(root)
        .map(|t| (root, t))
        .into_iter()
        .chain(descendants(root));
    for id in now {
        if !ours.contains(&id) {
            ours.push(id);
        }
    }
}

/// Asserts that every target of `plan` is one of `ours` (pid and start): a plan a test
/// executes, as root, signals only processes the test started.
pub fn assert_only_ours(plan: &debugtop_core::model::KillPlan, ours: &[(u32, u64)]) {
    for t in &plan.targets {
        assert!(
            ours.contains(&(t.pid, t.start_ticks)),
            "{} {} is not a process this test started: not executing {:?}",
            t.role,
            t.pid,
            plan.describe()
        );
    }
}

/// Every live descendant of `root` (by parent links), with identities.
pub fn descendants(root: u32) -> Vec<(u32, u64)> {
    let mut all = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                if let (Some(pp), Some(t)) = (ppid_of(pid), start_ticks(pid)) {
                    all.push((pid, pp, t));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, pp, t) in &all {
            if pp == p && !out.iter().any(|(q, _)| *q == pid) {
                out.push((pid, t));
                frontier.push(pid);
            }
        }
    }
    out
}

/// Kills, on drop, every process recorded under it plus every descendant of its roots that is
/// alive at drop time — all by identity: a root is followed only while it is still the process
/// that was recorded (pid + start ticks). For the trees a test spawns.
///
/// The tree is stopped (SIGSTOP) from its roots down before anything is killed: a root that was
/// still starting could otherwise fork after the walk, and its child outlived the test (a
/// js-debug stand-in's debuggee and watchdog, left by a test that was done before node had
/// spawned them).
#[derive(Debug, Default)]
pub struct TreeGuard {
    roots: Vec<(u32, u64)>,
    extra: Vec<(u32, u64)>,
}

impl TreeGuard {
    /// Guards `root` (a [`Spawned`], which would kill it anyway) and its descendants.
    pub fn new(root: u32) -> Self {
        Self {
            roots: start_ticks(root).map(|t| (root, t)).into_iter().collect(),
            extra: Vec::new(),
        }
    }

    /// Also kills this process (one that may have been reparented away) on drop.
    pub fn also(&mut self, pid: u32) {
        if let Some(t) = start_ticks(pid) {
            self.extra.push((pid, t));
        }
    }

    /// Stops the live roots, then each generation of their descendants, until a walk finds no
    /// process not yet stopped: what it returns can fork no more.
    fn freeze(&self) -> Vec<(u32, u64)> {
        let roots: Vec<(u32, u64)> = self
            .roots
            .iter()
            .copied()
            .filter(|&(r, t)| start_ticks(r) == Some(t))
            .collect();
        let mut frozen = Vec::new();
        let mut round = roots.clone();
        for _ in 0..16 {
            if round.is_empty() {
                break;
            }
            for &(pid, t) in &round {
                signal_if_same(pid, t, Signal::SIGSTOP);
            }
            // A fork under way when the signal came is done once its parent shows stopped.
            wait_for(Duration::from_secs(2), || {
                round
                    .iter()
                    .all(|&(p, t)| {
                        start_ticks(p) != Some(t)
                            || matches!(state_of(p), Some('T' | 't' | 'Z' | 'X') | None)
                    })
                    .then_some(())
            });
            frozen.extend(round);
            // Only from a root that is still the process recorded (a pid may be reused).
            round = roots
                .iter()
                .filter(|&&(r, t)| start_ticks(r) == Some(t))
                .flat_map(|&(r, _)| descendants(r))
                .filter(|id| !frozen.contains(id))
                .collect();
        }
        frozen
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        let mut all = self.freeze();
        all.extend(self.extra.iter().copied());
        for (pid, t) in all {
            signal_if_same(pid, t, Signal::SIGKILL);
            signal_if_same(pid, t, Signal::SIGCONT);
        }
    }
}

/// A child of ours that has exited and is held unreaped: while this lives, its pid stays a
/// zombie and cannot be handed to another process, so it is a "gone" pid whose reuse cannot
/// happen mid-test (a reaped pid can). Reaped on drop.
#[derive(Debug)]
pub struct HeldZombie {
    child: Child,
    /// The zombie's pid.
    pub pid: u32,
}

impl HeldZombie {
    /// Spawns `true` and waits until it is a zombie.
    pub fn new() -> Self {
        let child = Command::new("true")
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        wait_for(Duration::from_secs(10), || {
            (state_of(pid) == Some('Z')).then_some(())
        })
        .unwrap_or_else(|| panic!("pid {pid} never became a zombie"));
        Self { child, pid }
    }
}

impl Default for HeldZombie {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for HeldZombie {
    fn drop(&mut self) {
        let _ = self.child.wait();
    }
}

/// Makes the kernel hand out `pid` again, to a process started by `cmd` (through
/// `/proc/sys/kernel/ns_last_pid`, which needs root), as a *new identity*: identity is pid +
/// start ticks, so it first waits until the clock has moved past `old_ticks` (a pid reused
/// within the same 10 ms tick is the same identity by definition). The precondition is
/// checked, not assumed: where it cannot hold this panics with what to do — under `make test`
/// (root) a test that cannot make its shape must fail, never pass silently.
pub fn respawn_at(
    pid: u32,
    old_ticks: u64,
    test: &str,
    mut cmd: impl FnMut() -> Command,
) -> Spawned {
    wait_for(Duration::from_secs(5), || {
        (uptime_ticks()? > old_ticks + 2).then_some(())
    })
    .expect("the clock moves");
    let last = "/proc/sys/kernel/ns_last_pid";
    for _ in 0..200 {
        if let Err(e) = std::fs::write(last, (pid - 1).to_string()) {
            panic!(
                "{test} needs to write {last} to make the kernel reuse pid {pid} ({e}): run it as \
                 root (as `make test` does on CI), or skip it explicitly with \
                 `cargo test -- --skip {test}`"
            );
        }
        let s = Spawned::spawn(&mut cmd());
        if s.pid == pid {
            assert_ne!(start_ticks(pid), Some(old_ticks), "{test}: a new identity");
            return s;
        }
    }
    panic!("{test}: could not get pid {pid} back in 200 tries (another process kept taking it)");
}

/// Clock ticks since boot (`/proc/uptime`, at 100 ticks a second as `stat` counts them).
fn uptime_ticks() -> Option<u64> {
    let up = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = up.split(' ').next()?.parse().ok()?;
    Some((secs * 100.0) as u64)
}

/// A fixture file's absolute path.
pub fn fixture(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// The process recorded as (`pid`, `ticks`) is still that process, alive (not dying, not a
/// zombie), with no signal pending for it (`SigPnd`/`ShdPnd` in `/proc/<pid>/status` empty):
/// nothing was sent to it.
pub fn untouched(pid: u32, ticks: u64) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let nothing_pending = status
        .lines()
        .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
        .all(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|m| m.chars().all(|c| c == '0'))
        });
    start_ticks(pid) == Some(ticks)
        && state_of(pid).is_some_and(|s| s != 'Z' && s != 'X')
        && nothing_pending
}

/// One stand-in worker of a live owner (this test process) running `script` in `sh`: its argv
/// carries the worker markers (`…/proxy-bootstrap.js --mcp-owner-pid=<us> --mcp-session-id=`),
/// so the collector watches it like a real worker. What the script starts has no stdio: when
/// the stand-in is killed, a `sleep` it started is left to finish its time, and with a pipe
/// to a test that has ended it would be a real orphaned-stdio process (seen: a later suite's
/// healthy run raised ten of them).
pub fn stand_in_worker(script: &str, session: &str) -> Spawned {
    Spawned::spawn(
        Command::new("sh")
            .arg("-c")
            .arg(format!("{script} </dev/null >/dev/null 2>&1"))
            .arg("sh")
            .arg("/stand-in/dist/proxy/proxy-bootstrap.js")
            .arg(format!("--mcp-owner-pid={}", my_pid()))
            .arg(format!("--mcp-session-id={session}")),
    )
}

/// Cheap stand-ins for the orphaned workers of a dead owner, at incident scale: each is a
/// `sh` blocked reading a FIFO this struct holds open, whose argv carries the worker markers
/// (`…/proxy-bootstrap.js --mcp-owner-pid=<owner> --mcp-session-id=<uuid>`) and nothing else
/// of a worker. About half a megabyte each, so a thousand fit anywhere. No pipe to the test
/// per child (a thousand would exhaust its descriptors). Killed and reaped on drop, by
/// identity.
#[derive(Debug)]
pub struct StandIns {
    children: Vec<(Child, u64)>,
    _fifo_writer: std::fs::File,
    _dir: tempfile::TempDir,
}

impl StandIns {
    /// Spawns `n` of them for the gone `owner`.
    pub fn orphaned_workers(n: usize, owner: u32) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("hold");
        let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success(), "mkfifo {}", fifo.display());
        // Read-write: opening never blocks, and the readers never see an end of file.
        let writer = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .expect("open the fifo");
        let script = format!("read x < '{}'", fifo.display());
        let children = (0..n)
            .map(|i| {
                let child = Command::new("sh")
                    .arg("-c")
                    .arg(&script)
                    .arg("sh")
                    .arg("/stand-in/dist/proxy/proxy-bootstrap.js")
                    .arg(format!("--mcp-owner-pid={owner}"))
                    .arg(format!("--mcp-session-id=5a1d0000-0000-4000-8000-{i:012}"))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawn a stand-in");
                let ticks = start_ticks(child.id()).unwrap_or(0);
                (child, ticks)
            })
            .collect();
        Self {
            children,
            _fifo_writer: writer,
            _dir: dir,
        }
    }

    /// Their identities (pid, start ticks).
    pub fn identities(&self) -> Vec<(u32, u64)> {
        self.children.iter().map(|(c, t)| (c.id(), *t)).collect()
    }

    /// How many are still running as the process we started (a zombie has exited).
    pub fn alive(&self) -> usize {
        self.children
            .iter()
            .filter(|(c, t)| {
                start_ticks(c.id()) == Some(*t) && state_of(c.id()).is_some_and(|s| s != 'Z')
            })
            .count()
    }
}

impl Drop for StandIns {
    fn drop(&mut self) {
        for (c, t) in &mut self.children {
            signal_if_same(c.id(), *t, Signal::SIGKILL);
            let _ = c.wait();
        }
    }
}
