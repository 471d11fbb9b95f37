//! `debugtop-cli`: the debugtop engine without a window, for terminals and CI jobs. Parses,
//! calls the core's actions, prints; every decision is the core's.

/// mimalloc: at incident scale a tick allocates and frees hundreds of thousands of small
/// strings; glibc's allocator made the same tick 1.4× slower (BENCHMARKS.md). Built without
/// its transparent huge pages (`no_thp` in the workspace's Cargo.toml): they doubled what a
/// long `watch` keeps resident.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use debugtop_core::model::printable::{self, for_terminal, one_line};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use debugtop_cli::{audit_config, monitor_config, AuditArgs, Cli, Command, Format};
use debugtop_core::actions::{audit, export, kill};
use debugtop_core::model::{
    KillAnswer, KillPlan, KillReport, LiveTable, ProcId, Refusal, SourceState, Target, TreeNode,
    Update,
};
use debugtop_core::safe_fs::Visibility;
use debugtop_core::sampler::{self, Config, Engine};

mod fleet;
mod mcp;
mod run_verb;
mod serve;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::JoinCgroup {
        dir,
        probe,
        command,
    } = &cli.command
    {
        return run_verb::join_cgroup(dir, *probe, command);
    }
    // A one-shot command runs on one thread (no worker threads to start for a few
    // milliseconds of work; blocking reads still go to the blocking pool); `watch` keeps two.
    let mut builder = if matches!(cli.command, Command::Watch { .. } | Command::Serve { .. }) {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("debugtop-cli: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("debugtop-cli: {}", for_terminal(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if cli.hello {
        say(&debugtop_core::targets::hello_line())?;
    }
    match cli.command {
        Command::Snapshot {
            servers,
            format,
            out,
            no_redact,
            targets,
        } => snapshot_command(servers, format, out, no_redact, &targets).await,
        Command::Watch {
            monitor,
            json,
            count,
            textfile,
        } => {
            if json && !cli.hello {
                say(&debugtop_core::targets::hello_line())?;
            }
            watch(&monitor, json, count, textfile).await
        }
        Command::Serve {
            listen,
            monitor,
            textfile,
        } => serve::serve(listen, monitor_config(&monitor), textfile).await,
        Command::Audit {
            args,
            json,
            targets,
            textfile,
        } => audit_command(&args, json, &targets, textfile).await,
        kill @ Command::Kill { .. } => kill_command(kill).await,
        Command::Run(args) => run_verb::run(&args).await,
        Command::Mcp {
            monitor,
            allow_kill,
        } => mcp::serve(monitor_config(&monitor), allow_kill).await,
        Command::JoinCgroup { .. } => anyhow::bail!("__join-cgroup runs before the runtime"),
    }
}

/// `snapshot`: of targets (this machine among them when named), or of this machine.
async fn snapshot_command(
    servers: Vec<String>,
    format: Format,
    out: Option<PathBuf>,
    no_redact: bool,
    targets: &[Target],
) -> anyhow::Result<ExitCode> {
    if targets.is_empty() {
        return snapshot(servers, format, out, no_redact).await;
    }
    let local = if targets.iter().any(Target::is_local) {
        Some(take_snapshot(servers, no_redact).await?)
    } else {
        None
    };
    fleet::snapshot(targets, local, format, out, no_redact).await
}

/// `audit`: of targets, or of this machine (its textfile written when asked).
async fn audit_command(
    args: &AuditArgs,
    json: bool,
    targets: &[Target],
    textfile: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if !targets.is_empty() {
        return fleet::audit(args, targets, json).await;
    }
    let run = audit_now(args).await?;
    if let Some(path) = textfile {
        serve::write_textfile(&path, &run.snapshot, run.took, false)?;
    }
    let text = if json {
        printable::json(&run.result, true)? + "\n"
    } else {
        for_terminal(&debugtop_core::report::text::audit(&run.result)).into_owned()
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::from(run.result.exit_code()))
}

