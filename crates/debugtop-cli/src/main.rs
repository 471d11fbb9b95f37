//! `debugtop-cli`: the debugtop engine without a window, for terminals and CI jobs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use debugtop_core::kill::{self, PlanOptions};
use debugtop_core::reconcile::TreeNode;
use debugtop_core::sampler::{self, Config, Engine};
use debugtop_core::verdict::{Finding, Mode, VerdictConfig};

#[derive(Debug, Parser)]
#[command(
    name = "debugtop-cli",
    version,
    about = "What your debug server really has running, and what it left behind."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Take one reconciled snapshot of every debug server on this machine (found without flags).
    Snapshot {
        /// Also ask this server's /health (`http://host:port`); repeatable.
        #[arg(long = "server", value_name = "URL")]
        servers: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Keep secrets in argv (off by default: snapshots are meant to be shared).
        #[arg(long)]
        no_redact: bool,
    },
    /// Stream updates: one line per tick (NDJSON with --json, a summary otherwise).
    Watch {
        /// Tick interval in milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval: u64,
        /// Also ask this server's /health; repeatable.
        #[arg(long = "server", value_name = "URL")]
        servers: Vec<String>,
        /// NDJSON: each line is one update (snapshot and the log events of that tick).
        #[arg(long)]
        json: bool,
        /// Stop after this many updates (default: run until interrupted).
        #[arg(long)]
        count: Option<u64>,
    },
    /// Run the liveness audit: exit 0 when clean, 1 with findings, 2 when it could not audit.
    Audit {
        #[command(flatten)]
        args: AuditArgs,
        /// JSON instead of a readable report.
        #[arg(long)]
        json: bool,
    },
    /// End a process (or what a finding names) safely: plan, SIGTERM, wait, SIGKILL, verify.
    Kill {
        /// A pid, or a finding id from `audit` (e.g. `leaked-adapter:1234.5678`).
        target: String,
        /// Also every descendant of the pid (findings always include their tree).
        #[arg(long)]
        tree: bool,
        /// Milliseconds between SIGTERM and SIGKILL.
        #[arg(long, default_value_t = 3000)]
        grace_ms: u64,
        /// Print the plan and stop.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        /// Allow a pid outside every debug server's tree.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, clap::Args)]
struct AuditArgs {
    /// Also ask this server's /health (`http://host:port`); repeatable.
    #[arg(long = "server", value_name = "URL")]
    servers: Vec<String>,
    /// Seconds a log-dated condition must have held (a session ended this long ago and its
    /// worker still runs).
    #[arg(long, default_value_t = 6.0)]
    grace: f64,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// The `debugtop.snapshot/1` document.
    Json,
    /// A Markdown incident report, ready for a GitHub issue.
    Md,
}

fn main() -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("debugtop-cli: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(Cli::parse())) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("debugtop-cli: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Snapshot {
            servers,
            format,
            out,
            no_redact,
        } => {
            let config = Config {
                extra_servers: servers,
                redact: !no_redact,
                ..Config::default()
            };
            let mut engine = Engine::new(config).context("cannot start the collector")?;
            // Two ticks so CPU percentages are real.
            engine
                .tick()
                .await
                .context("cannot read the process table")?;
            tokio::time::sleep(Duration::from_millis(250)).await;
            let mut snap = engine
                .tick()
                .await
                .context("cannot read the process table")?
                .snapshot;
            snap.enrich_for_export();
            let text = match format {
                Format::Json => snap.to_json()?,
                Format::Md => debugtop_core::snapshot::markdown::render(&snap),
            };
            match out {
                Some(path) => debugtop_core::snapshot::write_atomic(&path, text.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => std::io::stdout()
                    .lock()
                    .write_all(text.as_bytes())
                    .context("cannot write to stdout")?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Watch {
            interval,
            servers,
            json,
            count,
        } => {
            let config = Config {
                interval: Duration::from_millis(interval),
                extra_servers: servers,
                ..Config::default()
            };
            let mut running = sampler::spawn(config).context("cannot start the sampler")?;
            let mut seen = 0u64;
            loop {
                tokio::select! {
                    changed = running.updates.changed() => {
                        if changed.is_err() { break; }
                    }
                    _ = tokio::signal::ctrl_c() => break,
                }
                let Some(update) = running.updates.borrow_and_update().clone() else {
                    continue;
                };
                let line = if json {
                    serde_json::to_string(&*update).context("cannot serialise an update")?
                } else {
                    summary(&update)
                };
                let mut out = std::io::stdout().lock();
                if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                    break; // stdout closed (piped into `head`): stop quietly
                }
                seen += 1;
                if count.is_some_and(|c| seen >= c) {
                    break;
                }
            }
            running.task.abort();
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit { args, json } => {
            let (_, update) = audit_engine(&args).await?;
            let s = &update.snapshot;
            let mut out = std::io::stdout().lock();
            if json {
                let doc = serde_json::json!({
                    "clean": s.findings.is_empty(),
                    "taken_at": s.taken_at,
                    "servers": s.servers,
                    "findings": s.findings,
                    "sources": s.sources,
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
            } else {
                writeln!(
                    out,
                    "debugtop audit: {} on {} server(s), {} debug session(s), {} process(es)",
                    match s.findings.len() {
                        0 => "all healthy".to_owned(),
                        1 => "1 finding".to_owned(),
                        n => format!("{n} findings"),
                    },
                    s.servers.len(),
                    s.debug_sessions.len(),
                    s.processes.len()
                )?;
                print_findings(&s.findings, &mut out)?;
                for src in s
                    .sources
                    .iter()
                    .filter(|x| x.state != debugtop_core::model::SourceState::Ok)
                {
                    let who = src
                        .server_pid
                        .map(|p| format!(" (server {p})"))
                        .unwrap_or_default();
                    writeln!(out, "note: {}{who}: {}", src.source, src.detail)?;
                }
            }
            Ok(if s.findings.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Kill {
            target,
            tree,
            grace_ms,
            dry_run,
            yes,
            force,
        } => {
            let grace = Duration::from_millis(grace_ms);
            let (engine, update) = if target.contains(':') {
                audit_engine(&AuditArgs {
                    servers: Vec::new(),
                    grace: 6.0,
                })
                .await?
            } else {
                let mut engine =
                    Engine::new(Config::default()).context("cannot start the collector")?;
                let u = engine
                    .tick()
                    .await
                    .context("cannot read the process table")?;
                (engine, u)
            };
            let world = engine.last_world().context("no sample taken")?;
            let plan = if let Ok(pid) = target.parse::<u32>() {
                kill::plan(&world.table, &[pid], PlanOptions { tree, force, grace })
            } else {
                let Some(f) = update.snapshot.findings.iter().find(|f| f.id == target) else {
                    let known: Vec<&str> = update
                        .snapshot
                        .findings
                        .iter()
                        .map(|f| f.id.as_str())
                        .collect();
                    anyhow::bail!(
                        "no current finding has the id {target} (it may be resolved already); current findings: {}",
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    );
                };
                if f.plan.as_ref().is_none_or(|p| p.targets.is_empty()) {
                    anyhow::bail!(
                        "finding {target} is not fixed by killing: {}",
                        f.suggested_action
                    );
                }
                kill::plan(
                    &world.table,
                    &f.pids,
                    PlanOptions {
                        tree: true,
                        force,
                        grace,
                    },
                )
            };
            let mut out = std::io::stdout().lock();
            writeln!(out, "plan:")?;
            for line in plan.describe() {
                writeln!(out, "  {line}")?;
            }
            if plan.targets.is_empty() {
                writeln!(out, "nothing to kill")?;
                return Ok(ExitCode::from(1));
            }
            if dry_run {
                return Ok(ExitCode::SUCCESS);
            }
            if !yes {
                use std::io::IsTerminal;
                if !std::io::stdin().is_terminal() {
                    anyhow::bail!("not killing without confirmation: pass --yes when not running interactively");
                }
                write!(out, "proceed? [y/N] ")?;
                out.flush()?;
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    writeln!(out, "nothing done")?;
                    return Ok(ExitCode::from(1));
                }
            }
            drop(out);
            let report = tokio::task::spawn_blocking(move || {
                kill::execute(&plan, |p| {
                    if let kill::Progress::Signalled { pid, signal } = p {
                        println!("  {signal} → {pid}");
                    }
                })
            })
            .await
            .context("the kill task failed")?;
            let mut out = std::io::stdout().lock();
            for o in &report.outcomes {
                writeln!(out, "{} {}: {}", o.role.as_str(), o.pid, o.outcome)?;
            }
            Ok(if report.all_gone() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// Three ticks 250 ms apart: CPU needs two samples to exist, and audit findings must hold in
/// two consecutive evaluations.
async fn audit_engine(args: &AuditArgs) -> anyhow::Result<(Engine, sampler::Update)> {
    let grace = Duration::try_from_secs_f64(args.grace.max(0.0)).unwrap_or(Duration::from_secs(6));
    let config = Config {
        extra_servers: args.servers.clone(),
        verdicts: VerdictConfig {
            grace,
            mode: Mode::Audit,
            ..VerdictConfig::default()
        },
        ..Config::default()
    };
    let mut engine = Engine::new(config).context("cannot start the collector")?;
    let mut last = None;
    for i in 0..3 {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        last = Some(
            engine
                .tick()
                .await
                .context("cannot read the process table")?,
        );
    }
    let update = last.context("no sample taken")?;
    Ok((engine, update))
}

fn print_findings(findings: &[Finding], out: &mut impl Write) -> std::io::Result<()> {
    for f in findings {
        let sev = format!("{:?}", f.severity).to_uppercase();
        let sid = f
            .session_id
            .as_deref()
            .map(|s| format!(", session {s}"))
            .unwrap_or_default();
        let srv = f
            .server_pid
            .map(|s| format!(", server {s}"))
            .unwrap_or_default();
        writeln!(out, "{sev} {} — {}{sid}{srv}", f.kind.as_str(), f.id)?;
        for e in &f.evidence {
            writeln!(out, "    - {e}")?;
        }
        writeln!(out, "    fix: {}", f.suggested_action)?;
        if f.plan.as_ref().is_some_and(|p| !p.targets.is_empty()) {
            writeln!(out, "         debugtop-cli kill {}", f.id)?;
        }
    }
    Ok(())
}

fn summary(u: &sampler::Update) -> String {
    let s = &u.snapshot;
    let nodes: usize = s.tree.iter().map(|t| TreeNode::walk(t).len()).sum();
    let mut line = format!(
        "#{} {} servers, {} debug sessions, {} processes, {} tree nodes",
        u.seq,
        s.servers.len(),
        s.debug_sessions.len(),
        s.processes.len(),
        nodes
    );
    for e in &u.events {
        line.push_str(&format!(
            "\n  {} {}:{} {:?}",
            e.at.map(|a| a.to_rfc3339()).unwrap_or_default(),
            e.file,
            e.line,
            e.kind
        ));
    }
    for src in s
        .sources
        .iter()
        .filter(|x| x.state != debugtop_core::model::SourceState::Ok)
    {
        line.push_str(&format!(
            "\n  {} ({:?}): {}",
            src.source, src.server_pid, src.detail
        ));
    }
    line
}
