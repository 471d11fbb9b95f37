//! The whole path a fleet pages through, for real: Debian's Prometheus scrapes `debugtop-cli
//! serve` next to the real mcp-debugger 0.24.2, evaluates the project's own alert rules
//! (`deploy/prometheus/debugtop.rules.yml`, each `for:` set to 0s so that any evaluation that
//! holds a finding fires — the durations themselves are `promtool test rules`' to check), and
//! Alertmanager delivers to a webhook receiver of the test's. A healthy run fires nothing at any
//! evaluation; then the seed's leak (a worker tagged with the live server that no session owns)
//! fires `DebugtopLeakedWorker`, and after `debugtop-cli kill` of that finding the receiver gets
//! its resolution. Only the test's own processes are ever signalled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

use debugtop_e2e::mcp::{free_port, seed_bug_stand_in, Client, Server};
use debugtop_e2e::prometheus::{self, get, Alertmanager, Prometheus, Webhook};
use debugtop_e2e::{Spawned, TreeGuard};
use serde_json::Value;

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
}

/// The project's rules with every `for:` at 0s.
fn rules() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/prometheus/debugtop.rules.yml"
    );
    let text = std::fs::read_to_string(path).expect("deploy/prometheus/debugtop.rules.yml");
    text.lines()
        .map(|l| match l.trim_start().strip_prefix("for:") {
            Some(_) => format!("{}for: 0s", &l[..l.len() - l.trim_start().len()]),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The finding kinds on the machine before the test (an earlier suite's leftovers), printed.
fn kinds_before() -> Vec<String> {
    let out = cli().args(["audit", "--json"]).output().expect("audit");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let kinds: Vec<String> = v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["kind"].as_str().map(str::to_owned))
        .collect();
    if !kinds.is_empty() {
        eprintln!("findings on the machine before the test (not the test's): {kinds:?}");
    }
    kinds
}

/// The alerts Prometheus holds now (pending or firing), as `alertname{kind}`. A call that
/// fails fails the test: an empty list must mean no alert, never no answer.
fn alerts(p: &Prometheus) -> Vec<(String, String, String)> {
    let answer = wait(
        Duration::from_secs(10),
        "Prometheus's /api/v1/alerts",
        || {
            p.api("/api/v1/alerts")
                .filter(|v| v["status"] == "success" && v["data"]["alerts"].is_array())
        },
    );
    answer["data"]["alerts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|a| {
            let l = &a["labels"];
            let s = |k: &str| l[k].as_str().unwrap_or("").to_owned();
            (
                s("alertname"),
                s("kind"),
                a["state"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn wait<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The notification for `alertname` with `status` (`firing`, `resolved`), when received.
fn notified(hook: &Webhook, alertname: &str, status: &str) -> Option<Value> {
    hook.received.all().into_iter().find_map(|n| {
        n["alerts"].as_array()?.iter().find_map(|a| {
            (a["labels"]["alertname"] == alertname && a["status"] == status).then(|| a.clone())
        })
    })
}

/// The `kind` label of every alert the receiver was sent so far (empty for an alert without
/// one), whatever its status.
fn delivered_kinds(hook: &Webhook) -> Vec<String> {
    hook.received
        .all()
        .iter()
        .flat_map(|n| n["alerts"].as_array().cloned().unwrap_or_default())
        .map(|a| a["labels"]["kind"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leak_pages_through_prometheus_and_alertmanager_and_resolves_after_its_kill() {
    prometheus::require();
    let before = kinds_before();
    assert!(
        !before.iter().any(|k| k == "leaked-worker"),
        "a leaked worker is already on this machine (not the test's): the alert it tests could \
         not resolve; end it (`debugtop-cli audit`) and run again"
    );
    let server = Server::start(60_000);
    let port = free_port();
    let serve_addr = format!("127.0.0.1:{port}");
    let _serve = Spawned::spawn(cli().args([
        "serve",
        "--listen",
        &serve_addr,
        "--interval",
        "500",
        "--grace",
        "2",
    ]));
    wait(Duration::from_secs(30), "serve's first look", || {
        get(&format!("http://{serve_addr}/metrics")).filter(|m| m.contains("debugtop_findings"))
    });
    let hook = Webhook::start();
    let am = Alertmanager::start(&hook.url);
    let prom = Prometheus::start(&serve_addr, &rules(), &am.addr);

    // A healthy run: two sessions paused at entry, one closed, every evaluation watched.
    let client = Client::connect(&server.url()).await;
    let sessions = client.start_mock_sessions("fleet", 2).await;
    let healthy_until = Instant::now() + Duration::from_secs(15);
    let mut evaluations = 0;
    while Instant::now() < healthy_until {
        if evaluations == 6 {
            client
                .call(
                    "close_debug_session",
                    serde_json::json!({"sessionId": sessions[0]}),
                )
                .await;
        }
        let raised: Vec<_> = alerts(&prom)
            .into_iter()
            .filter(|(_, kind, _)| kind.is_empty() || !before.contains(kind))
            .collect();
        assert!(raised.is_empty(), "a healthy run raised {raised:?}");
        evaluations += 1;
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let scraped = prom.query("up{job=\"debugtop\"} == 1");
    assert_eq!(scraped.len(), 1, "Prometheus scraped serve: {scraped:?}");
    let delivered = delivered_kinds(&hook);
    let paged: Vec<_> = delivered
        .iter()
        .filter(|kind| kind.is_empty() || !before.contains(kind))
        .collect();
    assert!(paged.is_empty(), "a healthy run paged {paged:?}");

    // The seed's leak.
    let (harness, worker, _session) = seed_bug_stand_in(server.pid(), server.dir.path());
    let chain = TreeGuard::new(harness.pid);
    let fired = wait(
        Duration::from_secs(90),
        "DebugtopLeakedWorker delivered",
        || notified(&hook, "DebugtopLeakedWorker", "firing"),
    );
    assert_eq!(fired["labels"]["kind"], "leaked-worker", "{fired:#}");
    assert_eq!(fired["labels"]["severity"], "critical", "{fired:#}");
    assert_eq!(
        fired["labels"]["instance"],
        serve_addr.as_str(),
        "the host: {fired:#}"
    );
    let what = fired["annotations"]["description"].as_str().unwrap_or("");
    assert!(
        what.contains("debugtop-cli kill --kind leaked-worker")
            && what.contains(&format!("http://{serve_addr}/api/findings")),
        "says what to run and where the detail is: {what}"
    );

    // The detail, and the kill of exactly that finding — the test's own worker chain only.
    let findings: Value = serde_json::from_str(
        &get(&format!("http://{serve_addr}/api/findings")).expect("/api/findings"),
    )
    .unwrap();
    let f = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "leaked-worker" && f["pids"][0] == worker)
        .unwrap_or_else(|| panic!("the worker's finding: {findings:#}"))
        .clone();
    let id = f["id"].as_str().unwrap();
    assert_eq!(f["fix"], format!("debugtop-cli kill {id}"));
    let ours: Vec<u32> = std::iter::once(harness.pid)
        .chain(
            debugtop_e2e::procs::descendants(harness.pid)
                .iter()
                .map(|(p, _)| *p),
        )
        .collect();
    let dry = cli()
        .args(["kill", id, "--dry-run", "--json"])
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&dry.stdout).expect("the plan");
    for t in plan["plan"]["targets"].as_array().unwrap() {
        let pid = u32::try_from(t["pid"].as_u64().unwrap()).unwrap();
        assert!(
            ours.contains(&pid),
            "the plan reaches past the test's chain: {plan:#}"
        );
    }
    let killed = cli().args(["kill", id, "--yes"]).output().unwrap();
    assert!(
        killed.status.success(),
        "{}",
        String::from_utf8_lossy(&killed.stdout)
    );
    let resolved = wait(Duration::from_secs(60), "the resolution delivered", || {
        notified(&hook, "DebugtopLeakedWorker", "resolved")
    });
    assert_eq!(resolved["labels"]["kind"], "leaked-worker");
    client.close().await;
    // The chain first, while its root is still the harness it names (dropping the harness
    // first reaped the root, and the guard then walked nothing).
    drop(chain);
    drop((prom, am, harness));
}
