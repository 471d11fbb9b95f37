//! `debugtop-cli`: the debugtop engine without a window, for terminals and CI jobs. Parses,
//! calls the core's actions, prints; every decision is the core's.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use debugtop_cli::{audit_config, AuditArgs, Cli, Command, Format};
use debugtop_core::actions::{audit, export, kill};
use debugtop_core::model::{LiveTable, SourceState, TreeNode, Update};
use debugtop_core::sampler::{self, Config, Engine};
use debugtop_core::sources::Sources;

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
        } => snapshot(servers, format, out, no_redact).await,
        Command::Watch {
            interval,
            servers,
            json,
            count,
        } => watch(interval, servers, json, count).await,
        Command::Audit { args, json } => {
            let run = audit_now(&args).await?;
            let text = if json {
                serde_json::to_string_pretty(&run.result)? + "\n"
            } else {
                run.result.to_text()
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(ExitCode::from(run.result.exit_code()))
        }
        Command::Kill {
            target,
            tree,
            grace_ms,
            dry_run,
            yes,
            force,
        } => {
            let opts = kill::KillOptions {
                grace: grace_ms.map(Duration::from_millis),
                force,
            };
            kill_cmd(&target, tree, opts, dry_run, yes).await
        }
    }
}

async fn audit_now(args: &AuditArgs) -> anyhow::Result<audit::AuditRun> {
    let config = audit_config(args);
    let mut sources = Sources::new(&config.sources()).context("cannot start the collector")?;
    audit::audit(&mut sources, &config)
        .await
        .context("cannot read the process table")
}

async fn snapshot(
    servers: Vec<String>,
    format: Format,
    out: Option<std::path::PathBuf>,
    no_redact: bool,
) -> anyhow::Result<ExitCode> {
    let mut config = Config::default();
    config.sources.extra_servers = servers;
    config.state.redact = !no_redact;
    let home = config.state.home.clone();
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
    export::enrich(&mut snap, home.as_deref());
    let text = export::render(&snap, format.into())?;
    match out {
        Some(path) => export::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write to stdout")?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn watch(
    interval: u64,
    servers: Vec<String>,
    json: bool,
    count: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let mut config = Config {
        interval: Duration::from_millis(interval),
        ..Config::default()
    };
    config.sources.extra_servers = servers;
    let mut running = sampler::spawn(config).context("cannot start the sampler")?;
    let mut seen = 0u64;
    loop {
        tokio::select! {
            changed = running.updates.changed() => {
                if changed.is_err() { break; }
            }
            changed = running.errors.changed() => {
                if changed.is_err() { break; }
                if let Some(e) = running.errors.borrow_and_update().clone() {
                    eprintln!("debugtop-cli: tick failed (the stream goes on): {e}");
                }
                continue;
            }
            _ = tokio::signal::ctrl_c() => break,
        }
        let Some(p) = running.updates.borrow_and_update().clone() else {
            continue;
        };
        let line = if json {
            serde_json::to_string(&*p.update).context("cannot serialise an update")?
        } else {
            summary(&p.update)
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

async fn kill_cmd(
    target: &str,
    tree: bool,
    opts: kill::KillOptions,
    dry_run: bool,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let mut request = kill::parse_target(target)?;
    if let kill::KillRequest::Pid { tree: t, .. } = &mut request {
        *t = tree;
    }
    let (findings, live) = match &request {
        kill::KillRequest::Finding { .. } => {
            let run = audit_now(&AuditArgs::default()).await?;
            (run.findings, run.live)
        }
        kill::KillRequest::Pid { .. } => (Vec::new(), live_now().await?),
    };
    let plan = kill::plan_for(&request, &findings, &live, opts)?;
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
    if !yes && !confirmed(&mut out)? {
        writeln!(out, "nothing done")?;
        return Ok(ExitCode::from(1));
    }
    drop(out);
    // Every refusal again, against the table as it is now (time passed at the prompt).
    let plan = kill::recheck(&plan, &live_now().await?);
    let report = tokio::task::spawn_blocking(move || {
        kill::execute(&plan, |p| {
            if let debugtop_core::model::Progress::Signalled { pid, signal } = p {
                println!("  {signal} → {pid}");
            }
        })
    })
    .await
    .context("the kill task failed")?;
    let mut out = std::io::stdout().lock();
    for o in &report.outcomes {
        writeln!(out, "{} {}: {}", o.role, o.pid, o.outcome)?;
    }
    Ok(if report.all_gone() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The live table of one tick now.
async fn live_now() -> anyhow::Result<LiveTable> {
    let mut engine = Engine::new(Config::default()).context("cannot start the collector")?;
    engine
        .tick()
        .await
        .context("cannot read the process table")?;
    Ok(engine.live().clone())
}

fn confirmed(out: &mut impl Write) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "not killing without confirmation: pass --yes when not running interactively"
        );
    }
    write!(out, "proceed? [y/N] ")?;
    out.flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn summary(u: &Update) -> String {
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
        let at = e.at.map(|a| a.to_rfc3339()).unwrap_or_default();
        line.push_str(&format!("\n  {at} {}:{} {:?}", e.file, e.line, e.kind));
    }
    for src in s.sources.iter().filter(|x| x.state != SourceState::Ok) {
        let who = src
            .server_pid
            .map(|p| format!(" (server {p})"))
            .unwrap_or_default();
        line.push_str(&format!("\n  {}{who}: {}", src.source, src.detail));
    }
    line
}
