//! `debugtop-bench`: every figure of the performance brief in one run on this machine, each as
//! a median with min/max, and the ratios against baselines measured in the same run (the floor:
//! one read of `/proc/<pid>/stat` per process; `ps`). Timings are reported, never asserted.

/// The allocator the app and the CLI use, so the figures are theirs.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod exporter;
mod phases;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use debugtop_core::actions::kill;
use debugtop_core::collect::linux::ProcfsCollector;
use debugtop_core::model::LiveTable;
use debugtop_core::sampler::{Config, Engine};

#[derive(Debug, Parser)]
#[command(about = "debugtop's benchmark (see BENCHMARKS.md)")]
pub(crate) struct Args {
    /// Process counts to measure at.
    #[arg(long, value_delimiter = ',', default_value = "1000,5000")]
    n: Vec<usize>,
    /// Repetitions per timing.
    #[arg(long, default_value_t = 15)]
    reps: usize,
    /// Seconds of the 1 s-interval CPU measurement.
    #[arg(long, default_value_t = 60)]
    cpu_secs: u64,
    /// Debug sessions the real server holds for the tick measurement.
    #[arg(long, default_value_t = 20)]
    sessions: usize,
    /// Only the incident-scale tick (for profiling it).
    #[arg(long)]
    incident_only: bool,
    /// Only the state step at incident scale, from built observations (no processes, no
    /// scan): the engine's own work, deterministic enough to profile.
    #[arg(long)]
    step_only: bool,
    /// A tiny, fast pass that proves the benchmark still works (used by `make test`).
    #[arg(long)]
    smoke: bool,
    /// Only the exporter's cost: a scrape at incident scale, and `serve` against `watch` at
    /// 1 Hz beside 2,000 processes.
    #[arg(long)]
    exporter_only: bool,
    /// Seconds each of `serve` and `watch` runs in the CPU comparison.
    #[arg(long, default_value_t = 60)]
    exporter_secs: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

pub(crate) fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len().max(1);
    Stats {
        median: v.get(n / 2).copied().unwrap_or(0.0),
        min: v.first().copied().unwrap_or(0.0),
        max: v.last().copied().unwrap_or(0.0),
    }
}

pub(crate) fn line(what: &str, s: Stats, unit: &str) {
    println!(
        "{what:<58} {:>10.3} {unit} (min {:.3}, max {:.3})",
        s.median, s.min, s.max
    );
}

pub(crate) fn time_ms(reps: usize, mut f: impl FnMut()) -> Stats {
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f();
        v.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    stats(v)
}

/// N cheap real processes, all reaped at the end, by pid.
pub(crate) struct Crowd(Vec<Child>);

impl Crowd {
    /// All in one new process group (led by the first), so that even if the benchmark is
    /// killed before its clean-up runs, `kill -- -<pgid>` ends exactly these.
    pub(crate) fn spawn(n: usize) -> anyhow::Result<Self> {
        use std::os::unix::process::CommandExt;
        let mut v: Vec<Child> = Vec::with_capacity(n);
        for _ in 0..n {
            let group = v.first().map_or(0, |c| i32::try_from(c.id()).unwrap_or(0));
            v.push(
                Command::new("sleep")
                    .arg("3600")
                    .stdin(Stdio::null())
                    .process_group(group)
                    .spawn()
                    .context("spawn sleep")?,
            );
        }
        if let Some(first) = v.first() {
            println!(
                "(spawned {n} sleeps in process group {0}; if interrupted: kill -- -{0})",
                first.id()
            );
        }
        Ok(Self(v))
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

/// The floor: list /proc and read every /proc/<pid>/stat once.
pub(crate) fn floor_pass() -> usize {
    let mut buf = Vec::with_capacity(1024);
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(s) = name.to_str() else { continue };
            if !s.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            buf.clear();
            if let Ok(mut f) = std::fs::File::open(format!("/proc/{s}/stat")) {
                if f.read_to_end(&mut buf).is_ok() {
                    n += 1;
                }
            }
        }
    }
    n
}

