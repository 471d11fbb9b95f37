//! `debugtop-cli`: the debugtop engine without a window, for terminals and CI jobs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use debugtop_core::reconcile::TreeNode;
use debugtop_core::sampler::{self, Config, Engine};

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
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Json,
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
            format: Format::Json,
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
            let update = engine
                .tick()
                .await
                .context("cannot read the process table")?;
            let mut text = serde_json::to_string_pretty(&update.snapshot)
                .context("cannot serialise the snapshot")?;
            text.push('\n');
            match out {
                Some(path) => std::fs::write(&path, text)
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
    }
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
