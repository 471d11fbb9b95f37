//! Remote targets through real engines: a real OpenSSH server started by the test (loopback
//! port, throwaway keys, its own config) in front of this machine's real mcp-debugger, reached
//! by the real `debugtop-cli` on both sides; and `cmd:` targets that speak wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

use debugtop_core::model::{Target, TargetFailure, TargetState};
use debugtop_core::targets::{self, spawn_stream, Engines, StreamConfig, TargetFeed};
use debugtop_e2e::dockerd::Dockerd;
use debugtop_e2e::mcp::{seed_bug_stand_in, Client, Server};
use debugtop_e2e::sshd::Sshd;
use debugtop_e2e::{fixture, Spawned};
use serde_json::Value;

const CLI: &str = env!("CARGO_BIN_EXE_debugtop-cli");

/// The tests here read the whole machine's findings: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// The sshd's host alias, running this build's CLI on the far side.
fn ssh_target(alias: &str, cli: &str) -> Target {
    format!("ssh:{alias} --cli {cli}").parse().unwrap()
}

fn engines(sshd: &Sshd) -> Engines {
    Engines {
        ssh: shlex_words(&sshd.ssh_command()),
        ..Engines::default()
    }
}

fn shlex_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn quick(engines: Engines) -> StreamConfig {
    StreamConfig {
        judging: debugtop_core::judging::Judging {
            interval: Duration::from_millis(500),
            ..Default::default()
        },
        stale_after: Duration::from_secs(2),
        restart_after: Duration::from_secs(20),
        hello_within: Duration::from_secs(20),
        backoff_first: Duration::from_millis(300),
        backoff_max: Duration::from_secs(1),
        engines,
    }
}