fn cpu_ticks_self() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or("");
    let f: Vec<&str> = rest.split(' ').collect();
    f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    let mut a = Args::parse();
    if a.smoke {
        a.n = vec![50];
        a.reps = 3;
        a.cpu_secs = 2;
        a.sessions = 1;
        a.exporter_secs = 2;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!(
        "debugtop-bench: {} cores, kernel {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    if a.incident_only {
        return rt.block_on(async { incident_tick(&a).await });
    }
    if a.step_only {
        step_only(&a);
        return Ok(());
    }
    if a.exporter_only {
        return exporter::cost(&a);
    }
    let base = floor_pass();
    println!("processes on the machine before spawning: {base}\n");

    let largest = a.n.iter().copied().max().unwrap_or(0);
    for &n in &a.n {
        collector_at(&a, n, n == largest)?;
    }

    rt.block_on(async { incident_tick(&a).await })?;
    step_only(&a);
    println!();
    rt.block_on(async { server_tick(&a).await })?;
    rt.block_on(async { exit_latency(&a).await })?;
    kill_latency(&a)?;
    println!();
    exporter::cost(&a)?;
    Ok(())
}

/// The collector against the floor and `ps` with `n` extra processes; with `cpu`, also its CPU
/// at a 1 s interval.
fn collector_at(a: &Args, n: usize, cpu: bool) -> anyhow::Result<()> {
    let crowd = Crowd::spawn(n)?;
    // Steady state means processes older than the collector's "young" window (2 s), whose
    // argv is no longer re-read.
    std::thread::sleep(debugtop_core::collect::YOUNG + Duration::from_millis(500));
    let total = floor_pass();
    println!("== N = {n} spawned ({total} processes in /proc) ==");
    let floor = time_ms(a.reps, || {
        floor_pass();
    });
    line("floor: read /proc/<pid>/stat for every pid", floor, "ms");
    let mut c = ProcfsCollector::new()?;
    let t = Instant::now();
    c.scan()?;
    let first = t.elapsed().as_secs_f64() * 1000.0;
    let once = Stats {
        median: first,
        min: first,
        max: first,
    };
    line("collector: first scan (cold identity cache)", once, "ms");
    let steady = time_ms(a.reps, || {
        let _ = c.scan();
    });
    line("collector: steady scan (identity cache warm)", steady, "ms");
    let ps = time_ms(a.reps.min(7), || {
        let _ = Command::new("ps")
            .args(["-eo", "pid,ppid,pgid,stat,args"])
            .stdout(Stdio::null())
            .status();
    });
    line("ps -eo pid,ppid,pgid,stat,args", ps, "ms");
    println!(
        "ratio steady/floor: {:.2}   ratio ps/steady: {:.1}",
        steady.median / floor.median,
        ps.median / steady.median
    );
    if cpu {
        // Collector CPU at a 1 s interval, from /proc/self/stat.
        let t0 = cpu_ticks_self();
        let start = Instant::now();
        for i in 0..a.cpu_secs {
            let _ = c.scan();
            let next = Duration::from_secs(i + 1);
            std::thread::sleep(next.saturating_sub(start.elapsed()));
        }
        let used = (cpu_ticks_self() - t0) as f64 / 100.0;
        let pct = used / start.elapsed().as_secs_f64() * 100.0;
        println!(
            "collector CPU at 1 s over {} s with {total} processes: {pct:.2} % of a core",
            a.cpu_secs
        );
    }
    drop(crowd);
    println!();
    Ok(())
}

/// A full sampler tick (collect + sources + reconcile + verdicts) with a real mcp-debugger
/// holding `sessions` debug sessions.
async fn server_tick(a: &Args) -> anyhow::Result<()> {
    let server = debugtop_e2e::mcp::Server::start(0);
    let mut client = debugtop_e2e::mcp::Abandoned::connect(server.port);
    let script = debugtop_e2e::fixture("mock/script.js");
    for i in 0..a.sessions {
        let r = client.call(
            "create_debug_session",
            serde_json::json!({"language":"mock","name":format!("bench-{i}")}),
        );
        let id = r["sessionId"].as_str().unwrap_or_default().to_owned();
        client.call("start_debugging", serde_json::json!({"sessionId": id, "scriptPath": script, "dapLaunchArgs": {"stopOnEntry": true}}));
    }
    let mut e = Engine::new(Config::default())?;
    e.tick().await?;
    let mut v = Vec::new();
    let mut nodes = 0;
    let mut window = WindowBytes::default();
    for _ in 0..a.reps {
        let t = Instant::now();
        let u = e.tick().await?;
        v.push(t.elapsed().as_secs_f64() * 1000.0);
        nodes = u.snapshot.processes.len();
        window.add(&std::sync::Arc::new(u));
    }
    line(
        &format!(
            "full sampler tick, real server with {} sessions ({nodes} procs)",
            a.sessions
        ),
        stats(v),
        "ms",
    );
    window.report();
    let u = e.tick().await?;
    targets_cost(a, &serde_json::to_string(&u)?).await
}

