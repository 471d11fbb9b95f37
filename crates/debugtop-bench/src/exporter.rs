//! What the Prometheus exporter costs: a scrape of a look holding 5,000 findings (the series
//! and `/api/findings`, rendered as the first scrape after a tick renders them), how many
//! series it holds, and `debugtop-cli serve` against `debugtop-cli watch` at 1 Hz beside 2,000
//! processes, side by side in the same run (each process's own CPU, from `/proc`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use debugtop_core::model::FindingsReport;
use debugtop_core::report::metrics::{self, Exposition, Look, MAX_SERIES};
use debugtop_core::state::{State, StateConfig};

use super::{line, orphans, time_ms, Args, Crowd};

pub(crate) fn cost(a: &Args) -> anyhow::Result<()> {
    scrape(a);
    serve_against_watch(a)
}

/// The renderings of a look with `n` confirmed orphaned-worker findings.
fn scrape(a: &Args) {
    let n: u32 = if a.smoke { 50 } else { 5000 };
    let mut config = StateConfig::default();
    config.verdicts.grace = Duration::ZERO;
    let mut state = State::new(config);
    let mut update = None;
    for t in 0..3 {
        update = Some(state.step(orphans(t, n)));
    }
    let Some(u) = update else { return };
    let s = &u.snapshot;
    let look = Look {
        snapshot: s,
        duration: Duration::from_millis(15),
        failed: false,
    };
    let text = metrics::render(&look, Exposition::Prometheus);
    let series = text.lines().filter(|l| !l.starts_with('#')).count();
    println!(
        "== exporter: a look with {} findings: {series} series (cap {MAX_SERIES}), {} bytes ==",
        s.findings.len(),
        text.len()
    );
    let prom = time_ms(a.reps, || {
        let _ = metrics::render(&look, Exposition::Prometheus);
    });
    line("scrape /metrics (text 0.0.4), rendered anew", prom, "ms");
    let om = time_ms(a.reps, || {
        let _ = metrics::render(&look, Exposition::OpenMetrics);
    });
    line("scrape /metrics (OpenMetrics), rendered anew", om, "ms");
    let json = time_ms(a.reps.min(7), || {
        let _ = debugtop_core::model::printable::json(&FindingsReport::of(s), true);
    });
    line("/api/findings (JSON), rendered anew", json, "ms");
}

/// A debugtop-cli process measured by its own CPU ticks.
struct Measured {
    child: Child,
}

impl Measured {
    fn start(cli: &std::path::Path, args: &[&str]) -> anyhow::Result<Self> {
        let child = Command::new(cli)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("spawn {}", cli.display()))?;
        Ok(Self { child })
    }

    fn ticks(&self) -> u64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let rest = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or("");
        let f: Vec<&str> = rest.split(' ').collect();
        f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
    }
}

impl Drop for Measured {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve` scraped every second (a busy Prometheus), `serve` scraped every 15 s (Prometheus'
/// default) and `watch --json`, side by side, all at 1 Hz, beside 2,000 processes: each one's
/// CPU over the same seconds, after a warm-up.
fn serve_against_watch(a: &Args) -> anyhow::Result<()> {
    let cli = std::env::current_exe()?.with_file_name("debugtop-cli");
    if !cli.exists() {
        anyhow::bail!(
            "serve against watch cannot be measured: {} is missing (`make bench` builds it, \
             or `cargo build -p debugtop-cli` beside this build)",
            cli.display()
        );
    }
    let crowd = Crowd::spawn(if a.smoke { 20 } else { 2000 })?;
    let total = super::floor_pass();
    let listen = |port: u16| format!("127.0.0.1:{port}");
    let (busy_at, default_at) = (
        listen(debugtop_e2e::mcp::free_port()),
        listen(debugtop_e2e::mcp::free_port()),
    );
    let busy = Measured::start(&cli, &["serve", "--listen", &busy_at])?;
    let default = Measured::start(&cli, &["serve", "--listen", &default_at])?;
    let watch = Measured::start(&cli, &["watch", "--json"])?;
    // Warm-up: identities read, the first full scan done.
    std::thread::sleep(Duration::from_secs(if a.smoke { 1 } else { 5 }));
    let before = [busy.ticks(), default.ticks(), watch.ticks()];
    let started = Instant::now();
    let mut scrapes = [0u32; 2];
    let mut second = 0u64;
    while started.elapsed() < Duration::from_secs(a.exporter_secs) {
        scrapes[0] += u32::from(
            debugtop_e2e::prometheus::get(&format!("http://{busy_at}/metrics")).is_some(),
        );
        if second % 15 == 0 {
            scrapes[1] += u32::from(
                debugtop_e2e::prometheus::get(&format!("http://{default_at}/metrics")).is_some(),
            );
        }
        second += 1;
        std::thread::sleep(Duration::from_secs(second).saturating_sub(started.elapsed()));
    }
    let secs = started.elapsed().as_secs_f64();
    let after = [busy.ticks(), default.ticks(), watch.ticks()];
    let pct = |i: usize| after[i].saturating_sub(before[i]) as f64 / 100.0 / secs * 100.0;
    let (b, d, w) = (pct(0), pct(1), pct(2));
    let ratio = |x: f64| if w > 0.0 { x / w } else { f64::NAN };
    println!(
        "at 1 Hz beside {total} processes, {secs:.0} s side by side: serve scraped every second \
         ({} scrapes) {b:.2} % of a core (ratio to watch {:.2}); serve scraped every 15 s ({} \
         scrapes) {d:.2} % ({:.2}); watch --json {w:.2} %",
        scrapes[0],
        ratio(b),
        scrapes[1],
        ratio(d)
    );
    drop((busy, default, watch, crowd));
    Ok(())
}