/// Waits until the feed's status satisfies `done`, or panics with the last status.
async fn feed_until(
    feed: &TargetFeed,
    secs: u64,
    what: &str,
    done: impl Fn(&targets::Feed) -> bool,
) -> targets::Feed {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let f = feed.feed.borrow().clone();
        if done(&f) {
            return f;
        }
        assert!(
            Instant::now() < end,
            "{what}: not within {secs} s; last status: {:#?}",
            f.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssh_target_streams_a_real_server_goes_stale_when_cut_and_recovers() {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut sshd = Sshd::start();
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("mock", "over-ssh").await;
    client.start(&session, &fixture("mock/script.js")).await;

    let feed = spawn_stream(ssh_target("target", CLI), quick(engines(&sshd)));
    let pid = server.pid();
    let live = feed_until(&feed, 30, "the server's tree over ssh", |f| {
        f.status.state == TargetState::Live
            && f.update.as_ref().is_some_and(|u| {
                u.snapshot.servers.iter().any(|s| s.pid == pid)
                    && u.snapshot.debug_sessions.iter().any(|d| d.id == session)
            })
    })
    .await;
    let hello = live.status.hello.clone().expect("a hello");
    assert_eq!(hello.stream, debugtop_core::model::STREAM_SCHEMA);
    assert!(
        !hello.host.is_empty() && !hello.kernel.is_empty(),
        "{hello:?}"
    );

    // The link is cut mid-stream: the last tree stays, marked stale, with its age.
    let cut = live
        .status
        .last_update_at
        .expect("a live feed has an update time");
    sshd.stop();
    let stale = feed_until(&feed, 30, "stale after the cut", |f| {
        f.status.state == TargetState::Stale
    })
    .await;
    assert!(
        stale
            .update
            .as_ref()
            .is_some_and(|u| u.snapshot.servers.iter().any(|s| s.pid == pid)),
        "the last known tree is kept"
    );
    assert!(
        stale.status.detail.contains("showing the tree of"),
        "{}",
        stale.status.detail
    );
    // Reconnecting while sshd is down: refused, still stale, retried.
    let refused = feed_until(&feed, 30, "a refused reconnect", |f| {
        f.status.failure == Some(TargetFailure::Unreachable)
    })
    .await;
    assert_eq!(
        refused.status.state,
        TargetState::Stale,
        "{:?}",
        refused.status
    );
    assert!(refused.status.retry_at.is_some());

    // sshd is back: live again, with a tree newer than the cut.
    sshd.resume();
    let back = feed_until(&feed, 40, "live again after sshd is back", |f| {
        f.status.state == TargetState::Live && f.status.last_update_at.is_some_and(|t| t > cut)
    })
    .await;
    assert!(back.status.attempts >= 2, "{:?}", back.status);
    drop(feed);
    client.close().await;
}

fn run_cli(sshd: &Sshd, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(CLI)
        .args(args)
        .env(targets::SSH_COMMAND_ENV, sshd.ssh_command())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_audit_over_ssh_finds_the_seed_leak_and_kill_on_the_target_removes_it() {
    let _one = ONE_AT_A_TIME.lock().await;
    let sshd = Sshd::start();
    let sentinel = Spawned::spawn(Command::new("sleep").arg("600"));
    let server = Server::start(60_000);
    let (_harness, worker, session) = seed_bug_stand_in(server.pid(), server.dir.path());
    let target = format!("ssh:target --cli {CLI}");

    let mut found = None;
    for _ in 0..20 {
        let (code, out, err) = run_cli(
            &sshd,
            &["audit", "--json", "--target", &target, "--target", "local"],
        );
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        let remote = &doc["targets"][0];
        assert_eq!(remote["target"], target.as_str(), "{doc:#}");
        assert!(remote["error"].is_null(), "{doc:#}");
        assert!(
            doc["targets"][1]["result"].is_object(),
            "local audited too: {doc:#}"
        );
        let hit = remote["result"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"][0] == worker)
            .cloned();
        if let Some(f) = hit {
            assert_eq!(code, Some(1), "findings on a target mean exit 1: {err}");
            found = Some(f);
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let f = found.expect("leaked-worker for the stand-in, seen over ssh");
    assert_eq!(f["session_id"], session.as_str());
    let id = f["id"].as_str().unwrap().to_owned();
    let planned: Vec<(u32, u64)> = f["plan"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                u32::try_from(t["pid"].as_u64().unwrap()).unwrap(),
                t["start_ticks"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(planned.iter().any(|(p, _)| *p == worker), "{planned:?}");

    // The readable report names the target in its kill hint.
    let (code, out, _) = run_cli(&sshd, &["audit", "--target", &target]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("== {target}")), "{out}");
    assert!(
        out.contains("debugtop-cli kill --target 'ssh:target --cli "),
        "{out}"
    );

    // Without --yes and without a terminal nothing is signalled.
    let (code, _, err) = run_cli(&sshd, &["kill", "--target", &target, &id]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("pass --yes"), "{err}");
    assert!(debugtop_e2e::procs::state_of(worker).is_some_and(|s| s != 'Z'));

    let (code, out, err) = run_cli(
        &sshd,
        &[
            "kill",
            "--target",
            &target,
            &id,
            "--yes",
            "--grace-ms",
            "2000",
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&format!("plan on {target}")), "{out}");
    // The kill went through ssh: the far side ran `kill` on the finding, for exactly the
    // identities confirmed here.
    let only: Vec<String> = planned.iter().map(|(p, t)| format!("{p}.{t}")).collect();
    let far = sshd.commands();
    assert!(
        far.iter().any(|c| c.contains(" kill ")
            && c.contains(&id)
            && !c.contains("--dry-run")
            && only.iter().all(|o| c.contains(o.as_str()))),
        "no kill of {id} ran through ssh: {far:#?}"
    );
    for (pid, ticks) in &planned {
        assert!(
            debugtop_e2e::procs::start_ticks(*pid) != Some(*ticks)
                || debugtop_e2e::procs::state_of(*pid) == Some('Z'),
            "planned pid {pid} is still alive: {out}"
        );
    }
    assert_eq!(debugtop_e2e::procs::state_of(sentinel.pid), Some('S'));
    assert!(debugtop_e2e::procs::state_of(server.pid()).is_some_and(|s| s != 'Z'));
}

#[test]
fn a_far_side_without_debugtop_cli_or_without_our_key_is_worded() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let sshd = Sshd::start();
    let missing = "ssh:target --cli /nonexistent/debugtop-cli";
    let (code, out, _) = run_cli(&sshd, &["audit", "--target", missing]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("is not installed there") && out.contains("install debugtop-cli there"),
        "{out}"
    );
    let stranger = format!("ssh:stranger --cli {CLI}");
    let (code, out, _) = run_cli(&sshd, &["audit", "--json", "--target", &stranger]);
    assert_eq!(code, Some(2), "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let e = doc["targets"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("could not log in") && e.contains("Permission denied"),
        "{e}"
    );
    // A whole snapshot fleet file: one target answers, one cannot; both are in the file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fleet.json");
    let good = format!("ssh:target --cli {CLI}");
    let (code, _, err) = run_cli(
        &sshd,
        &[
            "snapshot",
            "--target",
            &good,
            "--target",
            missing,
            "--out",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no snapshot of ssh:target --cli /nonexistent"),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["schema"], "debugtop.fleet/1");
    assert_eq!(
        doc["targets"][0]["snapshot"]["schema"],
        "debugtop.snapshot/1"
    );
    assert!(doc["targets"][1]["error"]
        .as_str()
        .unwrap()
        .contains("not installed"));
}

/// A `cmd:` target running `sh -c SCRIPT` (our arguments follow as `$@`).
fn sh(script: &str) -> Target {
    Target::Cmd {
        argv: vec!["sh".into(), "-c".into(), script.into(), "sh".into()],
    }
}

async fn first_failure(t: Target, hello_within: Duration) -> targets::Feed {
    let mut config = quick(Engines::default());
    config.hello_within = hello_within;
    let feed = spawn_stream(t, config);
    feed_until(&feed, 20, "a failure", |f| f.status.failure.is_some()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmd_targets_that_speak_wrong_get_worded_errors() {
    let other = r#"echo '{"hello":{"stream":"debugtop.stream/0","debugtop":"0.0.1"}}'; sleep 30"#;
    let f = first_failure(sh(other), Duration::from_secs(10)).await;
    assert_eq!(f.status.failure, Some(TargetFailure::Incompatible));
    assert!(
        f.status
            .detail
            .contains("speaks debugtop.stream/0 (debugtop 0.0.1)"),
        "{}",
        f.status.detail
    );
    assert_eq!(f.status.state, TargetState::Failed);

    let f = first_failure(
        sh("echo 'Last login: yesterday'; sleep 30"),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(f.status.failure, Some(TargetFailure::Garbage));
    assert!(
        f.status.detail.contains("Last login"),
        "{}",
        f.status.detail
    );

    // A line that would cost far more than its size once parsed (millions of empty strings,
    // 24 bytes each in the model for 3 of text): refused before it is built.
    let flood = format!(
        r#"{CLI} --hello watch --json --count 1 | head -n 1; printf '{{"seq":1,"snapshot":{{"x":['; head -c 8000000 /dev/zero | tr '\0' '\n' | sed 's/^/"",/' | tr -d '\n'; printf '""]}}}}\n'; sleep 30"#
    );
    let f = first_failure(sh(&flood), Duration::from_secs(20)).await;
    assert_eq!(
        f.status.failure,
        Some(TargetFailure::Garbage),
        "{}",
        f.status.detail
    );
    assert!(
        f.status
            .detail
            .contains("JSON values (at most 6000000 are read)"),
        "{}",
        f.status.detail
    );

    let f = first_failure(sh("sleep 30"), Duration::from_secs(1)).await;
    assert_eq!(f.status.failure, Some(TargetFailure::Stalled));
    assert!(
        f.status.detail.contains("no hello within 1 s"),
        "{}",
        f.status.detail
    );

    let f = first_failure(sh("echo boom >&2; exit 3"), Duration::from_secs(10)).await;
    assert_eq!(f.status.failure, Some(TargetFailure::Lost));
    assert!(
        f.status.detail.contains("status 3: boom"),
        "{}",
        f.status.detail
    );

    let f = first_failure(
        Target::Cmd {
            argv: vec!["/nonexistent/engine".into()],
        },
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(f.status.failure, Some(TargetFailure::NoEngine));

    // A garbage line between real updates is ignored and said; the updates still arrive.
    let script = format!(
        "{CLI} \"$@\" --count 3 | {{ read -r h; echo \"$h\"; read -r u; echo \"$u\"; echo not-json; cat; sleep 30; }}"
    );
    let feed = spawn_stream(sh(&script), quick(Engines::default()));
    let f = feed_until(&feed, 30, "three updates and a garbage line", |f| {
        f.update.as_ref().is_some_and(|u| u.seq >= 2)
    })
    .await;
    assert_eq!(f.status.state, TargetState::Live);
    assert!(
        f.status
            .detail
            .contains("1 line(s) that were not updates ignored"),
        "{}",
        f.status.detail
    );
}

/// Each target has its own task: one that hangs before its hello (a prompt nobody answers)
/// never holds up another that streams real updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_target_never_holds_up_another() {
    let mut slow = quick(Engines::default());
    slow.hello_within = Duration::from_secs(60);
    let stalled = spawn_stream(sh("exec sleep 120"), slow);
    let good = spawn_stream(
        Target::Cmd {
            argv: vec![CLI.into()],
        },
        quick(Engines::default()),
    );
    let f = feed_until(&good, 30, "the good target streams", |f| {
        f.update.as_ref().is_some_and(|u| u.seq >= 3)
    })
    .await;
    assert_eq!(f.status.state, TargetState::Live);
    let s = stalled.feed.borrow().status.clone();
    assert_eq!(s.state, TargetState::Connecting, "{s:?}");
}

/// The folders a container needs to run this build's CLI and the real server: the workspace
/// (fixtures, the npm package) and the folder of the CLI binary when it lies elsewhere.
fn shared_with_containers() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf();
    let mut out = vec![root.clone()];
    let bin = std::path::Path::new(CLI).parent().unwrap().to_path_buf();
    if !bin.starts_with(&root) {
        out.push(bin);
    }
    out
}

fn run_docker_cli(dockerd: &Dockerd, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(CLI)
        .args(args)
        .env(targets::DOCKER_COMMAND_ENV, dockerd.command().join(" "))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A real mcp-debugger in a real container (its own pid namespace) of a daemon the test
/// started: the stream shows the container's tree with the container's pids, the fleet audit
/// finds a leak made inside it, and the kill planned and checked there removes exactly it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docker_target_shows_the_containers_own_server_and_kills_inside_it() {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut dockerd = Dockerd::start();
    let sentinel = Spawned::spawn(Command::new("sleep").arg("600"));
    let port = debugtop_e2e::mcp::free_port().to_string();
    let pkg = debugtop_e2e::mcp::package_dir();
    let cli_mjs = pkg.join("dist/cli.mjs");
    let shared = shared_with_containers();
    let shared: Vec<&std::path::Path> = shared.iter().map(|p| p.as_path()).collect();
    let name = "debugtop-box";
    dockerd.run(
        name,
        &shared,
        &[
            "env",
            "MCP_HTTP_STALE_SESSION_MS=60000",
            "node",
            cli_mjs.to_str().unwrap(),
            "http",
            "-p",
            &port,
            "--log-file",
            "/tmp/mcp/server.log",
        ],
    );
    debugtop_e2e::wait_for(Duration::from_secs(30), || {
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).ok()
    })
    .expect("the server in the container never listened");
    let client = Client::connect(&format!("http://127.0.0.1:{port}/mcp")).await;
    let session = client.create_session("mock", "in-a-container").await;
    client.start(&session, &fixture("mock/script.js")).await;

    let target: Target = format!("docker:{name} --cli {CLI}").parse().unwrap();
    let engines = Engines {
        docker: dockerd.command(),
        ..Engines::default()
    };
    let live = feed_until(
        &spawn_stream(target.clone(), quick(engines)),
        30,
        "the container's tree",
        |f| {
            f.status.state == TargetState::Live
                && f.update
                    .as_ref()
                    .is_some_and(|u| u.snapshot.debug_sessions.iter().any(|d| d.id == session))
        },
    )
    .await;
    let hello = live.status.hello.clone().expect("a hello");
    assert_eq!(hello.host, name, "the far side is the container: {hello:?}");
    let snap = &live.update.as_ref().unwrap().snapshot;
    // The server is the container's first process: pid 1 there, whatever it is here.
    assert!(
        snap.servers.iter().any(|s| s.pid == 1),
        "{:?}",
        snap.servers
    );

    // A leak inside the container: the seed bug's stand-in with the container's server as owner.
    let leak = uuid_like();
    let mut harness = Spawned::spawn(&mut dockerd.client(&[
        "exec",
        name,
        "node",
        &fixture("seed-bug/harness.js"),
        pkg.to_str().unwrap(),
        "1",
        &leak,
        &format!("/tmp/mcp/sessions/{leak}/run-1"),
        &fixture("mock/script.js"),
    ]));
    let worker: u32 = harness
        .read_line(Duration::from_secs(20))
        .parse()
        .expect("the worker's pid in the container");
    let spec = target.to_string();
    let mut found = None;
    for _ in 0..30 {
        let (code, out, err) = run_docker_cli(&dockerd, &["audit", "--json", "--target", &spec]);
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert!(doc["targets"][0]["error"].is_null(), "{doc:#}");
        let hit = doc["targets"][0]["result"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"][0] == worker)
            .cloned();
        if let Some(f) = hit {
            assert_eq!(code, Some(1), "{err}");
            found = Some(f);
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let f = found.expect("leaked-worker for the stand-in inside the container");
    assert_eq!(f["session_id"], leak.as_str());
    let planned: Vec<(u32, u64)> = f["plan"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                u32::try_from(t["pid"].as_u64().unwrap()).unwrap(),
                t["start_ticks"].as_u64().unwrap(),
            )
        })
        .collect();
    let id = f["id"].as_str().unwrap();
    let (code, out, err) = run_docker_cli(
        &dockerd,
        &["kill", "--target", &spec, id, "--yes", "--grace-ms", "2000"],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    for (pid, ticks) in &planned {
        assert_ne!(
            dockerd.start_ticks_in(name, *pid),
            Some(*ticks),
            "planned pid {pid} is still alive in the container: {out}"
        );
    }
    // Nothing else was touched: the container's server, the session's worker, our sentinel.
    assert!(dockerd.start_ticks_in(name, 1).is_some());
    assert_eq!(debugtop_e2e::procs::state_of(sentinel.pid), Some('S'));
    let (code, out, _) = run_docker_cli(&dockerd, &["audit", "--json", "--target", &spec]);
    assert_eq!(code, Some(0), "clean after the kill: {out}");
    drop(harness);

    // Words for a container without the CLI, and for no such container.
    let bare = format!("docker:{name}");
    let (code, out, _) = run_docker_cli(&dockerd, &["audit", "--target", &bare]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("install debugtop-cli there"), "{out}");
    let (code, out, _) = run_docker_cli(&dockerd, &["audit", "--target", "docker:nobody-here"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("cannot reach it through docker"), "{out}");
    client.close().await;
}

fn uuid_like() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        (n >> 48) as u32,
        n & 0xffff_ffff_ffff
    )
}