/// `kill`: on a target (planned and checked there), or here.
async fn kill_command(command: Command) -> anyhow::Result<ExitCode> {
    let Command::Kill {
        targets,
        kind,
        server,
        tree,
        grace_ms,
        dry_run,
        yes,
        force,
        on,
        json,
        only,
    } = command
    else {
        anyhow::bail!("not a kill command");
    };
    let request = debugtop_cli::kill_request(&targets, kind, server, tree)?;
    if let Some(on) = on.filter(|t| !t.is_local()) {
        if force {
            anyhow::bail!("--force is for pids on this machine: on a target, kill a finding id from `audit --target`, or a pid in its trees");
        }
        return fleet::kill(&on, request, grace_ms, dry_run, yes, json).await;
    }
    let opts = kill::KillOptions {
        grace: grace_ms.map(Duration::from_millis),
        force,
    };
    let how = KillHow {
        dry_run,
        yes,
        json,
        only,
    };
    kill_cmd(request, opts, how).await
}

/// Writes one line to stdout.
fn say(line: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .context("cannot write to stdout")
}

async fn audit_now(args: &AuditArgs) -> anyhow::Result<audit::AuditRun> {
    audit::audit_here(&audit_config(args))
        .await
        .context("cannot audit this machine")
}

async fn snapshot(
    servers: Vec<String>,
    format: Format,
    out: Option<PathBuf>,
    no_redact: bool,
) -> anyhow::Result<ExitCode> {
    let snap = take_snapshot(servers, no_redact).await?;
    let text = export::render(&snap, format.into())?;
    write_out(out.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to `out` (atomically; `-` is stdout) or stdout.
fn write_out(out: Option<&std::path::Path>, text: &str) -> anyhow::Result<()> {
    match out.filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            debugtop_core::safe_fs::write_atomic(path, text.as_bytes(), Visibility::Private)
                .with_context(|| format!("cannot write {}", path.display()))
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write to stdout"),
    }
}

/// One live snapshot of this machine (one look: `sampler::one_look_here`), made ready for
/// export: enriched through the real paths, then redacted unless `--no-redact`.
async fn take_snapshot(
    servers: Vec<String>,
    no_redact: bool,
) -> anyhow::Result<debugtop_core::model::Snapshot> {
    let config = Config::one_look(servers, !no_redact);
    let raw = sampler::one_look_here(&config)
        .await
        .context("cannot look at this machine")?;
    Ok(export::prepare(
        &raw,
        !no_redact,
        config.state.home.as_deref(),
    ))
}

async fn watch(
    monitor: &debugtop_cli::MonitorArgs,
    json: bool,
    count: Option<u64>,
    textfile: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let mut running =
        sampler::spawn(monitor_config(monitor)).context("cannot start the sampler")?;
    let mut seen = 0u64;
    loop {
        tokio::select! {
            changed = running.updates.changed() => {
                if changed.is_err() { break; }
            }
            changed = running.errors.changed() => {
                if changed.is_err() { break; }
                if let Some(e) = running.errors.borrow_and_update().clone() {
                    eprintln!(
                        "debugtop-cli: tick failed (the stream goes on): {}",
                        one_line(&e.to_string())
                    );
                }
                continue;
            }
            _ = tokio::signal::ctrl_c() => break,
        }
        let Some(p) = running.updates.borrow_and_update().clone() else {
            continue;
        };
        if let Some(path) = &textfile {
            if let Err(e) = serve::write_textfile(path, &p.update.snapshot, p.took, false) {
                eprintln!(
                    "debugtop-cli: {} (the stream goes on)",
                    one_line(&format!("{e:#}"))
                );
            }
        }
        let line = if json {
            printable::json(&*p.update, false).context("cannot serialise an update")?
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

/// How a kill is confirmed and reported.
struct KillHow {
    dry_run: bool,
    yes: bool,
    json: bool,
    only: Option<Vec<ProcId>>,
}

/// Keeps only the confirmed identities; anything else the plan holds now is refused.
fn restrict(plan: &mut KillPlan, only: &[ProcId]) {
    let (keep, drop): (Vec<_>, Vec<_>) =
        plan.targets.drain(..).partition(|t| only.contains(&t.id()));
    plan.targets = keep;
    plan.refused.extend(drop.into_iter().map(|t| Refusal {
        pid: t.pid,
        why: "not in the plan that was confirmed (--only)".to_owned(),
    }));
}

async fn kill_cmd(
    request: kill::KillRequest,
    opts: kill::KillOptions,
    how: KillHow,
) -> anyhow::Result<ExitCode> {
    if how.json && !how.yes && !how.dry_run {
        anyhow::bail!("with --json there is no prompt: pass --yes or --dry-run");
    }
    let (findings, live) = match &request {
        kill::KillRequest::Pid { .. } => (Vec::new(), live_now().await?),
        _ => {
            let run = audit_now(&AuditArgs::default()).await?;
            (run.findings, run.live)
        }
    };
    let mut plan = kill::plan_for(&request, &findings, &live, opts)?;
    if let Some(only) = &how.only {
        restrict(&mut plan, only);
    }
    if how.json {
        return kill_json(plan, how.dry_run, opts.force).await;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "plan:")?;
    for line in plan.describe() {
        writeln!(out, "  {}", one_line(&line))?;
    }
    if plan.targets.is_empty() {
        writeln!(out, "nothing to kill")?;
        return Ok(ExitCode::from(1));
    }
    if how.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    if !how.yes && !confirmed(&mut out)? {
        writeln!(out, "nothing done")?;
        return Ok(ExitCode::from(1));
    }
    drop(out);
    let report = execute_now(plan, true, opts.force).await?;
    let mut out = std::io::stdout().lock();
    for o in &report.outcomes {
        writeln!(
            out,
            "{} {}: {}",
            o.role,
            o.pid,
            one_line(&o.outcome.to_string())
        )?;
    }
    Ok(if report.all_gone() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Every refusal again, against the table as it is now (time passed since planning) — with
/// `force`, plus the plan's targets read from the system now, so a forced pid is checked
/// against its identity, not refused for being outside every tree — then the signals.
pub(crate) async fn execute_now(
    plan: KillPlan,
    print: bool,
    force: bool,
) -> anyhow::Result<KillReport> {
    let live = live_now().await?;
    let live = if force {
        kill::with_forced_targets(&live, &plan)
    } else {
        live
    };
    let plan = kill::recheck(&plan, &live);
    tokio::task::spawn_blocking(move || {
        kill::execute(&plan, |p| {
            if let (true, debugtop_core::model::Progress::Signalled { pid, signal }) = (print, p) {
                println!("  {signal} → {pid}");
            }
        })
    })
    .await
    .context("the kill task failed")
}

/// `kill --json`: the plan, executed unless a dry run, as one `KillAnswer`.
async fn kill_json(plan: KillPlan, dry_run: bool, force: bool) -> anyhow::Result<ExitCode> {
    let report = if dry_run || plan.targets.is_empty() {
        None
    } else {
        Some(execute_now(plan.clone(), false, force).await?)
    };
    let code = match &report {
        Some(r) if r.all_gone() => 0,
        None if dry_run && !plan.targets.is_empty() => 0,
        _ => 1,
    };
    say(&printable::json(&KillAnswer { plan, report }, false)?)?;
    Ok(ExitCode::from(code))
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
        let kind = format!("{:?}", e.kind);
        line.push_str(&format!(
            "\n  {at} {}:{} {}",
            one_line(&e.file),
            e.line,
            one_line(&kind)
        ));
    }
    for src in s.sources.iter().filter(|x| x.state != SourceState::Ok) {
        let who = src
            .server_pid
            .map(|p| format!(" (server {p})"))
            .unwrap_or_default();
        line.push_str(&format!(
            "\n  {}{who}: {}",
            src.source,
            one_line(&src.detail)
        ));
    }
    line
}