/// A tick at incident scale: `n` orphaned workers of one gone owner (cheap stand-ins carrying
/// the worker markers, so every one is a finding and two rows), each part timed — the engine's
/// tick with and without redaction, and the window's message (diff and serialization).
async fn incident_tick(a: &Args) -> anyhow::Result<()> {
    use debugtop_e2e::procs::{HeldZombie, StandIns};
    let n = if a.smoke { 50 } else { 5000 };
    let owner = HeldZombie::new();
    let orphans = StandIns::orphaned_workers(n, owner.pid);
    std::thread::sleep(debugtop_core::collect::YOUNG + Duration::from_millis(500));
    phases::enable();
    for redact in [false, true] {
        let mut config = Config::default();
        config.state.redact = redact;
        config.state.verdicts.grace = Duration::ZERO;
        let mut e = Engine::new(config)?;
        let mut follower = debugtop_core::delta::Follower::default();
        let (mut ticks, mut window, mut bytes, mut findings) =
            (Vec::new(), Vec::new(), Vec::new(), 0);
        let mut phases = Phases::default();
        for i in 0..a.reps.max(4) {
            phases::take();
            let t = Instant::now();
            let u = std::sync::Arc::new(e.tick().await?);
            let tick = t.elapsed().as_secs_f64() * 1000.0;
            let laps = phases::take();
            let t = Instant::now();
            let sent = follower.next(&u).and_then(|m| serde_json::to_vec(&m).ok());
            let w = t.elapsed().as_secs_f64() * 1000.0;
            findings = u.snapshot.findings.len();
            // The first ticks confirm the findings and send the whole world: steady state after.
            if i >= 3 {
                phases.add(laps);
                ticks.push(tick);
                window.push(w);
                bytes.push(sent.map_or(0, |b| b.len()) as f64);
            }
        }
        let what = if redact { "redacted" } else { "not redacted" };
        line(
            &format!("incident tick, {n} orphans ({findings} findings), {what}"),
            stats(ticks),
            "ms",
        );
        phases.report();
        line("  the window's message (diff + JSON)", stats(window), "ms");
        line("  its size", stats(bytes), "B");
    }
    drop(orphans);
    println!();
    Ok(())
}

/// The state step alone at incident scale, from built observations (no processes, no scan):
/// `n` orphaned workers of a gone owner (as `incident_tick` spawns them), then `n / 5` leaked
/// adapters, each with a debuggee in its group, one observation a second. Building the
/// observations is not timed.
fn step_only(a: &Args) {
    let n: u32 = if a.smoke { 50 } else { 5000 };
    step_bench(a, &format!("{n} orphans"), |t| orphans(t, n));
    let n = n / 5;
    step_bench(a, &format!("{n} leaked adapters"), |t| {
        leaked_adapters(t, n)
    });
}

/// `n` orphaned workers of one gone owner.
pub(crate) fn orphans(t: i64, n: u32) -> debugtop_core::model::Observation {
    use debugtop_core::model::Role;
    use debugtop_core::testing::{ObservationBuilder, ProcBuilder};
    let gone = 7;
    let mut b = ObservationBuilder::at(t);
    for i in 0..n {
        let session = format!("5a1d0000-0000-4000-8000-{i:012}");
        let argv = format!(
            "sh -c read sh /stand-in/dist/proxy/proxy-bootstrap.js --mcp-owner-pid={gone} --mcp-session-id={session}"
        );
        b = b.proc(
            ProcBuilder::new(10_000 + i, Role::Worker)
                .owner(gone)
                .session(&session)
                .argv(&argv)
                .build(),
        );
    }
    b.build()
}

