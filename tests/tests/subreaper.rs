//! Orphans taken in by a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), for real: a plain
//! MCP host (`tests/fixtures/stdio/host.mjs`) runs under a subreaper with the test's
//! EOF-ignoring server (the real MCP SDK) and a plain helper; the host is SIGKILLed and the
//! kernel hands its children to the subreaper, not to init. The collector marks them adopted —
//! by name for a subreaper it knows (`tini`), and for one it does not know only because the
//! sampler saw them under the host first — and the near miss, the same tree with the host
//! alive, is not marked.
//!
//! Stand-ins, named: the subreaper is the test's own (`tests/src/bin/subreaper.rs`: it calls
//! `prctl`, spawns the host and reaps what it is handed, as tini does); for the known name it
//! runs with `argv[0]` `tini`, which is all the collector reads of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use debugtop_core::model::{Adopted, FindingKind, Update};
use debugtop_core::sampler::{Config, Engine};
use debugtop_e2e::procs::{descendants, signal_if_same, start_ticks};
use debugtop_e2e::{fixture, render, tick_until, wait_for, Owned, Spawned};
use nix::sys::signal::Signal;

/// Lines of a child's stdout, as they come.
fn lines_of(child: &mut Spawned) -> Receiver<String> {
    use std::io::BufRead;
    let out = child.child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The line that starts with `prefix`, as pids.
fn pids_after(rx: &Receiver<String>, prefix: &str) -> Vec<u32> {
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(90))
            .unwrap_or_else(|_| panic!("no `{prefix}` line from the subreaper's tree"));
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.split(' ').map(|p| p.parse().unwrap()).collect();
        }
    }
}

/// A subreaper (with `argv0`, else under its own name) running a host of the test's
/// EOF-ignoring server and a plain helper.
struct Tree {
    host: u32,
    host_ticks: u64,
    /// The host's children: the server, then the helper.
    children: [u32; 2],
    /// Everything under the host, by identity (ended on drop, before the subreaper).
    _owned: Vec<Owned>,
    /// The subreaper.
    reaper: Spawned,
    _dir: tempfile::TempDir,
}

