//! A real mcp-debugger server in its own pid namespace (as in a dev container), seen from the
//! host: its workers' markers hold pids of the namespace, and a host process deliberately holds
//! the server's in-namespace pid number (another real server, so a join by raw pid number would
//! give a wrong verdict). Healthy: no finding at any tick, the workers under their server. Then
//! the server is SIGKILLed inside: the orphans are found, with host pids in their plans.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use debugtop_core::actions::kill;
use debugtop_core::model::{FindingKind, NodeKind, Role, TreeNode, Update};
use debugtop_e2e::mcp::{package_dir, Client, Server};
use debugtop_e2e::procs::{descendants, ppid_of, signal_if_same, state_of};
use debugtop_e2e::{render, start_ticks, tick_until, wait_for, Spawned, TreeGuard};
use nix::sys::signal::Signal;

/// `unshare --pid --fork --mount-proc` works here (root, namespaces enabled).
fn namespaces_available() -> Result<(), String> {
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// The server in its namespace: the `unshare` process, the server's pids (inside, on the host).
struct Contained {
    // Dropped first: the namespace's init (sh) is the unshare's child only while unshare lives.
    _guard: TreeGuard,
    unshare: Spawned,
    inner_pid: u32,
    host_pid: u32,
    /// The outer namespace's init on the host, when the server's namespace is nested in one
    /// (a stand-in for "the host" whose every process the test started).
    outer_init: Option<u32>,
    port: u16,
    _dir: tempfile::TempDir,
}

/// How many mock sessions (so proxy workers) a contained server is given before it is killed.
/// A worker may exit by itself when its server dies (one in eight did on the host); with two,
/// both once did under a full suite's load, leaving nothing to be an orphan.
const CONTAINED_WORKERS: usize = 4;

impl Contained {
    /// Starts `unshare --pid --fork --mount-proc sh -c '… node cli.mjs http … &'` with the
    /// shell as the namespace's init, reaping forever as tini would (when a namespace's init
    /// exits, the kernel kills everything in it); asks the namespace's kernel for `want_inner`
    /// as the server's pid there (`ns_last_pid`).
    fn start(want_inner: u32) -> Self {
        Self::start_in(want_inner, false)
    }

    /// As [`Contained::start`]; with `nested`, the server's namespace is made inside an outer
    /// one (`unshare` in `unshare`), whose init runs nothing but the inner `unshare`.
    fn start_in(want_inner: u32, nested: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = debugtop_e2e::mcp::free_port();
        let log = dir.path().join("server.log");
        let script = "echo $(($1 - 1)) > /proc/sys/kernel/ns_last_pid 2>/dev/null; \
                      node \"$2\" http -p \"$3\" --log-file \"$4\" >/dev/null & echo $!; \
                      while :; do wait; sleep 1; done";
        let mut cmd = Command::new("unshare");
        cmd.args(["--pid", "--fork", "--mount-proc", "sh", "-c"]);
        if nested {
            let outer = "unshare --pid --fork --mount-proc sh -c \"$0\" sh \"$@\" & \
                         while :; do wait; sleep 1; done";
            cmd.args([outer, script]);
        } else {
            cmd.args([script, "sh"]);
        }
        cmd.arg(want_inner.to_string())
            .arg(package_dir().join("dist/cli.mjs"))
            .arg(port.to_string())
            .arg(&log)
            .env("MCP_HTTP_STALE_SESSION_MS", "60000");
        let mut unshare = Spawned::spawn(&mut cmd);
        let guard = TreeGuard::new(unshare.pid);
        let inner_pid: u32 = unshare
            .read_line(Duration::from_secs(20))
            .parse()
            .expect("the server's pid inside");
        let host_pid = wait_for(Duration::from_secs(20), || {
            descendants(unshare.pid).into_iter().find_map(|(pid, _)| {
                let argv = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let argv = String::from_utf8_lossy(&argv);
                (argv.starts_with("node\0") && argv.contains("cli.mjs")).then_some(pid)
            })
        })
        .expect("the contained server on the host");
        let unshare_pid = unshare.pid;
        let s = Self {
            _guard: guard,
            unshare,
            inner_pid,
            host_pid,
            outer_init: nested.then(|| outer_init(unshare_pid)),
            port,
            _dir: dir,
        };
        wait_for(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", s.port)).ok()
        })
        .expect("the contained server never listened");
        s
    }
}

/// The namespace's init: the one child of its `unshare --fork`.
fn outer_init(unshare: u32) -> u32 {
    wait_for(Duration::from_secs(10), || {
        descendants(unshare)
            .into_iter()
            .find_map(|(pid, _)| (ppid_of(pid) == Some(unshare)).then_some(pid))
    })
    .expect("the outer namespace's init")
}