/// `n` adapters whose workers are gone (under init, leading their own groups), each with the
/// debuggee it started.
fn leaked_adapters(t: i64, n: u32) -> debugtop_core::model::Observation {
    use debugtop_core::model::{Language, Role};
    use debugtop_core::testing::{ObservationBuilder, ProcBuilder};
    let mut b = ObservationBuilder::at(t);
    for i in 0..n {
        let session = format!("5a1d0000-0000-4000-8000-{i:012}");
        let (adapter, debuggee) = (20_000 + 2 * i, 20_001 + 2 * i);
        b = b
            .proc(
                ProcBuilder::new(adapter, Role::Adapter)
                    .session(&session)
                    .language(Language::Python)
                    .argv("python -m debugpy.adapter")
                    .build(),
            )
            .proc(
                ProcBuilder::new(debuggee, Role::Debuggee)
                    .ppid(adapter)
                    .group(adapter, adapter)
                    .session(&session)
                    .argv("python app.py")
                    .build(),
            );
    }
    b.build()
}

/// The state step over `observe(t)` for a few seconds, once the findings are confirmed.
fn step_bench(a: &Args, what: &str, observe: impl Fn(i64) -> debugtop_core::model::Observation) {
    use debugtop_core::state::{State, StateConfig};
    phases::enable();
    let mut config = StateConfig::default();
    config.verdicts.grace = Duration::ZERO;
    let mut state = State::new(config);
    let (mut steps, mut phases, mut findings) = (Vec::new(), Phases::default(), 0);
    for t in 0..i64::try_from(a.reps.max(4)).unwrap_or(15) {
        let obs = observe(t);
        phases::take();
        let started = Instant::now();
        let u = state.step(obs);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        findings = u.snapshot.findings.len();
        let laps = phases::take();
        drop(u);
        // The first steps confirm the findings: steady state after.
        if t >= 3 {
            steps.push(ms);
            phases.add(laps);
        }
    }
    line(
        &format!("state step alone, {what} ({findings} findings), redacted"),
        stats(steps),
        "ms",
    );
    phases.report();
}

/// Each phase of a tick (the engine's spans, `phases`), over several ticks, in the order they
/// ended.
#[derive(Default)]
struct Phases(Vec<(String, Vec<f64>)>);

impl Phases {
    fn add(&mut self, laps: Vec<(String, Duration)>) {
        for (name, d) in laps {
            let ms = d.as_secs_f64() * 1000.0;
            match self.0.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(ms),
                None => self.0.push((name, vec![ms])),
            }
        }
    }

    fn report(self) {
        for (name, v) in self.0 {
            line(&format!("    {name}"), stats(v), "ms");
        }
    }
}

/// What the window is sent per tick: the whole update against the changes the app now sends
/// (`delta::Follower`, as the app's subscriber), and the time saying them takes.
#[derive(Default)]
struct WindowBytes {
    follower: debugtop_core::delta::Follower,
    started: bool,
    whole: Vec<f64>,
    sent: Vec<f64>,
    diff_ms: Vec<f64>,
}

impl WindowBytes {
    fn add(&mut self, u: &std::sync::Arc<debugtop_core::model::Update>) {
        let t = Instant::now();
        let m = self.follower.next(u);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let sent = m
            .and_then(|m| serde_json::to_vec(&m).ok())
            .map_or(0, |b| b.len());
        // The first message is whole by design: only the ticks after it say what a tick costs.
        if std::mem::replace(&mut self.started, true) {
            let whole = serde_json::to_vec(&**u).map_or(0, |b| b.len());
            self.whole.push(whole as f64);
            self.sent.push(sent as f64);
            self.diff_ms.push(ms);
        }
    }

    fn report(self) {
        if self.sent.is_empty() {
            return;
        }
        let (w, s, d) = (stats(self.whole), stats(self.sent), stats(self.diff_ms));
        println!(
            "window message per tick: whole update median {:.0} B; changes sent median {:.0} B (max {:.0} B, {:.4}× the whole); saying them median {:.3} ms",
            w.median,
            s.median,
            s.max,
            s.median / w.median.max(1.0),
            d.median
        );
    }
}