impl Tree {
    fn start(argv0: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("host.json");
        let c = serde_json::json!({"servers": [
            {"cmd": ["node", fixture("stdio/eof-ignorer.mjs")]},
            {"cmd": ["python3", "-c", "import time\nwhile True: time.sleep(1)"], "plain": true},
        ]});
        std::fs::write(&config, c.to_string()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_subreaper"));
        if let Some(a) = argv0 {
            cmd.arg0(a);
        }
        cmd.args(["node", &fixture("stdio/host.mjs")]).arg(&config);
        let mut reaper = Spawned::spawn(&mut cmd);
        let said = lines_of(&mut reaper);
        let host = pids_after(&said, "host ")[0];
        let host_ticks = start_ticks(host).expect("the host runs");
        let mut owned = vec![Owned::adopt(host)];
        let servers = pids_after(&said, "ready ");
        let children = [servers[0], servers[1]];
        // The server's own child too (ours: ended with the rest).
        let kids = wait_for(Duration::from_secs(20), || {
            let d = descendants(host);
            (d.len() >= 3).then_some(d)
        })
        .expect("the host's servers and the server's child");
        owned.extend(kids.into_iter().map(|(p, _)| Owned::adopt(p)));
        Self {
            host,
            host_ticks,
            children,
            _owned: owned,
            reaper,
            _dir: dir,
        }
    }

    /// The host, SIGKILLed by identity (the subreaper reaps it).
    fn kill_host(&self) {
        assert!(
            signal_if_same(self.host, self.host_ticks, Signal::SIGKILL),
            "the host is no longer ours"
        );
        wait_for(Duration::from_secs(10), || {
            self.children
                .iter()
                .all(|c| debugtop_e2e::procs::ppid_of(*c) == Some(self.reaper.pid))
                .then_some(())
        })
        .expect("the kernel handed the host's children to the subreaper");
    }
}

/// What the update says of `pid`'s adoption (`None` inside: not adopted; outer `None`: not in
/// the table).
fn adopted_of(u: &Update, pid: u32) -> Option<Option<Adopted>> {
    u.snapshot
        .processes
        .iter()
        .find(|p| p.pid == pid)
        .map(|p| p.adopted.clone())
}

fn engine() -> Engine {
    let mut c = Config::default();
    c.sources.health_timeout = Duration::from_millis(700);
    c.state.verdicts.grace = Duration::ZERO;
    Engine::new(c).expect("engine")
}

/// The near miss, ticked through the engine that then watches the kill: the host alive, its
/// children under it are seen and not marked adopted, and nothing is found about the tree.
async fn not_adopted_while_the_host_lives(e: &mut Engine, t: &Tree) {
    let ours = [t.host, t.children[0], t.children[1]];
    tick_until(
        e,
        30,
        Duration::from_millis(300),
        "the host's children seen",
        |u| {
            t.children
                .iter()
                .all(|c| adopted_of(u, *c).is_some())
                .then_some(())
        },
    )
    .await;
    for tick in 0..8 {
        let u = e.tick().await.expect("tick");
        for c in t.children {
            assert_eq!(
                adopted_of(&u, c),
                Some(None),
                "tick {tick}: {c} under its live host marked adopted\n{}",
                render(&u.snapshot.tree)
            );
        }
        let about: Vec<String> = u
            .snapshot
            .findings
            .iter()
            .chain(&u.snapshot.unconfirmed)
            .filter(|f| f.pids.iter().any(|p| ours.contains(p)))
            .map(|f| format!("{} {:?}", f.id, f.evidence))
            .collect();
        assert!(
            about.is_empty(),
            "tick {tick}: a live host's tree: {about:#?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A subreaper known by name: after the host's SIGKILL its children are adopted by `tini`,
/// both for the engine that watched them and for a one-shot look that never saw the host —
/// which names the subreaper in its orphaned-stdio finding about the helper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_under_a_subreaper_known_by_name_leaves_its_children_adopted_by_it() {
    let t = Tree::start(Some("tini"));
    let tini = t.reaper.pid;
    let mut e = engine();
    not_adopted_while_the_host_lives(&mut e, &t).await;

    t.kill_host();
    let by_tini = Adopted::Subreaper {
        pid: tini,
        name: "tini".into(),
    };
    tick_until(
        &mut e,
        30,
        Duration::from_millis(300),
        "adopted by tini",
        |u| {
            t.children
                .iter()
                .all(|c| adopted_of(u, *c) == Some(Some(by_tini.clone())))
                .then_some(())
        },
    )
    .await;
    // A look that never saw the host knows the subreaper by its name alone.
    let mut fresh = engine();
    let helper = t.children[1];
    let f = tick_until(
        &mut fresh,
        30,
        Duration::from_millis(300),
        "the helper found orphaned under tini",
        |u| {
            (adopted_of(u, helper) == Some(Some(by_tini.clone())))
                .then(|| debugtop_e2e::finding_of(u, FindingKind::OrphanedStdio, helper))
                .flatten()
        },
    )
    .await;
    let evidence = f.evidence.join("\n");
    assert!(
        evidence.contains(&format!("adopted by the subreaper tini (pid {tini})")),
        "{evidence}"
    );
}

/// A subreaper not known by name (the stand-in under its own name): its adoption shows because the engine
/// saw the children under the host first, and then under another parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_under_a_subreaper_not_known_by_name_leaves_its_children_adopted_by_it() {
    let t = Tree::start(None);
    let reaper = t.reaper.pid;
    let mut e = engine();
    not_adopted_while_the_host_lives(&mut e, &t).await;

    t.kill_host();
    let by_reaper = Adopted::Adopter { pid: reaper };
    tick_until(
        &mut e,
        30,
        Duration::from_millis(300),
        "adopted by the nameless subreaper",
        |u| {
            t.children
                .iter()
                .all(|c| adopted_of(u, *c) == Some(Some(by_reaper.clone())))
                .then_some(())
        },
    )
    .await;
}