fn processes_under(n: &TreeNode, out: &mut BTreeSet<u32>) {
    for c in &n.children {
        if c.kind == NodeKind::Process {
            out.extend(c.pid);
        }
        processes_under(c, out);
    }
}

fn server_subtree(u: &Update, pid: u32) -> Option<BTreeSet<u32>> {
    let node = u
        .snapshot
        .tree
        .iter()
        .find(|n| n.kind == NodeKind::Server && n.pid == Some(pid))?;
    let mut out = BTreeSet::new();
    processes_under(node, &mut out);
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contained_server_is_joined_in_its_namespace_and_its_orphans_get_host_pids() {
    // No silent skip: where namespaces cannot be made, the test says how to skip it.
    if let Err(why) = namespaces_available() {
        panic!(
            "this test needs `unshare --pid --fork --mount-proc` ({why}): run it as root on a \
             kernel with pid namespaces (as `make test` does on CI), or skip it explicitly with \
             `cargo test -- --skip contained_server_is_joined_in_its_namespace`"
        );
    }
    // A real server on the host first; the contained one asks for the same pid number.
    let decoy = Server::start(60_000);
    let c = Contained::start(decoy.pid());
    eprintln!(
        "contained server: pid {} inside, {} on the host; host server {}",
        c.inner_pid,
        c.host_pid,
        decoy.pid()
    );
    // The collision is what this test is about: without it, joining by pid number alone
    // would pass too.
    assert_eq!(
        c.inner_pid,
        decoy.pid(),
        "the contained server did not get the host server's pid number inside its namespace \
         (setting ns_last_pid needs root: run as root, as CI does)"
    );
    let client = Client::connect(&format!("http://127.0.0.1:{}/mcp", c.port)).await;
    let sessions = client
        .start_mock_sessions("contained", CONTAINED_WORKERS)
        .await;
    let mut e = debugtop_e2e::engine(700);
    let workers = workers_seen(&mut e, &sessions).await;
    // Healthy for 12 s (twice the grace): no finding about anything of either server, at any
    // tick; the workers hang under their own server, with both pids shown.
    let ours = |pid: u32| {
        pid == c.host_pid || pid == decoy.pid() || workers.iter().any(|(w, _)| *w == pid)
    };
    for tick in 0..30 {
        let u = e.tick().await.unwrap();
        let bad: Vec<_> = u
            .snapshot
            .findings
            .iter()
            .filter(|f| f.pids.iter().any(|p| ours(*p)) || f.server_pid.is_some_and(ours))
            .map(|f| format!("{} {:?}", f.id, f.evidence))
            .collect();
        assert!(
            bad.is_empty(),
            "tick {tick}: {bad:#?}\n{}",
            render(&u.snapshot.tree)
        );
        let under = server_subtree(&u, c.host_pid).unwrap_or_default();
        for (w, _) in &workers {
            assert!(
                under.contains(w),
                "tick {tick}: worker {w} not under server {}\n{}",
                c.host_pid,
                render(&u.snapshot.tree)
            );
        }
        let server = u
            .snapshot
            .processes
            .iter()
            .find(|p| p.pid == c.host_pid)
            .unwrap();
        assert_eq!(
            server.ns.as_ref().map(|n| n.pid),
            Some(c.inner_pid),
            "its pid inside is shown"
        );
        let decoy_under = server_subtree(&u, decoy.pid()).unwrap_or_default();
        assert!(
            workers.iter().all(|(w, _)| !decoy_under.contains(w)),
            "a contained worker joined the host server"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    // The server dies inside its namespace: its workers are orphans, found by host pid.
    let ticks = start_ticks(c.host_pid).unwrap();
    assert!(signal_if_same(c.host_pid, ticks, Signal::SIGKILL));
    let findings = tick_until(
        &mut e,
        40,
        Duration::from_millis(400),
        "orphaned workers",
        |u| {
            // Every worker still alive is an orphan (a worker may also exit by itself when its
            // server dies, as on the host); the namespace's init adopts them, not pid 1.
            let alive: Vec<u32> = workers
                .iter()
                .filter(|(w, t)| start_ticks(*w) == Some(*t) && state_of(*w) != Some('Z'))
                .map(|(w, _)| *w)
                .collect();
            assert!(
                !alive.is_empty(),
                "every worker exited by itself when its server died: none is left to be found \
                 as an orphan"
            );
            let f: Vec<_> = alive
                .iter()
                .filter_map(|w| debugtop_e2e::finding_of(u, FindingKind::OrphanedWorker, *w))
                .collect();
            (!alive.is_empty() && f.len() == alive.len()).then_some(f)
        },
    )
    .await;
    for f in findings {
        eprintln!("{} {:?}", f.id, f.evidence);
        let ev = f.evidence.join("\n");
        assert!(
            ev.contains(&format!(
                "no process has pid {} in its pid namespace",
                c.inner_pid
            )),
            "{ev}"
        );
        let plan = f.plan.clone().expect("a plan");
        for t in &plan.targets {
            assert_eq!(
                start_ticks(t.pid),
                Some(t.start_ticks),
                "plan pid {} is a host pid of a live process",
                t.pid
            );
            assert!(
                descendants(c.unshare.pid).iter().any(|(p, _)| *p == t.pid),
                "plan target {} is not in the namespace",
                t.pid
            );
        }
        assert!(!plan.targets.iter().any(|t| t.pid == decoy.pid()));
        let report = tokio::task::spawn_blocking(move || kill::execute(&plan, |_| {}))
            .await
            .unwrap();
        assert!(report.all_gone(), "{report:#?}");
    }
    for (w, t) in &workers {
        assert!(
            start_ticks(*w) != Some(*t) || state_of(*w) == Some('Z'),
            "worker {w} survived"
        );
    }
    assert!(
        state_of(decoy.pid()).is_some_and(|s| s != 'Z'),
        "the host server is untouched"
    );
}

/// A real server in its own network namespace (a container with its own network, a pod): it
/// listens, but on a loopback that is not debugtop's. Asking debugtop's own 127.0.0.1 reached
/// nothing and made `server-unresponsive` — a false critical for every such server (every
/// server on a node, seen from a pod). Its `/health` is not asked, and the health status says
/// why; nothing is found about it at any tick past the grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_server_in_another_network_namespace_was_unresponsive_to_a_loopback_that_is_not_its_own(
) {
    let netns = Command::new("unshare")
        .args(["--net", "--pid", "--fork", "--mount-proc", "true"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        netns,
        "this test needs `unshare --net --pid --fork --mount-proc`: run it as root (as \
         `make test` does on CI), or `cargo test -- --skip \
         regression_a_server_in_another_network_namespace`"
    );
    let dir = tempfile::tempdir().unwrap();
    let port = debugtop_e2e::mcp::free_port();
    let script = "node \"$1\" http -p \"$2\" --log-file \"$3\" >/dev/null & echo $!; \
                  while :; do wait; sleep 1; done";
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--net",
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(package_dir().join("dist/cli.mjs"))
    .arg(port.to_string())
    .arg(dir.path().join("server.log"));
    let mut unshare = Spawned::spawn(&mut cmd);
    let _guard = TreeGuard::new(unshare.pid);
    let _inner: u32 = unshare.read_line(Duration::from_secs(20)).parse().unwrap();
    let server = wait_for(Duration::from_secs(20), || {
        descendants(unshare.pid).into_iter().find_map(|(pid, _)| {
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let argv = String::from_utf8_lossy(&argv);
            // Its own network namespace's table: a LISTEN row on its port.
            let hex = format!(":{port:04X} ");
            let listens = ["tcp", "tcp6"].iter().any(|t| {
                std::fs::read_to_string(format!("/proc/{pid}/net/{t}"))
                    .unwrap_or_default()
                    .lines()
                    .any(|l| l.contains(&hex) && l.split_whitespace().nth(3) == Some("0A"))
            });
            (argv.starts_with("node\0") && argv.contains("cli.mjs") && listens).then_some(pid)
        })
    })
    .expect("the server listens in its namespace");
    let mut e = debugtop_e2e::engine(700);
    let mut said = false;
    let mut statuses = String::new();
    // Twice the grace: a condition would be confirmed by then.
    for tick in 0..30 {
        let u = e.tick().await.unwrap();
        let about: Vec<_> = u
            .snapshot
            .findings
            .iter()
            .filter(|f| f.pids.contains(&server) || f.server_pid == Some(server))
            .map(|f| format!("{} {:?}", f.id, f.evidence))
            .collect();
        assert!(about.is_empty(), "tick {tick}: {about:#?}");
        said |= u.snapshot.sources.iter().any(|s| {
            s.server_pid == Some(server) && s.detail.contains("another network namespace")
        });
        statuses = format!("{:#?}", u.snapshot.sources);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert!(
        said,
        "the health status says why /health is not asked: {statuses}"
    );
}

/// Issue 38, item 5: a real server in its own pid namespace, SIGKILLed there, its workers left;
/// a fresh audit a few seconds later found them in two runs of three and nothing, exit 0, in
/// the third. No miss was reproduced here (24 fresh audits of 24 found every live worker,
/// through the CLI and in process, with a namespace init that reaps and one that never does,
/// from 0 to 56 s after the kill); what was found is that the workers can be gone before the
/// audit, so that nothing is the right answer: the newest worker often ends by itself about a
/// second after its server, and any 0.24.2 start outside the namespace reaps the rest when their
/// owner's pid number is free there (the next test). Eight fresh audits in a row (each its own
/// sources, as a new `audit` process, the first right after the kill, while the namespace's
/// init may not have reaped the server yet) must each find every worker still alive, so a
/// one-in-three miss passes 4 % of the time; with the server alive (the near miss) none finds
/// anything of it. The server's pid inside is the namespace's second or third, numbers the
/// host's kernel threads hold: the other tests' servers, started on the host, never reap these
/// workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fresh_audit_finds_a_contained_servers_orphans_and_none_while_it_lives() {
    if let Err(why) = namespaces_available() {
        panic!(
            "this test needs `unshare --pid --fork --mount-proc` ({why}): run it as root, or \
             skip it explicitly with `cargo test -- --skip every_fresh_audit_finds`"
        );
    }
    let c = Contained::start(0);
    let client = Client::connect(&format!("http://127.0.0.1:{}/mcp", c.port)).await;
    let sessions = client.start_mock_sessions("fresh", CONTAINED_WORKERS).await;
    let mut e = debugtop_e2e::engine(700);
    let workers = workers_seen(&mut e, &sessions).await;
    drop(e);
    let config = || {
        debugtop_core::actions::audit::AuditConfig::new(debugtop_core::judging::Judging::default())
    };
    let about_ours = |f: &debugtop_core::model::Finding| {
        f.pids
            .iter()
            .any(|p| *p == c.host_pid || workers.iter().any(|(w, _)| w == p))
    };
    // Near miss: the server lives; a fresh audit says nothing of it.
    let run = debugtop_core::actions::audit::audit_here(&config())
        .await
        .unwrap();
    let false_ones: Vec<_> = run.findings.iter().filter(|f| about_ours(f)).collect();
    assert!(false_ones.is_empty(), "{false_ones:#?}");
    let ticks = start_ticks(c.host_pid).unwrap();
    assert!(signal_if_same(c.host_pid, ticks, Signal::SIGKILL));
    for run_no in 0..8 {
        let alive: Vec<u32> = workers
            .iter()
            .filter(|(w, t)| start_ticks(*w) == Some(*t) && state_of(*w) != Some('Z'))
            .map(|(w, _)| *w)
            .collect();
        assert!(!alive.is_empty(), "the workers exited by themselves");
        let run = debugtop_core::actions::audit::audit_here(&config())
            .await
            .unwrap();
        for w in &alive {
            let found = run
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::OrphanedWorker && f.pids.contains(w));
            let procs: Vec<String> = run
                .snapshot
                .processes
                .iter()
                .filter(|p| alive.contains(&p.pid))
                .map(|p| {
                    format!(
                        "{} {:?} owner {:?} ppid {} ns {:?}",
                        p.pid, p.role, p.owner_pid, p.ppid, p.ns
                    )
                })
                .collect();
            assert!(
                found || state_of(*w).is_none_or(|s| s == 'Z'),
                "audit {run_no}: worker {w} not found; findings {:#?}; the workers as seen: {procs:#?}",
                run.findings.iter().map(|f| f.id.to_string()).collect::<Vec<_>>()
            );
        }
    }
}

/// Issue 38, item 5, why a fresh audit can rightly find nothing: 0.24.2 runs its orphan reaper
/// on every start (even `--version`), and the reaper takes a worker's `--mcp-owner-pid` (a pid
/// of the server's own namespace) as a pid of the namespace it runs in. A start outside the
/// server's namespace where that number is free kills the workers, whether their server is
/// dead (its orphans are gone before the audit: nothing is the right answer) or alive (its
/// sessions lose their workers). Here "outside" is an outer namespace the test made, so the
/// reaper sees only what the test started. The live server's sessions are then
/// `session-without-worker`, and nothing else is said of it; before the reaper, nothing at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaper_started_outside_a_live_contained_server_leaves_its_sessions_without_workers() {
    if let Err(why) = namespaces_available() {
        panic!(
            "this test needs `unshare --pid --fork --mount-proc` ({why}): run it as root, or \
             skip it explicitly with `cargo test -- --skip a_reaper_started_outside`"
        );
    }
    // The server's pid inside is this test process's own number: taken on the host for the
    // whole test (a server another test starts there leaves these workers alone), free in the
    // outer namespace, which holds a dozen processes.
    let want = std::process::id();
    let c = Contained::start_in(want, true);
    let outer = c.outer_init.expect("nested");
    assert_eq!(c.inner_pid, want, "the namespace's kernel gave another pid");
    let client = Client::connect(&format!("http://127.0.0.1:{}/mcp", c.port)).await;
    let sessions = client.start_mock_sessions("outside", 2).await;
    let workers = workers_of(c.host_pid, sessions.len());
    let config = || {
        debugtop_core::actions::audit::AuditConfig::new(debugtop_core::judging::Judging::default())
    };
    let about_ours = |f: &debugtop_core::model::Finding| {
        f.server_pid == Some(c.host_pid)
            || f.pids
                .iter()
                .any(|p| *p == c.host_pid || workers.iter().any(|(w, _)| w == p))
            || f.session_id.as_ref().is_some_and(|s| sessions.contains(s))
    };
    let run = debugtop_core::actions::audit::audit_here(&config())
        .await
        .unwrap();
    let early: Vec<_> = run.findings.iter().filter(|f| about_ours(f)).collect();
    assert!(early.is_empty(), "before the reaper: {early:#?}");
    // A real 0.24.2 start in the outer namespace: its reaper runs first.
    let out = Command::new("nsenter")
        .args(["--target", &outer.to_string(), "--pid", "--mount", "node"])
        .arg(package_dir().join("dist/cli.mjs"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    wait_for(Duration::from_secs(20), || {
        workers
            .iter()
            .all(|(w, t)| start_ticks(*w) != Some(*t) || state_of(*w) == Some('Z'))
            .then_some(())
    })
    .expect("the reaper outside never ended the live server's workers");
    assert!(start_ticks(c.host_pid).is_some(), "the server itself lives");
    let said = wait_for_audit(Duration::from_secs(60), config, |findings| {
        let ours: Vec<_> = findings.iter().filter(|f| about_ours(f)).cloned().collect();
        let each = sessions.iter().all(|s| {
            ours.iter().any(|f| {
                f.kind == FindingKind::SessionWithoutWorker && f.session_id.as_ref() == Some(s)
            })
        });
        each.then_some(ours)
    })
    .await;
    let other: Vec<_> = said
        .iter()
        .filter(|f| f.kind != FindingKind::SessionWithoutWorker)
        .collect();
    assert!(other.is_empty(), "more than the sessions: {other:#?}");
    assert!(
        said.iter().all(|f| f.server_pid == Some(c.host_pid)),
        "{said:#?}"
    );
}

/// The workers of `sessions` as the engine sees them, by identity, once all are up.
async fn workers_seen(
    e: &mut debugtop_core::sampler::Engine,
    sessions: &[String],
) -> Vec<(u32, u64)> {
    tick_until(e, 30, Duration::from_millis(400), "every worker up", |u| {
        let w: Vec<_> = u
            .snapshot
            .processes
            .iter()
            .filter(|p| {
                p.role == Role::Worker
                    && sessions.iter().any(|s| p.session_id.as_deref() == Some(s))
            })
            .map(|p| (p.pid, p.start_ticks))
            .collect();
        (w.len() == sessions.len()).then_some(w)
    })
    .await
}

/// The `n` proxy workers under `server`, by identity, once all are up.
fn workers_of(server: u32, n: usize) -> Vec<(u32, u64)> {
    wait_for(Duration::from_secs(30), || {
        let w: Vec<(u32, u64)> = descendants(server)
            .into_iter()
            .filter(|(pid, _)| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|a| String::from_utf8_lossy(&a).contains("proxy-bootstrap"))
            })
            .collect();
        (w.len() == n).then_some(w)
    })
    .expect("every worker up")
}

/// Fresh audits until `pick` answers, up to `timeout` (a deadline, not a timing).
async fn wait_for_audit<T>(
    timeout: Duration,
    config: impl Fn() -> debugtop_core::actions::audit::AuditConfig,
    pick: impl Fn(&[std::sync::Arc<debugtop_core::model::Finding>]) -> Option<T>,
) -> T {
    let end = std::time::Instant::now() + timeout;
    loop {
        let run = debugtop_core::actions::audit::audit_here(&config())
            .await
            .unwrap();
        if let Some(t) = pick(&run.findings) {
            return t;
        }
        let ids: Vec<String> = run.findings.iter().map(|f| f.id.to_string()).collect();
        assert!(
            std::time::Instant::now() < end,
            "never said; last findings {ids:#?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