/// What 20 remote targets streaming at 1 Hz cost the process that reads them (the app's
/// target streams, in process here): each target is a `cmd:` replaying this run's real update
/// (a real server with its sessions) once a second, so only the reading side is measured.
/// Against the same process idle for as long, measured just before.
async fn targets_cost(a: &Args, update: &str) -> anyhow::Result<()> {
    use debugtop_core::targets::{hello_line, spawn_stream, Engines, StreamConfig};
    let n = if a.smoke { 2 } else { 20 };
    let secs = a.cpu_secs.min(30);
    let dir = std::env::temp_dir().join(format!("debugtop-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("hello"), hello_line() + "\n")?;
    std::fs::write(dir.join("update"), format!("{update}\n"))?;
    let script = format!(
        "cat {d}/hello; while :; do cat {d}/update || exit 1; sleep 1; done",
        d = dir.display()
    );
    let idle = {
        let t0 = cpu_ticks_self();
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        (cpu_ticks_self() - t0) as f64 / 100.0 / start.elapsed().as_secs_f64() * 100.0
    };
    let feeds: Vec<_> = (0..n)
        .map(|_| {
            let t = debugtop_core::model::Target::Cmd {
                argv: vec!["sh".into(), "-c".into(), script.clone(), "sh".into()],
            };
            spawn_stream(
                t,
                StreamConfig {
                    engines: Engines::default(),
                    ..StreamConfig::default()
                },
            )
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let live = feeds
        .iter()
        .filter(|f| f.feed.borrow().update.is_some())
        .count();
    let t0 = cpu_ticks_self();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let pct = (cpu_ticks_self() - t0) as f64 / 100.0 / start.elapsed().as_secs_f64() * 100.0;
    drop(feeds);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{n} targets at 1 Hz ({live} live, {} kB per update): {pct:.2} % of a core over {secs} s (idle: {idle:.2} %)",
        update.len() / 1024
    );
    Ok(())
}

/// Process exit → event, for a watched pid (pidfd watcher).
async fn exit_latency(a: &Args) -> anyhow::Result<()> {
    let watcher = debugtop_core::collect::exits::ExitWatcher::start().context("pidfd watcher")?;
    let mut v = Vec::new();
    for _ in 0..a.reps.min(10) {
        let mut child = Command::new("sleep").arg("600").spawn()?;
        let pid = child.id();
        let ticks = debugtop_e2e::start_ticks(pid).unwrap_or(0);
        watcher.watch([(pid, ticks)]);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t = Instant::now();
        child.kill()?;
        tokio::time::timeout(Duration::from_secs(2), watcher.exited())
            .await
            .context("exit not seen")?;
        v.push(t.elapsed().as_secs_f64() * 1000.0);
        let _ = watcher.take_exits();
        let _ = child.wait();
    }
    line(
        "exit detection: kill → watched exit seen (pidfd)",
        stats(v),
        "ms",
    );
    Ok(())
}

/// Spawns `argv`, plans its kill as `--force` does, executes it: milliseconds to verified gone.
fn one_kill(argv: &[&str], grace: Duration) -> anyhow::Result<f64> {
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .env("MCP_DEBUGGER_MAIN_PID", std::process::id().to_string())
        .spawn()?;
    std::thread::sleep(Duration::from_millis(50));
    let mut c = ProcfsCollector::new()?;
    let table = c.scan()?;
    let live = LiveTable::new(&table.procs, debugtop_core::sources::self_info());
    // The child is outside every server's tree: planned as `--force` does.
    let plan = kill::plan_for(
        &kill::KillRequest::Pid {
            pid: child.id(),
            tree: false,
        },
        &[] as &[debugtop_core::model::Finding],
        &live,
        kill::KillOptions {
            grace: Some(grace),
            force: true,
        },
    )?;
    if plan.targets.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!(
            "the kill plan refused the benchmark's own child: {:?}",
            plan.refused
        );
    }
    // Reap concurrently, as a parent would, so "exited" is observable.
    let t = Instant::now();
    let report = std::thread::scope(|s| {
        let h = s.spawn(|| kill::execute(&plan, |_| {}));
        let _ = child.wait();
        h.join()
    });
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let ok = report.as_ref().map(|r| r.all_gone()).unwrap_or(false);
    anyhow::ensure!(ok, "kill did not verify: {report:?}");
    Ok(ms)
}

/// Kill latency: a cooperative process (exit → verified) and a wedged one (grace → verified).
fn kill_latency(a: &Args) -> anyhow::Result<()> {
    let grace = Duration::from_millis(500);
    for (what, argv) in [
        ("cooperative (sleep)", vec!["sleep", "600"]),
        (
            "wedged (ignores SIGTERM)",
            vec!["perl", "-e", "$SIG{TERM}='IGNORE'; sleep 600"],
        ),
    ] {
        let mut v = Vec::new();
        for _ in 0..a.reps.min(7) {
            v.push(one_kill(&argv, grace)?);
        }
        line(
            &format!(
                "kill {what}: execute → verified gone (grace {} ms)",
                grace.as_millis()
            ),
            stats(v),
            "ms",
        );
    }
    Ok(())
}
